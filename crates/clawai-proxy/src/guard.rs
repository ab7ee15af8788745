//! The one decision path every transport calls.
//!
//! A transport reads a message, hands the bytes to [`Guard::from_client`] or
//! [`Guard::from_server`], and does what the [`Verdict`] says: forward the original
//! bytes, answer the sender, or drop. The guard parses, decides with the policy,
//! records the audit event before anything is forwarded, and keeps the little state a
//! decision needs (tool annotations from `tools/list`, requests in flight).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::RwLock;
use std::time::Instant;

use compact_str::CompactString;

use clawai_policy::{Action, Call, Decision, FollowLinks, Policy, ToolAnnotations};
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
}

/// The methods each side sends that the policy always decides on (any other method is
/// decided too when a `method` rule names it); defined beside the policy so that `clawai
/// policy test` decides as the wire does.
pub use clawai_policy::wire::{CLIENT_DECIDED, SERVER_DECIDED};

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
    tools: RwLock<HashMap<String, ToolAnnotations, foldhash::quality::RandomState>>,
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
            tools: RwLock::default(),
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
        match (envelope.kind, envelope.method.as_deref()) {
            (Kind::Request | Kind::Notification, Some(method)) if decided(method) => {
                let params = envelope.params.map(|params| match params {
                    Params::Decoded(value) => value,
                    // `params` came before `method`.
                    Params::Raw(raw) => strict::parse(raw.get().as_bytes()),
                });
                self.decide(&policy, Direction::ClientToServer, method, id, params, line.len(), at)
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
            return self.decide(&policy, Direction::ServerToClient, method, id, params, size, at);
        }
        if reads_as_decided(method, &SERVER_DECIDED, &policy) {
            return self.refuse_look_alike(Direction::ServerToClient, method, id, size);
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
        let mut event = self.event(direction, "refused");
        event.method = method;
        event.id = id.map(RawValue::get);
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
        Some(reply::error(
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
        self.from_client
            .drain()
            .into_iter()
            .map(|(key, flight)| {
                let id = flight.id(&key);
                let mut event = self.event(Direction::ServerToClient, "response");
                event.method = Some(&flight.method);
                event.id = Some(id);
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
            .collect()
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
        let mut event = self.event_at(at.wall, direction, kind);
        event.method = Some(method);
        event.id = id.map(RawValue::get);
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
        let flight = id.and_then(|i| table.remove(i.get()));
        let result_type = result.and_then(|r| r.result_type);
        let is_error = is_error || result.and_then(|r| r.is_error) == Some(&b"true"[..]);
        let result = result.map(|r| r.bytes);
        if let (Some((_, flight)), Some(result)) = (&flight, result)
            && flight.method == "tools/list"
            && direction == Direction::ServerToClient
        {
            // Before the result is forwarded: the client's next call may depend on it.
            self.record_tools(result);
        }
        let (key, flight) = flight.unzip();
        // The response's id as it wrote it (the key saves a copy when that is the same).
        let record_id = match (key, id) {
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
            let mut event = self.event(Direction::ServerToClient, "request");
            event.method = Some(method);
            event.id = id.map(RawValue::get);
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

    /// Remembers each tool's annotations from a `tools/list` result.
    fn record_tools(&self, result: &[u8]) {
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

    /// The annotations recorded for a tool, if it was listed.
    pub fn annotations(&self, tool: &str) -> Option<ToolAnnotations> {
        self.tools.read().unwrap_or_else(|p| p.into_inner()).get(tool).copied()
    }

    /// Decides a message the policy applies to. The message's top level was already read
    /// strictly (no duplicate or case-variant members); `params` is read strictly here.
    #[allow(clippy::too_many_arguments)]
    fn decide(
        &self,
        policy: &Policy,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        params: Option<Result<Json<'_>, strict::Ambiguous>>,
        size: usize,
        at: Stamp,
    ) -> Verdict {
        let id_text = id.map(RawValue::get);
        let refuse = |code: i64, why: String| self.refuse_request(direction, method, id, size, code, why);
        let params = match params.transpose() {
            Ok(v) => v,
            Err(e) => return refuse(reply::AMBIGUOUS, format!("the message is ambiguous ({e})")),
        };
        let params = params.as_ref();
        if let Some(key) = case_variant_member(params) {
            return refuse(
                reply::AMBIGUOUS,
                format!("`params.{key}` differs only in case from a member the policy reads"),
            );
        }
        if let Err(why) = check_params(method, params) {
            return refuse(reply::INVALID_PARAMS, why);
        }
        let call = Call::from_params(method, params)
            .with_server(self.server.as_deref())
            .with_links_followed(self.follow_links.filter(|_| policy.follows_links()));
        let call = match (method, call.name) {
            ("tools/call", Some(tool)) => call.with_annotations(self.annotations(tool)),
            _ => call,
        };
        let decision = policy.decide(&call);

        let mut event = self.event_at(at.wall, direction, if id.is_some() { "request" } else { "notification" });
        event.method = Some(method);
        event.id = id.map(RawValue::get);
        match method {
            "tools/call" => event.tool = call.name,
            "resources/read" => event.resource = call.name,
            "prompts/get" => event.prompt = call.name,
            _ => {}
        }
        event.arguments = call.arguments.map(Redacted);
        event.decision = Some(decision.action.as_str());
        event.rule = decision.rule_id();
        event.reason = Some(decision.reason().into());
        event.size = Some(size);
        self.audit.record_decision(&event);

        if decision.action.forwards() {
            let table = if direction == Direction::ClientToServer { &self.from_client } else { &self.from_server };
            self.track(table, id, method, at.instant);
            return Verdict::Forward;
        }
        let what = call.name.map_or_else(|| method.to_owned(), |n| format!("{method} {n}"));
        tracing::warn!("{} {what}: {}", decision.action, decision.reason());
        match id_text {
            None => Verdict::Drop,
            Some(_) => Verdict::Reply(denial(method, id_text, &decision, &what, reply::is_stateless_request(params))),
        }
    }
}

/// True when `method` reads as a decided method without being one (see
/// [`Policy::reads_as_decided`]).
fn reads_as_decided(method: &str, fixed: &[&str], policy: &Policy) -> bool {
    policy.reads_as_decided(method, fixed)
}

/// The answer to a denied request: a tool result with `isError` for `tools/call` (so the
/// model reads why), a JSON-RPC error otherwise.
fn denial(method: &str, id: Option<&str>, decision: &Decision, what: &str, stateless: bool) -> Vec<u8> {
    let (code, text) = match decision.action {
        Action::Prompt => (
            reply::APPROVAL_REQUIRED,
            format!(
                "clawai: {what} needs a person's approval ({}), and no approval channel is available, so it was denied",
                decision.reason()
            ),
        ),
        _ => (reply::DENIED, format!("clawai denied {what}: {}", decision.reason())),
    };
    if method == "tools/call" {
        reply::tool_error(id, &text, stateless)
    } else {
        let data = serde_json::json!({"rule": decision.rule_id(), "decision": decision.action.as_str()});
        reply::error(id, code, &text, Some(data))
    }
}

/// The shape each decided method needs, so that the policy and the server read the
/// same call.
fn check_params(method: &str, params: Option<&Json>) -> Result<(), String> {
    let field = |key: &str| params.and_then(|p| p.get(key));
    let string = |key: &str| match field(key) {
        Some(Json::String(_)) => Ok(()),
        Some(_) => Err(format!("`params.{key}` must be a string")),
        None => Err(format!("`params.{key}` is missing")),
    };
    match method {
        "tools/call" | "prompts/get" => string("name"),
        "resources/read" => string("uri"),
        _ => Ok(()),
    }
}

/// The members of `params` the policy reads. A lenient server might take `Name` or
/// `ARGUMENTS` for them, so a member spelled like one of these in another case is refused
/// even when the real one is absent.
const DECIDED_PARAMS: [&str; 5] = ["name", "arguments", "uri", "_meta", "task"];

fn case_variant_member<'p>(params: Option<&'p Json>) -> Option<&'p str> {
    let Some(Json::Object(members)) = params else { return None };
    members.iter().map(|(k, _)| &**k).find(|k| DECIDED_PARAMS.iter().any(|d| d.eq_ignore_ascii_case(k) && d != k))
}

fn raw(bytes: &[u8]) -> Option<&RawValue> {
    std::str::from_utf8(bytes).ok().and_then(|s| serde_json::from_str::<&RawValue>(s).ok())
}

fn utf8(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawai_policy::{Format, load_str};

    fn guard(audit: AuditLog) -> Guard {
        let policy = load_str("[[rule]]\nid = \"all\"\naction = \"allow\"\ntool = \"**\"\n", Format::Toml, "test")
            .expect("the policy loads");
        Guard::new(PolicyHandle::new(policy), audit, Some("s".into()))
    }

    /// The response events in the trail at `path`, once the guard has written it.
    fn response_events(guard: &Guard, path: &std::path::Path) -> Vec<serde_json::Value> {
        guard.flush_audit();
        let text = std::fs::read_to_string(path).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|e| e["kind"] == "response")
            .collect()
    }

    #[test]
    fn a_response_is_matched_to_its_request_by_the_id_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let guard = guard(AuditLog::open(&path, u64::MAX, 0).unwrap());
        // Numbers and strings, escaped ones included, as the server echoes them.
        for id in ["7", "-3", r#""a-1""#, r#""a\u0062""#, "1.5"] {
            let call = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#);
            assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
            let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
            assert_eq!(guard.from_server(response.as_bytes()), Verdict::Forward);
        }
        let responses = response_events(&guard, &path);
        assert_eq!(responses.len(), 5);
        for event in responses {
            assert_eq!(event["method"], "tools/call", "matched to its request: {event}");
            assert!(event["duration_ms"].is_number(), "{event}");
        }
    }

    #[test]
    fn a_response_is_matched_to_its_request_when_the_server_rewrote_the_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let guard = guard(AuditLog::open(&path, u64::MAX, 0).unwrap());
        // As the client wrote them, and as a server that decodes and re-encodes ids
        // (Python's json, JavaScript's JSON) answers them.
        let pairs = [("-0", "0"), (r#""\u0061""#, r#""a""#), ("1.0", "1"), ("1e2", "100")];
        for (sent, answered) in pairs {
            let call = format!(r#"{{"jsonrpc":"2.0","id":{sent},"method":"tools/call","params":{{"name":"t"}}}}"#);
            assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
            let response = format!(r#"{{"jsonrpc":"2.0","id":{answered},"result":{{"content":[]}}}}"#);
            assert_eq!(guard.from_server(response.as_bytes()), Verdict::Forward);
        }
        // Nothing is left waiting, so the client gets no second answer when the server goes.
        assert!(guard.server_gone("the MCP server exited").is_empty());
        // One left unanswered is failed with its id as the client wrote it.
        assert_eq!(
            guard.from_client(br#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"t"}}"#),
            Verdict::Forward
        );
        let gone = guard.server_gone("the MCP server exited");
        assert_eq!(gone.len(), 1);
        assert!(gone[0].starts_with(br#"{"jsonrpc":"2.0","id":-0,"#), "{}", String::from_utf8_lossy(&gone[0]));
        let responses = response_events(&guard, &path);
        assert_eq!(responses.len(), 5);
        for (event, (_, answered)) in responses.iter().zip(pairs) {
            assert_eq!(event["method"], "tools/call", "matched to its request: {event}");
            assert!(event["duration_ms"].is_number(), "{event}");
            assert_eq!(event["id"], serde_json::from_str::<serde_json::Value>(answered).unwrap(), "the id it carried");
        }
    }

    #[test]
    fn a_server_message_whose_id_is_not_json_is_dropped() {
        let guard = guard(AuditLog::disabled());
        for id in ["01", "1e", "-", r#""a"#, "0x1", "+1"] {
            let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
            assert_eq!(guard.from_server(response.as_bytes()), Verdict::Drop, "{id}");
        }
        assert_eq!(guard.from_server(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Verdict::Forward);
    }

    #[test]
    fn a_refused_server_message_is_answered_so_that_nobody_waits() {
        let guard = guard(AuditLog::disabled());
        let error = |verdict: Verdict| -> (&'static str, serde_json::Value) {
            match verdict {
                Verdict::Reply(bytes) => ("to the server", serde_json::from_slice(&bytes).unwrap()),
                Verdict::Replace(bytes) => ("to the client", serde_json::from_slice(&bytes).unwrap()),
                other => panic!("{other:?}"),
            }
        };
        // Ambiguous requests of the server: refused to the server, for their id.
        for (line, id) in [
            (
                &br#"{"jsonrpc":"2.0","id":3,"Method":"sampling/createMessage","method":"ping"}"#[..],
                serde_json::json!(3),
            ),
            (
                br#"{"jsonrpc":"2.0","id":"s7","method":"sampling/createMessage","params":{},"method":"ping"}"#,
                "s7".into(),
            ),
        ] {
            let (to, answer) = error(guard.from_server(line));
            assert_eq!(
                (to, &answer["id"], &answer["error"]["code"]),
                ("to the server", &id, &reply::INVALID_REQUEST.into())
            );
        }
        // A response the client's request waits for, but refused: an error for that request.
        for (n, bad) in
            [r#""result":{"x":1},"result":{"x":2}"#, r#""result":{"x":1},"Result":{"x":2}"#, r#""result":{"x":1"#]
                .into_iter()
                .enumerate()
        {
            let call = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"t"}}}}"#);
            assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
            let response = format!(r#"{{"jsonrpc":"2.0","id":{n},{bad}}}"#);
            let (to, answer) = error(guard.from_server(response.as_bytes()));
            assert_eq!(
                (to, &answer["id"], &answer["error"]["code"]),
                ("to the client", &n.into(), &reply::SERVER_UNAVAILABLE.into())
            );
            // Answered once: the same refused response again has nobody waiting for it.
            assert_eq!(guard.from_server(response.as_bytes()), Verdict::Drop, "{response}");
        }
        // Neither clearly a request nor a response, or no usable id: dropped.
        assert_eq!(
            guard.from_client(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t"}}"#),
            Verdict::Forward
        );
        for line in [
            &br#"{"jsonrpc":"2.0","id":9,"method":"x","result":{},"result":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":9,"id":10,"result":{},"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":09,"method":"x","method":"y"}"#,
        ] {
            assert_eq!(guard.from_server(line), Verdict::Drop, "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn methods_that_read_as_decided_ones_are_refused_both_ways() {
        let policy = load_str(
            "[[rule]]\naction = \"deny\"\nmethod = \"custom/Run\"\n[defaults]\naction = \"allow\"\n",
            Format::Toml,
            "test",
        )
        .expect("the policy loads");
        let guard = Guard::new(PolicyHandle::new(policy), AuditLog::disabled(), None);
        let request =
            |method: &str| serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {}}).to_string();
        let notification =
            |method: &str| serde_json::json!({"jsonrpc": "2.0", "method": method, "params": {}}).to_string();
        let refused = |verdict: Verdict| match verdict {
            Verdict::Reply(bytes) => {
                let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                answer["id"] == 5 && answer["error"]["code"] == reply::AMBIGUOUS
            }
            _ => false,
        };
        for method in [
            "Tools/Call",
            "TOOLS/CALL",
            "tools/call ",
            "\ttools/call",
            "tools/call\u{0}",
            "re\u{17f}ources/read",
            "Prompts/Get",
            "custom/run",
            "CUSTOM/RUN ",
        ] {
            assert!(refused(guard.from_client(request(method).as_bytes())), "{method:?}");
            assert_eq!(guard.from_client(notification(method).as_bytes()), Verdict::Drop, "{method:?}");
        }
        for method in ["Sampling/CreateMessage", "sampling/createmessage", "elicitation/create\n", "Custom/Run"] {
            assert!(refused(guard.from_server(request(method).as_bytes())), "{method:?}");
            assert_eq!(guard.from_server(notification(method).as_bytes()), Verdict::Drop, "{method:?}");
        }
        // The methods as spelled pass or are decided; other methods pass.
        for method in ["ping", "tools/list", "notifications/progress", "tools/call/extra", "Ping"] {
            assert_eq!(guard.from_client(request(method).as_bytes()), Verdict::Forward, "{method:?}");
        }
        assert!(matches!(guard.from_client(request("custom/Run").as_bytes()), Verdict::Reply(_)));
        assert_eq!(guard.from_server(request("sampling/createMessage").as_bytes()), Verdict::Forward);
        assert_eq!(guard.from_server(notification("notifications/message").as_bytes()), Verdict::Forward);
    }

    #[test]
    fn deny_rules_see_where_a_link_leads_when_the_policy_asks_and_the_server_is_local() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let root = root.to_str().unwrap();
        std::fs::create_dir_all(format!("{root}/keys")).unwrap();
        std::fs::write(format!("{root}/keys/id_rsa"), "k").unwrap();
        std::fs::create_dir_all(format!("{root}/site")).unwrap();
        std::os::unix::fs::symlink(format!("{root}/keys"), format!("{root}/site/docs")).unwrap();
        let policy = |follow: bool| {
            let text = format!(
                "[defaults]\nfollow_links = {follow}\n[[rule]]\nid = \"keys\"\naction = \"deny\"\ntool = \"**\"\n\
                 any_arg = \"{root}/keys/**\"\n[[rule]]\naction = \"allow\"\ntool = \"**\"\n"
            );
            PolicyHandle::new(load_str(&text, Format::Toml, "test").expect("the policy loads"))
        };
        let read = |path: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read","arguments":{{"p":"{path}"}}}}}}"#
            )
        };
        let through_link = read(&format!("{root}/site/docs/id_rsa"));
        let denied = |verdict: Verdict| match verdict {
            Verdict::Reply(bytes) => String::from_utf8(bytes).unwrap().contains("rule `keys`"),
            _ => false,
        };
        let local = Guard::new(policy(true), AuditLog::disabled(), None);
        assert!(denied(local.from_client(through_link.as_bytes())));
        assert!(denied(local.from_client(read(&format!("{root}/keys/id_rsa")).as_bytes())));
        assert_eq!(local.from_client(read(&format!("{root}/site/index.html")).as_bytes()), Verdict::Forward);
        // The policy did not ask, or the server's files are on another machine.
        let unasked = Guard::new(policy(false), AuditLog::disabled(), None);
        assert_eq!(unasked.from_client(through_link.as_bytes()), Verdict::Forward);
        let remote = Guard::new(policy(true), AuditLog::disabled(), None).for_remote_server();
        assert_eq!(remote.from_client(through_link.as_bytes()), Verdict::Forward);
    }
}
