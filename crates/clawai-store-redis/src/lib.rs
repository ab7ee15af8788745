#![warn(missing_docs)]
//! clawai's stores in Redis, for cluster mode (design §12): replicas behind a balancer
//! that meet only here.
//!
//! * [`RedisSessions`]: every session's record (its owner, an epoch bumped by each
//!   takeover, the client's `initialize`, facts such as the gateway's active skill), its
//!   taint labels, session grants and exact rate windows (counted by a script on the
//!   Redis server, by the Redis clock). The replica that owns a session keeps a copy of
//!   what it reads; every write reaches Redis first and is refused once another replica
//!   took the session over. Each replica holds a lease (`clawai:replica:ID`), renewed every 25 ms
//!   for all its sessions: while it lives, no other replica takes one of them over
//!   unless the owner let it go, so the owner decides on its copy without a round trip.
//! * [`RedisKeyring`]: one set of sealing keys for every replica.
//! * [`RedisHeld`]: calls held for a person, answered from a `clawai ui --cluster`
//!   anywhere ([`relay`]) or `clawai approve --cluster`; the answer and the replica's
//!   time-out race atomically in Redis, and exactly one wins.
//! * [`RedisDocuments`]: the pins, each server's a document with a version that every
//!   write counts up (and a write that names the version it read, so the first
//!   writer of a server's pins wins).
//! * [`Redis::publish_head`] / [`Redis::published_heads`]: each audit writer's newest
//!   line, which the others record in their `checkpoint` events.
//!
//! The traits are synchronous (the policy decides without awaiting): each step runs on
//! this crate's own small runtime, where the connection lives, and the calling thread
//! waits for it (a runtime worker hands its other tasks on while it waits).

mod breaker;
mod bridge;
mod common;
mod connection;
mod documents;
mod heads;
mod held;
mod keyring;
mod lease;
mod relay;
mod scripts;
mod sessions;

use std::sync::Arc;

use clawai_store::Stores;

pub use common::ConnectError;
pub(crate) use common::{PREFIX, STEP_TIMEOUT, unreachable};
pub use connection::Redis;
pub use documents::{RedisAlways, RedisDocuments};
pub use heads::PublishedHead;
pub use held::RedisHeld;
pub use keyring::RedisKeyring;
pub use relay::{pending, relay};
pub use sessions::RedisSessions;

/// The name of the standing approvals' document (what `approvals.toml` holds on one
/// machine).
pub const APPROVALS: &str = "approvals.toml";

impl Redis {
    /// The stores of a replica in cluster mode: shared sessions (with their claims) and
    /// the shared keyring.
    pub fn stores(&self) -> Result<Stores, ConnectError> {
        let sessions = Arc::new(RedisSessions::new(self.clone()));
        let keyring = RedisKeyring::load(self).map_err(|e| ConnectError::Unreachable(e.to_string()))?;
        let pins = self.pins();
        Ok(Stores {
            sessions: sessions.clone(),
            keyring: Arc::new(keyring),
            claims: Some(sessions),
            pins: Some(pins),
            approvals: Some(self.approvals()),
        })
    }

    /// The pins replicas share: one document per server.
    pub fn pins(&self) -> Arc<RedisDocuments> {
        Arc::new(RedisDocuments::new(self.clone(), "pins"))
    }

    /// The standing approvals replicas share: one document, [`APPROVALS`], read by every
    /// replica's guards and appended to by "always" answers.
    pub fn approvals(&self) -> Arc<RedisDocuments> {
        Arc::new(RedisDocuments::new(self.clone(), "approvals"))
    }
}
