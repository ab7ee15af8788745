//! Which `Host` and `Origin` headers an HTTP MCP endpoint accepts.
//!
//! A web page can make a browser send requests to `localhost` (DNS rebinding: the page's
//! own host name is re-pointed at 127.0.0.1). The specification therefore requires a
//! Streamable HTTP server to validate `Origin`, and a local one to bind loopback. The
//! check is written once here so that clawai's reverse proxy and the SDK's HTTP server
//! refuse the same requests.

use std::fmt;
use std::net::IpAddr;

/// The hosts an endpoint answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// Only `localhost`, `127.0.0.1` and `[::1]` (any port): the default for an endpoint
    /// bound to a loopback address.
    Loopback,
    /// These host names (lower case, without port), plus an `Origin` that names one of
    /// them.
    Named(Vec<String>),
    /// Any `Host`; an `Origin`, when present, must name the same host as `Host`. For an
    /// endpoint bound to a public address behind a reverse proxy that sets `Host`.
    SameOrigin,
}

/// Why a request was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// HTTP/1.1 requires `Host`; without it the check cannot be made.
    MissingHost,
    /// `Host` names a host this endpoint does not answer to.
    ForeignHost(String),
    /// `Origin` names a site other than this endpoint (or is `null`, or unparseable).
    ForeignOrigin(String),
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::MissingHost => write!(f, "the request has no Host header"),
            Refusal::ForeignHost(host) => write!(
                f,
                "Host `{host}` is not one this endpoint answers to (DNS rebinding protection); \
                 allow it with --allowed-host"
            ),
            Refusal::ForeignOrigin(origin) => {
                write!(f, "Origin `{origin}` is not allowed to call this endpoint (DNS rebinding protection)")
            }
        }
    }
}

impl HostPolicy {
    /// The policy that fits a bind address: [`HostPolicy::Loopback`] for loopback
    /// addresses, [`HostPolicy::SameOrigin`] otherwise.
    pub fn for_bind(ip: IpAddr) -> HostPolicy {
        if ip.is_loopback() { HostPolicy::Loopback } else { HostPolicy::SameOrigin }
    }

    /// Checks a request's `Host` and `Origin` header values.
    pub fn check(&self, host: Option<&str>, origin: Option<&str>) -> Result<(), Refusal> {
        let host_value = host.ok_or(Refusal::MissingHost)?;
        let host_name = hostname(host_value).ok_or_else(|| Refusal::ForeignHost(host_value.to_string()))?;
        if !self.allows(&host_name) {
            return Err(Refusal::ForeignHost(host_value.to_string()));
        }
        let Some(origin) = origin else { return Ok(()) };
        let refused = || Refusal::ForeignOrigin(origin.to_string());
        let authority = origin_authority(origin).ok_or_else(refused)?;
        let origin_name = hostname(authority).ok_or_else(refused)?;
        let same_site = match self {
            HostPolicy::SameOrigin => authority.eq_ignore_ascii_case(host_value),
            _ => self.allows(&origin_name),
        };
        if same_site { Ok(()) } else { Err(refused()) }
    }

    fn allows(&self, name: &str) -> bool {
        match self {
            HostPolicy::Loopback => is_loopback_name(name),
            HostPolicy::Named(names) => names.iter().any(|allowed| allowed == name),
            HostPolicy::SameOrigin => true,
        }
    }
}

/// `localhost`, `127.0.0.1` or `::1`.
fn is_loopback_name(name: &str) -> bool {
    name == "localhost" || name == "127.0.0.1" || name == "::1"
}

/// The host name of a `Host` header value or an origin's authority: lower case, without
/// port or brackets. `None` when it is not a well-formed host.
fn hostname(authority: &str) -> Option<String> {
    let authority = authority.trim();
    let name = if let Some(rest) = authority.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        if !(after.is_empty() || after.strip_prefix(':').is_some_and(is_port)) {
            return None;
        }
        inside
    } else {
        match authority.rsplit_once(':') {
            Some((name, port)) if is_port(port) => name,
            Some(_) => return None,
            None => authority,
        }
    };
    let name = name.strip_suffix('.').unwrap_or(name);
    let well_formed =
        !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'));
    well_formed.then(|| name.to_ascii_lowercase())
}

fn is_port(text: &str) -> bool {
    !text.is_empty() && text.len() <= 5 && text.bytes().all(|b| b.is_ascii_digit())
}

/// `http://localhost:3000` → `localhost:3000`; `None` for `null`, other schemes, paths.
fn origin_authority(origin: &str) -> Option<&str> {
    let rest = origin.strip_prefix("http://").or_else(|| origin.strip_prefix("https://"))?;
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    (!rest.is_empty() && !rest.contains(['/', '@', '?', '#'])).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_accepts_local_names_with_any_port() {
        let policy = HostPolicy::Loopback;
        for host in ["localhost", "localhost:3000", "127.0.0.1:8080", "[::1]:9", "LOCALHOST:1"] {
            assert_eq!(policy.check(Some(host), None), Ok(()), "{host}");
        }
        for origin in ["http://localhost:5173", "https://127.0.0.1", "http://[::1]:80"] {
            assert_eq!(policy.check(Some("localhost:3000"), Some(origin)), Ok(()), "{origin}");
        }
    }

    #[test]
    fn loopback_refuses_rebound_hosts_and_foreign_origins() {
        let policy = HostPolicy::Loopback;
        for host in ["evil.example", "evil.example:3000", "localhost.evil.example", "127.0.0.1.nip.io", "localhost:x"] {
            assert!(matches!(policy.check(Some(host), None), Err(Refusal::ForeignHost(_))), "{host}");
        }
        for origin in [
            "http://evil.example",
            "null",
            "file://",
            "http://localhost.evil.example",
            "http://localhost@evil.example",
            "http://evil.example/http://localhost",
        ] {
            assert!(
                matches!(policy.check(Some("localhost:3000"), Some(origin)), Err(Refusal::ForeignOrigin(_))),
                "{origin}"
            );
        }
        assert_eq!(policy.check(None, None), Err(Refusal::MissingHost));
    }

    #[test]
    fn named_hosts_and_same_origin() {
        let named = HostPolicy::Named(vec!["mcp.example.com".into()]);
        assert_eq!(named.check(Some("mcp.example.com:443"), Some("https://mcp.example.com")), Ok(()));
        assert!(named.check(Some("localhost"), None).is_err());
        let same = HostPolicy::SameOrigin;
        assert_eq!(same.check(Some("10.0.0.5:8080"), Some("http://10.0.0.5:8080")), Ok(()));
        assert_eq!(same.check(Some("10.0.0.5:8080"), None), Ok(()));
        assert!(same.check(Some("10.0.0.5:8080"), Some("http://evil.example")).is_err());
        assert_eq!(HostPolicy::for_bind("127.0.0.1".parse().unwrap()), HostPolicy::Loopback);
        assert_eq!(HostPolicy::for_bind("0.0.0.0".parse().unwrap()), HostPolicy::SameOrigin);
    }
}
