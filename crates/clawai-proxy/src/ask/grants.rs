//! "Allow this exact call for the rest of the session": the calls a person allowed, by
//! their [`call_key`](super::key::call_key). Only the identical call (same server, method,
//! name and canonical arguments) passes later without asking; nothing else does.

use std::collections::HashSet;
use std::sync::Mutex;

/// The calls allowed for this session.
#[derive(Debug, Default)]
pub struct SessionGrants {
    keys: Mutex<HashSet<String>>,
}

impl SessionGrants {
    /// Allows the call with this key for the rest of the session.
    pub fn grant(&self, key: &str) {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).insert(key.to_owned());
    }

    /// True when a person allowed this exact call for the session.
    pub fn allows(&self, key: &str) -> bool {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).contains(key)
    }
}
