//! Serving over Streamable HTTP (MCP 2025-03-26 … 2025-11-25, and the stateless
//! 2026-07-28 revision) on one endpoint, `/mcp` by default.
//!
//! * `POST` carries one JSON-RPC message. A notification or response is answered `202`;
//!   a request with `application/json`, or, when the tool sends progress or log
//!   notifications and the client accepts `text/event-stream`, with a server-sent-event
//!   stream that carries them and then the response. A client that disconnects cancels
//!   its call.
//! * Handshake revisions: `initialize` opens a session (`Mcp-Session-Id`); later
//!   requests must carry it (missing: 400, unknown or idle too long: 404, so the client
//!   initialises again); `DELETE` ends it. There is no `GET` stream (405): these servers
//!   send nothing unprompted.
//! * 2026-07-28 requests need no session; their `MCP-Protocol-Version`, `Mcp-Method`
//!   and `Mcp-Name` headers must agree with the body (else 400, -32020).
//! * `Host` and `Origin` are checked against [`HostPolicy`] (403 otherwise): an endpoint
//!   on loopback answers only to `localhost`, `127.0.0.1` and `[::1]`.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! use clawai_sdk::SdkMcpServerImpl;
//! let server = SdkMcpServerImpl::new("my-server", "1.0.0");
//! server.serve_http("127.0.0.1:8080".parse().unwrap()).await
//! # }
//! ```

use clawai_protocol::methods;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use clawai_protocol::mirror::{HEADER_MISMATCH, METHOD_HEADER, Mirrored, NAME_HEADER, PROTOCOL_VERSION_HEADER};
use clawai_protocol::origin::HostPolicy;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::UnboundedReceiverStream;

use crate::abort::AbortOnDrop;
use crate::codes::{INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR};
use crate::version;
use crate::{MAX_MESSAGE_SIZE, SdkMcpServerImpl};

/// The session header of the handshake revisions.
pub use clawai_protocol::mirror::SESSION_HEADER;

/// How the HTTP endpoint behaves.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    /// The endpoint's path (default `/mcp`).
    pub path: String,
    /// Which `Host`/`Origin` values are accepted (default: loopback names only).
    pub host_policy: HostPolicy,
    /// How long a session may stay unused before it expires (default 30 minutes).
    pub session_idle_timeout: Duration,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            path: "/mcp".into(),
            host_policy: HostPolicy::Loopback,
            session_idle_timeout: Duration::from_secs(30 * 60),
        }
    }
}

struct Endpoint {
    server: Arc<SdkMcpServerImpl>,
    options: HttpOptions,
    /// Session id → last use.
    sessions: Mutex<HashMap<String, Instant>>,
}

impl SdkMcpServerImpl {
    /// Serves this server over Streamable HTTP on `addr` at `/mcp`, accepting the
    /// `Host`/`Origin` values that fit the address ([`HostPolicy::for_bind`]).
    pub async fn serve_http(self, addr: SocketAddr) -> std::io::Result<()> {
        let options = HttpOptions { host_policy: HostPolicy::for_bind(addr.ip()), ..HttpOptions::default() };
        let listener = tokio::net::TcpListener::bind(addr).await?;
        axum::serve(listener, router(Arc::new(self), options)).await
    }
}

/// The endpoint as an axum [`Router`], to serve on a listener of your own or to nest in
/// a larger application.
pub fn router(server: Arc<SdkMcpServerImpl>, options: HttpOptions) -> Router {
    let path = options.path.clone();
    let endpoint = Arc::new(Endpoint { server, options, sessions: Mutex::default() });
    Router::new()
        .route(&path, axum::routing::any(handle))
        .layer(DefaultBodyLimit::max(MAX_MESSAGE_SIZE))
        .with_state(endpoint)
}

async fn handle(State(endpoint): State<Arc<Endpoint>>, method: Method, headers: HeaderMap, body: Bytes) -> Response {
    let host = header_str(&headers, header::HOST.as_str());
    let origin = header_str(&headers, header::ORIGIN.as_str());
    if let Err(refusal) = endpoint.options.host_policy.check(host, origin) {
        return error(StatusCode::FORBIDDEN, INVALID_REQUEST, &refusal.to_string());
    }
    match method {
        Method::POST => endpoint.post(&headers, &body).await,
        Method::DELETE => endpoint.delete(&headers),
        _ => {
            let mut response = error(
                StatusCode::METHOD_NOT_ALLOWED,
                INVALID_REQUEST,
                "this endpoint takes POST (messages) and DELETE (end a session); it has no GET stream",
            );
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
            response
        }
    }
}

/// What a POST may proceed as.
enum Admission {
    /// A 2026-07-28 request: no session.
    Stateless,
    /// A handshake-era message in this session.
    InSession,
    /// `initialize`: a new session, whose id the response carries.
    NewSession(String),
}

