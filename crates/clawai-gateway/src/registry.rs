//! The open client sessions, each under a key. A server's calls in flight name the
//! session they came from by its key, never by a pointer to it: the server reports an
//! answer with the key, and the hub finds the session here. Generic over what it holds,
//! so that the modules below the sessions (the servers) need not know them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock, Weak};

/// Names one client session, for as long as the gateway runs (never reused).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct SessionKey(u64);

impl SessionKey {
    /// A key no session had before.
    pub(crate) fn new() -> SessionKey {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        SessionKey(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// The open sessions. Held weakly: a session lives as long as its client does, and
/// leaves on its own when dropped (the entries of dropped ones are swept as they are
/// met).
pub(crate) struct Registry<T> {
    /// In the order the sessions opened (keys grow).
    open: RwLock<BTreeMap<SessionKey, Weak<T>>>,
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Registry { open: RwLock::default() }
    }
}

impl<T> Registry<T> {
    /// Adds a session under its key.
    pub(crate) fn add(&self, key: SessionKey, session: &Arc<T>) {
        let mut open = self.open.write().unwrap_or_else(|p| p.into_inner());
        open.retain(|_, session| session.strong_count() > 0);
        open.insert(key, Arc::downgrade(session));
    }

    /// The session of `key`, while it is open.
    pub(crate) fn get(&self, key: SessionKey) -> Option<Arc<T>> {
        self.open.read().unwrap_or_else(|p| p.into_inner()).get(&key).and_then(Weak::upgrade)
    }

    /// True while the session of `key` is open.
    pub(crate) fn is_open(&self, key: SessionKey) -> bool {
        self.open.read().unwrap_or_else(|p| p.into_inner()).get(&key).is_some_and(|session| session.strong_count() > 0)
    }

    /// Every open session, in the order they opened.
    pub(crate) fn all(&self) -> Vec<Arc<T>> {
        let alive: Vec<Arc<T>> =
            self.open.read().unwrap_or_else(|p| p.into_inner()).values().filter_map(Weak::upgrade).collect();
        alive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_session_is_neither_found_nor_listed() {
        let registry = Registry::<String>::default();
        let (first, second) = (Arc::new("first".to_owned()), Arc::new("second".to_owned()));
        let (first_key, second_key) = (SessionKey::new(), SessionKey::new());
        assert_ne!(first_key, second_key);
        registry.add(first_key, &first);
        registry.add(second_key, &second);
        assert_eq!(registry.all(), vec![Arc::clone(&first), Arc::clone(&second)], "in the order they opened");
        drop(first);
        assert!(registry.get(first_key).is_none());
        assert!(!registry.is_open(first_key));
        assert!(registry.is_open(second_key));
        assert_eq!(registry.all(), vec![second]);
    }
}
