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

/// Why a shared store did not take a step: the caller refuses whatever depended on it
/// (a call whose count or taint could not be written is not forwarded).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unavailable {
    /// The shared store did not answer.
    #[error("the shared store (Redis) cannot be reached: {0}")]
    Unreachable(String),
    /// Another replica took the session over since this one claimed it: this replica's
    /// writes to it are refused.
    #[error("another replica took this session over")]
    TakenOver,
}

/// One client session's memory. Every method is one step the store takes whole (a
/// shared store takes each atomically); labels and grants are only ever added. Reads
/// answer from what the session's owner holds; each write reaches the store (a shared
/// one: Redis) before it returns, or fails.
pub trait SessionMemory: Send + Sync + Debug {
    /// The labels `taint` rules put on the session.
    fn labels(&self) -> BTreeSet<String>;

    /// Adds labels (never removed).
    fn add_labels(&self, labels: &[String]) -> Result<(), Unavailable>;

    /// The number of matches in the rate window `key` (of length `window`) with this
    /// one, at most `limit + 1` (only "more than the limit" matters). `now` is the time
    /// on the session clock of this process; a shared store uses a clock of its own.
    fn count(&self, key: &str, window: Duration, limit: u32, now: Duration, count: Count) -> Result<u32, Unavailable>;

    /// Puts `matches` earlier matches into window `key` as if they happened at `now`
    /// (fixtures and `policy explain --prior-calls`).
    fn seed(&self, key: &str, matches: u32, now: Duration);

    /// Allows the call with this key for the rest of the session.
    fn grant(&self, call_key: &str) -> Result<(), Unavailable>;

    /// True when a person allowed this exact call for the session.
    fn granted(&self, call_key: &str) -> bool;

    /// A fact the session's front or server keeps about it (the gateway's active skill),
    /// so that a replica taking the session over finds it.
    fn fact(&self, name: &str) -> Option<String>;

    /// Sets (`Some`) or clears (`None`) a fact.
    fn set_fact(&self, name: &str, value: Option<&str>) -> Result<(), Unavailable>;
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
    facts: HashMap<String, String>,
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

    fn add_labels(&self, labels: &[String]) -> Result<(), Unavailable> {
        self.lock().labels.extend(labels.iter().cloned());
        Ok(())
    }

    fn count(&self, key: &str, window: Duration, limit: u32, now: Duration, count: Count) -> Result<u32, Unavailable> {
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
        Ok(counted.min(limit.saturating_add(1)))
    }

    fn seed(&self, key: &str, matches: u32, now: Duration) {
        let mut state = self.lock();
        let moments = state.windows.entry(key.to_owned()).or_default();
        moments.extend(std::iter::repeat_n(now, matches as usize));
    }

    fn grant(&self, call_key: &str) -> Result<(), Unavailable> {
        self.lock().grants.insert(call_key.to_owned());
        Ok(())
    }

    fn granted(&self, call_key: &str) -> bool {
        self.lock().grants.contains(call_key)
    }

    fn fact(&self, name: &str) -> Option<String> {
        self.lock().facts.get(name).cloned()
    }

    fn set_fact(&self, name: &str, value: Option<&str>) -> Result<(), Unavailable> {
        let mut state = self.lock();
        match value {
            Some(value) => state.facts.insert(name.to_owned(), value.to_owned()),
            None => state.facts.remove(name),
        };
        Ok(())
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
        let count = |key: &str, t: u64, how: Count| memory.count(key, MINUTE, 2, at(t), how).unwrap();
        assert_eq!(count("r", 0, Count::Record), 1);
        assert_eq!(count("r", 10, Count::Record), 2);
        assert_eq!(count("r", 20, Count::Look), 3, "a look counts the call it looks at");
        assert_eq!(count("r", 20, Count::Record), 3);
        assert_eq!(count("r", 30, Count::Record), 3, "never more than limit + 1");
        assert_eq!(count("r", 30, Count::AlreadyCounted), 3);
        // The window kept the last three moments (10, 20, 30); a minute after 20 only
        // 30 is in it, a minute after 30 nothing.
        assert_eq!(count("r", 81, Count::Look), 2);
        assert_eq!(count("r", 91, Count::Look), 1);
        assert_eq!(count("other", 91, Count::Look), 1, "each window is its own");
    }

    #[test]
    fn labels_and_grants_are_only_added() {
        let sessions = LocalSessions;
        let memory = sessions.open("s");
        memory.add_labels(&["private".to_owned()]).unwrap();
        memory.add_labels(&["secret".to_owned(), "private".to_owned()]).unwrap();
        assert_eq!(memory.labels().into_iter().collect::<Vec<_>>(), ["private", "secret"]);
        assert!(!memory.granted("k"));
        memory.grant("k").unwrap();
        assert!(memory.granted("k"));
        assert_eq!(memory.fact("skill"), None);
        memory.set_fact("skill", Some("review")).unwrap();
        assert_eq!(memory.fact("skill").as_deref(), Some("review"));
        memory.set_fact("skill", None).unwrap();
        assert_eq!(memory.fact("skill"), None);
        assert!(!sessions.open("s").granted("k"), "the local store keeps a session in the memory it opened");
    }
}
