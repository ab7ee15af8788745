//! The client side of Streamable HTTP, behind a [`Link`]: `clawai proxy --upstream`.
//!
//! Each message is one POST (`Accept: application/json, text/event-stream`); a JSON
//! response is one message, an event stream is relayed event by event as it arrives.
//! Requests run concurrently; notifications and responses are sent in order. The
//! session id and negotiated protocol version the server gives are sent back on every
//! request; 2026-07-28 requests carry the mirrored `Mcp-Method`/`Mcp-Name` headers,
//! taken from the body the guard decided on, and a `tools/call` carries the
//! `Mcp-Param-{Name}` headers of the arguments its tool marks with `x-mcp-header` (learnt
//! from the `tools/list` results that pass through). After `initialize`, a GET stream carries
//! what the server sends unprompted, resumed with `Last-Event-ID` when it drops. When
//! the client is done the session is ended with DELETE.
//!
//! A server that answers the first POST with 404 or 405 is tried with the legacy
//! HTTP+SSE transport (2024-11-05): a GET stream whose `endpoint` event names the URL
//! to POST to. Unreachable servers are retried with backoff; a request that still
//! cannot be sent gets a JSON-RPC error that names the cause.

use clawai_protocol::methods;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use clawai_protocol::mirror::{
    METHOD_HEADER, NAME_HEADER, PARAM_HEADER_PREFIX, PROTOCOL_VERSION_HEADER, ParamHeader, SESSION_HEADER,
    STATELESS_VERSIONS, body_name, body_protocol_version, declared_param_headers, encode_header_value,
    param_header_values,
};
use clawai_protocol::reply;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, WWW_AUTHENTICATE};
use reqwest::{Client, Response, StatusCode, Url};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};

mod cause;
mod expiry;
mod open_requests;

pub use cause::error_chain;
mod options;

use cause::unreachable;
pub use options::RemoteOptions;

use crate::link::{FromServer, Link};
use crate::route::Route;

/// Waits between attempts to reach an upstream that refuses connections.
const BACKOFF: [Duration; 5] = [
    Duration::from_millis(100),
    Duration::from_millis(300),
    Duration::from_secs(1),
    Duration::from_secs(2),
    Duration::from_secs(4),
];

/// One HTTP client (connection pool, TLS roots) for every upstream session.
pub(crate) fn shared_client() -> Client {
    static CLIENT: std::sync::OnceLock<Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // No redirects: a token goes to the upstream it was issued for, nowhere else.
            Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("an HTTP client")
        })
        .clone()
}

/// Connects to a remote server. Nothing is sent until the first message.
pub fn connect(options: RemoteOptions, max_message: usize) -> Link {
    let (link, to_server, from_server) = Link::pair();
    let client = shared_client();
    let remote = Arc::new(Remote {
        client,
        options,
        max_message,
        from_server,
        state: Mutex::default(),
        established: AtomicBool::new(false),
        reinitializing: tokio::sync::Mutex::default(),
        reinitializations: AtomicU64::new(0),
        expiry_reported: AtomicBool::new(false),
    });
    tokio::spawn(remote.run(to_server));
    link
}

#[derive(Default)]
struct State {
    session: Option<String>,
    protocol_version: Option<String>,
    /// Where messages are POSTed on the legacy HTTP+SSE transport.
    legacy_endpoint: Option<Url>,
    standalone: Option<JoinHandle<()>>,
    /// The last response read from an event stream (initialize's is looked at).
    initialize_response: Option<Vec<u8>>,
    /// The mirrored arguments of each listed tool that declares some.
    param_headers: std::collections::HashMap<String, Vec<ParamHeader>>,
    /// Becomes true once the GET stream is open (or known to be unavailable).
    standalone_ready: Option<watch::Receiver<bool>>,
    /// The client's `initialize`, sent again to open a new session when one expires.
    initialize_request: Option<Vec<u8>>,
}

