//! An upstream session that ends under its client: the server restarted, or dropped an
//! idle session. It answers the session's next request with 404 (the specification), or
//! with 400 and a body about the session (the TypeScript SDK's examples: "No valid
//! session ID provided"; the Python SDK: "Missing session ID"; others: "Session not
//! found", "Invalid session ID"). Such a request never reached the server: a new session
//! is opened with the `initialize` the client sent first, and the request is sent again,
//! once. A server that keeps refusing is reported once (until a session works again), and
//! each request it refuses gets an error that says so.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use clawai_protocol::mirror::{PROTOCOL_VERSION_HEADER, SESSION_HEADER};
use clawai_protocol::reply;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, CONTENT_TYPE};
use serde_json::{Value, json};

use super::{Remote, bounded_events, read_limited};
use crate::route::Route;

/// The words of a 400 answer that is about the session, not the request: each phrase
/// next to "session" in what common server SDKs answer for an unknown or missing one.
const SESSION_REFUSALS: [&str; 8] =
    ["missing", "no valid", "not found", "unknown", "invalid", "expired", "required", "terminated"];

/// Whether an answer of `status` with `body`, to a request that carried a session id,
/// refuses the session rather than the request.
pub(super) fn refuses_session(status: StatusCode, body: &str) -> bool {
    match status {
        StatusCode::NOT_FOUND => true,
        StatusCode::BAD_REQUEST => {
            let body = body.to_ascii_lowercase();
            body.contains("session") && SESSION_REFUSALS.iter().any(|words| body.contains(words))
        }
        _ => false,
    }
}

impl Remote {
    /// Sends a message. One the server refuses for its session (which expired) never
    /// reached it: it is sent again, once, in a new session.
    pub(super) async fn post(self: &Arc<Self>, message: Vec<u8>, route: Route) {
        let Some(expired) = self.post_once(&message, &route).await else { return };
        match self.reinitialize(&expired).await {
            Ok(()) => match self.post_once(&message, &route).await {
                None => self.session_works(),
                Some(_) => self.session_lost(&route, "the server refused the new session too").await,
            },
            Err(why) => self.session_lost(&route, &why).await,
        }
    }

    /// Opens a new session in place of `expired`. Requests refused at the same time wait
    /// for one attempt: when another already replaced `expired`, there is nothing to do.
    pub(super) async fn reinitialize(self: &Arc<Self>, expired: &str) -> Result<(), String> {
        let _one_at_a_time = self.reinitializing.lock().await;
        let initialize = {
            let state = self.state();
            if state.session.as_deref() != Some(expired) {
                return Ok(());
            }
            state.initialize_request.clone()
        };
        let Some(initialize) = initialize else {
            return Err("the client's `initialize` went through no session of this link".into());
        };
        let mut request: Value =
            serde_json::from_slice(&initialize).map_err(|error| format!("its `initialize` is not JSON: {error}"))?;
        let id = format!("clawai-reinitialize-{}", self.reinitializations.fetch_add(1, Ordering::Relaxed) + 1);
        request["id"] = json!(id);
        let mut headers = self.headers(None);
        headers.remove(SESSION_HEADER);
        headers.remove(PROTOCOL_VERSION_HEADER);
        let response = self
            .client
            .post(self.options.url.clone())
            .headers(headers)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(request.to_string())
            .send()
            .await
            .map_err(|error| super::unreachable(&self.options.url, &error))?;
        let status = response.status();
        if !status.is_success() {
            let body: String = response.text().await.unwrap_or_default().chars().take(300).collect();
            return Err(format!("`initialize` was answered HTTP {status}: {body}"));
        }
        let session = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let answer = self.answer_to(response, &id).await?;
        if let Some(error) = answer.get("error") {
            return Err(format!("`initialize` was answered with an error: {error}"));
        }
        let standalone = {
            let mut state = self.state();
            state.session = session;
            state.standalone.take()
        };
        // The old session's GET stream ended with it; the new session gets its own.
        if let Some(task) = standalone {
            task.abort();
        }
        self.initialized(answer.to_string().as_bytes());
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        let sent = self
            .client
            .post(self.options.url.clone())
            .headers(self.headers(None))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(&initialized[..])
            .send()
            .await;
        if let Err(error) = sent {
            tracing::debug!("upstream {}: notifications/initialized: {error}", self.options.url);
        }
        if self.expiry_reported.load(Ordering::SeqCst) {
            tracing::debug!("upstream {}: another new session was opened", self.options.url);
        } else {
            tracing::info!("upstream {}: its session expired; a new one was opened", self.options.url);
        }
        Ok(())
    }

    /// The answer with `id` in a response (JSON, or an event stream whose other messages
    /// are passed on to the client as usual).
    async fn answer_to(&self, response: reqwest::Response, id: &str) -> Result<Value, String> {
        let is_stream = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().starts_with("text/event-stream"));
        if !is_stream {
            let body = read_limited(response, self.max_message).await?;
            return serde_json::from_slice(&body).map_err(|error| format!("`initialize` got no JSON answer: {error}"));
        }
        let mut events = bounded_events(response, self.max_message).eventsource();
        while let Some(Ok(event)) = events.next().await {
            let Ok(message) = serde_json::from_str::<Value>(&event.data) else { continue };
            if message.get("id").and_then(Value::as_str) == Some(id) && message.get("method").is_none() {
                return Ok(message);
            }
            self.push(event.data.into_bytes()).await;
        }
        Err("the stream of `initialize` ended before its answer".into())
    }

    /// A request went through in a new session: a lasting failure told of is over.
    pub(super) fn session_works(&self) {
        if self.expiry_reported.swap(false, Ordering::SeqCst) {
            tracing::info!("upstream {}: a new session works again", self.options.url);
        }
    }

    /// A request refused for its session, and no new session to send it in: its client
    /// gets an error saying so; the log says it once, until a session works again.
    pub(super) async fn session_lost(&self, route: &Route, why: &str) {
        let why = format!(
            "the upstream session expired and a new one could not be opened: {why}; \
             each later request tries again (check that the server at {} is up)",
            self.options.url
        );
        if !self.expiry_reported.swap(true, Ordering::SeqCst) {
            tracing::warn!("upstream {}: {why}", self.options.url);
        }
        if route.is_request() {
            let error = reply::error(route.id.as_deref(), reply::SERVER_UNAVAILABLE, &format!("clawai: {why}"), None);
            self.push(error).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_of_common_sdks_to_an_unknown_session_refuse_the_session() {
        for body in [
            r#"{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: No valid session ID provided"},"id":null}"#,
            r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: Missing session ID"}}"#,
            "Invalid session ID",
            r#"{"error":{"message":"Session not found"}}"#,
        ] {
            assert!(refuses_session(StatusCode::BAD_REQUEST, body), "{body}");
        }
        assert!(refuses_session(StatusCode::NOT_FOUND, ""));
    }

    #[test]
    fn other_refusals_are_the_requests_own() {
        assert!(!refuses_session(StatusCode::BAD_REQUEST, r#"{"error":{"message":"Parse error: invalid JSON"}}"#));
        assert!(!refuses_session(StatusCode::BAD_REQUEST, "Unsupported protocol version"));
        assert!(!refuses_session(StatusCode::FORBIDDEN, "session not found"));
        assert!(!refuses_session(StatusCode::INTERNAL_SERVER_ERROR, "no valid session"));
    }
}
