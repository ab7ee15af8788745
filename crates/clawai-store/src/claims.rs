//! Who serves a session when replicas share their sessions (cluster mode): the replica
//! that created it, until another takes it over.

use crate::session::Unavailable;

/// What a replica finds in the shared store for a session it does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// The session is this replica's now (its epoch moved on): it is resumed by sending
    /// its server the client's `initialize` again, here.
    Resumable {
        /// The client's `initialize` request, as it first came.
        initialize: Vec<u8>,
    },
    /// The session exists but lives only where it was made (a `proxy --listen -- CMD`
    /// child per session): the client must initialize again (404).
    NotResumable,
    /// No such session (never made, ended, or expired): 404.
    Unknown,
}

/// The records of shared sessions: each has an owner and an epoch, bumped by every
/// takeover, and a replica's writes to a session are refused once its epoch is not the
/// session's (see [`Unavailable::TakenOver`]). A session's memory opened from the
/// [`crate::SessionStore`] of the same stores writes under the epoch claimed here.
#[async_trait::async_trait]
pub trait SessionClaims: Send + Sync {
    /// Records a new session owned by this replica, written before its `initialize` is
    /// forwarded. `initialize`: the request that resumes it elsewhere; `None` when it
    /// cannot be resumed.
    async fn create(&self, id: &str, initialize: Option<&[u8]>) -> Result<(), Unavailable>;

    /// True while no other replica has taken `id` over since this one claimed it (and
    /// none can before this replica lets it go: false once it did). A shared store may
    /// answer without asking the store when that is sure (a lease that no other
    /// replica's takeover passes). A record the shared store lost (it came back without
    /// its data) is written again from what this replica holds.
    async fn still_owned(&self, id: &str) -> Result<bool, Unavailable>;

    /// Takes session `id` over (its epoch bumped atomically): what it takes to resume it.
    /// When its owner is alive, this waits until the owner let the session go.
    async fn take_over(&self, id: &str) -> Result<Found, Unavailable>;

    /// The session ended here (closed by its client, expired): its record is removed,
    /// unless another replica owns it now.
    async fn end(&self, id: &str);

    /// This replica no longer holds `id` (another took it over): forgets its claim
    /// without touching the record.
    fn release(&self, id: &str);

    /// Whether the shared store answers now, for `/healthz`.
    async fn reachable(&self) -> bool;
}
