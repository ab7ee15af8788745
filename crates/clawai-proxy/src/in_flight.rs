//! Requests forwarded one way and not yet answered, so that a response is matched to
//! its request (its method, how long it took, whether it was a `tools/list`).
//!
//! Thousands are in flight when a client pipelines. In a hash map every response
//! looked its request up at a random place in a table of hundreds of KiB, a miss of
//! the processor's caches each time: a tenth of clawai's CPU in a pipelined burst. A
//! server mostly answers in the order it was asked, so requests are kept in that order
//! and a response usually finds its request first in line; the ones it passes over
//! wait in a map for their out-of-order responses.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Instant;

use compact_str::CompactString;

/// A request waiting for its response. The method is usually one of the protocol's own
/// names and then costs no allocation.
pub(crate) struct InFlight {
    /// The request's method.
    pub(crate) method: Cow<'static, str>,
    /// When the request arrived.
    pub(crate) started: Instant,
}

/// An id as written (`7`, `"a"`): ids up to 24 bytes (numbers, short strings) are kept
/// inline, with no allocation per request.
pub(crate) type Id = CompactString;

/// The requests in flight one way.
#[derive(Default)]
pub(crate) struct InFlightTable {
    /// Appended to by the thread that forwards the requests, in the order it forwards
    /// them. Kept apart from [`Waiting`] so that thread never waits for a lookup.
    arrived: Mutex<Vec<(Id, InFlight)>>,
    /// Used by the thread that reads the responses.
    waiting: Mutex<Waiting>,
}

#[derive(Default)]
struct Waiting {
    /// Requests in the order they were forwarded, taken from `arrived` when this runs
    /// out.
    in_order: VecDeque<(Id, InFlight)>,
    /// Requests a response passed over on its way to its own. The ids are the peers'
    /// choice, so the hasher is seeded per process.
    passed_over: HashMap<Id, InFlight, foldhash::quality::RandomState>,
}

impl InFlightTable {
    /// Records a request; done before it is forwarded, so that its response finds it.
    pub(crate) fn insert(&self, id: Id, flight: InFlight) {
        self.arrived.lock().unwrap_or_else(|p| p.into_inner()).push((id, flight));
    }

