//! `clawai proxy --listen`: a guarded Streamable HTTP endpoint in front of a stdio
//! server (one child per session) or a remote one.
//!
//! Every POST body is one message, decided by the session's [`Guard`] exactly as the
//! stdio proxy decides a line; server messages come back through the same guard, on
//! the POST's event stream (progress, sampling, elicitation during a call), on the GET
//! stream, or as the POST's JSON response. Before any of that: `Host` and `Origin` are
//! checked (403; DNS rebinding), then the bearer token when one is configured (401).

use clawai_protocol::methods;
mod front_door;
mod oauth;
mod open;
mod replica;
mod shared;

pub use replica::{HEALTH_PATH, Lifecycle, valid_replica_id};

use std::collections::HashMap;
use std::convert::Infallible;
use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use clawai_protocol::mirror::{self, METHOD_HEADER, Mirrored, NAME_HEADER, PROTOCOL_VERSION_HEADER, SESSION_HEADER};
use clawai_protocol::origin::HostPolicy;
use clawai_protocol::reply;
use clawai_proxy::{AuditLog, Guard, PolicyHandle};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::json_response::json_bytes;
use crate::remote::RemoteOptions;
use crate::route::{Route, contains};
use crate::session::{Originals, Session};

/// How the endpoint behaves.
#[derive(Debug, Clone)]
pub struct ListenOptions {
    /// The endpoint's path (`/mcp`).
    pub path: String,
    /// Accepted `Host`/`Origin` values.
    pub host_policy: HostPolicy,
    /// When set, every request must carry `Authorization: Bearer <token>`.
    pub auth_token: Option<String>,
    /// Sessions unused this long are closed.
    pub session_idle: Duration,
    /// At most this many sessions at once (503 beyond).
    pub max_sessions: usize,
    /// How long a child gets to exit, before SIGTERM and again before SIGKILL.
    pub grace: Duration,
    /// The largest message accepted either way.
    pub max_message: usize,
    /// The server's name for `server` rules and the audit trail.
    pub server: Option<String>,
    /// The origin clients reach the endpoint at (`https://mcp.example.com`), when it is
    /// not `http://` + the `Host` they send (behind a TLS-terminating proxy).
    pub public_origin: Option<String>,
    /// How a call a `prompt` rule holds is asked about.
    pub ask: clawai_proxy::AskOptions,
    /// The server's pins, shared by every session (`None`: no pinning stage).
    pub pins: Option<std::sync::Arc<clawai_proxy::pins::Tracker>>,
    /// This replica's id (`--replica-id`, checked with [`valid_replica_id`]): every
    /// session id it issues starts with it and a `.`, for a balancer to route by.
    pub replica_id: Option<String>,
    /// After a shutdown signal, how long sessions are still served while `/healthz`
    /// answers 503, so that a balancer stops sending new ones before the port closes.
    pub drain: Duration,
    /// The sandbox each session's stdio server runs in (off by default).
    pub sandbox: clawai_proxy::sandbox::Request,
}

/// What the endpoint relays to.
#[derive(Debug, Clone)]
pub enum Upstream {
    /// A stdio server: this command, started once per session.
    Command(Vec<String>),
    /// A remote Streamable HTTP (or legacy SSE) server: one upstream session per session.
    Remote(RemoteOptions),
    /// A server in this process (the gateway): one link per session.
    InProcess(Arc<dyn crate::link::OpenLink>),
}

/// The guarded HTTP endpoint.
pub struct Front {
    options: ListenOptions,
    upstream: Upstream,
    policy: PolicyHandle,
    audit: AuditLog,
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    /// The sessions of stateless (2026-07-28) requests, opened on first use: one per
    /// principal, the `Authorization` the requests carry (none is one principal too), so
    /// that what one client sets in its session (a gateway skill) is never another's.
    stateless: tokio::sync::Mutex<HashMap<String, Arc<Session>>>,
    /// Decides (refuses) messages that arrive outside any session.
    sessionless: Guard,
    /// The upstream's metadata URL, as its last authorization challenge named it.
    upstream_metadata: Mutex<Option<String>>,
    /// Starting, serving or draining, as `/healthz` reports it.
    lifecycle: replica::LifecycleCell,
    /// Whether the shared store answered when last asked (cluster mode).
    store_state: shared::StoreState,
    /// One takeover at a time: two requests of a session this replica does not hold
    /// take it over once.
    takeovers: tokio::sync::Mutex<()>,
}

/// One message as a server-sent event: its line without the newline (a trailing newline
/// would be sent as a second, empty `data:` line).
fn sse_message(message: &[u8]) -> Event {
    let line = message.strip_suffix(b"\n").unwrap_or(message);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    Event::default().event("message").data(String::from_utf8_lossy(line))
}

