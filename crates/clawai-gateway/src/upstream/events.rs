//! What a server reports to the gateway, and what it is given at start to do so.
//!
//! A server knows no session and no core: it is given what it reads (the policy, the
//! audit trail, the options) in its [`Context`], and it reports what happened as typed
//! events to the [`Reports`] of that context, which the gateway's hub implements: the hub
//! decides what each event means (the catalog is rebuilt, an answer goes to the session
//! whose key the call carries, a log to every session). So the modules below the
//! sessions never call back up into them, and nothing points back.

use std::collections::HashMap;
use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;

use clawai_proxy::{AuditLog, PolicyHandle};
use serde_json::Value;

use super::{CallFrom, Upstream};
use crate::options::GatewayOptions;
use crate::registry::SessionKey;

/// What every server of a gateway is given at start.
pub(crate) struct Context {
    /// The policy in force (replaced on reload): the gateway's own traffic with the
    /// server is decided by it, and it says whether pinning is on.
    pub policy: PolicyHandle,
    /// Where the gateway's own traffic with the server is recorded.
    pub audit: AuditLog,
    /// How the gateway runs.
    pub options: Arc<GatewayOptions>,
    /// Where the server reports what happened.
    pub reports: Arc<dyn Reports>,
}

/// A future the hub gives back for an event it handles asynchronously.
pub(crate) type Handled<'a, T = ()> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The sessions a message of the server is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Audience {
    /// Every open session (a shared server).
    Every,
    /// One session (the owner of a per-client server's instance).
    Only(SessionKey),
}

/// What happened at a server that the gateway takes note of at once.
pub(crate) enum Event<'a> {
    /// The server's lists changed, or it went down with items listed: the catalog is
    /// rebuilt and each session told what changed for it.
    ListsChanged,
    /// The server failed to start: every server may have started now, and what is wrong
    /// with the skills can be said.
    StartFailed,
    /// The answer to a client's call was over the size limit (and dropped).
    CallTooLarge { call: CallFrom, prefix: &'a [u8], length: usize, limit: usize },
    /// A notification of the server's (a log, anything not known), decided and recorded:
    /// for the client.
    Notification { audience: Audience, message: Vec<u8> },
    /// A task's state: for the session whose task it is.
    TaskStatus { audience: Audience, message: &'a Value },
    /// These calls in flight (by the id the server knows each by) will get no answer:
    /// the server stopped (`for_good`: it was removed or shut down).
    CallsLost { calls: HashMap<String, CallFrom>, why: &'a str, for_good: bool },
}

/// What the server sent that goes to a session, awaited by the task reading the server
/// (a slow session slows that server, as before, never another).
pub(crate) enum Delivery<'a> {
    /// The answer to a client's call; `id_at`: where its id is in `bytes`, when known.
    CallAnswered { call: CallFrom, bytes: Vec<u8>, id_at: Option<Range<usize>> },
    /// The answer to a request a session's guard made of its own.
    GuardAnswered { session: SessionKey, bytes: Vec<u8> },
    /// Progress of a client's call, under the client's own `token`.
    Progress { session: SessionKey, token: Value, message: Value, bytes: Vec<u8> },
    /// The server gave up a request it sent a client (`upstream_id`: its id, as JSON text).
    Cancelled { upstream_id: String },
    /// A resource (`listed`: under the gateway's URI) changed.
    ResourceUpdated { audience: Audience, listed: String, message: &'a Value },
}

/// A request of the server's (sampling, elicitation, roots) for a session's client.
pub(crate) struct ServerRequest<'a> {
    pub method: &'a str,
    pub id: &'a Value,
    pub message: &'a Value,
    pub bytes: &'a [u8],
}

/// Where a server reports: implemented by the gateway's hub, given in [`Context`].
pub(crate) trait Reports: Send + Sync {
    /// Takes note of `event` at `from`.
    fn tell(&self, from: &Arc<Upstream>, event: Event<'_>);

    /// Takes what `from` sent to the session it is for.
    fn deliver<'a>(&'a self, from: &'a Arc<Upstream>, delivery: Delivery<'a>) -> Handled<'a>;

    /// Hands a request of `from`'s to the only session it can be for, of `candidates`
    /// (the sessions with a call in flight there, or an instance's owner); `Err` says
    /// why it went to nobody (the server is answered with it).
    fn server_request<'a>(
        &'a self,
        from: &'a Arc<Upstream>,
        candidates: Vec<SessionKey>,
        request: ServerRequest<'a>,
    ) -> Handled<'a, Result<(), String>>;

    /// The resources (the server's URIs) the sessions' subscriptions follow at `at`:
    /// subscribed again when it restarts.
    fn resources_followed(&self, at: &Upstream) -> Vec<String>;

    /// True while the session of `key` is open.
    fn is_open(&self, key: SessionKey) -> bool;
}
