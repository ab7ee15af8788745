//! The one decision path every transport calls.
//!
//! A transport reads a message, hands the bytes to [`Guard::from_client`] or
//! [`Guard::from_server`], and does what the [`Verdict`] says: forward the original
//! bytes, answer the sender, or drop. The guard parses, decides with the policy,
//! records the audit event before anything is forwarded, and keeps the little state a
//! decision needs (tool annotations from `tools/list`, requests in flight).

mod batch;
mod decide;
mod listing;
mod shown_ids;

use std::borrow::Cow;
use std::time::Instant;

use compact_str::CompactString;

use clawai_policy::glob::fold_case;
use clawai_policy::{Action, Call, FollowLinks, Policy, ToolAnnotations, loose_name};
use clawai_protocol::envelope::{Envelope, EnvelopeError, Kind, Params};
use clawai_protocol::reply;
use clawai_protocol::skim::{leading_id, member, members_named, salvage, skim};
use clawai_protocol::{Json, strict};
use serde_json::Value;
use serde_json::value::RawValue;

use crate::audit::{AuditLog, Direction, Event, Stamp, stamp};
use crate::in_flight::{InFlight, InFlightTable};
use crate::redact::Redacted;
use crate::reload::PolicyHandle;

/// What the transport does with a message.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Forward the original bytes, unchanged.
    Forward,
    /// Do not forward; send these bytes (one newline-terminated message) back to the
    /// side the message came from.
    Reply(Vec<u8>),
    /// Do not forward, and answer nothing (a refused notification).
    Drop,
    /// Forward these bytes (one newline-terminated message) instead of the message: a
    /// response whose content was denied becomes an error for the same request.
    Replace(Vec<u8>),
    /// Do not forward the message; send these messages, in order, each to its side
    /// (nothing, while a call waits for the server's tool list; the calls that waited,
    /// once it is in; the parts of a batch).
    Dispatch(Vec<Outgoing>),
}

/// One message of a [`Verdict::Dispatch`] (newline-terminated or not).
#[derive(Debug, PartialEq, Eq)]
pub enum Outgoing {
    /// To the server.
    ToServer(Vec<u8>),
    /// To the client.
    ToClient(Vec<u8>),
}

/// Methods the client sends that the policy always decides on. Any other method is
/// decided too when a `method` rule of the policy names it.
pub const CLIENT_DECIDED: [&str; 3] = ["tools/call", "resources/read", "prompts/get"];
/// Methods the server sends that the policy decides on.
pub const SERVER_DECIDED: [&str; 2] = ["sampling/createMessage", "elicitation/create"];

/// Audit events of responses that a transport forwards first and records after its
/// output is flushed ([`Guard::from_server_deferred`], [`Guard::record_deferred`]), so
/// that encoding them is not on the response's way to the client. Nothing is decided
/// from them, and whatever a response changes for later decisions (the tools a
/// `tools/list` lists) is applied before it is forwarded.
#[derive(Default)]
pub struct Deferred {
    responses: Vec<ResponseRecord>,
}

impl Deferred {
    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty()
    }
}

/// What the audit event of one response says, owned so that it can wait.
struct ResponseRecord {
    time: jiff::Timestamp,
    direction: Direction,
    method: Option<Cow<'static, str>>,
    /// The id as written (valid JSON: it was read from the message).
    id: Option<CompactString>,
    is_error: bool,
    size: usize,
    duration_ms: Option<f64>,
}

/// A response's `result` and the two of its members the guard reads.
#[derive(Clone, Copy)]
struct ResultOf<'a> {
    bytes: &'a [u8],
    /// `isError`, as written.
    is_error: Option<&'a [u8]>,
    /// `resultType`, as written.
    result_type: Option<&'a [u8]>,
}

impl<'a> ResultOf<'a> {
    /// Reads the members from the result (the skim reads them in its own pass).
    fn read(bytes: Option<&'a [u8]>) -> Option<Self> {
        let bytes = bytes?;
        let [is_error, result_type] = members_named(bytes, [&b"isError"[..], b"resultType"]);
        Some(ResultOf { bytes, is_error, result_type })
    }
}