/// Where RFC 9728 metadata lives, before the resource's path.
const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Front {
    /// An endpoint relaying to `upstream` under `policy`, recording to `audit`.
    pub fn new(options: ListenOptions, upstream: Upstream, policy: PolicyHandle, audit: AuditLog) -> Arc<Front> {
        let sessionless =
            Guard::new(policy.clone(), audit.clone(), options.server.clone()).with_ask_options(options.ask.clone());
        let sessionless = match &upstream {
            Upstream::Command(_) | Upstream::InProcess(_) => sessionless,
            Upstream::Remote(_) => sessionless.for_remote_server(),
        };
        let sessionless = match &options.pins {
            Some(pins) => sessionless.with_pins(Arc::clone(pins)),
            None => sessionless,
        };
        let store_state = shared::StoreState::new(options.ask.stores.claims.is_some());
        Arc::new(Front {
            options,
            upstream,
            policy,
            audit,
            sessions: Mutex::default(),
            stateless: tokio::sync::Mutex::default(),
            sessionless,
            upstream_metadata: Mutex::default(),
            lifecycle: replica::LifecycleCell::new(),
            store_state,
            takeovers: tokio::sync::Mutex::default(),
        })
    }

    /// The endpoint as an axum router.
    pub fn router(self: &Arc<Self>) -> Router {
        let metadata = axum::routing::get(oauth::metadata);
        Router::new()
            .route(&self.options.path, axum::routing::any(handle))
            .route(PRM_PATH, metadata.clone())
            .route(&format!("{PRM_PATH}{}", self.options.path), metadata)
            .route(HEALTH_PATH, axum::routing::get(replica::healthz))
            .layer(DefaultBodyLimit::max(self.options.max_message))
            .with_state(Arc::clone(self))
    }

    /// Serves until `shutdown` resolves and the drain period has passed (meanwhile
    /// `/healthz` answers 503), then closes every session (children are shut down with
    /// the grace period).
    pub async fn serve(
        self: Arc<Self>,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> io::Result<()> {
        let sweeper = tokio::spawn(Arc::clone(&self).sweep_idle_sessions());
        let watcher = tokio::spawn(Arc::clone(&self).watch_shared_store());
        let (stop, stopping) = tokio::sync::watch::channel(false);
        self.lifecycle.set(Lifecycle::Serving);
        tokio::spawn(Arc::clone(&self).drain_then_stop(shutdown, stop));
        let mut graceful_signal = stopping.clone();
        let graceful = axum::serve(listener, self.router()).with_graceful_shutdown(async move {
            let _ = graceful_signal.wait_for(|stop| *stop).await;
        });
        // Open event streams would keep a graceful shutdown waiting for ever: they get
        // a moment to finish, then the server stops.
        let mut deadline_signal = stopping;
        let deadline = async move {
            let _ = deadline_signal.wait_for(|stop| *stop).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        };
        let served = tokio::select! {
            served = graceful => served,
            () = deadline => Ok(()),
        };
        sweeper.abort();
        watcher.abort();
        self.close_all().await;
        served
    }

    async fn close_all(&self) {
        let sessions: Vec<Arc<Session>> = lock(&self.sessions).drain().map(|(_, session)| session).collect();
        let stateless: Vec<Arc<Session>> = self.stateless.lock().await.drain().map(|(_, session)| session).collect();
        let closing = sessions.into_iter().chain(stateless).map(|session| {
            let grace = self.options.grace;
            tokio::spawn(async move { session.close(grace).await })
        });
        for closed in closing.collect::<Vec<_>>() {
            let _ = closed.await;
        }
    }

    async fn sweep_idle_sessions(self: Arc<Self>) {
        let every = (self.options.session_idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        loop {
            tokio::time::sleep(every).await;
            let idle: Vec<(String, Arc<Session>)> = {
                let mut sessions = lock(&self.sessions);
                let expired: Vec<String> = sessions
                    .iter()
                    .filter(|(_, session)| session.idle_for(self.options.session_idle))
                    .map(|(id, _)| id.clone())
                    .collect();
                expired.into_iter().filter_map(|id| sessions.remove(&id).map(|session| (id, session))).collect()
            };
            for (id, session) in idle {
                self.end_shared(&id).await;
                tracing::info!(
                    "session {} expired after {:?} idle",
                    session.guard.session(),
                    self.options.session_idle
                );
                let grace = self.options.grace;
                tokio::spawn(async move { session.close(grace).await });
            }
        }
    }

    /// A new session for `initialize` (recorded in the shared store first, in cluster
    /// mode, so that another replica can resume it).
    async fn new_session(&self, initialize: &[u8]) -> Result<(String, Arc<Session>), Box<Response>> {
        if let Some(refused) = self.refuse_while_draining() {
            return Err(Box::new(refused));
        }
        if lock(&self.sessions).len() >= self.options.max_sessions {
            return Err(Box::new(json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                reply::SERVER_UNAVAILABLE,
                &format!("clawai: the limit of {} sessions is reached; try again later", self.options.max_sessions),
            )));
        }
        let id = replica::mint_session_id(self.options.replica_id.as_deref());
        self.record_shared(&id, initialize).await?;
        let session = match self.open_session(false, Some(&id)).await {
            Ok(session) => session,
            Err(refused) => {
                self.end_shared(&id).await;
                return Err(refused);
            }
        };
        lock(&self.sessions).insert(id.clone(), Arc::clone(&session));
        Ok((id, session))
    }

    /// The stateless session of the principal that sent `headers`.
    async fn stateless_session(&self, headers: &HeaderMap) -> Result<Arc<Session>, Box<Response>> {
        let principal =
            headers.get(header::AUTHORIZATION).map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        let principal = principal.unwrap_or_default();
        let mut sessions = self.stateless.lock().await;
        if let Some(session) = sessions.get(&principal).filter(|session| !session.is_gone()) {
            return Ok(Arc::clone(session));
        }
        sessions.retain(|_, session| !session.is_gone());
        if sessions.len() >= self.options.max_sessions {
            return Err(Box::new(json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                reply::SERVER_UNAVAILABLE,
                &format!(
                    "clawai: the limit of {} stateless clients (told apart by their Authorization) is reached",
                    self.options.max_sessions
                ),
            )));
        }
        let session = self.open_session(true, None).await?;
        sessions.insert(principal, Arc::clone(&session));
        Ok(session)
    }

    async fn existing_session(&self, headers: &HeaderMap) -> Result<(String, Arc<Session>), Box<Response>> {
        let Some(id) = header_str(headers, SESSION_HEADER) else {
            return Err(Box::new(json_error(
                StatusCode::BAD_REQUEST,
                reply::INVALID_REQUEST,
                "missing Mcp-Session-Id header: send initialize first, then the session id it returns",
            )));
        };
        if self.options.ask.stores.claims.is_some() {
            return self.shared_session(id).await.map(|session| (id.to_owned(), session));
        }
        let mut sessions = lock(&self.sessions);
        if sessions.get(id).is_some_and(|session| session.is_gone()) {
            // Its server exited: 404 makes the client initialise again, with a new one.
            sessions.remove(id);
        }
        match sessions.get(id) {
            Some(session) => Ok((id.to_string(), Arc::clone(session))),
            None => Err(Box::new(json_error(
                StatusCode::NOT_FOUND,
                reply::INVALID_REQUEST,
                "unknown or expired session: initialize again",
            ))),
        }
    }

    async fn post(self: &Arc<Self>, headers: &HeaderMap, body: Bytes) -> Response {
        let json_content = header_str(headers, header::CONTENT_TYPE.as_str())
            .is_some_and(|value| value.trim_start().to_ascii_lowercase().starts_with("application/json"));
        if !json_content {
            return json_error(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                reply::INVALID_REQUEST,
                "Content-Type must be application/json",
            );
        }
        let first = body.iter().find(|byte| !byte.is_ascii_whitespace());
        if first == Some(&b'[')
            && let Ok((_, session)) = self.existing_session(headers).await
            && session.guard.takes_batches()
        {
            session.touch();
            return crate::batch::post(session, &body).await;
        }
        if first != Some(&b'{') {
            // Not one JSON-RPC message (a batch, not JSON…): refused, in the guard's words.
            return match self.sessionless.from_client(&body) {
                clawai_proxy::Verdict::Reply(reply) => json_bytes(StatusCode::BAD_REQUEST, reply, None),
                _ => json_error(StatusCode::BAD_REQUEST, reply::INVALID_REQUEST, "one JSON-RPC message per POST"),
            };
        }
        let mirrored = Mirrored {
            protocol_version: header_str(headers, PROTOCOL_VERSION_HEADER),
            method: header_str(headers, METHOD_HEADER),
            name: header_str(headers, NAME_HEADER),
        };
        // Only a stateless (2026-07-28) request needs the body parsed here; which era a
        // request is only routes it: the guard decides on the body either way.
        let may_be_stateless = mirrored.protocol_version.is_some_and(|v| mirror::STATELESS_VERSIONS.contains(&v))
            || contains(&body, b"protocolVersion");
        let message: Option<Value> =
            if may_be_stateless || mirrored.names_anything() { serde_json::from_slice(&body).ok() } else { None };
        let stateless = message.as_ref().is_some_and(|message| mirrored.is_stateless(message));
        // Headers a router may act on say what the body says, whatever the revision.
        let checked = match &message {
            Some(message) if stateless => mirrored.check(message),
            Some(message) if mirrored.names_anything() => mirrored.check_present(message),
            _ => Ok(()),
        };
        if let (Err(why), Some(message)) = (checked, &message) {
            let id = message.get("id").filter(|id| id.is_string() || id.is_number()).map(Value::to_string);
            let error = self.sessionless.refuse_header_mismatch(id.as_deref(), &why, body.len());
            return json_bytes(StatusCode::BAD_REQUEST, error, None);
        }
        let route = Route::of(&body);
        let (new_session, session) = if stateless {
            match self.stateless_session(headers).await {
                Ok(session) => (None, session),
                Err(response) => return *response,
            }
        } else if route.method.as_deref() == Some(methods::INITIALIZE) {
            match self.new_session(&body).await {
                Ok((id, session)) => (Some(id), session),
                Err(response) => return *response,
            }
        } else {
            match self.existing_session(headers).await {
                Ok((_, session)) => (None, session),
                Err(response) => return *response,
            }
        };
        session.touch();
        if session.remaps_ids && !route.is_request() {
            // The shared stateless session takes requests only: a notification (a cancel)
            // or a response could otherwise reach another client's request.
            tracing::debug!("dropped a {:?} that is not a request in the stateless session", route.method);
            return StatusCode::ACCEPTED.into_response();
        }
        if let (Some(slot), Some(authorization)) = (&session.client_authorization, headers.get(header::AUTHORIZATION)) {
            *lock(slot) = Some(authorization.clone());
        }

        let (bytes, route, original_id) =
            if let (true, true, Some(mut message)) = (session.remaps_ids, route.is_request(), message) {
                let original = session.remap_id(&mut message);
                let bytes = serde_json::to_vec(&message).expect("a JSON value encodes");
                let remapped = Route::of(&bytes);
                if let (Some(replaced), Some(sent)) = (&remapped.id, &route.id) {
                    session.guard.client_sent_id(replaced, sent);
                }
                (bytes, remapped, original)
            } else {
                (body.to_vec(), route, None)
            };
        let waiting = route.is_request().then(|| session.register(&route));
        let request_id = route.id.clone().unwrap_or_default();
        match session.relay_from_client(bytes).await {
            Ok(None) => {}
            Ok(Some(reply)) => {
                session.unregister(&request_id);
                session.guard.forget_client_id(&request_id);
                return json_bytes(StatusCode::OK, restore(reply, original_id.as_ref()), new_session.as_deref());
            }
            Err(()) => {
                session.unregister(&request_id);
                session.guard.forget_client_id(&request_id);
                let error =
                    reply::error(route.id.as_deref(), reply::SERVER_UNAVAILABLE, "clawai: the server is gone", None);
                return json_bytes(StatusCode::OK, restore(error, original_id.as_ref()), new_session.as_deref());
            }
        }
        let Some(mut stream) = waiting else {
            return StatusCode::ACCEPTED.into_response();
        };
        let cancel = CancelOnDrop { session: Arc::clone(&session), id: request_id, armed: true };
        let accepts_events =
            header_str(headers, header::ACCEPT.as_str()).is_some_and(|a| a.contains("text/event-stream"));
        loop {
            let Some(first) = stream.recv().await else {
                cancel.disarm();
                let error =
                    reply::error(route.id.as_deref(), reply::SERVER_UNAVAILABLE, "clawai: the server is gone", None);
                return json_bytes(StatusCode::OK, restore(error, original_id.as_ref()), new_session.as_deref());
            };
            if Route::of(&first).is_response() {
                cancel.disarm();
                if let Some(challenge) = self.challenge(headers, &first) {
                    // Unauthorised: the session that initialize opened is not kept.
                    if let Some(id) = &new_session {
                        self.drop_session(id);
                        self.end_shared(id).await;
                    }
                    return challenge;
                }
                return json_bytes(StatusCode::OK, restore(first, original_id.as_ref()), new_session.as_deref());
            }
            if !accepts_events {
                continue; // this client reads only the response
            }
            let events = event_stream(first, stream, cancel, original_id);
            let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
            if let Some(id) = new_session {
                response.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(&id).expect("hex session id"));
            }
            return response;
        }
    }

    async fn get(&self, headers: &HeaderMap) -> Response {
        if header_str(headers, PROTOCOL_VERSION_HEADER).is_some_and(|v| mirror::STATELESS_VERSIONS.contains(&v)) {
            return method_not_allowed();
        }
        let accepts_events =
            header_str(headers, header::ACCEPT.as_str()).is_some_and(|a| a.contains("text/event-stream"));
        if !accepts_events {
            return json_error(
                StatusCode::NOT_ACCEPTABLE,
                reply::INVALID_REQUEST,
                "GET opens an event stream: Accept text/event-stream",
            );
        }
        let (_, session) = match self.existing_session(headers).await {
            Ok(found) => found,
            Err(response) => return *response,
        };
        session.touch();
        let messages = ReceiverStream::new(session.open_standalone());
        let events = tokio_stream::StreamExt::map(messages, |message| Ok::<_, Infallible>(sse_message(&message)));
        Sse::new(events).keep_alive(KeepAlive::default()).into_response()
    }

    async fn delete(&self, headers: &HeaderMap) -> Response {
        let (id, _) = match self.existing_session(headers).await {
            Ok(found) => found,
            Err(response) => return *response,
        };
        self.drop_session(&id);
        self.end_shared(&id).await;
        StatusCode::OK.into_response()
    }

    fn drop_session(&self, id: &str) {
        let removed = lock(&self.sessions).remove(id);
        if let Some(session) = removed {
            let grace = self.options.grace;
            tokio::spawn(async move { session.close(grace).await });
        }
    }
}

