//! `--cluster URL` (or `CLAWAI_CLUSTER`) and `--replica-id ID`: the options of cluster
//! mode, where replicas behind a balancer keep the state that must outlive one of them
//! in Redis: sessions (takeover, taint, grants, the active skill), rate windows, pins,
//! held and standing approvals, and the keyring.

use anyhow::{Result, bail};
use clap::Args;

/// `--cluster URL` for the commands that read or change state shared by replicas.
#[derive(Debug, Clone, Args)]
pub(crate) struct ClusterArg {
    /// Cluster mode: the Redis (7.0+) or Valkey server where replicas share their state,
    /// `redis://HOST:PORT/DB` (see docs/cluster.md).
    #[arg(long = "cluster", env = "CLAWAI_CLUSTER", value_name = "URL")]
    pub(crate) url: Option<String>,
}

impl ClusterArg {
    /// For a replica (`gateway --listen`, `proxy --listen`): without `--cluster`, `None`
    /// (nothing connects anywhere); with it, the URL and `--replica-id` are checked and
    /// the replica joins the cluster: the stores in Redis.
    pub(crate) fn join(&self, replica_id: Option<&str>) -> Result<Option<clawai_store::Stores>> {
        let Some(url) = &self.url else { return Ok(None) };
        check_redis_url(url)?;
        let Some(replica_id) = replica_id else {
            bail!(
                "--cluster needs --replica-id ID as well: the id the balancer's configuration names for this replica \
                 (letters, digits and -), e.g. --replica-id r1"
            );
        };
        crate::stores::join_cluster(url, replica_id).map(Some)
    }
}

/// `--replica-id`: letters, digits and `-` (the balancer's configuration names it, and
/// session ids carry it before a `.`).
pub(crate) fn parse_replica_id(text: &str) -> Result<String, String> {
    if clawai_http::listen::valid_replica_id(text) {
        Ok(text.to_owned())
    } else {
        Err(format!(
            "`{text}` cannot name a replica: use ASCII letters, digits and - only (e.g. r1, eu-west-2), the same id \
             the balancer's configuration names"
        ))
    }
}

/// Checks `redis://[USER[:PASSWORD]@]HOST[:PORT][/DB]` (`rediss://`, Redis over TLS, is
/// refused: the client is built without TLS), without a URL parser (the small binary has none): the scheme, a host, a port
/// that is a number, a database that is a number.
pub(crate) fn check_redis_url(url: &str) -> Result<()> {
    let shown = clawai_audit_ship::redacted(url);
    let example = "expected redis://HOST:PORT/DB, e.g. redis://127.0.0.1:6379/0";
    if url.starts_with("rediss://") {
        bail!(
            "--cluster (CLAWAI_CLUSTER) {shown}: this version speaks to Redis without TLS; use redis:// on loopback or \
             a private network (or a TLS tunnel such as stunnel)"
        );
    }
    let Some(rest) = url.strip_prefix("redis://") else {
        bail!("--cluster (CLAWAI_CLUSTER) {shown}: not a Redis URL; {example}");
    };
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let (host, port) = if let Some(bracketed) = host_port.strip_prefix('[') {
        let (host, after) = bracketed.split_once(']').unwrap_or((bracketed, ""));
        (host, after.strip_prefix(':'))
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    if host.is_empty() {
        bail!("--cluster (CLAWAI_CLUSTER) {shown}: the URL names no host; {example}");
    }
    if let Some(port) = port
        && port.parse::<u16>().map_or(true, |port| port == 0)
    {
        bail!("--cluster (CLAWAI_CLUSTER) {shown}: `{port}` is not a port; {example}");
    }
    let database = path.split(['?', '#']).next().unwrap_or_default();
    if !database.is_empty() && database.parse::<u32>().is_err() {
        bail!("--cluster (CLAWAI_CLUSTER) {shown}: `/{database}` is not a database number; {example}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_urls_are_checked() {
        for good in [
            "redis://127.0.0.1:6379/0",
            "redis://localhost",
            "redis://user:secret@redis.example:6380/2",
            "redis://[::1]:6379/1",
        ] {
            check_redis_url(good).unwrap_or_else(|error| panic!("{good}: {error}"));
        }
        for (bad, says) in [
            ("http://127.0.0.1:6379", "not a Redis URL"),
            ("127.0.0.1:6379", "not a Redis URL"),
            ("redis://:6379/0", "names no host"),
            ("redis://host:port/0", "is not a port"),
            ("redis://host:0", "is not a port"),
            ("redis://host:6379/zero", "not a database number"),
            ("rediss://host:6380/0", "without TLS"),
        ] {
            let error = check_redis_url(bad).expect_err(bad).to_string();
            assert!(error.contains(says), "{bad}: {error}");
        }
    }

    #[test]
    fn a_password_never_appears_in_a_message() {
        let error = check_redis_url("redis://me:hunter2@host:x/0").expect_err("bad port").to_string();
        assert!(!error.contains("hunter2") && error.contains("me:***@host"), "{error}");
    }

    #[test]
    fn a_replica_needs_an_id() {
        let arg = ClusterArg { url: Some("redis://127.0.0.1:6379/0".into()) };
        let error = arg.join(None).expect_err("needs an id").to_string();
        assert!(error.contains("--replica-id"), "{error}");
        assert!(ClusterArg { url: None }.join(Some("r1")).expect("nothing to join").is_none());
    }

    #[test]
    fn replica_ids_are_checked() {
        assert_eq!(parse_replica_id("r-1").as_deref(), Ok("r-1"));
        for bad in ["", "r.1", "r_1", "r 1"] {
            assert!(parse_replica_id(bad).is_err(), "{bad:?}");
        }
    }
}
