//! The one decision path every transport calls.
//!
//! A transport reads a message, hands the bytes to [`Guard::from_client`] or
//! [`Guard::from_server`], and does what the [`Verdict`] says: forward the original
//! bytes, answer the sender, or drop. The guard parses, decides with the policy,
//! records the audit event before anything is forwarded, and keeps the little state a
//! decision needs (tool annotations from `tools/list`, requests in flight).
//!
//! A decided message goes through the stages of the decision path in the order
//! [`pipeline`] lists for its direction, each a module here: limits and parsing
//! (`refuse`), the params, the server's tool list (`listing`), [`self_protection`](crate::self_protection), the
//! policy (`decide`), the pins (`pinning`), credentials in the arguments (`arguments`,
//! [`credentials`]), a person (`approvals`, `broker`), and the audit trail (the event is
//! recorded before anything leaves); a result goes through pinning, `results` and
//! `hiding`. A stage may hold a message; everything else keeps flowing meanwhile.
//! [`Verdict::deliveries`] turns what the guard decided into what the transport sends,
//! and every public entry point returns only once the events that decided its verdict
//! are on disk (`Guard::on_disk`; the stdio relay's batched `Outbox` is the one exception,
//! and writes the trail itself before its bytes leave).

use clawai_protocol::methods;

mod alone;
mod approvals;
mod arguments;
mod batch;
mod broker;
pub mod credentials;
mod decide;
mod deliver;
mod from_server;
mod hiding;
mod listing;
mod own;
mod pinning;
pub mod pipeline;
mod record;
mod refuse;
mod response;
mod results;
mod sandbox;
mod shown_ids;

use refuse::reads_as_decided;
pub use response::Deferred;
use response::ResultOf;

use std::borrow::Cow;
use std::time::Instant;

pub use alone::{Alone, decide_alone};
pub use approvals::{AskOptions, INPUT_KEY, Later, Outlet};
pub use arguments::{RULE_ID as SECRETS_IN_ARGUMENTS, decided_with_credential};
pub(crate) use deliver::Outbox;
pub use deliver::{Deliveries, Delivery, Side, dispatched};
pub use own::{OwnRequest, OwnRequests, OwnVerdict};
pub use pinning::scan_settings;

use compact_str::CompactString;

use clawai_policy::{FollowLinks, ToolAnnotations};
use clawai_protocol::envelope::{Envelope, Kind, Params};
use clawai_protocol::reply;
use clawai_protocol::skim::skim;
use clawai_protocol::strict;
use serde_json::value::RawValue;

use crate::audit::{AuditLog, Decision, Direction, Event, EventKind, Stamp, stamp};
use crate::in_flight::{InFlight, InFlightTable};
use crate::reload::PolicyHandle;

/// What the transport does with a message: turned into what to send by
/// [`Verdict::deliveries`], the one place that says where each verdict's bytes go.
#[must_use = "a verdict says what to send; send its deliveries"]
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

/// The methods each side sends that the policy always decides on (any other method is
/// decided too when a `method` rule names it); defined beside the policy so that `clawai
/// policy test` decides as the wire does.
pub use clawai_policy::wire::{CLIENT_DECIDED, SERVER_DECIDED};

fn method_name(method: &str) -> Cow<'static, str> {
    methods::REQUESTS
        .iter()
        .find(|m| **m == method)
        .map_or_else(|| Cow::Owned(method.to_owned()), |m| Cow::Borrowed(*m))
}

/// Whether a client call may wait for the server's tool list before it is decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListWait {
    /// It may (a call as it arrives).
    MayWait,
    /// It is decided now (it waited already).
    DecideNow,
}

/// Whether a client call may wait for a person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Asking {
    /// It may.
    MayAsk,
    /// It may not: inside a batch, whose answers are gathered into one array.
    InBatch,
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
    /// Calls a rule asks a person about, and how this session asks.
    asking: approvals::Asking,
    /// Behind the gateway: how the client names what the server calls a name.
    listed_as: Option<ListedAs>,
    /// The server's pins, when what it lists is compared with what was approved.
    pinning: Option<std::sync::Arc<pinning::Pinning>>,
    /// What the policy's `rate`, `taint` and `tainted` remember of this session; the
    /// gateway shares one between the guards of a client session's servers.
    remembered: std::sync::Arc<clawai_policy::Session>,
    /// The protections of the server's sandbox, once it started in one (shared with the
    /// other guards of the same server behind the gateway).
    sandbox: SandboxCell,
}

pub use sandbox::SandboxCell;