impl Endpoint {
    async fn post(self: &Arc<Self>, headers: &HeaderMap, body: &Bytes) -> Response {
        let json_content = header_str(headers, header::CONTENT_TYPE.as_str())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"));
        if !json_content {
            return error(StatusCode::UNSUPPORTED_MEDIA_TYPE, INVALID_REQUEST, "Content-Type must be application/json");
        }
        let message: Value = match serde_json::from_slice(body) {
            Ok(message) => message,
            Err(parse) => return error(StatusCode::BAD_REQUEST, PARSE_ERROR, &format!("parse error: {parse}")),
        };
        if !message.is_object() {
            return error(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "one JSON-RPC message per POST; batches are not supported",
            );
        }
        let admission = match self.admit(headers, &message) {
            Ok(admission) => admission,
            Err(Refused(status, code, message)) => return error(status, code, &message),
        };
        let is_request = message.get("method").is_some() && message.get("id").is_some();
        if !is_request {
            self.server.handle_message(message, None).await;
            return StatusCode::ACCEPTED.into_response();
        }
        let accepts_stream =
            header_str(headers, header::ACCEPT.as_str()).is_some_and(|a| a.contains("text/event-stream"));
        let stateless = matches!(admission, Admission::Stateless);
        let mut response = self.answer(message, accepts_stream, stateless).await;
        if let Admission::NewSession(id) = admission {
            response.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(&id).expect("session ids are hex"));
        }
        response
    }

    fn admit(&self, headers: &HeaderMap, message: &Value) -> Result<Admission, Refused> {
        let header_version = header_str(headers, PROTOCOL_VERSION_HEADER);
        let mirrored = Mirrored {
            protocol_version: header_version,
            method: header_str(headers, METHOD_HEADER),
            name: header_str(headers, NAME_HEADER),
        };
        if mirrored.is_stateless(message) {
            mirrored.check(message).map_err(|why| Refused(StatusCode::BAD_REQUEST, HEADER_MISMATCH, why))?;
            return Ok(Admission::Stateless);
        }
        if let Some(version) = header_version
            && !version::ALL_VERSIONS.contains(&version)
        {
            return Err(Refused(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!("unsupported MCP-Protocol-Version `{version}`"),
            ));
        }
        let mut sessions = self.sessions.lock().expect("session map");
        let now = Instant::now();
        if message.get("method").and_then(Value::as_str) == Some(methods::INITIALIZE) {
            let idle = self.options.session_idle_timeout;
            sessions.retain(|_, last_use| now.duration_since(*last_use) < idle);
            let id = uuid::Uuid::new_v4().simple().to_string();
            sessions.insert(id.clone(), now);
            return Ok(Admission::NewSession(id));
        }
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return Err(Refused(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                "missing Mcp-Session-Id header: send initialize first, then the session id it returns".into(),
            ));
        };
        match sessions.get_mut(id) {
            Some(last_use) if now.duration_since(*last_use) < self.options.session_idle_timeout => {
                *last_use = now;
                Ok(Admission::InSession)
            }
            _ => {
                sessions.remove(id);
                Err(Refused(
                    StatusCode::NOT_FOUND,
                    INVALID_REQUEST,
                    "unknown or expired session: initialize again".into(),
                ))
            }
        }
    }

    fn delete(&self, headers: &HeaderMap) -> Response {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return error(StatusCode::BAD_REQUEST, INVALID_REQUEST, "DELETE needs the Mcp-Session-Id header");
        };
        match self.sessions.lock().expect("session map").remove(id) {
            Some(_) => StatusCode::OK.into_response(),
            None => error(StatusCode::NOT_FOUND, INVALID_REQUEST, "unknown or expired session"),
        }
    }

    /// Runs a request; answers with JSON, or with an event stream when notifications
    /// come before the response and the client accepts one.
    async fn answer(self: &Arc<Self>, message: Value, accepts_stream: bool, stateless: bool) -> Response {
        let (sender, receiver) = mpsc::unbounded_channel::<Value>();
        let server = Arc::clone(&self.server);
        let call = tokio::spawn(async move {
            if let Some(response) = server.handle_message(message, Some(sender.clone())).await {
                let _ = sender.send(response);
            }
        });
        let guard = AbortOnDrop(call.abort_handle());
        let mut events = UnboundedReceiverStream::new(receiver);
        loop {
            let Some(first) = events.next().await else {
                return error(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    INVALID_REQUEST,
                    "the request ended without a response",
                );
            };
            if is_response(&first) {
                let status =
                    if stateless && first.pointer("/error/code").and_then(Value::as_i64) == Some(METHOD_NOT_FOUND) {
                        StatusCode::NOT_FOUND
                    } else {
                        StatusCode::OK
                    };
                return (status, [(header::CONTENT_TYPE, "application/json")], first.to_string()).into_response();
            }
            if !accepts_stream {
                continue; // the client cannot receive notifications: only the response
            }
            let stream = tokio_stream::once(first).chain(events).map(move |message| {
                let _keep_call_alive_while_streaming = &guard;
                Ok::<_, Infallible>(Event::default().event("message").data(message.to_string()))
            });
            return Sse::new(stream).into_response();
        }
    }
}

/// Why a POST is refused before it reaches the server: HTTP status, JSON-RPC code,
/// message.
struct Refused(StatusCode, i64, String);

fn is_response(message: &Value) -> bool {
    message.get("method").is_none()
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    (status, [(header::CONTENT_TYPE, "application/json")], Body::from(body.to_string())).into_response()
}
