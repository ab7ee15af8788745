//! The approvals stage: what happens to a call a rule asks a person about (`prompt`),
//! after the policy stage and before the audit stage records the outcome.
//!
//! In order: a standing approval (`approvals.toml`) or a grant of this session lets it
//! through without asking; a 2026-07-28 retry that carries clawai's sealed state is
//! checked and decided by the answer it carries; otherwise the person is asked in the
//! client when it can show a form (clawai's own `elicitation/create`, or for a 2026-07-28
//! request an `input_required` result); otherwise nobody can be asked and the call is
//! denied, saying so. While a person is asked, the call waits and everything else flows:
//! the answer, a cancellation or the time-out (on a timer that dispatches through the
//! transport's [`Outlet`]) ends the wait.

use clawai_protocol::methods;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use clawai_policy::Call;
use clawai_protocol::Json;
use clawai_protocol::reply;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use super::pipeline::Deciding;
use super::{Guard, Outgoing, Verdict};
use crate::ask::form::{self, Choice, Question};
use crate::ask::key::call_key;
use crate::ask::seal::{SealError, Sealer};
use crate::audit::{Channel, Decision, Direction, EventKind, Scope, Step};
use crate::in_flight::match_key;

mod retry;

/// The key of clawai's question among a 2026-07-28 result's `inputRequests`.
pub const INPUT_KEY: &str = "clawai.approval";
/// How long a sealed question stays answerable.
const STATE_TTL: Duration = Duration::from_secs(600);

/// The calls held at the broker, by the broker's id: each with what withdraws it.
pub(super) type Brokered = HashMap<String, (Waiting, Box<dyn clawai_approvals::Withdraw>)>;

/// How a session asks.
#[derive(Debug, Clone)]
pub struct AskOptions {
    /// How long a call waits for a person before it is denied.
    pub timeout: Duration,
    /// The standing approvals (locally `approvals.toml`), read whenever a rule asks.
    pub standing: Option<std::sync::Arc<dyn clawai_policy::StandingApprovals>>,
    /// Where the session's memory (taint, rate windows, session grants) is kept, and the
    /// keyring that seals `requestState`: chosen once at start-up.
    pub stores: clawai_store::Stores,
    /// Where calls held for a person wait (locally: the broker of `clawai ui`).
    pub held: std::sync::Arc<dyn clawai_approvals::HeldApprovals>,
}

impl Default for AskOptions {
    fn default() -> Self {
        AskOptions {
            timeout: Duration::from_secs(45),
            standing: None,
            stores: clawai_store::Stores::local(),
            held: std::sync::Arc::new(clawai_approvals::LocalBroker),
        }
    }
}

/// Something the approvals stage learns off the path of any message (a time-out, the
/// broker's answer), handed to the transport's [`Outlet`], which has the guard settle it
/// ([`Guard::settle`]) and sends what that gives.
#[derive(Debug)]
pub enum Later {
    /// Nobody answered clawai's question (its id, as written) in time.
    QuestionTimedOut(String),
    /// The broker answered a call.
    BrokerAnswered {
        /// The broker's id of the approval.
        approval: String,
        /// What the person decided.
        outcome: clawai_approvals::Outcome,
        /// Who answered (`ui`, `cli`, `grant`).
        by: String,
    },
    /// Nobody answered at the broker in time.
    BrokerTimedOut {
        /// The broker's id of the approval.
        approval: String,
    },
    /// The broker's connection broke while a call waited.
    BrokerGone {
        /// The broker's id of the approval.
        approval: String,
    },
    /// A message for the client while a call waits (a progress notification).
    ToClient(Vec<u8>),
}

/// Where a transport takes what the guard decides later, off the path of any message.
pub trait Outlet: Send + Sync {
    /// Settles `later` with the guard ([`Guard::settle`]) and sends what it gives.
    fn later(&self, later: Later);
}

/// A call waiting for a person's answer.
pub(super) struct Waiting {
    pub(super) line: Vec<u8>,
    /// The call's id, as written.
    pub(super) call_id: String,
    pub(super) method: String,
    pub(super) name: Option<String>,
    pub(super) key: String,
    pub(super) asked: Instant,
    /// The rule that asked, as the answers name it.
    pub(super) rule: Option<String>,
    /// A 2026-07-28 request: its answers say `resultType: "complete"`.
    pub(super) stateless: bool,
}

