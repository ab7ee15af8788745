//! What the session knows of the server's tools (the annotations its `tools/list`
//! results declare), and the calls that wait while clawai asks the server for that list
//! itself.
//!
//! A client may call a tool before any `tools/list` went through the proxy (it
//! pipelines, or calls a tool it cached from another session). When the policy's
//! decision turns on what the server says of the tool (`destructive`, `read_only`),
//! deciding at once would treat a read-only tool as destructive. So the call is held,
//! clawai sends the server a `tools/list` of its own (every page), and decides the held
//! calls when the list is in; other messages keep flowing meanwhile. clawai's requests
//! carry ids that start with a random prefix of this session: the client never sees
//! them or their responses, and a client request that uses that prefix is refused, so
//! the ids cannot collide.

use clawai_protocol::methods;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};

use clawai_policy::{Policy, ToolAnnotations};
use clawai_protocol::Json;
use clawai_protocol::reply;
use clawai_protocol::skim::member;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Guard, Outgoing, Verdict};
use crate::audit::{Decision, Direction, EventKind, Stamp};

/// The session's knowledge of the server's tools.
pub(super) struct Listing {
    tools: RwLock<HashMap<String, ToolAnnotations, foldhash::quality::RandomState>>,
    fetch: Mutex<Fetch>,
    /// True while one of clawai's own requests is out: responses are compared with it
    /// only then, without taking a lock otherwise.
    fetching: AtomicBool,
    /// The server said its tools changed and no complete list was compared with the pins
    /// since: a call waits for clawai's own listing, so a changed tool is refused even if
    /// the client never lists again.
    pins_stale: AtomicBool,
    /// How clawai's own ids begin, as written: `"clawai-tools-list-<random>-`.
    prefix: String,
    /// The policy last asked about, and whether any of its rules reads annotations. The
    /// policy is held so that a reloaded one can never be taken for it.
    reads_annotations: Mutex<Option<(Arc<Policy>, bool)>>,
}

/// clawai's own listing of the server's tools, and the calls waiting for it.
#[derive(Default)]
struct Fetch {
    /// The id (as written) of clawai's request that is out.
    pending: Option<String>,
    /// Requests sent so far (the last part of each id).
    sent: u64,
    /// Every page of the list was read, and the server has not said it changed since.
    complete: bool,
    /// Why the last attempt gave no list.
    failed: Option<String>,
    /// The `_meta` a 2026-07-28 server needs on every request (protocol version, client
    /// capabilities and information), as the held call carried it.
    meta: Option<Value>,
    held: Vec<Held>,
}

/// A call waiting for the list, as it arrived.
struct Held {
    line: Vec<u8>,
    at: Stamp,
    /// The id as written.
    id: String,
    /// It may wait for a person once decided: false for an element of a batch, whose
    /// answers are gathered into one array (it keeps that when decided later).
    asking: super::Asking,
}

/// Why a tool has no annotations in this session.
pub(super) enum Unlisted {
    /// The server listed its tools, and this one is not among them.
    NotInList,
    /// The server did not give its list (the reason).
    NoList(String),
}

impl Listing {
    pub(super) fn new() -> Listing {
        let random = uuid::Uuid::now_v7().simple().to_string();
        // The random half of the UUID: the first half is the time.
        Listing {
            tools: RwLock::default(),
            fetch: Mutex::default(),
            fetching: AtomicBool::new(false),
            pins_stale: AtomicBool::new(false),
            prefix: format!("\"clawai-tools-list-{}-", &random[16..]),
            reads_annotations: Mutex::default(),
        }
    }

