//! The options of an HTTP front, as the command line gives them: parsed in `clawai`,
//! served in `clawai-http` (`http_cmd` builds the front from them).

use clap::Args;

/// The options of an HTTP front (`--listen` and what goes with it), shared by `clawai
/// proxy` and `clawai gateway`.
#[derive(Debug, Args)]
pub(crate) struct ListenArgs {
    /// Serve Streamable HTTP on this address (`127.0.0.1:8080`, or a bare port for
    /// 127.0.0.1) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: Option<String>,
    /// The endpoint path with --listen.
    #[arg(long = "path", default_value = "/mcp", value_name = "PATH", requires = "listen")]
    pub(crate) endpoint_path: String,
    /// With --listen: clients must send `Authorization: Bearer <token>`, the token being
    /// the value of this environment variable.
    #[arg(long, value_name = "VAR", requires = "listen")]
    pub(crate) auth_token_env: Option<String>,
    /// With --listen: also answer to this host name (`Host`/`Origin`); repeatable. By
    /// default a loopback address answers only to localhost, 127.0.0.1 and [::1].
    #[arg(long = "allowed-host", value_name = "HOST", requires = "listen")]
    pub(crate) allowed_hosts: Vec<String>,
    /// With --listen: the origin clients use (`https://mcp.example.com`) when clawai sits
    /// behind a TLS-terminating proxy; names the endpoint in OAuth metadata.
    #[arg(long, value_name = "URL", requires = "listen")]
    pub(crate) public_url: Option<String>,
    /// With --listen: close sessions unused for this many seconds.
    #[arg(long, default_value_t = 1800.0, value_name = "SECONDS", requires = "listen")]
    pub(crate) session_idle: f64,
    /// With --listen: the most sessions at once.
    #[arg(long, default_value_t = 1000, value_name = "N", requires = "listen")]
    pub(crate) max_sessions: usize,
    /// With --listen: this replica's id behind a load balancer (letters, digits and -):
    /// every session id it issues starts with `ID.`, so the balancer routes a session's
    /// requests by that prefix (docs/cluster.md).
    #[arg(long, value_name = "ID", value_parser = crate::cluster::parse_replica_id, requires = "listen")]
    pub(crate) replica_id: Option<String>,
    /// With --listen: after SIGTERM or SIGINT, keep serving this many seconds while
    /// `/healthz` answers 503, so that a balancer stops sending new sessions first.
    #[arg(long, default_value_t = 0.0, value_name = "SECONDS", requires = "listen")]
    pub(crate) shutdown_drain: f64,
    #[command(flatten)]
    pub(crate) cluster: crate::cluster::ClusterArg,
}