impl Waiting {
    /// The call of `ask`, from now on waiting for a person.
    pub(super) fn new(ask: &Ask, key: String) -> Waiting {
        Waiting {
            line: ask.line.to_vec(),
            call_id: ask.id.get().to_owned(),
            method: ask.method.to_owned(),
            name: ask.call.name.map(str::to_owned),
            key,
            asked: Instant::now(),
            rule: ask.rule.clone(),
            stateless: reply::is_stateless_request(ask.params),
        }
    }
}

/// The answer to a call a rule asked a person about that does not go on: a tool result
/// with `isError` for `tools/call` (so the model reads why), a -32007 error with `data`
/// otherwise.
pub(super) fn not_approved(method: &str, id: Option<&str>, text: &str, stateless: bool, data: Value) -> Vec<u8> {
    if method == methods::TOOLS_CALL {
        reply::tool_error(id, text, stateless)
    } else {
        reply::error(id, reply::APPROVAL_REQUIRED, text, Some(data))
    }
}

/// A 2026-07-28 call a person allowed, forwarded: if the server asks for input of its
/// own, its state is sealed inside clawai's so the retry is not asked about again.
struct Approved {
    method: String,
    name: Option<String>,
    digest: String,
}

/// The approvals stage's state for one session.
pub(super) struct Asking {
    pub(super) options: AskOptions,
    sealer: Sealer,
    /// How clawai's own request ids begin, as written: `"clawai-ask-<random>-`.
    prefix: String,
    sent: AtomicU64,
    /// The client declared `elicitation` (form mode) at `initialize`.
    client_elicits: AtomicBool,
    waiting: Mutex<HashMap<String, Waiting>>,
    approved: Mutex<HashMap<String, Approved>>,
    /// Calls waiting for the approval broker, by the broker's id: the call, and how to
    /// withdraw it.
    pub(super) brokered: Mutex<Brokered>,
    pub(super) outlet: OnceLock<Arc<dyn Outlet>>,
}

impl Asking {
    pub(super) fn new(options: AskOptions) -> Asking {
        let random = uuid::Uuid::now_v7().simple().to_string();
        let sealer = Sealer::with_key(options.stores.keyring.key(clawai_store::KeyPurpose::RequestState));
        Asking {
            options,
            sealer,
            prefix: format!("\"clawai-ask-{}-", &random[16..]),
            sent: AtomicU64::new(0),
            client_elicits: AtomicBool::new(false),
            waiting: Mutex::new(HashMap::new()),
            approved: Mutex::new(HashMap::new()),
            brokered: Mutex::new(HashMap::new()),
            outlet: OnceLock::new(),
        }
    }

    /// True when `id` (as written) is in clawai's own namespace of request ids.
    pub(super) fn claims(&self, id: &str) -> bool {
        // Also under another spelling of the same string (`"\u0063lawai-ask-…"`): a
        // client answers under the id it read, not as the server wrote it.
        id.starts_with(&self.prefix)
            || (id.contains('\\')
                && serde_json::from_str::<String>(id).is_ok_and(|text| text.starts_with(&self.prefix[1..])))
    }

    /// Notes what the client's `initialize` declared.
    pub(super) fn initialize(&self, params: &Value) {
        let elicits = params.get("capabilities").and_then(|c| c.get("elicitation")).is_some_and(offers_form);
        self.client_elicits.store(elicits, Ordering::SeqCst);
    }

    pub(super) fn set_outlet(&self, outlet: Arc<dyn Outlet>) {
        let _ = self.outlet.set(outlet);
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn approved(&self) -> std::sync::MutexGuard<'_, HashMap<String, Approved>> {
        self.approved.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// An elicitation capability that takes forms: `{}` (forms only, before URL mode
/// existed) or one with `form`.
fn offers_form(capability: &Value) -> bool {
    capability.as_object().is_some_and(|c| c.is_empty() || c.contains_key("form"))
}

/// What the approvals stage did with a call a rule asked about.
pub(super) enum Asked {
    /// Nobody could be asked: the call is denied, as the policy's `prompt` says.
    Nobody,
    /// It goes on without asking now: a standing approval, a grant, or the answer a
    /// retry carried. `forward`: the bytes to send instead of the call (a retry without
    /// clawai's members).
    Allowed { channel: Channel, scope: Scope, by: String, forward: Option<Vec<u8>> },
    /// A person said no (in the answer a retry carried).
    Declined { channel: Channel },
    /// A retry whose sealed state is not good: refused.
    Refused(SealError),
    /// A call under the id of one that already waits for a person: refused.
    Duplicate,
    /// The person is being asked; the call waits (or the client retries).
    Held { verdict: Verdict, channel: Channel, approval: Option<String> },
}

/// The call the stage is about.
pub(super) struct Ask<'a> {
    pub(super) method: &'a str,
    pub(super) id: &'a RawValue,
    pub(super) params: Option<&'a Json<'a>>,
    pub(super) call: &'a Call<'a>,
    pub(super) line: &'a [u8],
    pub(super) rule: Option<String>,
    pub(super) description: Option<&'a str>,
}

impl Guard {
    /// Lets a transport take what the stage decides later (time-outs, the broker's
    /// answers). Without an outlet a question to the client waits for its answer without
    /// a time-out, and the broker is not asked.
    pub fn set_outlet(&self, outlet: Arc<dyn Outlet>) {
        self.watch_pins(Arc::clone(&outlet));
        self.asking.set_outlet(outlet);
    }

