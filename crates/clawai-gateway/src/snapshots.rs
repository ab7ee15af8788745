//! The lists a session is paging through, kept so that every page of one listing comes
//! from the list its first page was cut from.
//!
//! A client pages with cursors while servers come up, go, or change their lists. Were
//! each page cut from the list as it is now, a client listing while 50 servers start
//! would see items twice or never, or be refused and start again at every change. So
//! the first page of a list that needs more than one keeps what was listed (an `Arc` of
//! the session's view: the items themselves are shared, not copied), and its cursors
//! name that snapshot. The client learns of the change by `list_changed`, as always.
//!
//! Bounded: a session keeps at most [`KEPT`] snapshots, each for at most [`KEPT_FOR`]
//! after its first page; a cursor of one that is gone is expired (-32602, list again).

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::lists::ListKind;

/// The most snapshots one session keeps (the oldest goes first).
pub(crate) const KEPT: usize = 16;

/// How long a snapshot is kept after its first page was served.
pub(crate) const KEPT_FOR: Duration = Duration::from_secs(300);

/// The snapshots of one session's lists.
pub(crate) struct Snapshots<T> {
    next_id: u64,
    kept: VecDeque<Snapshot<T>>,
}

struct Snapshot<T> {
    id: u64,
    kind: ListKind,
    taken: Instant,
    list: Arc<T>,
}

impl<T> Default for Snapshots<T> {
    fn default() -> Self {
        Snapshots { next_id: 1, kept: VecDeque::new() }
    }
}

impl<T> Snapshots<T> {
    /// Keeps `list` (of `kind`, served at `now`) for the pages after its first; returns
    /// the id its cursors carry. The same list kept twice in a row gets one id: a client
    /// that lists from the start again and again does not push other snapshots out.
    pub(crate) fn keep(&mut self, kind: ListKind, list: &Arc<T>, now: Instant) -> u64 {
        self.expire(now);
        if let Some(latest) = self.kept.iter_mut().rev().find(|kept| kept.kind == kind)
            && Arc::ptr_eq(&latest.list, list)
        {
            latest.taken = now;
            return latest.id;
        }
        if self.kept.len() >= KEPT {
            self.kept.pop_front();
        }
        let id = self.next_id;
        self.next_id += 1;
        self.kept.push_back(Snapshot { id, kind, taken: now, list: Arc::clone(list) });
        id
    }

    /// The list of `kind` kept under `id`, unless it expired (or never was).
    pub(crate) fn get(&mut self, kind: ListKind, id: u64, now: Instant) -> Option<Arc<T>> {
        self.expire(now);
        self.kept.iter().find(|kept| kept.id == id && kept.kind == kind).map(|kept| Arc::clone(&kept.list))
    }

    fn expire(&mut self, now: Instant) {
        self.kept.retain(|kept| now.saturating_duration_since(kept.taken) < KEPT_FOR);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_list_is_found_under_its_id_and_kind_only() {
        let mut snapshots = Snapshots::default();
        let now = Instant::now();
        let list = Arc::new(vec!["a__echo"]);
        let id = snapshots.keep(ListKind::Tools, &list, now);
        assert!(Arc::ptr_eq(&snapshots.get(ListKind::Tools, id, now).unwrap(), &list));
        assert!(snapshots.get(ListKind::Prompts, id, now).is_none(), "a tools cursor does not page prompts");
        assert!(snapshots.get(ListKind::Tools, id + 1, now).is_none());
    }

    #[test]
    fn a_list_that_changed_keeps_the_old_snapshot_beside_the_new() {
        let mut snapshots = Snapshots::default();
        let now = Instant::now();
        let before = Arc::new(vec!["a__echo"]);
        let after = Arc::new(vec!["a__echo", "b__echo"]);
        let old = snapshots.keep(ListKind::Tools, &before, now);
        let new = snapshots.keep(ListKind::Tools, &after, now);
        assert_ne!(old, new);
        assert_eq!(*snapshots.get(ListKind::Tools, old, now).unwrap(), *before);
        assert_eq!(*snapshots.get(ListKind::Tools, new, now).unwrap(), *after);
    }

    #[test]
    fn the_same_list_listed_again_reuses_its_snapshot() {
        let mut snapshots = Snapshots::default();
        let now = Instant::now();
        let list = Arc::new(vec!["a__echo"]);
        let first = snapshots.keep(ListKind::Tools, &list, now);
        for _ in 0..(KEPT * 2) {
            assert_eq!(snapshots.keep(ListKind::Tools, &list, now), first);
        }
    }

    #[test]
    fn a_snapshot_expires_after_its_time() {
        let mut snapshots = Snapshots::default();
        let now = Instant::now();
        let id = snapshots.keep(ListKind::Tools, &Arc::new(1), now);
        assert!(snapshots.get(ListKind::Tools, id, now + KEPT_FOR - Duration::from_secs(1)).is_some());
        assert!(snapshots.get(ListKind::Tools, id, now + KEPT_FOR).is_none());
    }

    #[test]
    fn at_most_kept_snapshots_are_kept_the_oldest_going_first() {
        let mut snapshots = Snapshots::default();
        let now = Instant::now();
        let ids: Vec<u64> = (0..=KEPT).map(|n| snapshots.keep(ListKind::Tools, &Arc::new(n), now)).collect();
        assert!(snapshots.get(ListKind::Tools, ids[0], now).is_none(), "the oldest was let go");
        for id in &ids[1..] {
            assert!(snapshots.get(ListKind::Tools, *id, now).is_some());
        }
    }
}