async fn handle(State(front): State<Arc<Front>>, method: Method, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(refused) = front.check_host(&headers) {
        return *refused;
    }
    if !front.authorised(&headers) {
        let mut response = json_error(
            StatusCode::UNAUTHORIZED,
            reply::INVALID_REQUEST,
            "clawai: this endpoint needs `Authorization: Bearer <token>` (the token clawai was started with)",
        );
        response.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"clawai\""));
        return response;
    }
    match method {
        Method::POST => front.post(&headers, body).await,
        Method::GET => front.get(&headers).await,
        Method::DELETE => front.delete(&headers).await,
        _ => method_not_allowed(),
    }
}

/// The event stream of one POST: the server's messages for it, ending with its response.
fn event_stream(
    first: Vec<u8>,
    rest: mpsc::Receiver<Vec<u8>>,
    cancel: CancelOnDrop,
    original_id: Option<Originals>,
) -> impl tokio_stream::Stream<Item = Result<Event, Infallible>> {
    struct State {
        first: Option<Vec<u8>>,
        rest: mpsc::Receiver<Vec<u8>>,
        cancel: Option<CancelOnDrop>,
        original_id: Option<Originals>,
    }
    let state = State { first: Some(first), rest, cancel: Some(cancel), original_id };
    futures_util::stream::unfold(state, |mut state| async move {
        state.cancel.as_ref()?; // the response went out: the stream is over
        let message = match state.first.take() {
            Some(message) => message,
            None => state.rest.recv().await?,
        };
        if Route::of(&message).is_response()
            && let Some(cancel) = state.cancel.take()
        {
            cancel.disarm();
        }
        let message = restore(message, state.original_id.as_ref());
        let event = sse_message(&message);
        Some((Ok(event), state))
    })
}

