//! Requests forwarded one way and not yet answered, so that a response is matched to
//! its request (its method, how long it took, whether it was a `tools/list`).
//!
//! Thousands are in flight when a client pipelines. In a hash map every response
//! looked its request up at a random place in a table of hundreds of KiB, a miss of
//! the processor's caches each time: a tenth of clawai's CPU in a pipelined burst. A
//! server mostly answers in the order it was asked, so requests are kept in that order
//! and a response usually finds its request first in line; the ones it passes over
//! wait in a map for their out-of-order responses.
//!
//! Ids are matched by [`match_key`]: a peer that decodes ids and writes them back (most
//! SDKs do) answers `-0` with `0` and `"\u0061"` with `"a"`, and that is still the answer.

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
    /// The id as the request wrote it, when that differs from the key it is kept under
    /// ([`match_key`]): what a reply on the answerer's behalf must carry.
    pub(crate) written_id: Option<Id>,
}

impl InFlight {
    /// A request with an id that is its own key (no escapes, an integer as written).
    pub(crate) fn new(method: Cow<'static, str>, started: Instant) -> InFlight {
        InFlight { method, started, written_id: None }
    }

    /// The request's id as it wrote it, given the key it was kept under.
    pub(crate) fn id<'a>(&'a self, key: &'a str) -> &'a str {
        self.written_id.as_deref().unwrap_or(key)
    }
}

/// The form of an id (valid JSON, as written) that a request and its response are
/// matched by: the id as written, except that a string with escapes is read as the text
/// it stands for (`"\u0061"` is `"a"`) and a whole number written otherwise than as
/// an integer (`-0`, `1.0`, `1e2`) as that integer, which is what a peer that decodes
/// the id and writes it back answers with. A string never matches a number.
#[inline]
pub(crate) fn match_key(written: &str) -> Cow<'_, str> {
    let bytes = written.as_bytes();
    let own_key = match bytes.first() {
        Some(b'"') => !bytes.contains(&b'\\'),
        _ => is_integer_text(bytes),
    };
    if own_key { Cow::Borrowed(written) } else { rewritten_key(written) }
}

/// [`match_key`] for the ids that are not their own key: escaped strings and numbers
/// not written as integers, which peers rarely send.
#[cold]
#[inline(never)]
fn rewritten_key(written: &str) -> Cow<'_, str> {
    if written.starts_with('"') {
        return match serde_json::from_str::<String>(written) {
            Ok(text) => {
                let mut key = Vec::with_capacity(written.len());
                crate::json_string::json_str(&mut key, &text);
                String::from_utf8(key).map_or(Cow::Borrowed(written), Cow::Owned)
            }
            Err(_) => Cow::Borrowed(written),
        };
    }
    match serde_json::from_str::<f64>(written) {
        // Beyond 2^63 the integer would not be exact: kept as written.
        Ok(n) if n.is_finite() && n.fract() == 0.0 && n.abs() < 9.2e18 => Cow::Owned(format!("{}", n as i64)),
        _ => Cow::Borrowed(written),
    }
}

/// An integer as JSON writes it, other than `-0`.
fn is_integer_text(bytes: &[u8]) -> bool {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) && bytes != b"-0"
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
    /// Records a request under its key ([`match_key`]); done before it is forwarded, so
    /// that its response finds it.
    pub(crate) fn insert(&self, id: Id, flight: InFlight) {
        self.arrived.lock().unwrap_or_else(|p| p.into_inner()).push((id, flight));
    }

    /// Takes the request answered by a response with `id` (as written; matched by
    /// [`match_key`]). Requests that reuse an id still waiting are answered in the order
    /// they were sent, unless a response passed them over, in which case the later one
    /// is kept.
    pub(crate) fn remove(&self, id: &str) -> Option<(Id, InFlight)> {
        let key = match_key(id);
        let id = &*key;
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
        InFlight::new(Cow::Borrowed(method), started)
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
    fn ids_are_matched_as_a_peer_that_decodes_them_writes_them_back() {
        for (written, key) in [
            ("7", "7"),
            ("-3", "-3"),
            ("123456789012345678901234567890", "123456789012345678901234567890"),
            ("-0", "0"),
            ("1.0", "1"),
            ("1e2", "100"),
            ("-2.0E0", "-2"),
            ("1.5", "1.5"),
            ("1e30", "1e30"),
            (r#""a""#, r#""a""#),
            (r#""\u0061\/b""#, r#""a/b""#),
            (r#""\u0031""#, r#""1""#),
            (r#""q\"""#, r#""q\"""#),
        ] {
            assert_eq!(match_key(written), key, "{written}");
        }
        let table = InFlightTable::default();
        let start = Instant::now();
        for written in ["-0", r#""\u0061""#, "1e2"] {
            let mut request = flight("tools/call", start);
            request.written_id = Some(written.into());
            table.insert(match_key(written).as_ref().into(), request);
        }
        // Answered as re-encoded, out of order; a string is still not a number.
        assert!(table.remove("\"100\"").is_none());
        let (key, request) = table.remove("100").expect("1e2 answered as 100");
        assert_eq!(request.id(&key), "1e2", "the id as the request wrote it");
        let (key, request) = table.remove(r#""a""#).expect("\"\\u0061\" answered as \"a\"");
        assert_eq!(request.id(&key), r#""\u0061""#);
        assert_eq!(table.remove("0").map(|(key, r)| r.id(&key).to_owned()), Some("-0".to_owned()));
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