struct Remote {
    client: Client,
    options: RemoteOptions,
    max_message: usize,
    from_server: mpsc::Sender<FromServer>,
    state: Mutex<State>,
    /// The server has answered an HTTP request of this session.
    established: AtomicBool,
    /// Held while a new session replaces an expired one (`expiry`).
    reinitializing: tokio::sync::Mutex<()>,
    /// How many new sessions were opened in place of expired ones.
    reinitializations: AtomicU64,
    /// A lasting failure to open a new session was logged (and is not again).
    expiry_reported: AtomicBool,
}

/// A JSON message on one line: raw CR/LF can only be whitespace between tokens.
fn one_line(mut message: Vec<u8>) -> Vec<u8> {
    message.retain(|&byte| byte != b'\n' && byte != b'\r');
    message
}

impl Remote {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn run(self: Arc<Self>, mut to_server: mpsc::Receiver<Vec<u8>>) {
        let mut requests = JoinSet::new();
        let mut open = open_requests::OpenRequests::default();
        while let Some(message) = to_server.recv().await {
            let route = Route::of(&message);
            if route.is_request() {
                let stateless = route.id.clone().filter(|_| open_requests::is_stateless(&message));
                let remote = Arc::clone(&self);
                let post = requests.spawn(async move { remote.post(message, route).await });
                if let Some(id) = stateless {
                    open.track(id, post);
                }
            } else {
                open.cancel(&route, &message);
                self.post(message, route).await;
            }
            while requests.try_join_next().is_some() {}
        }
        // The client closed its side: answers already on their way get a moment to
        // arrive, as a stdio server gets its grace period.
        let _ =
            tokio::time::timeout(Duration::from_secs(2), async { while requests.join_next().await.is_some() {} }).await;
        requests.abort_all();
        self.end().await;
    }

    async fn push(&self, message: Vec<u8>) {
        let message = one_line(message);
        if crate::route::contains(&message, b"inputSchema") {
            self.learn_param_headers(&message);
        }
        let item = if message.len() > self.max_message {
            FromServer::Oversize { prefix: message[..message.len().min(4096)].to_vec(), length: message.len() }
        } else {
            FromServer::Message(message)
        };
        let _ = self.from_server.send(item).await;
    }

    /// Remembers which arguments each tool of a `tools/list` result mirrors into
    /// `Mcp-Param-*` headers.
    fn learn_param_headers(&self, message: &[u8]) {
        let Ok(value) = serde_json::from_slice::<Value>(message) else { return };
        let Some(tools) = value.pointer("/result/tools").and_then(Value::as_array) else { return };
        let mut state = self.state();
        for tool in tools {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { continue };
            let declared = tool.get("inputSchema").map(declared_param_headers).unwrap_or_default();
            if declared.is_empty() {
                state.param_headers.remove(name);
            } else {
                state.param_headers.insert(name.to_owned(), declared);
            }
        }
    }

    /// The client's request gets an error instead of a response.
    async fn fail(&self, route: &Route, why: &str) {
        self.fail_with(route, why, None).await;
    }

    /// [`Remote::fail`] with `data` on the error (the HTTP status of an authorization
    /// challenge, for the HTTP front to pass on).
    async fn fail_with(&self, route: &Route, why: &str, data: Option<Value>) {
        tracing::warn!("upstream {}: {why}", self.options.url);
        if route.is_request() {
            let error = reply::error(route.id.as_deref(), reply::SERVER_UNAVAILABLE, &format!("clawai: {why}"), data);
            self.push(error).await;
        }
    }