    fn fetch(&self) -> MutexGuard<'_, Fetch> {
        self.fetch.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The annotations recorded for a tool, if it was listed.
    pub(super) fn annotations(&self, tool: &str) -> Option<ToolAnnotations> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).get(tool).copied()
    }

    /// Remembers each tool's annotations from a `tools/list` result.
    pub(super) fn record(&self, result: &[u8]) {
        let Ok(value) = serde_json::from_slice::<Value>(result) else {
            return;
        };
        let Some(tools) = value.get("tools").and_then(Value::as_array) else {
            return;
        };
        let mut known = self.tools.write().unwrap_or_else(|p| p.into_inner());
        for tool in tools {
            if let Some(name) = tool.get("name").and_then(Value::as_str) {
                let annotations = tool.get("annotations").map(ToolAnnotations::from_json).unwrap_or_default();
                known.insert(name.to_owned(), annotations);
            }
        }
    }

    /// Forgets what was known and takes a complete list read elsewhere.
    pub(super) fn replace<'t>(&self, tools: impl IntoIterator<Item = (&'t str, ToolAnnotations)>) {
        {
            let mut known = self.tools.write().unwrap_or_else(|p| p.into_inner());
            known.clear();
            known.extend(tools.into_iter().map(|(name, annotations)| (name.to_owned(), annotations)));
        }
        let mut fetch = self.fetch();
        fetch.complete = true;
        fetch.failed = None;
    }

    /// Why a tool the session has no annotations for is unknown.
    pub(super) fn why_unlisted(&self) -> Unlisted {
        match &self.fetch().failed {
            Some(why) => Unlisted::NoList(why.clone()),
            None => Unlisted::NotInList,
        }
    }

    /// The server said its list changed: a tool not known yet may be in it now, and a
    /// known one may have changed (`pinning`: the pins are compared before the next call).
    pub(super) fn changed(&self, pinning: bool) {
        self.fetch().complete = false;
        if pinning {
            self.pins_stale.store(true, Ordering::SeqCst);
        }
    }

    /// True when the server said its tools changed and no complete list was compared
    /// with the pins since.
    pub(super) fn pins_stale(&self) -> bool {
        self.pins_stale.load(Ordering::Relaxed)
    }

    /// A complete list was compared with the pins (the client's, or clawai's own).
    pub(super) fn pins_compared(&self) {
        self.pins_stale.store(false, Ordering::SeqCst);
    }

    /// True when some rule of `policy` has a `destructive`, `read_only` or `annotated` condition: only
    /// then can a decision turn on annotations, and a call to an unlisted tool be worth
    /// asking the server about (a policy without such rules decides every call at once,
    /// at no extra cost). Worked out once per policy in force.
    pub(super) fn policy_reads_annotations(&self, policy: &Arc<Policy>) -> bool {
        let mut known = self.reads_annotations.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((seen, reads)) = known.as_ref()
            && Arc::ptr_eq(seen, policy)
        {
            return *reads;
        }
        // The summary names every condition a rule has; the policy's API says no more.
        let reads = policy.rules().iter().any(|rule| {
            let summary = rule.summary();
            summary.contains("destructive = ") || summary.contains("read_only = ") || summary.contains("annotated = ")
        });
        *known = Some((Arc::clone(policy), reads));
        reads
    }

    /// True when a client's id (as written) is in clawai's own namespace.
    pub(super) fn claims(&self, id: &str) -> bool {
        id.starts_with(&self.prefix)
    }
}

impl Guard {
    /// Holds a call until the server's tool list is in, and asks for it unless a request
    /// is already out. `None` when the list is already complete: the tool is not in it,
    /// and the call is decided now.
    pub(super) fn hold_until_listed(
        &self,
        line: &[u8],
        at: Stamp,
        id: &RawValue,
        tool: &str,
        params: Option<&Json>,
        asking: super::Asking,
    ) -> Option<Verdict> {
        let mut fetch = self.listing.fetch();
        if fetch.complete {
            return None;
        }
        fetch.held.push(Held { line: line.to_vec(), at, id: id.get().to_owned(), asking });
        tracing::debug!("holding a call to `{tool}` until the server's tool list is in");
        if fetch.pending.is_some() {
            // Held: nothing to send now (a batch tells a held request by this).
            return Some(Verdict::Dispatch(Vec::new()));
        }
        fetch.meta = stateless_meta(params);
        let request = self.own_request(&mut fetch, None, &format!("to decide a call to `{tool}`"));
        Some(Verdict::Dispatch(vec![Outgoing::ToServer(request)]))
    }

    /// clawai's own `tools/list` (a page after `cursor`), recorded in the audit trail.
    fn own_request(&self, fetch: &mut Fetch, cursor: Option<Value>, why: &str) -> Vec<u8> {
        fetch.sent += 1;
        let id = format!("{}{}\"", self.listing.prefix, fetch.sent);
        let mut params = serde_json::Map::new();
        if let Some(cursor) = cursor {
            params.insert("cursor".into(), cursor);
        }
        if let Some(meta) = &fetch.meta {
            params.insert("_meta".into(), meta.clone());
        }
        let mut request = serde_json::json!({"jsonrpc": "2.0", "id": serde_json::from_str::<Value>(&id).expect("a JSON string"), "method": methods::TOOLS_LIST});
        if !params.is_empty() {
            request["params"] = Value::Object(params);
        }
        let mut bytes = serde_json::to_vec(&request).expect("a JSON value encodes");
        bytes.push(b'\n');
        let mut event = self.event(Direction::ClientToServer, EventKind::Request);
        event.method = Some(methods::TOOLS_LIST);
        event.id = Some(&id);
        event.decision = Some(Decision::Pass);
        event.reason = Some(format!("clawai's own request for the server's tools, {why}").into());
        event.size = Some(bytes.len());
        self.audit.record(&event);
        fetch.pending = Some(id);
        self.listing.fetching.store(true, Ordering::SeqCst);
        bytes
    }