    /// Takes the request answered by a response with `id` (as written). Requests that
    /// reuse an id still waiting are answered in the order they were sent, unless a
    /// response passed them over, in which case the later one is kept.
    pub(crate) fn remove(&self, id: &str) -> Option<(Id, InFlight)> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let waiting = &mut *waiting;
        if !waiting.passed_over.is_empty()
            && let Some(found) = waiting.passed_over.remove_entry(id)
        {
            return Some(found);
        }
        let mut refilled = false;
        loop {
            match waiting.in_order.front() {
                Some((first, _)) if first == id => return waiting.in_order.pop_front(),
                Some(_) => {
                    let (other, flight) = waiting.in_order.pop_front().expect("a first request");
                    waiting.passed_over.insert(other, flight);
                }
                None if !refilled => {
                    refilled = true;
                    self.refill(&mut waiting.in_order);
                }
                None => return None,
            }
        }
    }

    /// Moves what arrived into `in_order` (empty), trading buffers: neither side
    /// allocates again once both have grown to the session's bursts.
    fn refill(&self, in_order: &mut VecDeque<(Id, InFlight)>) {
        let mut spare: Vec<(Id, InFlight)> = std::mem::take(in_order).into();
        std::mem::swap(&mut *self.arrived.lock().unwrap_or_else(|p| p.into_inner()), &mut spare);
        *in_order = spare.into();
    }

    /// Takes every request still waiting, oldest first.
    pub(crate) fn drain(&self) -> Vec<(Id, InFlight)> {
        let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let waiting = &mut *waiting;
        let mut pending: Vec<(Id, InFlight)> = waiting.passed_over.drain().collect();
        pending.extend(waiting.in_order.drain(..));
        pending.append(&mut self.arrived.lock().unwrap_or_else(|p| p.into_inner()));
        // Stable: requests that arrived together (one read, one time) keep the order they
        // were sent in, except those a response passed over, which come first.
        pending.sort_by_key(|(_, flight)| flight.started);
        pending
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn flight(method: &'static str, started: Instant) -> InFlight {
        InFlight { method: Cow::Borrowed(method), started }
    }

    #[test]
    fn responses_find_their_requests_in_any_order() {
        let table = InFlightTable::default();
        let start = Instant::now();
        for (i, id) in ["1", "\"a\"", "3", "0"].into_iter().enumerate() {
            table.insert(id.into(), flight(["tools/call", "tools/list", "ping", "prompts/get"][i], start));
        }
        // Out of order, an unknown id in between, then one that arrives after the others
        // were moved to the map.
        assert_eq!(table.remove("3").map(|(_, f)| f.method), Some("ping".into()));
        assert!(table.remove("2").is_none());
        table.insert("4".into(), flight("resources/read", start));
        assert_eq!(table.remove("\"a\"").map(|(_, f)| f.method), Some("tools/list".into()));
        assert_eq!(table.remove("4").map(|(_, f)| f.method), Some("resources/read".into()));
        // The id as written: the string "1" is not the number 1.
        assert!(table.remove("\"1\"").is_none());
        assert_eq!(table.remove("1").map(|(_, f)| f.method), Some("tools/call".into()));
        assert_eq!(table.remove("0").map(|(_, f)| f.method), Some("prompts/get".into()));
        assert!(table.remove("1").is_none(), "a request is answered once");
        assert!(table.drain().is_empty());
    }

    #[test]
    fn requests_that_reuse_an_id_are_answered_in_order() {
        let table = InFlightTable::default();
        let start = Instant::now();
        table.insert("7".into(), flight("tools/call", start));
        table.insert("7".into(), flight("tools/list", start));
        assert_eq!(table.remove("7").map(|(_, f)| f.method), Some("tools/call".into()));
        assert_eq!(table.remove("7").map(|(_, f)| f.method), Some("tools/list".into()));
        assert!(table.remove("7").is_none());
    }

    #[test]
    fn drain_takes_every_waiting_request_oldest_first() {
        let table = InFlightTable::default();
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        table.insert("1".into(), flight("a/1", at(1)));
        table.insert("2".into(), flight("a/2", at(2)));
        table.insert("3".into(), flight("a/3", at(3)));
        // Moves all three to the map; then one more waits in the list.
        assert!(table.remove("2").is_some());
        table.insert("4".into(), flight("a/4", at(4)));
        let ids: Vec<String> = table.drain().into_iter().map(|(id, _)| id.into()).collect();
        assert_eq!(ids, ["1", "3", "4"]);
        assert!(table.drain().is_empty());
    }

    proptest::proptest! {
        /// Requests with distinct ids, inserted and answered in any interleaving and any
        /// order, with unknown ids among the responses: each response finds its own
        /// request once, an unknown id finds none, and what is left is what was never
        /// answered, oldest first.
        #[test]
        fn every_request_is_found_once_whatever_the_order(
            steps in proptest::collection::vec((proptest::bool::ANY, 0usize..40), 0..120),
        ) {
            let table = InFlightTable::default();
            let start = Instant::now();
            let (mut sent, mut open): (usize, Vec<usize>) = (0, Vec::new());
            for (insert, pick) in steps {
                if insert || open.is_empty() {
                    let at = start + Duration::from_micros(sent as u64);
                    table.insert(sent.to_string().into(), flight("tools/call", at));
                    open.push(sent);
                    sent += 1;
                } else {
                    let id = open.remove(pick % open.len());
                    let found = table.remove(&id.to_string()).map(|(key, _)| key.to_string());
                    proptest::prop_assert_eq!(found, Some(id.to_string()));
                    proptest::prop_assert!(table.remove(&id.to_string()).is_none(), "answered twice");
                    proptest::prop_assert!(table.remove("\"unknown\"").is_none());
                }
            }
            let left: Vec<String> = table.drain().into_iter().map(|(id, _)| id.into()).collect();
            let mut expected = open.clone();
            expected.sort_unstable();
            proptest::prop_assert_eq!(left, expected.iter().map(ToString::to_string).collect::<Vec<_>>());
        }
    }
}
