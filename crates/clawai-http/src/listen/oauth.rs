//! OAuth through the endpoint: an upstream's authorization challenge passed on with
//! `resource_metadata` naming clawai's metadata URL, and that URL serving the upstream's
//! Protected Resource Metadata (RFC 9728) with `resource` naming this endpoint.

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use clawai_protocol::reply;
use serde_json::{Value, json};

use super::{Front, PRM_PATH, Upstream, header_str, json_bytes, json_error, lock};
use crate::remote;
use crate::route::contains;

impl Front {
    /// The URL clients use for this endpoint, from the request's `Host`.
    pub(super) fn public_url(&self, headers: &HeaderMap, path: &str) -> String {
        match &self.options.public_origin {
            Some(origin) => format!("{}{path}", origin.trim_end_matches('/')),
            None => {
                let host = header_str(headers, header::HOST.as_str()).unwrap_or("localhost");
                format!("http://{host}{path}")
            }
        }
    }

    /// The upstream refused the request for want of authorization: the client gets the
    /// same HTTP status, with a `WWW-Authenticate` whose `resource_metadata` names
    /// clawai's metadata URL (which serves the upstream's, rewritten).
    pub(super) fn challenge(&self, headers: &HeaderMap, response: &[u8]) -> Option<Response> {
        if !matches!(self.upstream, Upstream::Remote(_)) || !contains(response, b"httpStatus") {
            return None;
        }
        let value: Value = serde_json::from_slice(response).ok()?;
        let data = value.pointer("/error/data")?;
        let status = match data.get("httpStatus")?.as_u64()? {
            401 => StatusCode::UNAUTHORIZED,
            403 => StatusCode::FORBIDDEN,
            _ => return None,
        };
        let metadata_url = self.public_url(headers, &format!("{PRM_PATH}{}", self.options.path));
        let upstream_challenge = data.get("wwwAuthenticate").and_then(Value::as_str).unwrap_or("Bearer");
        if let Some(learned) = resource_metadata(upstream_challenge) {
            *lock(&self.upstream_metadata) = Some(learned.to_string());
        }
        let challenge = rewrite_resource_metadata(upstream_challenge, &metadata_url);
        let mut reply = json_bytes(status, response.to_vec(), None);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            reply.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        Some(reply)
    }

    /// Protected Resource Metadata (RFC 9728) of the upstream, with `resource` naming
    /// this endpoint, so that clients ask for tokens for the URL they use.
    pub(super) async fn protected_resource_metadata(&self, headers: &HeaderMap) -> Response {
        let Upstream::Remote(remote) = &self.upstream else {
            return json_error(StatusCode::NOT_FOUND, reply::INVALID_REQUEST, "no protected resource metadata here");
        };
        let upstream = &remote.url;
        let mut candidates = Vec::new();
        if let Some(learned) = lock(&self.upstream_metadata).clone()
            && let Ok(url) = reqwest::Url::parse(&learned)
            && url.origin() == upstream.origin()
        {
            candidates.push(url);
        }
        for suffix in [upstream.path(), ""] {
            let suffix = if suffix == "/" { "" } else { suffix };
            if let Ok(url) = upstream.join(&format!("{PRM_PATH}{suffix}")) {
                candidates.push(url);
            }
        }
        for url in candidates {
            let Ok(response) = remote::shared_client().get(url).send().await else { continue };
            if !response.status().is_success() {
                continue;
            }
            let Ok(body) = response.bytes().await else { continue };
            let Ok(mut metadata) = serde_json::from_slice::<Value>(&body) else { continue };
            if !metadata.is_object() {
                continue;
            }
            metadata["resource"] = json!(self.public_url(headers, &self.options.path));
            return json_bytes(StatusCode::OK, metadata.to_string().into_bytes(), None);
        }
        json_error(
            StatusCode::NOT_FOUND,
            reply::INVALID_REQUEST,
            "the upstream publishes no protected resource metadata",
        )
    }
}

pub(super) async fn metadata(State(front): State<Arc<Front>>, headers: HeaderMap) -> Response {
    if let Err(refused) = front.check_host(&headers) {
        return *refused;
    }
    front.protected_resource_metadata(&headers).await
}

/// The `resource_metadata` URL of a `WWW-Authenticate` challenge.
fn resource_metadata(challenge: &str) -> Option<&str> {
    let start = challenge.find("resource_metadata=\"")? + "resource_metadata=\"".len();
    let length = challenge[start..].find('"')?;
    Some(&challenge[start..start + length])
}

/// The challenge with its `resource_metadata` replaced by (or given) `url`.
fn rewrite_resource_metadata(challenge: &str, url: &str) -> String {
    match resource_metadata(challenge) {
        Some(old) => {
            challenge.replacen(&format!("resource_metadata=\"{old}\""), &format!("resource_metadata=\"{url}\""), 1)
        }
        None if challenge.trim().eq_ignore_ascii_case("bearer") => format!("Bearer resource_metadata=\"{url}\""),
        None => format!("{challenge}, resource_metadata=\"{url}\""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_name_clawais_metadata() {
        let upstream = r#"Bearer error="invalid_token", resource_metadata="https://api.example.com/.well-known/oauth-protected-resource/mcp""#;
        assert_eq!(
            resource_metadata(upstream),
            Some("https://api.example.com/.well-known/oauth-protected-resource/mcp")
        );
        let rewritten =
            rewrite_resource_metadata(upstream, "http://localhost:8080/.well-known/oauth-protected-resource/mcp");
        assert_eq!(
            rewritten,
            r#"Bearer error="invalid_token", resource_metadata="http://localhost:8080/.well-known/oauth-protected-resource/mcp""#
        );
        assert_eq!(rewrite_resource_metadata("Bearer", "http://x/m"), r#"Bearer resource_metadata="http://x/m""#);
        assert_eq!(
            rewrite_resource_metadata(r#"Bearer realm="a""#, "http://x/m"),
            r#"Bearer realm="a", resource_metadata="http://x/m""#
        );
    }
}