    /// What the messages of something learnt later are, each to its side; the events
    /// that decided them are on disk when this returns.
    pub fn settle(&self, later: Later) -> Vec<Outgoing> {
        let messages = match later {
            Later::QuestionTimedOut(own_id) => self.ask_timed_out(&own_id).unwrap_or_default(),
            Later::BrokerAnswered { approval, outcome, by } => self.broker_answered(&approval, outcome, &by),
            Later::BrokerTimedOut { approval } => self.broker_timed_out(&approval),
            Later::BrokerGone { approval } => self.broker_gone(&approval),
            Later::ToClient(bytes) => vec![Outgoing::ToClient(bytes)],
        };
        self.on_disk(messages)
    }

    /// True when a call with this id (as JSON) already waits for a person.
    fn holds(&self, id: &RawValue) -> bool {
        // Matched as responses are matched to requests: `1`, `1.0` and `1e0` are one id.
        let key = match_key(id.get());
        let same = |written: &str| match_key(written) == key;
        self.asking.waiting().values().any(|w| same(&w.call_id))
            || self.asking.brokered.lock().unwrap_or_else(|e| e.into_inner()).values().any(|(w, _)| same(&w.call_id))
    }

    /// The approvals stage for a client request a rule asked about.
    /// The approvals stage: a call from the client that a rule asks a person about
    /// (and that carries its whole message, to wait with). `None` when nobody is asked.
    pub(super) fn approvals_stage(
        &self,
        deciding: &Deciding<'_>,
        decision: &clawai_policy::Decision<'_>,
    ) -> Option<Asked> {
        let (clawai_policy::Action::Prompt, Direction::ClientToServer, Some(id), Some(line)) =
            (decision.action, deciding.direction, deciding.id, deciding.arrived.message)
        else {
            return None;
        };
        Some(self.ask_about(&Ask {
            method: deciding.method,
            id,
            params: deciding.params,
            call: deciding.call,
            line,
            rule: decision.rule.map(|(index, rule)| rule.id.clone().unwrap_or_else(|| rule.label(index))),
            description: decision.rule.and_then(|(_, rule)| rule.description.as_deref()),
        }))
    }

    pub(super) fn ask_about(&self, ask: &Ask) -> Asked {
        if self.holds(ask.id) {
            // A second call under the id of one that waits: an answer could not tell them apart.
            return Asked::Duplicate;
        }
        let arguments = ask.call.arguments.map(Json::to_value);
        if let Some(standing) = &self.asking.options.standing {
            match standing.current() {
                Ok(approvals) => {
                    if let Some((index, entry)) = approvals.approving(ask.call) {
                        let by = format!("{} {}", standing.location(), entry.label(index));
                        return Asked::Allowed {
                            channel: Channel::ApprovalsFile,
                            scope: Scope::Always,
                            by,
                            forward: None,
                        };
                    }
                }
                Err(e) => tracing::warn!("the standing approvals were not read: {e}"),
            }
        }
        let key = call_key(self.server.as_deref(), ask.method, ask.call.name, arguments.as_ref());
        let stateless = reply::is_stateless_request(ask.params);
        if !stateless && self.remembered.memory().granted(&key) {
            return Asked::Allowed {
                channel: Channel::SessionGrant,
                scope: Scope::Session,
                by: "grant".into(),
                forward: None,
            };
        }
        if stateless {
            return match self.ask_stateless(ask) {
                Asked::Nobody => self.ask_broker(ask, key).unwrap_or(Asked::Nobody),
                asked => asked,
            };
        }
        if self.asking.client_elicits.load(Ordering::SeqCst) {
            return self.ask_in_client(ask, key, arguments.as_ref());
        }
        self.ask_broker(ask, key).unwrap_or(Asked::Nobody)
    }