/// Cancels a request whose client went away before its response: the server gets
/// `notifications/cancelled` (through the guard, so it is audited like any message).
struct CancelOnDrop {
    session: Arc<Session>,
    id: String,
    armed: bool,
}

impl CancelOnDrop {
    fn disarm(mut self) {
        self.armed = false;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        // Answered, or given up: the audit trail has what it shows for this id.
        self.session.guard.forget_client_id(&self.id);
        if !self.armed {
            return;
        }
        self.session.unregister(&self.id);
        let session = Arc::clone(&self.session);
        let cancel = format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/cancelled","params":{{"requestId":{},"reason":"the client disconnected"}}}}"#,
            self.id
        );
        tokio::spawn(async move {
            let _ = session.relay_from_client(cancel.into_bytes()).await;
        });
    }
}

/// Puts a stateless client's own id and progress token back.
fn restore(message: Vec<u8>, originals: Option<&Originals>) -> Vec<u8> {
    match originals {
        Some(originals) => originals.restore(message),
        None => message,
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|value| value.to_str().ok())
}

fn json_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    json_bytes(status, body.to_string().into_bytes(), None)
}

fn method_not_allowed() -> Response {
    let mut response =
        json_error(StatusCode::METHOD_NOT_ALLOWED, reply::INVALID_REQUEST, "use POST, GET (event stream) or DELETE");
    response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("POST, GET, DELETE"));
    response
}