/// How the gateway lists a server's tool, prompt or resource: `(method, the server's own
/// name or URI)` → the name the client uses, for the audit trail.
pub type ListedAs = std::sync::Arc<dyn Fn(&str, &str) -> Option<String> + Send + Sync>;

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
            asking: approvals::Asking::new(AskOptions::default()),
            listed_as: None,
            pinning: None,
            remembered: std::sync::Arc::default(),
            sandbox: SandboxCell::default(),
        }
    }

    /// The same guard, remembering `rate` counts and `taint` labels in `remembered`:
    /// the gateway gives the guards of one client session's servers the same one, so
    /// that what one server's tool read taints calls to every other.
    pub fn remembering_in(mut self, remembered: std::sync::Arc<clawai_policy::Session>) -> Guard {
        self.remembered = remembered;
        self
    }

    /// The same guard, writing `session` as its session id (the gateway's downstream
    /// session, shared by the guards of every server it calls).
    pub fn with_session(mut self, session: String) -> Guard {
        self.session = session;
        self
    }

    /// The same guard behind the gateway: audit events also name what the client called
    /// the tool, prompt or resource.
    pub fn listing_names_as(mut self, listed_as: ListedAs) -> Guard {
        self.listed_as = Some(listed_as);
        self
    }

    /// The server's whole tool list, as someone else read it (the gateway, which lists
    /// every server once for all its sessions): each tool's name and annotations. The
    /// guard decides with these annotations and does not list the tools itself.
    pub fn know_tools<'t>(&self, tools: impl IntoIterator<Item = (&'t str, ToolAnnotations)>) {
        self.listing.replace(tools);
    }

    fn listed_as(&self, method: &str, name: Option<&str>) -> Option<String> {
        self.listed_as.as_ref().zip(name).and_then(|(listed_as, name)| listed_as(method, name))
    }

    /// The same guard, asking a person as `options` say, and keeping the session's
    /// memory in the store they name (opened for this guard's session; a gateway then
    /// shares one between the guards of a client session, [`Guard::remembering_in`]).
    pub fn with_ask_options(mut self, options: AskOptions) -> Guard {
        let memory = options.stores.sessions.open(&self.session);
        self.remembered = std::sync::Arc::new(clawai_policy::Session::in_memory(memory));
        self.asking = approvals::Asking::new(options);
        self
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

    /// A mark for the decisions this thread has recorded so far: the batched outbox of
    /// the stdio relay ([`deliver::Outbox`]), which decides and queues on one thread,
    /// keeps the highest mark of what it queued and writes the trail through it before
    /// the bytes leave. It does not write the trail for decisions another thread
    /// recorded for messages it sends itself.
    pub(crate) fn decision_mark(&self) -> u64 {
        AuditLog::last_decision_of_this_thread()
    }

    /// Writes the audit trail now unless every decision up to `mark` (from
    /// [`Guard::decision_mark`]) is already on disk.
    pub(crate) fn write_decisions_through(&self, mark: u64) {
        if !self.audit.decisions_written(mark) {
            self.audit.flush();
        }
    }

    /// `decided`, once the decisions this thread recorded for it are on disk: every
    /// public entry point returns through here, so whatever a transport then sends of a
    /// verdict, the event that decided it was written first. Only the stdio relay's
    /// batched outbox takes verdicts before that (the `*_queued` entry points), and it
    /// writes the trail itself before its bytes leave.
    fn on_disk<T>(&self, decided: T) -> T {
        self.write_decisions_through(self.decision_mark());
        decided
    }

    /// The annotations recorded for a tool, if it was listed.
    pub fn annotations(&self, tool: &str) -> Option<ToolAnnotations> {
        self.listing.annotations(tool)
    }

    /// The server's name (`--server`, the gateway's name for it), if it has one.
    pub fn server_name(&self) -> Option<&str> {
        self.server.as_deref()
    }

    /// The session id written in every audit event.
    pub fn session(&self) -> &str {
        &self.session
    }

    fn event<'a>(&'a self, direction: Direction, kind: EventKind) -> Event<'a> {
        self.event_at(stamp().wall, direction, kind)
    }

    fn event_at<'a>(&'a self, time: jiff::Timestamp, direction: Direction, kind: EventKind) -> Event<'a> {
        Event {
            time,
            session: &self.session,
            server: self.server.as_deref(),
            direction: Some(direction),
            kind,
            sandbox: self.sandbox.get().map(|s| &**s),
            ..Default::default()
        }
    }

    /// A message from the client, arrived now. The event that decided it is on disk when
    /// this returns.
    pub fn from_client(&self, line: &[u8]) -> Verdict {
        self.on_disk(self.queued_from_client(line, stamp()))
    }

    /// A message from the client that arrived `at`, for the stdio relay's batched outbox:
    /// the decision may not be on disk yet (see [`Guard::on_disk`]). The relay takes one
    /// [`stamp`] per read and passes it with every line that read brought: they arrived
    /// together, and a clock read per message is a measurable share of a pipelined call
    /// in a VM.
    pub(crate) fn queued_from_client(&self, line: &[u8], at: Stamp) -> Verdict {
        if self.batches.allowed()
            && line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
            && let Some(verdict) = self.batch_from_client(line, at)
        {
            return verdict;
        }
        self.client_line(line, at, ListWait::MayWait, Asking::MayAsk)
    }

    /// A client message decided now, without waiting for the server's tool list (a call
    /// that already waited for it).
    fn decide_client_line_now(&self, line: &[u8], at: Stamp, asking: Asking) -> Verdict {
        self.client_line(line, at, ListWait::DecideNow, asking)
    }

    /// One client message: whether a call may wait for the server's tool list, and for
    /// a person.
    fn client_line(&self, line: &[u8], at: Stamp, list: ListWait, asking: Asking) -> Verdict {
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
            && (self.listing.claims(id.get()) || self.asking.claims(id.get()))
        {
            let why = "ids that begin with `clawai-tools-list-` or `clawai-ask-` followed by this session's key are \
                       clawai's own; use another id"
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
                let arrived = pipeline::Arrived {
                    line: (list == ListWait::MayWait).then_some(line),
                    message: (asking == Asking::MayAsk).then_some(line),
                    size: line.len(),
                    at,
                };
                self.decide(&policy, Direction::ClientToServer, method, id, params, arrived)
            }
            (Kind::Request | Kind::Notification, Some(method))
                if reads_as_decided(method, &CLIENT_DECIDED, &policy) =>
            {
                self.refuse_look_alike(Direction::ClientToServer, method, id, line.len())
            }
            (Kind::Request, Some(method)) => {
                self.passed_client_request(method, id, envelope.params.as_ref(), line.len(), at)
            }
            (Kind::Notification, Some(method)) => {
                self.passed_client_notification(method, envelope.params.as_ref(), line.len(), at)
            }
            _ => {
                let result = envelope.result.map(|r| r.get().as_bytes());
                self.client_response(id, result, envelope.error.is_some(), line.len(), at)
            }
        }
    }

    /// A client request no rule decides: recorded and forwarded, unless it reaches
    /// something a pin holds.
    fn passed_client_request(
        &self,
        method: &str,
        id: Option<&RawValue>,
        params: Option<&Params>,
        size: usize,
        at: Stamp,
    ) -> Verdict {
        if method == methods::INITIALIZE {
            self.note_initialize(params);
        }
        if matches!(method, methods::RESOURCES_SUBSCRIBE | methods::COMPLETION_COMPLETE)
            && let Some(refused) = self.pinning_refuses_passed(method, id, params_value(params).as_ref(), size)
        {
            return refused;
        }
        self.pass(Direction::ClientToServer, EventKind::Request, method, id, size, at);
        self.track(&self.from_client, id, method, at.instant);
        Verdict::Forward
    }

    /// A client notification no rule decides: recorded and forwarded; a cancellation
    /// also ends the wait of a call it names.
    fn passed_client_notification(&self, method: &str, params: Option<&Params>, size: usize, at: Stamp) -> Verdict {
        self.pass(Direction::ClientToServer, EventKind::Notification, method, None, size, at);
        if method == methods::CANCELLED {
            let request = params_value(params).and_then(|p| p.get("requestId").cloned());
            if let Some(request) = &request {
                self.cancel_held(request);
                if let Some(verdict) = self.cancel_asked(request) {
                    return verdict;
                }
            }
        }
        Verdict::Forward
    }

    /// The client's answer to a request: one clawai asked itself, or the server's.
    fn client_response(
        &self,
        id: Option<&RawValue>,
        result: Option<&[u8]>,
        is_error: bool,
        size: usize,
        at: Stamp,
    ) -> Verdict {
        if let Some(id) = id
            && let Some(verdict) = self.answer_from_client(id, result, is_error)
        {
            return verdict;
        }
        let mut deferred = Deferred::default();
        let verdict = self.response(
            Direction::ClientToServer,
            &self.from_server,
            id,
            ResultOf::read(result),
            is_error,
            size,
            at,
            &mut deferred,
        );
        self.record_deferred(&mut deferred);
        verdict
    }

    /// Records a message no rule decides.
    fn pass(&self, direction: Direction, kind: EventKind, method: &str, id: Option<&RawValue>, size: usize, at: Stamp) {
        let shown = id.map(|id| self.shown_id(id.get()));
        let mut event = self.event_at(at.wall, direction, kind);
        event.method = Some(method);
        event.id = shown.as_deref();
        event.decision = Some(Decision::Pass);
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
}

fn raw(bytes: &[u8]) -> Option<&RawValue> {
    std::str::from_utf8(bytes).ok().and_then(|s| serde_json::from_str::<&RawValue>(s).ok())
}

fn utf8(bytes: &[u8]) -> Option<&str> {
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests;

/// `params` as a JSON value (for the rare messages read beyond their envelope).
fn params_value(params: Option<&Params>) -> Option<serde_json::Value> {
    match params? {
        Params::Decoded(Ok(params)) => Some(params.to_value()),
        Params::Raw(raw) => serde_json::from_str(raw.get()).ok(),
        Params::Decoded(Err(_)) => None,
    }
}

impl Guard {
    /// What the client declared in its `initialize` (its params), when this guard did not
    /// see it go by: behind the gateway, which answers `initialize` itself. Says whether
    /// the client can be asked with a form.
    pub fn client_initialized(&self, params: &serde_json::Value) {
        self.asking.initialize(params);
    }

    /// Notes what the client's `initialize` declares (whether it can show a form).
    fn note_initialize(&self, params: Option<&Params>) {
        if let Some(value) = params_value(params) {
            self.asking.initialize(&value);
        }
    }
}
