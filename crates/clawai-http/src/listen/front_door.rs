//! The front door of the endpoint: `Host` and `Origin` (DNS rebinding, 403 with how to
//! allow a refused site) and the bearer token (401).

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use clawai_protocol::origin::{HostPolicy, Refusal};
use clawai_protocol::reply;

use super::{Front, header_str, json_error};

impl Front {
    /// `Host` and `Origin` must name this endpoint (DNS rebinding): 403 otherwise.
    pub(super) fn check_host(&self, headers: &HeaderMap) -> Result<(), Box<Response>> {
        let host = header_str(headers, header::HOST.as_str());
        let origin = header_str(headers, header::ORIGIN.as_str());
        self.options.host_policy.check(host, origin).map_err(|refusal| {
            let hint = match &refusal {
                Refusal::ForeignOrigin(origin) => allow_origin_hint(&self.options.host_policy, origin),
                _ => String::new(),
            };
            tracing::warn!("refused an HTTP request: {refusal}{hint}");
            Box::new(json_error(StatusCode::FORBIDDEN, reply::INVALID_REQUEST, &format!("clawai: {refusal}{hint}")))
        })
    }

    pub(super) fn authorised(&self, headers: &HeaderMap) -> bool {
        let Some(expected) = &self.options.auth_token else { return true };
        let presented = header_str(headers, header::AUTHORIZATION.as_str())
            .and_then(|value| value.strip_prefix("Bearer ").or_else(|| value.strip_prefix("bearer ")))
            .unwrap_or_default();
        constant_time_eq(presented.as_bytes(), expected.as_bytes())
    }
}

/// How to let the site at `origin` call the endpoint: `--allowed-host` with its host name.
/// On an address beyond this machine that flag also decides which `Host` is answered
/// (no longer any), so the hint says to name those too.
fn allow_origin_hint(policy: &HostPolicy, origin: &str) -> String {
    let host = reqwest::Url::parse(origin)
        .ok()
        .filter(|url| matches!(url.scheme(), "http" | "https"))
        .and_then(|url| url.host_str().map(|host| host.trim_matches(['[', ']']).to_ascii_lowercase()));
    match (host, policy) {
        (None, _) => "; an Origin that names no web site (`null`, a file) cannot be allowed".into(),
        (Some(host), HostPolicy::SameOrigin) => format!(
            "; if that site should call this endpoint, start clawai with --allowed-host {host}, \
             and --allowed-host for each host name clients reach this endpoint at"
        ),
        (Some(host), _) => {
            format!("; if that site should call this endpoint, start clawai with --allowed-host {host}")
        }
    }
}

/// Compares a presented token with the expected one in time that does not depend on
/// where they differ.
fn constant_time_eq(presented: &[u8], expected: &[u8]) -> bool {
    let mut difference = presented.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ presented.get(index).copied().unwrap_or(0));
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_foreign_origin_is_told_how_to_allow_it() {
        let hint = allow_origin_hint(&HostPolicy::Loopback, "http://app.example:5173");
        assert!(hint.ends_with("--allowed-host app.example"), "{hint}");
        let hint = allow_origin_hint(&HostPolicy::SameOrigin, "https://[::1]");
        assert!(hint.contains("--allowed-host ::1,") && hint.contains("each host name"), "{hint}");
        assert!(allow_origin_hint(&HostPolicy::Loopback, "null").contains("cannot be allowed"));
    }

    #[test]
    fn tokens_compare_in_constant_time_and_exactly() {
        assert!(constant_time_eq(b"secret", b"secret"));
        assert!(!constant_time_eq(b"secreT", b"secret"));
        assert!(!constant_time_eq(b"secret-and-more", b"secret"));
        assert!(!constant_time_eq(b"", b"secret"));
    }
}