    fn headers(&self, message: Option<&Value>) -> HeaderMap {
        let mut headers = self.options.headers.clone();
        if !headers.contains_key(AUTHORIZATION)
            && let Some(client) = &self.options.client_authorization
            && let Some(value) = client.lock().unwrap_or_else(|p| p.into_inner()).clone()
        {
            headers.insert(AUTHORIZATION, value);
        }
        let state = self.state();
        if let Some(session) = state.session.as_deref().and_then(|s| HeaderValue::from_str(s).ok()) {
            headers.insert(SESSION_HEADER, session);
        }
        let stateless = message.and_then(body_protocol_version).filter(|v| STATELESS_VERSIONS.contains(v));
        if let (Some(version), Some(message)) = (stateless, message) {
            // Mirrored from the body the guard decided on, so they always agree.
            let method = message.get("method").and_then(Value::as_str);
            for (name, value) in
                [(PROTOCOL_VERSION_HEADER, Some(version)), (METHOD_HEADER, method), (NAME_HEADER, body_name(message))]
            {
                if let Some(value) = value.and_then(|v| HeaderValue::from_str(&encode_header_value(v)).ok()) {
                    headers.insert(name, value);
                }
            }
            // The `Mcp-Param-` names are the body's to fill: a configured header never
            // stands in for an argument.
            let configured: Vec<HeaderName> =
                headers.keys().filter(|name| name.as_str().starts_with(PARAM_HEADER_PREFIX)).cloned().collect();
            for name in configured {
                headers.remove(name);
            }
            let declared = match (method, body_name(message)) {
                (Some(methods::TOOLS_CALL), Some(tool)) => state.param_headers.get(tool),
                _ => None,
            };
            if let Some(declared) = declared {
                for (name, value) in param_header_values(declared, message.pointer("/params/arguments")) {
                    if let (Ok(name), Ok(value)) =
                        (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(&value))
                    {
                        headers.insert(name, value);
                    }
                }
            }
        } else if let Some(version) = state.protocol_version.as_deref().and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.insert(PROTOCOL_VERSION_HEADER, version);
        }
        headers
    }

    /// Sends. Once the server has answered once, retries with backoff while it refuses
    /// connections (it may be restarting); before that, a refusal is reported at once: a
    /// client waiting for its first answer learns in milliseconds that nothing listens.
    async fn send(&self, build: impl Fn() -> reqwest::RequestBuilder) -> Result<Response, reqwest::Error> {
        let mut attempt = 0;
        loop {
            match build().send().await {
                Err(error)
                    if error.is_connect() && attempt < BACKOFF.len() && self.established.load(Ordering::SeqCst) =>
                {
                    tokio::time::sleep(BACKOFF[attempt]).await;
                    attempt += 1;
                }
                result => {
                    if result.is_ok() {
                        self.established.store(true, Ordering::SeqCst);
                    }
                    return result;
                }
            }
        }
    }

    /// Sends a message; the session it was refused for, if the server refused the
    /// session rather than the message (nothing is answered then: the caller retries).
    pub(super) async fn post_once(self: &Arc<Self>, message: &[u8], route: &Route) -> Option<String> {
        if route.method.as_deref() == Some(methods::INITIALIZED) {
            // Servers send their first requests (roots/list…) as soon as they read this,
            // on the GET stream, and drop them when it is not open yet.
            let ready = self.state().standalone_ready.clone();
            if let Some(mut ready) = ready {
                let _ = tokio::time::timeout(Duration::from_secs(3), ready.wait_for(|open| *open)).await;
            }
        }
        let legacy = self.state().legacy_endpoint.clone();
        if let Some(endpoint) = legacy {
            self.post_legacy(endpoint, message.to_vec(), route).await;
            return None;
        }
        // Only a 2026-07-28 message needs its body read here (for the mirrored headers).
        let stateless = crate::route::contains(message, b"protocolVersion");
        let parsed: Option<Value> = if stateless { serde_json::from_slice(message).ok() } else { None };
        let headers = self.headers(parsed.as_ref());
        let initialize = route.method.as_deref() == Some(methods::INITIALIZE);
        if initialize {
            self.state().initialize_request = Some(message.to_vec());
        }
        let sent_session = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let sent = self
            .send(|| {
                self.client
                    .post(self.options.url.clone())
                    .headers(headers.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .header(ACCEPT, "application/json, text/event-stream")
                    .body(message.to_vec())
            })
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(error) => {
                self.fail(route, &unreachable(&self.options.url, &error)).await;
                return None;
            }
        };
        let status = response.status();
        if initialize && matches!(status, StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED) {
            // Not Streamable HTTP: try the legacy HTTP+SSE transport.
            match self.open_legacy().await {
                Ok(endpoint) => self.post_legacy(endpoint, message.to_vec(), route).await,
                Err(why) => self.fail(route, &format!("the upstream answered HTTP {status} and {why}")).await,
            }
            return None;
        }
        if let Some(session) = response.headers().get(SESSION_HEADER).and_then(|v| v.to_str().ok()) {
            self.state().session = Some(session.to_string());
        }
        if !status.is_success() {
            let challenge = response.headers().get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(str::to_owned);
            let body = response.text().await.unwrap_or_default();
            if let Some(sent) = sent_session
                && !initialize
                && expiry::refuses_session(status, &body)
            {
                return Some(sent);
            }
            let excerpt: String = body.chars().take(300).collect();
            let why = match &challenge {
                Some(challenge) => format!("the upstream answered HTTP {status} ({challenge}): {excerpt}"),
                None => format!("the upstream answered HTTP {status}: {excerpt}"),
            };
            // An authorization challenge travels on, so that an HTTP client can
            // discover the authorization server and retry with a token.
            let data = matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN)
                .then(|| serde_json::json!({"httpStatus": status.as_u16(), "wwwAuthenticate": challenge}));
            self.fail_with(route, &why, data).await;
            return None;
        }
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            let mut last_event_id = None;
            let answered = self.relay_events(response, route.id.as_deref(), initialize, &mut last_event_id).await;
            if answered && initialize {
                let response = self.state().initialize_response.take().unwrap_or_default();
                self.initialized(&response);
            }
            if !answered && route.is_request() {
                self.resume(route, last_event_id).await;
            }
        } else if content_type.starts_with("application/json") {
            match read_limited(response, self.max_message).await {
                Ok(body) => {
                    if initialize {
                        self.initialized(&body);
                    }
                    self.push(body).await;
                }
                Err(why) => self.fail(route, &why).await,
            }
        } else if route.is_request() {
            self.fail(route, &format!("the upstream answered HTTP {status} without a JSON-RPC response")).await;
        }
        None
    }

    /// After `initialize`: remember the negotiated version, open the GET stream.
    fn initialized(self: &Arc<Self>, response: &[u8]) {
        let version = serde_json::from_slice::<Value>(response)
            .ok()
            .and_then(|v| v.pointer("/result/protocolVersion").and_then(Value::as_str).map(str::to_owned));
        let mut state = self.state();
        if version.is_some() {
            state.protocol_version = version;
        }
        if state.standalone.is_none() {
            let (ready, ready_rx) = watch::channel(false);
            state.standalone_ready = Some(ready_rx);
            let remote = Arc::clone(self);
            state.standalone = Some(tokio::spawn(async move { remote.standalone_stream(ready).await }));
        }
    }

    /// Relays an event stream's messages as they come. True when the response with `id`
    /// was among them.
    /// `keep_response`: keep a copy of the response (for `initialize`'s). `last_event_id`:
    /// the id of the stream's last event, to resume this stream (and no other) with.
    async fn relay_events(
        &self,
        response: Response,
        id: Option<&str>,
        keep_response: bool,
        last_event_id: &mut Option<String>,
    ) -> bool {
        let mut events = bounded_events(response, self.max_message).eventsource();
        let mut answered = false;
        while let Some(event) = events.next().await {
            let Ok(event) = event else { break };
            if !event.id.is_empty() {
                *last_event_id = Some(event.id.clone());
            }
            if event.data.trim().is_empty() || !(event.event.is_empty() || event.event == "message") {
                continue; // priming event, or not a message
            }
            let message = event.data.into_bytes();
            let route = Route::of(&message);
            if id.is_some() && route.id.as_deref() == id && route.is_response() {
                answered = true;
                if keep_response {
                    self.state().initialize_response = Some(message.clone());
                }
            }
            self.push(message).await;
            if answered {
                break;
            }
        }
        answered
    }

    /// A request's stream ended before its response: resume it with `Last-Event-ID`
    /// where the server supports that, else tell the client.
    async fn resume(&self, route: &Route, mut last_event_id: Option<String>) {
        for wait in BACKOFF {
            let Some(last) = last_event_id.clone() else { break };
            tokio::time::sleep(wait).await;
            let headers = self.headers(None);
            let resumed = self
                .client
                .get(self.options.url.clone())
                .headers(headers)
                .header(ACCEPT, "text/event-stream")
                .header("last-event-id", last)
                .send()
                .await;
            match resumed {
                Ok(response) if response.status().is_success() => {
                    if self.relay_events(response, route.id.as_deref(), false, &mut last_event_id).await {
                        return;
                    }
                }
                _ => continue,
            }
        }
        self.fail(route, "the upstream closed the stream before answering").await;
    }

    /// The GET stream for messages the server sends unprompted; reopened (with
    /// `Last-Event-ID`) while the session lasts.
    async fn standalone_stream(self: Arc<Self>, ready: watch::Sender<bool>) {
        // However this ends, nobody should wait for it any longer.
        struct Ready(watch::Sender<bool>);
        impl Drop for Ready {
            fn drop(&mut self) {
                self.0.send_replace(true);
            }
        }
        let ready = Ready(ready);
        let mut failures = 0;
        let mut last_event_id = None;
        while !self.from_server.is_closed() && failures < BACKOFF.len() {
            let mut request = self
                .client
                .get(self.options.url.clone())
                .headers(self.headers(None))
                .header(ACCEPT, "text/event-stream");
            if let Some(last) = last_event_id.clone() {
                request = request.header("last-event-id", last);
            }
            let sent = request.send().await;
            match &sent {
                Ok(response) => tracing::debug!("upstream GET stream: HTTP {}", response.status()),
                Err(error) => tracing::debug!("upstream GET stream failed: {error}"),
            }
            match sent {
                Ok(response) if response.status() == StatusCode::METHOD_NOT_ALLOWED => return,
                Ok(response) if response.status() == StatusCode::NOT_FOUND => return,
                Ok(response) if response.status().is_success() => {
                    failures = 0;
                    ready.0.send_replace(true);
                    self.relay_events(response, None, false, &mut last_event_id).await;
                }
                _ => failures += 1,
            }
            tokio::time::sleep(BACKOFF[failures.min(BACKOFF.len() - 1)]).await;
        }
    }

    /// Opens the legacy transport: a GET event stream whose first `endpoint` event names
    /// the POST URL; its `message` events are the server's messages.
    async fn open_legacy(self: &Arc<Self>) -> Result<Url, String> {
        let response = self
            .send(|| {
                self.client
                    .get(self.options.url.clone())
                    .headers(self.options.headers.clone())
                    .header(ACCEPT, "text/event-stream")
            })
            .await
            .map_err(|error| format!("the legacy SSE transport is unreachable: {error}"))?;
        if !response.status().is_success() {
            return Err(format!("the legacy SSE transport answered HTTP {}", response.status()));
        }
        let (endpoint_tx, endpoint_rx) = oneshot::channel();
        let remote = Arc::clone(self);
        let base = self.options.url.clone();
        let reader = tokio::spawn(async move {
            let mut events = bounded_events(response, remote.max_message).eventsource();
            let mut endpoint_tx = Some(endpoint_tx);
            while let Some(Ok(event)) = events.next().await {
                if event.event == "endpoint" {
                    if let Some(sender) = endpoint_tx.take() {
                        let _ = sender.send(base.join(event.data.trim()).map_err(|e| e.to_string()));
                    }
                } else if !event.data.trim().is_empty() && (event.event.is_empty() || event.event == "message") {
                    remote.push(event.data.into_bytes()).await;
                }
            }
            let _ = remote.from_server.send(FromServer::Closed("the upstream closed its SSE stream".into())).await;
        });
        let endpoint = tokio::time::timeout(Duration::from_secs(10), endpoint_rx)
            .await
            .map_err(|_| "its SSE stream sent no `endpoint` event".to_string())?
            .map_err(|_| "its SSE stream ended before an `endpoint` event".to_string())?
            .map_err(|error| format!("its `endpoint` event is not a URL: {error}"))?;
        if endpoint.origin() != self.options.url.origin() {
            reader.abort();
            return Err(format!("its `endpoint` {endpoint} is on another origin; refusing to send messages there"));
        }
        let mut state = self.state();
        state.legacy_endpoint = Some(endpoint.clone());
        state.standalone = Some(reader);
        Ok(endpoint)
    }

    async fn post_legacy(&self, endpoint: Url, message: Vec<u8>, route: &Route) {
        let sent = self
            .send(|| {
                self.client
                    .post(endpoint.clone())
                    .headers(self.options.headers.clone())
                    .header(CONTENT_TYPE, "application/json")
                    .body(message.clone())
            })
            .await;
        match sent {
            Ok(response) if response.status().is_success() => {}
            Ok(response) => self.fail(route, &format!("the upstream answered HTTP {}", response.status())).await,
            Err(error) => self.fail(route, &unreachable(&endpoint, &error)).await,
        }
    }

    /// The client is done: stop the GET stream and end the session.
    async fn end(&self) {
        let (session, standalone, legacy) = {
            let mut state = self.state();
            (state.session.take(), state.standalone.take(), state.legacy_endpoint.is_some())
        };
        if let Some(task) = standalone {
            task.abort();
        }
        if let Some(session) = session
            && !legacy
        {
            let deleted = self
                .client
                .delete(self.options.url.clone())
                .headers(self.options.headers.clone())
                .header(SESSION_HEADER, session)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if let Err(error) = deleted {
                tracing::debug!("ending the upstream session failed: {error}");
            }
        }
    }
}