/// Method names of the protocol (2024-11-05 to 2026-07-28) that requests use.
const REQUEST_METHODS: [&str; 22] = [
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",
    "resources/unsubscribe",
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",
    "sampling/createMessage",
    "elicitation/create",
    "roots/list",
    "tasks/get",
    "tasks/result",
    "tasks/list",
    "tasks/cancel",
    "subscriptions/listen",
];

fn method_name(method: &str) -> Cow<'static, str> {
    REQUEST_METHODS.iter().find(|m| **m == method).map_or_else(|| Cow::Owned(method.to_owned()), |m| Cow::Borrowed(*m))
}

/// The guard of one session between one client and one server.
pub struct Guard {
    policy: PolicyHandle,
    audit: AuditLog,
    server: Option<String>,
    session: String,
    /// The server's tools as its lists described them, and calls waiting for a list.
    listing: listing::Listing,
    /// Batches of a 2025-03-26 session waiting for their answers.
    batches: batch::Batches,
    /// The ids clients sent, when the transport replaced them.
    shown_ids: shown_ids::ShownIds,
    /// Client requests forwarded to the server, by id as written.
    from_client: InFlightTable,
    /// Server requests forwarded to the client, by id as written.
    from_server: InFlightTable,
    /// How conditions learn where a path leads, when the policy asks: on for a server
    /// on this machine, off for a remote one, whose files are not ours to look at.
    follow_links: Option<FollowLinks>,
}

impl Guard {
    /// A guard deciding with `policy`, recording to `audit`, for the server named
    /// `server` (fed to `server` rules).
    pub fn new(policy: PolicyHandle, audit: AuditLog, server: Option<String>) -> Guard {
        Guard {
            policy,
            audit,
            server,
            session: uuid::Uuid::now_v7().to_string(),
            listing: listing::Listing::new(),
            batches: batch::Batches::default(),
            shown_ids: shown_ids::ShownIds::default(),
            from_client: InFlightTable::default(),
            from_server: InFlightTable::default(),
            follow_links: Some(crate::links::follow),
        }
    }

    /// The same guard for a server on another machine (`--upstream`): paths are matched
    /// as spelled, without following the symbolic links of this machine.
    pub fn for_remote_server(mut self) -> Guard {
        self.follow_links = None;
        self
    }

    /// Writes every audit event recorded so far (transports call it before exiting).
    pub fn flush_audit(&self) {
        self.audit.flush();
    }

    /// Writes the audit trail now if a decision waits in it. Transports call it before
    /// any forwarded byte leaves, so that a message never leaves before the event that
    /// decided it is on disk; other events are left for later, off the message's path.
    pub fn write_pending_decisions(&self) {
        if self.audit.has_decision() {
            self.audit.flush();
        }
    }

    /// A mark for the decisions this thread has recorded so far: a transport that
    /// decides and queues on the same thread keeps the highest mark of what it queued
    /// and calls [`Guard::write_decisions_through`] with it before the bytes leave. Unlike
    /// [`Guard::write_pending_decisions`], it does not write the trail for decisions
    /// another thread recorded for messages it sends itself.
    pub fn decision_mark(&self) -> u64 {
        AuditLog::last_decision_of_this_thread()
    }

    /// Writes the audit trail now unless every decision up to `mark` (from
    /// [`Guard::decision_mark`]) is already on disk.
    pub fn write_decisions_through(&self, mark: u64) {
        if !self.audit.decisions_written(mark) {
            self.audit.flush();
        }
    }

    /// The annotations recorded for a tool, if it was listed.
    pub fn annotations(&self, tool: &str) -> Option<ToolAnnotations> {
        self.listing.annotations(tool)
    }

    /// The session id written in every audit event.
    pub fn session(&self) -> &str {
        &self.session
    }

    fn event<'a>(&'a self, direction: Direction, kind: &'static str) -> Event<'a> {
        self.event_at(stamp().wall, direction, kind)
    }

    fn event_at<'a>(&'a self, time: jiff::Timestamp, direction: Direction, kind: &'static str) -> Event<'a> {
        Event {
            time,
            session: &self.session,
            server: self.server.as_deref(),
            direction: Some(direction),
            kind,
            ..Default::default()
        }
    }