    /// A response to clawai's own `tools/list`: recorded, never forwarded. The next page
    /// is asked for, or the held calls are decided. `None` when the response is not
    /// for clawai.
    pub(super) fn own_response(&self, id: &RawValue, result: Option<&[u8]>, error: Option<&str>) -> Option<Verdict> {
        if !self.listing.fetching.load(Ordering::SeqCst) {
            return None;
        }
        let mut fetch = self.listing.fetch();
        if fetch.pending.as_deref() != Some(id.get()) {
            return None;
        }
        fetch.pending = None;
        let mut event = self.event(Direction::ServerToClient, EventKind::Response);
        event.method = Some(methods::TOOLS_LIST);
        event.id = Some(id.get());
        event.is_error = Some(result.is_none());
        event.reason = Some("the answer to clawai's own request; not forwarded".into());
        self.audit.record(&event);
        match (result, error) {
            (Some(result), None) => {
                self.listing.record(result);
                self.pinning_observes(methods::TOOLS_LIST, result);
                let cursor = member(result, b"nextCursor").and_then(|c| serde_json::from_slice::<Value>(c).ok());
                if let Some(cursor) = cursor.filter(|c| !c.is_null()) {
                    let request = self.own_request(&mut fetch, Some(cursor), "next page");
                    return Some(Verdict::Dispatch(vec![Outgoing::ToServer(request)]));
                }
                fetch.complete = true;
                fetch.failed = None;
                self.listing.pins_compared();
            }
            (_, why) => {
                // Decided as unlisted now; the next call to an unknown tool asks again.
                fetch.failed = Some(why.unwrap_or("the server answered with an error").to_owned());
            }
        }
        let held = std::mem::take(&mut fetch.held);
        self.listing.fetching.store(false, Ordering::SeqCst);
        drop(fetch);
        let mut out = Vec::new();
        for call in held {
            match self.decide_client_line_now(&call.line, call.at, call.asking) {
                Verdict::Forward => out.push(Outgoing::ToServer(call.line)),
                Verdict::Replace(instead) => out.push(Outgoing::ToServer(instead)),
                Verdict::Reply(answer) => out.push(Outgoing::ToClient(answer)),
                Verdict::Dispatch(more) => out.extend(more),
                Verdict::Drop => {}
            }
        }
        Some(Verdict::Dispatch(self.gather_batches(out)))
    }

    /// The client cancelled a request: if it is a call still held, it is dropped (the
    /// server never sees it; the cancellation itself goes on, and the server ignores it).
    pub(super) fn cancel_held(&self, request_id: &Value) {
        if !self.listing.fetching.load(Ordering::SeqCst) {
            return;
        }
        let mut fetch = self.listing.fetch();
        fetch.held.retain(|call| serde_json::from_str::<Value>(&call.id).ok().as_ref() != Some(request_id));
    }

    /// The server is gone: every held call gets an error.
    pub(super) fn held_gone(&self, why: &str) -> Vec<Vec<u8>> {
        let mut fetch = self.listing.fetch();
        fetch.pending = None;
        self.listing.fetching.store(false, Ordering::SeqCst);
        std::mem::take(&mut fetch.held)
            .into_iter()
            .map(|call| {
                let shown = self.shown_id(&call.id);
                let mut event = self.event(Direction::ServerToClient, EventKind::Response);
                event.method = Some(methods::TOOLS_CALL);
                event.id = Some(&shown);
                event.is_error = Some(true);
                event.reason = Some(why.into());
                self.audit.record_decision(&event);
                reply::error(
                    Some(&call.id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai: {why} before it listed its tools; the request got no answer"),
                    None,
                )
            })
            .collect()
    }
}

/// The members of a 2026-07-28 request's `_meta` that every request of that revision
/// carries (`io.modelcontextprotocol/…`), for clawai's own request; `None` for earlier
/// revisions.
fn stateless_meta(params: Option<&Json>) -> Option<Value> {
    let meta = params?.get("_meta")?;
    let Json::Object(members) = meta else { return None };
    meta.get("io.modelcontextprotocol/protocolVersion")?;
    let own: serde_json::Map<String, Value> = members
        .iter()
        .filter(|(key, _)| {
            key.starts_with("io.modelcontextprotocol/") && &**key != "io.modelcontextprotocol/related-task"
        })
        .map(|(key, value)| (key.to_string(), value.to_value()))
        .collect();
    Some(Value::Object(own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_ids_are_json_strings_with_a_random_prefix_of_the_session() {
        let (a, b) = (Listing::new(), Listing::new());
        assert_ne!(a.prefix, b.prefix);
        let id = format!("{}1\"", a.prefix);
        assert!(serde_json::from_str::<String>(&id).is_ok(), "{id}");
        assert!(a.claims(&id) && !b.claims(&id));
        assert!(!a.claims("\"clawai-tools-list-\"") && !a.claims("7"));
    }

    #[test]
    fn only_policies_with_annotation_conditions_count_as_reading_them() {
        use clawai_policy::{Format, load_str};
        let policy = |text: &str| Arc::new(load_str(text, Format::Toml, "test").expect("the policy loads"));
        let listing = Listing::new();
        let by_name = policy("[[rule]]\naction = \"deny\"\ntool = \"wipe\"\n");
        assert!(!listing.policy_reads_annotations(&by_name));
        for condition in ["destructive = true", "read_only = false"] {
            let reads = policy(&format!("[[rule]]\naction = \"deny\"\n{condition}\n"));
            assert!(listing.policy_reads_annotations(&reads), "{condition}");
        }
        assert!(!listing.policy_reads_annotations(&by_name), "asked again after another policy");
    }
}