/// An event stream's bytes, cut off (with an error) when one event grows past `limit`:
/// the SSE parser buffers a whole event, so an upstream that never ends one must not
/// make clawai buffer without bound.
fn bounded_events(
    response: Response,
    limit: usize,
) -> impl futures_util::Stream<Item = Result<axum::body::Bytes, std::io::Error>> {
    let mut since_event_end = 0usize;
    response.bytes_stream().map(move |chunk| {
        let chunk = chunk.map_err(std::io::Error::other)?;
        // An event ends at a blank line: LF LF, CR CR or CR LF CR LF.
        let end = [&b"\n\n"[..], b"\r\r", b"\r\n\r\n"]
            .iter()
            .filter_map(|blank| chunk.windows(blank.len()).rposition(|w| w == *blank).map(|at| at + blank.len()))
            .max();
        match end {
            Some(end) => since_event_end = chunk.len() - end,
            None => since_event_end += chunk.len(),
        }
        if since_event_end > limit {
            return Err(std::io::Error::other(format!("an upstream event is larger than the {limit}-byte limit")));
        }
        Ok(chunk)
    })
}

/// A response body, refused beyond `limit` bytes.
async fn read_limited(response: Response, limit: usize) -> Result<Vec<u8>, String> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| format!("reading the upstream's response failed: {error}"))?;
        if body.len() + chunk.len() > limit {
            return Err(format!("the upstream's response is larger than the {limit}-byte limit"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_made_single_line() {
        assert_eq!(one_line(b"{\n  \"a\": \"x\\ny\"\r\n}".to_vec()), b"{  \"a\": \"x\\ny\"}".to_vec());
    }
}
