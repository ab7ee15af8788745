//! What a policy remembers of one session: the labels rules put on it (`taint`) and how
//! often each `rate` rule's conditions matched in its window.
//!
//! A [`Policy`](crate::Policy) is shared and never changes; a [`Session`] belongs to one client session
//! (one `clawai proxy` process, one HTTP session, one client of a gateway, shared by the
//! gateway's servers so that data read from one server taints calls to every other).
//! [`Policy::decide_in`](crate::Policy::decide_in) decides with it and moves it on; [`Policy::decide`](crate::Policy::decide) decides as in
//! a new session and changes nothing.
//!
//! ```toml
//! [[rule]]
//! id = "reads-private"
//! action = "allow"
//! tool = "read_file"
//! taint = "private"          # the session is marked by every call this rule touches
//!
//! [[rule]]
//! id = "no-exfiltration"
//! action = "prompt"
//! tool = "fetch"
//! tainted = "private"        # matches only in a session so marked
//!
//! [[rule]]
//! id = "fetch-flood"
//! action = "deny"
//! tool = "fetch"
//! rate = "30/min"            # matches once its other conditions matched more than 30 times in a minute
//! ```

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use clawai_store::{LocalSessionMemory, SessionMemory};
use std::time::{Duration, Instant};

/// The largest count a `rate` may name: a window keeps one instant per counted call, up
/// to the limit, for every session.
pub const MAX_RATE: u32 = 100_000;

/// A rule's `rate`: at most `limit` matches of its other conditions per `window`; the
/// rule matches the calls beyond that.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// How many calls pass the rule by in one window.
    pub limit: u32,
    /// The window's length: a second, a minute or an hour.
    pub window: Duration,
}

impl FromStr for Rate {
    type Err = String;

    /// `N/sec`, `N/min` or `N/hour` (also `s`, `second`, `m`, `minute`, `h`), N from 1 to
    /// [`MAX_RATE`].
    fn from_str(text: &str) -> Result<Rate, String> {
        let usage = "write `rate = \"N/sec\"`, `\"N/min\"` or `\"N/hour\"` (e.g. \"30/min\")";
        let (count, unit) = text.split_once('/').ok_or_else(|| format!("`{text}` is not a rate; {usage}"))?;
        let limit: u32 = count
            .trim()
            .parse()
            .ok()
            .filter(|n| (1..=MAX_RATE).contains(n))
            .ok_or_else(|| format!("`{count}` is not a count from 1 to {MAX_RATE}; {usage}"))?;
        let window = match unit.trim() {
            "s" | "sec" | "second" => Duration::from_secs(1),
            "m" | "min" | "minute" => Duration::from_secs(60),
            "h" | "hour" => Duration::from_secs(3600),
            other => return Err(format!("unknown unit `{other}`; {usage}")),
        };
        Ok(Rate { limit, window })
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match self.window.as_secs() {
            1 => "sec",
            60 => "min",
            _ => "hour",
        };
        write!(f, "{}/{unit}", self.limit)
    }
}

/// One session's memory, shared by the threads that decide its messages: a handle on
/// the [`SessionMemory`] of the session, wherever the store in use keeps it.
#[derive(Debug, Clone)]
pub struct Session {
    memory: Arc<dyn SessionMemory>,
}

impl Default for Session {
    fn default() -> Self {
        Session::new()
    }
}

impl Session {
    /// A new session in this process's memory: no labels, no calls counted.
    pub fn new() -> Session {
        Session::in_memory(Arc::new(LocalSessionMemory::default()))
    }

    /// The session whose memory is `memory` (opened from the store in use).
    pub fn in_memory(memory: Arc<dyn SessionMemory>) -> Session {
        Session { memory }
    }

    /// A session that already carries these labels (fixtures, `policy explain`).
    pub fn with_labels(labels: impl IntoIterator<Item = String>) -> Session {
        let session = Session::new();
        // The local memory takes every write.
        let _ = session.memory.add_labels(&labels.into_iter().collect::<Vec<_>>());
        session
    }

    /// Counts `count` earlier matches of a rate rule's conditions, as if they had just
    /// happened (fixtures, `policy explain`). `rule` is the rule's id, or `#N` for the
    /// N-th rule when it has none.
    pub fn add_prior_calls(&self, rule: &str, count: u32) {
        self.memory.seed(rule, count.min(MAX_RATE + 1), session_clock());
    }

    /// The labels the session carries, sorted.
    pub fn labels(&self) -> Vec<String> {
        self.memory.labels().into_iter().collect()
    }

    /// The session's memory (what a person allowed for the session is kept there too).
    pub fn memory(&self) -> &Arc<dyn SessionMemory> {
        &self.memory
    }
}

/// The key a rate rule's window is kept under: its id, else `#N` (N from 1), so that a
/// reloaded policy keeps the counts of the rules it keeps by id.
pub(crate) fn rule_key(index: usize, id: Option<&str>) -> String {
    id.map_or_else(|| format!("#{}", index + 1), str::to_owned)
}

/// What the rules that read the session see while one call is decided.
#[derive(Debug, Default)]
pub(crate) struct SessionView<'s> {
    /// The session's labels (`None`: a new session).
    pub(crate) labels: Option<&'s BTreeSet<String>>,
    /// For each rate rule whose other conditions match the call, how many matches its
    /// window holds with this call's (at most its limit + 1).
    pub(crate) counts: Vec<(usize, u32)>,
}

impl SessionView<'_> {
    /// The count of a rate rule's window with this call's match (1 when only this call
    /// matched).
    pub(crate) fn count(&self, rule: usize) -> u32 {
        self.counts.iter().find(|(i, _)| *i == rule).map_or(1, |(_, n)| *n)
    }
}

/// Time since this process first decided in a session: one clock for every session, so
/// that moments can be compared; monotonic, unlike the wall clock.
pub(crate) fn session_clock() -> Duration {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed()
}