    /// clawai's own `elicitation/create`; the call waits for the answer.
    fn ask_in_client(&self, ask: &Ask, key: String, arguments: Option<&Value>) -> Asked {
        let n = self.asking.sent.fetch_add(1, Ordering::SeqCst) + 1;
        let own_id = format!("{}{n}\"", self.asking.prefix);
        let question = Question {
            server: self.server.as_deref(),
            method: ask.method,
            name: ask.call.name,
            arguments,
            rule: ask.rule.as_deref(),
            description: ask.description,
        };
        let mut params = form::elicitation_params(&question, true, true);
        // Which call the question is about, for transports that route by request.
        params["_meta"] = json!({"clawai/for": serde_json::from_str::<Value>(ask.id.get()).unwrap_or(Value::Null)});
        let request = reply::request(&own_id, methods::ELICITATION_CREATE, &params);
        self.asking.waiting().insert(own_id.clone(), Waiting::new(ask, key));
        self.start_timer(own_id.clone());
        Asked::Held {
            verdict: Verdict::Dispatch(vec![Outgoing::ToClient(request)]),
            channel: Channel::Client,
            approval: Some(own_id),
        }
    }

    /// Ends the wait when the person does not answer in time.
    fn start_timer(&self, own_id: String) {
        let Some(outlet) = self.asking.outlet.get() else { return };
        let outlet = Arc::downgrade(outlet);
        let timeout = self.asking.options.timeout;
        let spawned = std::thread::Builder::new().name("ask-timer".into()).spawn(move || {
            std::thread::sleep(timeout);
            if let Some(outlet) = outlet.upgrade() {
                outlet.later(Later::QuestionTimedOut(own_id));
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot start the timer of a question to the client ({e}); it waits without one");
        }
    }

    /// The wait for `own_id` ran out: the call is denied and the question withdrawn.
    fn ask_timed_out(&self, own_id: &str) -> Option<Vec<Outgoing>> {
        let waiting = self.asking.waiting().remove(own_id)?;
        let seconds = self.asking.options.timeout.as_secs_f64();
        let why = format!("nobody answered within {seconds} s");
        self.record_step(&waiting, own_id, Channel::Client, Step::TimedOut, None, false, "clawai");
        let cancel = reply::notification(
            methods::CANCELLED,
            &json!({"requestId": serde_json::from_str::<Value>(own_id).unwrap_or(Value::Null), "reason": why}),
        );
        Some(vec![Outgoing::ToClient(cancel), Outgoing::ToClient(self.declined(&waiting, &why))])
    }

    /// The client's answer to one of clawai's questions (`None`: not one of clawai's ids,
    /// or no call waits for it any more).
    pub(super) fn answer_from_client(&self, id: &RawValue, result: Option<&[u8]>, is_error: bool) -> Option<Verdict> {
        if !self.asking.claims(id.get()) {
            return None;
        }
        let Some(waiting) = self.asking.waiting().remove(id.get()) else {
            // Answered after the time-out: nothing waits for it.
            return Some(Verdict::Drop);
        };
        let choice = match (is_error, result.and_then(|r| serde_json::from_slice::<Value>(r).ok())) {
            (false, Some(result)) => form::read_answer(&result),
            _ => Choice::Deny,
        };
        let scope = match choice {
            Choice::AllowSession => Some(Scope::Session),
            Choice::AllowOnce => Some(Scope::Once),
            Choice::Deny => None,
        };
        self.record_step(&waiting, id.get(), Channel::Client, Step::Answered, scope, choice.allows(), "client");
        if !choice.allows() {
            return Some(Verdict::Dispatch(vec![Outgoing::ToClient(self.declined(&waiting, "the person declined"))]));
        }
        Some(Verdict::Dispatch(self.release(waiting, choice == Choice::AllowSession)))
    }

    /// A call a person allowed goes on (and, `for_session`, the identical call later).
    pub(super) fn release(&self, waiting: Waiting, for_session: bool) -> Vec<Outgoing> {
        // A grant that could not be written (the shared store is away) is not kept: the
        // person's answer still releases this call, and the next one is asked again.
        if for_session && let Err(why) = self.remembered.memory().grant(&waiting.key) {
            tracing::warn!("the session grant was not kept: {why}");
        }
        let call_id = RawValue::from_string(waiting.call_id.clone()).ok();
        self.track(&self.from_client, call_id.as_deref(), &waiting.method, Instant::now());
        vec![Outgoing::ToServer(waiting.line)]
    }

    /// The client cancelled a call that waits for a person: the question is withdrawn
    /// and nothing reaches the server.
    pub(super) fn cancel_asked(&self, request_id: &Value) -> Option<Verdict> {
        if let Some(verdict) = self.cancel_brokered(request_id) {
            return Some(verdict);
        }
        let own_id = {
            let waiting = self.asking.waiting();
            waiting
                .iter()
                .find(|(_, w)| serde_json::from_str::<Value>(&w.call_id).ok().as_ref() == Some(request_id))
                .map(|(own, _)| own.clone())?
        };
        let waiting = self.asking.waiting().remove(&own_id)?;
        self.record_step(&waiting, &own_id, Channel::Client, Step::Cancelled, None, false, "client");
        let cancel = reply::notification(
            methods::CANCELLED,
            &json!({"requestId": serde_json::from_str::<Value>(&own_id).unwrap_or(Value::Null), "reason": "the call was cancelled"}),
        );
        Some(Verdict::Dispatch(vec![Outgoing::ToClient(cancel)]))
    }

    /// The server is gone: every call waiting for a person gets an error.
    pub(super) fn asked_gone(&self, why: &str) -> Vec<Vec<u8>> {
        let answer = |call_id: &str| {
            reply::error(
                Some(call_id),
                reply::SERVER_UNAVAILABLE,
                &format!("clawai: {why}; the request got no answer"),
                None,
            )
        };
        let brokered: Vec<Vec<u8>> = self.withdraw_brokered().iter().map(|id| answer(id)).collect();
        let drained: Vec<(String, Waiting)> = self.asking.waiting().drain().collect();
        drained
            .into_iter()
            .map(|(own_id, waiting)| {
                self.record_step(&waiting, &own_id, Channel::Client, Step::Cancelled, None, false, "clawai");
                reply::error(
                    Some(&waiting.call_id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai: {why}; the request got no answer"),
                    None,
                )
            })
            .chain(brokered)
            .collect()
    }

    /// The answer to a call a person did not allow.
    pub(super) fn declined(&self, waiting: &Waiting, why: &str) -> Vec<u8> {
        let what =
            waiting.name.as_deref().map_or_else(|| waiting.method.clone(), |n| format!("{} {n}", waiting.method));
        let rule = waiting.rule.as_deref().map_or_else(|| "the policy's default".to_owned(), |r| format!("rule `{r}`"));
        let text = format!("clawai denied {what}: {rule} asks a person, and {why}");
        not_approved(&waiting.method, Some(&waiting.call_id), &text, waiting.stateless, json!({"decision": "prompt"}))
    }

    /// One step of asking, in the audit trail.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn record_step(
        &self,
        waiting: &Waiting,
        approval: &str,
        channel: Channel,
        step: Step,
        scope: Option<Scope>,
        approved: bool,
        by: &str,
    ) {
        let shown = self.shown_id(&waiting.call_id);
        let mut event = self.event(Direction::ClientToServer, EventKind::Approval);
        event.method = Some(&waiting.method);
        event.id = Some(&shown);
        match waiting.method.as_str() {
            methods::TOOLS_CALL => event.tool = waiting.name.as_deref(),
            methods::RESOURCES_READ => event.resource = waiting.name.as_deref(),
            methods::PROMPTS_GET => event.prompt = waiting.name.as_deref(),
            _ => {}
        }
        let listed_as = self.listed_as(&waiting.method, waiting.name.as_deref());
        event.listed_as = listed_as.as_deref();
        event.step = Some(step);
        event.channel = Some(channel);
        event.scope = scope;
        // clawai's own request ids are JSON strings as written: the event shows the text.
        event.approval = Some(approval.trim_matches('"'));
        event.approved = Some(approved);
        // What the answer decided and the rule that asked, as a call's own line says
        // them: a reader of the trail (or of the ui) sees the outcome without joining.
        event.decision = Some(if approved { Decision::Allow } else { Decision::Deny });
        event.rule = waiting.rule.as_deref();
        event.by = Some(by);
        event.duration_ms = Some(waiting.asked.elapsed().as_secs_f64() * 1000.0);
        self.audit.record_decision(&event);
    }
}
