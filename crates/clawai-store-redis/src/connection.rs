//! The connection to Redis that every store of this process shares.

use std::sync::Arc;

use crate::bridge::Bridge;
use crate::common::ConnectError;

/// One connection to Redis, shared by the stores of this process.
#[derive(Clone)]
pub struct Redis {
    pub(crate) bridge: Arc<Bridge>,
    /// This replica's id: the owner named in the records of the sessions it holds.
    pub(crate) replica: Arc<str>,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redis").field("replica", &self.replica).finish_non_exhaustive()
    }
}

impl Redis {
    /// Connects to `url` (`redis://HOST:PORT/DB`) as replica `replica` (a command that is
    /// no replica, such as `clawai ui`, names itself). Fails when Redis does not answer
    /// now, or is older than 7.0.
    pub fn connect(url: &str, replica: &str) -> Result<Redis, ConnectError> {
        let bridge = Bridge::connect(url)?;
        let version = bridge.server_version()?;
        let major = version.split('.').next().and_then(|major| major.parse::<u32>().ok()).unwrap_or(0);
        if major < 7 {
            return Err(ConnectError::TooOld(version));
        }
        Ok(Redis { bridge: Arc::new(bridge), replica: replica.into() })
    }

    /// The replica id this connection names itself by.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// True when Redis answers a `PING` now.
    pub async fn reachable(&self) -> bool {
        self.bridge.ping().await
    }
}
