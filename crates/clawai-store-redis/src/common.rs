//! What every module of the crate shares: the prefix of clawai's keys, how long one
//! step may take, and what a failed step or connection means. A leaf.

use std::time::Duration;

use clawai_store::Unavailable;

/// Every key clawai writes starts with this.
pub(crate) const PREFIX: &str = "clawai:";

/// The Redis hash of session `id`.
pub(crate) fn session_hash(id: &str) -> String {
    format!("{PREFIX}s:{id}")
}

/// How long one step may take before it counts as Redis being away.
pub(crate) const STEP_TIMEOUT: Duration = Duration::from_millis(800);

/// Redis could not be used at start-up.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// The URL is not one the client takes.
    #[error("{0}")]
    BadUrl(String),
    /// Nothing answered, or it refused us.
    #[error(
        "cannot reach Redis: {0}; start Redis (7.0 or later) at that address, or correct --cluster (CLAWAI_CLUSTER)"
    )]
    Unreachable(String),
    /// It answered but is too old for the scripts clawai runs.
    #[error("Redis {0} is too old: cluster mode needs Redis 7.0 or later (or Valkey 8)")]
    TooOld(String),
    /// The runtime the connection lives on could not be started.
    #[error("cannot start the Redis client's runtime: {0}")]
    Runtime(String),
}

/// What a failed Redis step means to the caller.
pub(crate) fn unreachable(error: impl std::fmt::Display) -> Unavailable {
    Unavailable::Unreachable(error.to_string())
}
