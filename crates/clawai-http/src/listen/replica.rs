//! What a balancer needs from one replica of the endpoint: session ids that name the
//! replica that issued them (so follow-ups can be routed by prefix), and `GET /healthz`,
//! which says whether the replica takes traffic (200) or is starting or draining (503).

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clawai_protocol::reply;
use ring::rand::{SecureRandom, SystemRandom};
use serde_json::json;

use super::{Front, json_error, lock};

/// Where `GET` tells whether the replica serves.
pub const HEALTH_PATH: &str = "/healthz";

/// Where a replica is in its life, as `/healthz` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lifecycle {
    /// Not accepting connections yet.
    Starting,
    /// Serving: a balancer may send it new sessions.
    Serving,
    /// Shutting down: sessions it has are still served for the drain period, but a
    /// balancer should send it nothing new.
    Draining,
}

impl Lifecycle {
    /// The word `/healthz` reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Starting => "starting",
            Lifecycle::Serving => "serving",
            Lifecycle::Draining => "draining",
        }
    }
}

/// The [`Lifecycle`] of a front, changed by its serving loop and read by `/healthz`.
#[derive(Debug)]
pub(super) struct LifecycleCell(AtomicU8);

impl LifecycleCell {
    pub(super) fn new() -> LifecycleCell {
        LifecycleCell(AtomicU8::new(Lifecycle::Starting as u8))
    }

    pub(super) fn set(&self, state: Lifecycle) {
        self.0.store(state as u8, Ordering::SeqCst);
    }

    pub(super) fn get(&self) -> Lifecycle {
        match self.0.load(Ordering::SeqCst) {
            value if value == Lifecycle::Serving as u8 => Lifecycle::Serving,
            value if value == Lifecycle::Draining as u8 => Lifecycle::Draining,
            _ => Lifecycle::Starting,
        }
    }
}

impl Front {
    /// Where the endpoint is in its life (what `/healthz` reports).
    pub fn lifecycle(&self) -> Lifecycle {
        self.lifecycle.get()
    }

    /// After `shutdown`: draining for the drain period (`/healthz` answers 503, open
    /// sessions are served, new ones refused), then `stop` tells the server to close.
    pub(super) async fn drain_then_stop(
        self: Arc<Self>,
        shutdown: impl Future<Output = ()>,
        stop: tokio::sync::watch::Sender<bool>,
    ) {
        shutdown.await;
        self.lifecycle.set(Lifecycle::Draining);
        if !self.options.drain.is_zero() {
            tracing::info!(
                "draining for {:?}: /healthz answers 503, open sessions are still served",
                self.options.drain
            );
            tokio::time::sleep(self.options.drain).await;
        }
        stop.send_replace(true);
    }

    /// While draining, `initialize` is answered 503: a session begun now would end with
    /// the replica in a moment, and a balancer retries a 503 on another replica
    /// (deploy/haproxy.cfg, deploy/nginx.conf).
    pub(super) fn refuse_while_draining(&self) -> Option<Response> {
        if self.lifecycle.get() != Lifecycle::Draining {
            return None;
        }
        let mut refused = json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            reply::SERVER_UNAVAILABLE,
            "clawai: this replica is shutting down and takes no new sessions; initialize again",
        );
        refused.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        Some(refused)
    }
}

/// Whether `id` can name a replica: ASCII letters, digits and `-`, at least one. A
/// balancer's configuration names the same ids, and a session id carries it before a
/// `.`, so nothing else may appear in it.
pub fn valid_replica_id(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-')
}

/// A new `Mcp-Session-Id`: with a replica id, `ID.` and 128 random bits in hex, so a
/// balancer can route the session's follow-ups by the prefix and nobody can guess one;
/// without, 32 hex digits of a random UUID, as clawai has always issued.
pub(super) fn mint_session_id(replica: Option<&str>) -> String {
    let Some(replica) = replica else {
        return uuid::Uuid::new_v4().simple().to_string();
    };
    let mut random = [0u8; 16];
    if SystemRandom::new().fill(&mut random).is_err() {
        // The system has no randomness to give: a v4 UUID's own source is the next best.
        random = *uuid::Uuid::new_v4().as_bytes();
    }
    let mut id = String::with_capacity(replica.len() + 1 + 32);
    id.push_str(replica);
    id.push('.');
    for byte in random {
        id.push_str(&format!("{byte:02x}"));
    }
    id
}

/// `GET /healthz`: 200 while serving, 503 while starting or draining; the body says
/// which, and which replica this is. Asked by balancers, which send neither the
/// endpoint's token nor a browser's `Host`: it is answered without either, and says
/// nothing about any session's content.
pub(super) async fn healthz(State(front): State<Arc<Front>>) -> Response {
    let state = front.lifecycle.get();
    let status = if state == Lifecycle::Serving { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    let body = json!({
        "status": state.as_str(),
        "replica": front.options.replica_id,
        "sessions": lock(&front.sessions).len(),
        // Whether the shared store answers: reported, never a reason for 503 (a Redis
        // outage must not take every replica out of the balancer at once).
        "cluster": front.store_state.word(),
    });
    (status, [(header::CONTENT_TYPE, "application/json"), (header::CACHE_CONTROL, "no-store")], body.to_string())
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_ids_are_letters_digits_and_dashes() {
        for good in ["r1", "replica-2", "A", "eu-west-1a"] {
            assert!(valid_replica_id(good), "{good}");
        }
        for bad in ["", "r.1", "r 1", "r_1", "r/1", "ré", "r1\n"] {
            assert!(!valid_replica_id(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_replica_issues_its_id_a_dot_and_128_random_bits() {
        let first = mint_session_id(Some("r2"));
        let (prefix, random) = first.split_once('.').expect("a dot after the replica id");
        assert_eq!(prefix, "r2");
        assert_eq!(random.len(), 32, "{first}");
        assert!(random.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()), "{first}");
        let second = mint_session_id(Some("r2"));
        assert_ne!(first, second, "two sessions got one id");
    }

    #[test]
    fn without_a_replica_id_session_ids_are_as_before() {
        let id = mint_session_id(None);
        assert_eq!(id.len(), 32, "{id}");
        assert!(!id.contains('.') && id.bytes().all(|b| b.is_ascii_hexdigit()), "{id}");
    }

    #[test]
    fn the_lifecycle_reads_back_what_was_set() {
        let cell = LifecycleCell::new();
        assert_eq!(cell.get(), Lifecycle::Starting);
        cell.set(Lifecycle::Serving);
        assert_eq!(cell.get(), Lifecycle::Serving);
        cell.set(Lifecycle::Draining);
        assert_eq!(cell.get(), Lifecycle::Draining);
    }
}