    /// A message from the client, arrived now.
    pub fn from_client(&self, line: &[u8]) -> Verdict {
        self.from_client_at(line, stamp())
    }

    /// A message from the client that arrived `at`. A transport takes one [`stamp`] per
    /// read and passes it with every line that read brought: they arrived together, and
    /// a clock read per message is a measurable share of a pipelined call in a VM.
    pub fn from_client_at(&self, line: &[u8], at: Stamp) -> Verdict {
        if self.batches.allowed()
            && line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
            && let Some(verdict) = self.batch_from_client(line, at)
        {
            return verdict;
        }
        self.client_line(line, at, true)
    }

    /// A client message decided now, without waiting for the server's tool list (a call
    /// that already waited for it).
    fn decide_client_line_now(&self, line: &[u8], at: Stamp) -> Verdict {
        self.client_line(line, at, false)
    }

    /// One client message; `may_wait`: a call may wait for the server's tool list.
    fn client_line(&self, line: &[u8], at: Stamp, may_wait: bool) -> Verdict {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Drop;
        }
        let policy = self.policy.current();
        let decided = |method: &str| CLIENT_DECIDED.contains(&method) || policy.names_method(method);
        // The params of a decided method are read strictly in the same pass.
        let envelope = match Envelope::parse_deciding(line, decided) {
            Ok(e) => e,
            Err(e) => return self.refuse_from_client(line, &e),
        };
        let id = envelope.id;
        if let (Kind::Request, Some(method), Some(id)) = (envelope.kind, envelope.method.as_deref(), id)
            && self.listing.claims(id.get())
        {
            let why = "ids that begin with `clawai-tools-list-` followed by this session's key are clawai's own; \
                       use another id"
                .to_owned();
            return self.refuse_request(
                Direction::ClientToServer,
                method,
                Some(id),
                line.len(),
                reply::INVALID_REQUEST,
                why,
            );
        }
        match (envelope.kind, envelope.method.as_deref()) {
            (Kind::Request | Kind::Notification, Some(method)) if decided(method) => {
                let params = envelope.params.map(|params| match params {
                    Params::Decoded(value) => value,
                    // `params` came before `method`.
                    Params::Raw(raw) => strict::parse(raw.get().as_bytes()),
                });
                let arrived = decide::Arrived { line: may_wait.then_some(line), size: line.len(), at };
                self.decide(&policy, Direction::ClientToServer, method, id, params, arrived)
            }
            (Kind::Request | Kind::Notification, Some(method))
                if reads_as_decided(method, &CLIENT_DECIDED, &policy) =>
            {
                self.refuse_look_alike(Direction::ClientToServer, method, id, line.len())
            }
            (Kind::Request, Some(method)) => {
                self.pass(Direction::ClientToServer, "request", method, id, line.len(), at);
                self.track(&self.from_client, id, method, at.instant);
                Verdict::Forward
            }
            (Kind::Notification, Some(method)) => {
                self.pass(Direction::ClientToServer, "notification", method, None, line.len(), at);
                Verdict::Forward
            }
            _ => {
                let mut deferred = Deferred::default();
                let verdict = self.response(
                    Direction::ClientToServer,
                    &self.from_server,
                    id,
                    ResultOf::read(envelope.result.map(|r| r.get().as_bytes())),
                    envelope.error.is_some(),
                    line.len(),
                    at,
                    &mut deferred,
                );
                self.record_deferred(&mut deferred);
                verdict
            }
        }
    }

    /// A message from the server.
    pub fn from_server(&self, line: &[u8]) -> Verdict {
        let mut deferred = Deferred::default();
        let verdict = self.from_server_deferred(line, stamp(), &mut deferred);
        self.record_deferred(&mut deferred);
        verdict
    }

    /// A message from the server that arrived `at` (see [`Guard::from_client_at`]); the
    /// audit event of a response is left in `deferred` for [`Guard::record_deferred`],
    /// which the transport calls once the response is on its way (and before it exits).
    pub fn from_server_deferred(&self, line: &[u8], at: Stamp, deferred: &mut Deferred) -> Verdict {
        let verdict = self.server_line(line, at, deferred);
        self.gather_verdict(line, verdict)
    }

    fn server_line(&self, line: &[u8], at: Stamp, deferred: &mut Deferred) -> Verdict {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Drop;
        }
        // Large results are skimmed, not parsed; anything unusual takes the strict path.
        if let Some(s) = skim(line) {
            let id = s.id.and_then(|i| raw(i));
            if s.id.is_some() && id.is_none() {
                return self.refuse_from_server(line, reply::INVALID_REQUEST, "unusable id");
            }
            return match s.method {
                Some(method) => self.server_message(method, id, s.params, line.len(), at),
                None if id.is_some() && (s.result.is_some() != s.error.is_some()) => self.response(
                    Direction::ServerToClient,
                    &self.from_client,
                    id,
                    s.result.map(|bytes| ResultOf { bytes, is_error: s.result_is_error, result_type: s.result_type }),
                    s.error.is_some(),
                    line.len(),
                    at,
                    deferred,
                ),
                None => self.refuse_from_server(
                    line,
                    reply::INVALID_REQUEST,
                    "neither a request, a notification nor a response",
                ),
            };
        }
        match Envelope::parse(line) {
            Ok(e) => match e.method.as_deref() {
                Some(method) => self.server_message(method, e.id, e.params.map(|p| p.get().as_bytes()), line.len(), at),
                None => self.response(
                    Direction::ServerToClient,
                    &self.from_client,
                    e.id,
                    ResultOf::read(e.result.map(|r| r.get().as_bytes())),
                    e.error.is_some(),
                    line.len(),
                    at,
                    deferred,
                ),
            },
            Err(e) => self.refuse_from_server(line, e.code(), &e.to_string()),
        }
    }

    fn server_message(
        &self,
        method: &str,
        id: Option<&RawValue>,
        params: Option<&[u8]>,
        size: usize,
        at: Stamp,
    ) -> Verdict {
        let policy = self.policy.current();
        if SERVER_DECIDED.contains(&method) || policy.names_method(method) {
            let params = params.map(strict::parse);
            return self.decide(
                &policy,
                Direction::ServerToClient,
                method,
                id,
                params,
                decide::Arrived { line: None, size, at },
            );
        }
        if reads_as_decided(method, &SERVER_DECIDED, &policy) {
            return self.refuse_look_alike(Direction::ServerToClient, method, id, size);
        }
        if method == "notifications/tools/list_changed" {
            self.listing.changed();
        }
        let kind = if id.is_some() { "request" } else { "notification" };
        self.pass(Direction::ServerToClient, kind, method, id, size, at);
        if id.is_some() {
            self.track(&self.from_server, id, method, at.instant);
        }
        Verdict::Forward
    }

    /// Records that a message was refused (not valid, ambiguous, too large…).
    fn record_refusal(
        &self,
        direction: Direction,
        method: Option<&str>,
        id: Option<&RawValue>,
        reason: String,
        size: usize,
    ) {
        let shown = id.map(|id| self.shown_id(id.get()));
        let mut event = self.event(direction, "refused");
        event.method = method;
        event.id = shown.as_deref();
        event.decision = Some("refused");
        event.reason = Some(reason.into());
        event.size = Some(size);
        self.audit.record_decision(&event);
    }

    /// A client line longer than the limit: refused with an error for its id.
    pub fn oversize_from_client(&self, prefix: &[u8], length: usize, limit: usize) -> Verdict {
        let id = leading_id(prefix).and_then(utf8);
        let why = format!("message of {length} bytes is over the {limit}-byte limit");
        self.record_refusal(Direction::ClientToServer, None, None, why, length);
        tracing::warn!("refused a {length}-byte message from the client (limit {limit} bytes)");
        Verdict::Reply(reply::error(
            id,
            reply::TOO_LARGE,
            &format!("message of {length} bytes refused by clawai: the limit is {limit} bytes (--max-message-size)"),
            None,
        ))
    }

    /// A server line longer than the limit: not forwarded; when it was a response, the
    /// client gets an error for that request instead. Returns the message for the client.
    pub fn oversize_from_server(&self, prefix: &[u8], length: usize, limit: usize) -> Option<Vec<u8>> {
        let id = leading_id(prefix).and_then(utf8);
        let why = format!("message of {length} bytes is over the {limit}-byte limit");
        self.record_refusal(Direction::ServerToClient, None, None, why, length);
        tracing::warn!("dropped a {length}-byte message from the server (limit {limit} bytes)");
        let (key, request) = self.from_client.remove(id?)?;
        self.gather_answer(reply::error(
            Some(request.id(&key)),
            reply::TOO_LARGE,
            &format!(
                "the server's response of {length} bytes was dropped by clawai: the limit is {limit} bytes (--max-message-size)"
            ),
            None,
        ))
    }

    /// The server is gone: an error for every client request still waiting.
    pub fn server_gone(&self, why: &str) -> Vec<Vec<u8>> {
        let answers: Vec<Vec<u8>> = self
            .from_client
            .drain()
            .into_iter()
            .map(|(key, flight)| {
                let id = flight.id(&key);
                let shown = self.shown_id(id);
                let mut event = self.event(Direction::ServerToClient, "response");
                event.method = Some(&flight.method);
                event.id = Some(&shown);
                event.is_error = Some(true);
                event.reason = Some(why.into());
                self.audit.record_decision(&event);
                reply::error(
                    Some(id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai: {why}; the request got no answer"),
                    None,
                )
            })
            .chain(self.held_gone(why))
            .collect();
        answers.into_iter().filter_map(|answer| self.gather_answer(answer)).collect()
    }

    /// A client message that is not forwarded: the client gets an error. A line that is
    /// not JSON-RPC 2.0 at all is answered with id null; a request that is not valid (a
    /// member twice, a bad `params`) for its id, read leniently when the strict reading
    /// stopped before it, so that the client does not wait for an answer.
    fn refuse_from_client(&self, line: &[u8], error: &EnvelopeError) -> Verdict {
        let id = match error {
            EnvelopeError::Invalid { id: Some(id), .. } => raw(id.as_bytes()),
            EnvelopeError::Invalid { id: None, .. } => {
                Some(salvage(line)).filter(|s| s.request && !s.response).and_then(|s| s.id).and_then(raw)
            }
            _ => None,
        };
        self.record_refusal(Direction::ClientToServer, None, id, error.to_string(), line.len());
        tracing::warn!("refused a message from the client: {error}");
        Verdict::Reply(reply::error(
            id.map(RawValue::get),
            error.code(),
            &format!("clawai refused the message: {error}"),
            None,
        ))
    }

    /// A method that reads as a decided one (see [`reads_as_decided`]): refused with an
    /// error to the side that sent it (a notification is dropped).
    fn refuse_look_alike(&self, direction: Direction, method: &str, id: Option<&RawValue>, size: usize) -> Verdict {
        let why = format!(
            "method `{}` differs from a method clawai decides only in case or in the blanks around it; \
             send the method exactly as the protocol spells it",
            method.escape_debug()
        );
        self.refuse_request(direction, method, id, size, reply::AMBIGUOUS, why)
    }

    /// Records a request (or notification) refused before any rule was asked, and
    /// answers it with a JSON-RPC error to the side that sent it; a notification is
    /// dropped.
    fn refuse_request(
        &self,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        size: usize,
        code: i64,
        why: String,
    ) -> Verdict {
        self.record_refusal(direction, Some(method), id, why.clone(), size);
        let method = method.escape_debug();
        tracing::warn!("refused {method}: {why}");
        match id {
            Some(id) => {
                Verdict::Reply(reply::error(Some(id.get()), code, &format!("clawai refused {method}: {why}"), None))
            }
            None => Verdict::Drop,
        }
    }

    /// A message from the server that is not forwarded. So that nobody waits for an
    /// answer that will not come, a request is answered to the server with an error
    /// (`code`), and a response to a client request still waiting becomes an error for
    /// that request; a message that reads as neither, or has no usable id, is dropped.
    fn refuse_from_server(&self, line: &[u8], code: i64, why: &str) -> Verdict {
        let salvage = salvage(line);
        let id = salvage.id.and_then(raw);
        self.record_refusal(Direction::ServerToClient, None, id, why.to_owned(), line.len());
        match (salvage.request, salvage.response, id.map(RawValue::get)) {
            (true, false, Some(id)) => {
                tracing::warn!("refused a request from the server: {why}");
                Verdict::Reply(reply::error(Some(id), code, &format!("clawai refused the request: {why}"), None))
            }
            (false, true, Some(id)) if let Some((key, request)) = self.from_client.remove(id) => {
                let id = request.id(&key);
                tracing::warn!("dropped the server's response to request {id}: {why}");
                Verdict::Replace(reply::error(
                    Some(id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai dropped the server's response: {why}"),
                    None,
                ))
            }
            _ => {
                tracing::warn!("dropped a message from the server: {why}");
                Verdict::Drop
            }
        }
    }

    /// Records a message no rule decides.
    fn pass(
        &self,
        direction: Direction,
        kind: &'static str,
        method: &str,
        id: Option<&RawValue>,
        size: usize,
        at: Stamp,
    ) {
        let shown = id.map(|id| self.shown_id(id.get()));
        let mut event = self.event_at(at.wall, direction, kind);
        event.method = Some(method);
        event.id = shown.as_deref();
        event.decision = Some("pass");
        event.size = Some(size);
        self.audit.record(&event);
    }

    fn track(&self, table: &InFlightTable, id: Option<&RawValue>, method: &str, started: Instant) {
        if let Some(id) = id {
            // Built before the table is locked: the other direction's thread takes that
            // lock when it runs out of requests to match.
            let mut flight = InFlight::new(method_name(method), started);
            let key = match crate::in_flight::match_key(id.get()) {
                Cow::Borrowed(key) => CompactString::new(key),
                Cow::Owned(key) => {
                    flight.written_id = Some(CompactString::new(id.get()));
                    CompactString::from(key)
                }
            };
            table.insert(key, flight);
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn response(
        &self,
        direction: Direction,
        table: &InFlightTable,
        id: Option<&RawValue>,
        result: Option<ResultOf<'_>>,
        is_error: bool,
        size: usize,
        at: Stamp,
        deferred: &mut Deferred,
    ) -> Verdict {
        let Stamp { wall: time, instant: now } = at;
        if direction == Direction::ServerToClient
            && let Some(id) = id
            && let Some(verdict) = self.own_response(
                id,
                result.filter(|_| !is_error).map(|r| r.bytes),
                is_error.then_some("the server answered with an error"),
            )
        {
            return verdict;
        }
        let flight = id.and_then(|i| table.remove(i.get()));
        let result_type = result.and_then(|r| r.result_type);
        let is_error = is_error || result.and_then(|r| r.is_error) == Some(&b"true"[..]);
        let result = result.map(|r| r.bytes);
        if let (Some((_, flight)), Some(result)) = (&flight, result)
            && flight.method == "tools/list"
            && direction == Direction::ServerToClient
        {
            // Before the result is forwarded: the client's next call may depend on it.
            self.listing.record(result);
        }
        if let (Some((_, flight)), Some(result)) = (&flight, result)
            && flight.method == "initialize"
            && direction == Direction::ServerToClient
        {
            self.batches.negotiated(member(result, b"protocolVersion"));
        }
        let (key, flight) = flight.unzip();
        // The response's id as it wrote it (the key saves a copy when that is the same).
        let record_id = match (key, id) {
            (_, Some(written)) if let Cow::Owned(sent) = self.shown_id(written.get()) => {
                Some(CompactString::from(sent))
            }
            (Some(key), Some(written)) if key == written.get() => Some(key),
            (_, written) => written.map(|w| CompactString::new(w.get())),
        };
        deferred.responses.push(ResponseRecord {
            time,
            direction,
            id: record_id,
            duration_ms: flight.as_ref().map(|f| now.saturating_duration_since(f.started).as_secs_f64() * 1000.0),
            method: flight.map(|f| f.method),
            is_error,
            size,
        });
        // 2026-07-28: server-to-client requests travel inside `input_required` results.
        match result {
            Some(result)
                if direction == Direction::ServerToClient && result_type == Some(&b"\"input_required\""[..]) =>
            {
                self.decide_input_requests(id, result, size)
            }
            _ => Verdict::Forward,
        }
    }

    /// Records the audit events left in `deferred` (see [`Guard::from_server_deferred`]).
    pub fn record_deferred(&self, deferred: &mut Deferred) {
        self.audit.record_all(deferred.responses.iter().map(|record| {
            let mut event = self.event_at(record.time, record.direction, "response");
            event.method = record.method.as_deref();
            event.id = record.id.as_deref();
            event.is_error = Some(record.is_error);
            event.size = Some(record.size);
            event.duration_ms = record.duration_ms;
            event
        }));
        deferred.responses.clear();
    }

    /// Decides each request inside an `InputRequiredResult` (sampling, elicitation, roots
    /// asked of the client through the result of its own request). If one is not
    /// allowed, the client gets an error for its request instead of the result.
    fn decide_input_requests(&self, id: Option<&RawValue>, result: &[u8], size: usize) -> Verdict {
        let id_text = id.map(RawValue::get);
        let deny =
            |code: i64, text: String, data: Option<Value>| Verdict::Replace(reply::error(id_text, code, &text, data));
        let Some(requests) = member(result, b"inputRequests") else { return Verdict::Forward };
        let requests = match strict::parse(requests) {
            Ok(Json::Object(members)) => members,
            Ok(_) => {
                let why = "`inputRequests` is not an object".to_owned();
                self.record_refusal(Direction::ServerToClient, None, id, why.clone(), size);
                return deny(reply::INVALID_REQUEST, format!("clawai refused the server's result: {why}"), None);
            }
            Err(e) => {
                let why = format!("the server's input requests are ambiguous ({e})");
                self.record_refusal(Direction::ServerToClient, None, id, why.clone(), size);
                return deny(reply::AMBIGUOUS, format!("clawai refused the server's result: {why}"), None);
            }
        };
        let policy = self.policy.current();
        for (key, request) in &requests {
            let method = request.get("method").and_then(Json::as_str).unwrap_or_default();
            if !(SERVER_DECIDED.contains(&method) || policy.names_method(method)) {
                continue;
            }
            let call = Call::from_params(method, request.get("params"))
                .with_server(self.server.as_deref())
                .with_links_followed(self.follow_links.filter(|_| policy.follows_links()));
            let decision = policy.decide(&call);
            let shown = id.map(|id| self.shown_id(id.get()));
            let mut event = self.event(Direction::ServerToClient, "request");
            event.method = Some(method);
            event.id = shown.as_deref();
            event.arguments = call.arguments.map(Redacted);
            event.decision = Some(decision.action.as_str());
            event.rule = decision.rule_id();
            event.reason =
                Some(format!("{} (input request `{key}` of an input_required result)", decision.reason()).into());
            event.size = Some(size);
            self.audit.record_decision(&event);
            if !decision.action.forwards() {
                tracing::warn!("{} {method} inside an input_required result: {}", decision.action, decision.reason());
                let data = serde_json::json!({"rule": decision.rule_id(), "decision": decision.action.as_str(), "inputRequest": key});
                let text = format!(
                    "clawai denied the server's {method} request (input request `{key}`): {}",
                    decision.reason()
                );
                let code = if decision.action == Action::Prompt { reply::APPROVAL_REQUIRED } else { reply::DENIED };
                return deny(code, text, Some(data));
            }
        }
        Verdict::Forward
    }
}

/// True when `method` is not one the policy decides but reads as one once trimmed of
/// blanks and case-folded (`Tools/Call`, `tools/call\t`): JSON-RPC methods are
/// case-sensitive, but a server that dispatches leniently would run it undecided.
fn reads_as_decided(method: &str, fixed: &[&str], policy: &Policy) -> bool {
    let loose = fold_case(loose_name(method));
    fixed.iter().any(|decided| *decided != method && decided.eq_ignore_ascii_case(&loose))
        || policy.names_method_loosely(method)
}

fn raw(bytes: &[u8]) -> Option<&RawValue> {
    std::str::from_utf8(bytes).ok().and_then(|s| serde_json::from_str::<&RawValue>(s).ok())
}

fn utf8(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests;
