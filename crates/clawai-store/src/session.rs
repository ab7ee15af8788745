//! What one client session has done, as the policy's session rules and the "allow for
//! this session" answers need it.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How a rate window takes a match (see [`SessionMemory::count`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Count {
    /// A call made now: it is added to the window.
    Record,
    /// What the count would be with a call now (`policy explain`): nothing is added.
    Look,
    /// A call the window already holds, decided again (a retry carrying a person's
    /// answer): nothing is added, and the count includes it.
    AlreadyCounted,
}

/// One client session's memory. Every method is one step the store takes whole (a
/// shared store takes each atomically); labels and grants are only ever added.
pub trait SessionMemory: Send + Sync + Debug {
    /// The labels `taint` rules put on the session.
    fn labels(&self) -> BTreeSet<String>;

    /// Adds labels (never removed).
    fn add_labels(&self, labels: &[String]);

    /// The number of matches in the rate window `key` (of length `window`) with this
    /// one, at most `limit + 1` (only "more than the limit" matters). `now` is the time
    /// on the session clock of this process; a shared store may use a clock of its own.
    fn count(&self, key: &str, window: Duration, limit: u32, now: Duration, count: Count) -> u32;

    /// Puts `matches` earlier matches into window `key` as if they happened at `now`
    /// (fixtures and `policy explain --prior-calls`).
    fn seed(&self, key: &str, matches: u32, now: Duration);

    /// Allows the call with this key for the rest of the session.
    fn grant(&self, call_key: &str);

    /// True when a person allowed this exact call for the session.
    fn granted(&self, call_key: &str) -> bool;
}

/// Opens the memory of a session by its id.
pub trait SessionStore: Send + Sync {
    /// The memory of session `id` (a new one when the store has none).
    fn open(&self, id: &str) -> Arc<dyn SessionMemory>;
}

/// Sessions kept in this process: each opened memory is new and lives as long as the
/// session that holds it.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalSessions;

impl SessionStore for LocalSessions {
    fn open(&self, _id: &str) -> Arc<dyn SessionMemory> {
        Arc::new(LocalSessionMemory::default())
    }
}

/// A session's memory in this process.
#[derive(Debug, Default)]
pub struct LocalSessionMemory {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    labels: BTreeSet<String>,
    /// Per rate window, the moments it counted, oldest first, at most its limit + 1.
    windows: HashMap<String, VecDeque<Duration>>,
    grants: HashSet<String>,
}

impl LocalSessionMemory {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves counts and labels that are still whole.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionMemory for LocalSessionMemory {
    fn labels(&self) -> BTreeSet<String> {
        self.lock().labels.clone()
    }

    fn add_labels(&self, labels: &[String]) {
        self.lock().labels.extend(labels.iter().cloned());
    }

    fn count(&self, key: &str, window: Duration, limit: u32, now: Duration, count: Count) -> u32 {
        let mut state = self.lock();
        let moments = state.windows.entry(key.to_owned()).or_default();
        // The window keeps what is younger than its length; a moment "in the future" (a
        // seeded count, a clock read out of order) counts as now.
        while moments.front().is_some_and(|&t| now.saturating_sub(t) >= window) {
            moments.pop_front();
        }
        let counted =
            if count == Count::AlreadyCounted { (moments.len() as u32).max(1) } else { moments.len() as u32 + 1 };
        if count == Count::Record {
            moments.push_back(now);
            while moments.len() > limit as usize + 1 {
                moments.pop_front();
            }
        }
        counted.min(limit.saturating_add(1))
    }

    fn seed(&self, key: &str, matches: u32, now: Duration) {
        let mut state = self.lock();
        let moments = state.windows.entry(key.to_owned()).or_default();
        moments.extend(std::iter::repeat_n(now, matches as usize));
    }

    fn grant(&self, call_key: &str) {
        self.lock().grants.insert(call_key.to_owned());
    }

    fn granted(&self, call_key: &str) -> bool {
        self.lock().grants.contains(call_key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn a_window_counts_what_is_younger_than_its_length_and_keeps_no_more_than_it_needs() {
        let memory = LocalSessionMemory::default();
        let at = |s: u64| Duration::from_secs(s);
        assert_eq!(memory.count("r", MINUTE, 2, at(0), Count::Record), 1);
        assert_eq!(memory.count("r", MINUTE, 2, at(10), Count::Record), 2);
        assert_eq!(memory.count("r", MINUTE, 2, at(20), Count::Look), 3, "a look counts the call it looks at");
        assert_eq!(memory.count("r", MINUTE, 2, at(20), Count::Record), 3);
        assert_eq!(memory.count("r", MINUTE, 2, at(30), Count::Record), 3, "never more than limit + 1");
        assert_eq!(memory.count("r", MINUTE, 2, at(30), Count::AlreadyCounted), 3);
        // The window kept the last three moments (10, 20, 30); a minute after 20 only
        // 30 is in it, a minute after 30 nothing.
        assert_eq!(memory.count("r", MINUTE, 2, at(81), Count::Look), 2);
        assert_eq!(memory.count("r", MINUTE, 2, at(91), Count::Look), 1);
        assert_eq!(memory.count("other", MINUTE, 2, at(91), Count::Look), 1, "each window is its own");
    }

    #[test]
    fn labels_and_grants_are_only_added() {
        let sessions = LocalSessions;
        let memory = sessions.open("s");
        memory.add_labels(&["private".to_owned()]);
        memory.add_labels(&["secret".to_owned(), "private".to_owned()]);
        assert_eq!(memory.labels().into_iter().collect::<Vec<_>>(), ["private", "secret"]);
        assert!(!memory.granted("k"));
        memory.grant("k");
        assert!(memory.granted("k"));
        assert!(!sessions.open("s").granted("k"), "the local store keeps a session in the memory it opened");
    }
}
