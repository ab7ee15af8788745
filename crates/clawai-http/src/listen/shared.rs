//! Sessions shared by replicas (cluster mode, design §12): a new session is recorded in
//! the shared store before its `initialize` is forwarded; a request for a session this
//! replica does not hold (its owner died, or the balancer changed its mind) takes the
//! session over and resumes it, by sending its server the client's `initialize` again;
//! a replica that finds another took over its session lets its copy go and takes the
//! session back. Without a shared store none of this runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use clawai_protocol::reply;
use clawai_store::{Found, SessionClaims};

use super::{Front, Upstream, json_error, lock};
use crate::route::Route;
use crate::session::Session;

/// How long a resumed session's server has to answer the replayed `initialize`.
const RESUME_TIMEOUT: Duration = Duration::from_secs(10);

/// How often a replica asks whether the shared store answers (for `/healthz`; it also
/// gets the connection back soon after the store returns).
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// Whether the shared store answered when last asked: none, connected or unreachable.
#[derive(Debug)]
pub(super) struct StoreState(AtomicU8);

impl StoreState {
    /// Connected when the replica has a shared store (it connected at start-up), else
    /// none.
    pub(super) fn new(shared: bool) -> StoreState {
        StoreState(AtomicU8::new(if shared { 1 } else { 0 }))
    }

    /// What `/healthz` reports under `cluster`: null without a shared store.
    pub(super) fn word(&self) -> Option<&'static str> {
        match self.0.load(Ordering::SeqCst) {
            1 => Some("connected"),
            2 => Some("unreachable"),
            _ => None,
        }
    }

    fn set(&self, reachable: bool) {
        self.0.store(if reachable { 1 } else { 2 }, Ordering::SeqCst);
    }
}

fn unavailable(why: &str) -> Box<Response> {
    let mut response = json_error(
        StatusCode::SERVICE_UNAVAILABLE,
        reply::SERVER_UNAVAILABLE,
        &format!("clawai: the shared store (Redis) cannot be reached ({why}); try again shortly"),
    );
    response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    Box::new(response)
}

fn unknown_session() -> Box<Response> {
    Box::new(json_error(StatusCode::NOT_FOUND, reply::INVALID_REQUEST, "unknown or expired session: initialize again"))
}

impl Front {
    fn claims(&self) -> Option<&Arc<dyn SessionClaims>> {
        self.options.ask.stores.claims.as_ref()
    }

    /// Records new session `id` in the shared store, before its `initialize` is
    /// forwarded: a session with a child of its own cannot be resumed elsewhere.
    pub(super) async fn record_shared(&self, id: &str, initialize: &[u8]) -> Result<(), Box<Response>> {
        let Some(claims) = self.claims() else { return Ok(()) };
        let resumable = !matches!(self.upstream, Upstream::Command(_));
        claims.create(id, resumable.then_some(initialize)).await.map_err(|why| unavailable(&why.to_string()))
    }

    /// Session `id` ended here (closed by its client, idle too long): its record goes.
    pub(super) async fn end_shared(&self, id: &str) {
        if let Some(claims) = self.claims() {
            claims.end(id).await;
        }
    }

    /// The session a request names, in cluster mode: the one held here while it is still
    /// this replica's (or while the store cannot say: the owner goes on with what it
    /// holds), else taken over from the shared store.
    pub(super) async fn shared_session(&self, id: &str) -> Result<Arc<Session>, Box<Response>> {
        let claims = Arc::clone(self.claims().expect("called in cluster mode"));
        if let Some(session) = self.held(id) {
            match claims.still_owned(id).await {
                Ok(false) => self.let_go(id, claims.as_ref()),
                _ => return Ok(session),
            }
        }
        let _one_at_a_time = self.takeovers.lock().await;
        if let Some(session) = self.held(id) {
            return Ok(session); // another request took it over meanwhile
        }
        match claims.take_over(id).await {
            Ok(Found::Resumable { initialize }) => {
                tracing::info!("took session {id} over");
                self.resume(id, initialize).await.inspect_err(|_| claims.release(id))
            }
            Ok(Found::NotResumable | Found::Unknown) => Err(unknown_session()),
            Err(why) => Err(unavailable(&why.to_string())),
        }
    }

    /// The session held here under `id`, if its server is still there.
    fn held(&self, id: &str) -> Option<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        if sessions.get(id).is_some_and(|session| session.is_gone()) {
            // Its server is gone here: the claim goes too (the record stays, for a
            // replica that can resume it).
            sessions.remove(id);
            if let Some(claims) = self.claims() {
                claims.release(id);
            }
        }
        sessions.get(id).cloned()
    }

    /// Another replica took session `id` over: this replica's copy is closed (its
    /// record stays: it is the other replica's now).
    fn let_go(&self, id: &str, claims: &dyn SessionClaims) {
        tracing::info!("session {id} was taken over by another replica");
        claims.release(id);
        self.drop_session(id);
    }

    /// Opens session `id` here, taken over, and sends its server the client's
    /// `initialize` and `notifications/initialized` again (their answers are not the
    /// client's: it initialized long ago).
    async fn resume(&self, id: &str, initialize: Vec<u8>) -> Result<Arc<Session>, Box<Response>> {
        let session = self.open_session(false, Some(id)).await?;
        let route = Route::of(&initialize);
        let mut answers = session.register(&route);
        let request_id = route.id.clone().unwrap_or_default();
        let answered = match session.relay_from_client(initialize).await {
            Ok(Some(_refused)) => false,
            Ok(None) => tokio::time::timeout(RESUME_TIMEOUT, async {
                while let Some(message) = answers.recv().await {
                    if Route::of(&message).is_response() {
                        return true;
                    }
                }
                false
            })
            .await
            .unwrap_or(false),
            Err(()) => false,
        };
        session.unregister(&request_id);
        session.guard.forget_client_id(&request_id);
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
        if !answered || session.relay_from_client(initialized).await.is_err() {
            let grace = self.options.grace;
            tokio::spawn(async move { session.close(grace).await });
            return Err(Box::new(json_error(
                StatusCode::BAD_GATEWAY,
                reply::SERVER_UNAVAILABLE,
                "clawai: the session could not be resumed on this replica: its server did not answer initialize",
            )));
        }
        lock(&self.sessions).insert(id.to_owned(), Arc::clone(&session));
        Ok(session)
    }

    /// Asks the shared store whether it answers, every [`WATCH_EVERY`], for `/healthz`.
    pub(super) async fn watch_shared_store(self: Arc<Self>) {
        let Some(claims) = self.claims().cloned() else { return };
        loop {
            let reachable = claims.reachable().await;
            self.store_state.set(reachable);
            tokio::time::sleep(WATCH_EVERY).await;
        }
    }
}
