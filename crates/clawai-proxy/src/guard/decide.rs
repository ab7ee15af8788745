//! Deciding one message the policy applies to, and the answer to a denied one.

use clawai_protocol::methods;
use std::borrow::Cow;
use std::sync::Arc;

use clawai_policy::{Action, Call, Decision, Policy};
use clawai_protocol::reply;
use clawai_protocol::skim::member;
use clawai_protocol::{Json, strict};
use serde_json::Value;
use serde_json::value::RawValue;

use super::Outgoing;
use super::approvals::{Asked, not_approved};
use super::listing::Unlisted;
use super::pipeline::{Arrived, Decided, Deciding, Outcome, Refusal, Stage};
use super::{Guard, SERVER_DECIDED, Verdict};
use crate::audit::{Direction, EventKind};
use crate::redact::Redacted;

impl Guard {
    /// Decides a message the policy applies to: the stages of [`super::pipeline`] after
    /// limits and parsing (which `refuse` ran on the envelope), in that order. The
    /// message's top level was already read strictly; `params` is read strictly here.
    pub(super) fn decide(
        &self,
        policy: &Arc<Policy>,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        params: Option<Result<Json<'_>, strict::Ambiguous>>,
        arrived: Arrived<'_>,
    ) -> Verdict {
        let refused =
            |refusal: Refusal| self.refuse_request(direction, method, id, arrived.size, refusal.code, refusal.reason);
        let params = match params_stage(method, params) {
            Ok(params) => params,
            Err(refusal) => return refused(refusal),
        };
        let params = params.as_ref();
        let call = Call::from_params(method, params)
            .with_server(self.server.as_deref())
            .with_links_followed(self.follow_links.filter(|_| policy.follows_links()));
        let (call, unlisted) = match self.listing_stage(policy, direction, method, id, params, call, arrived) {
            Outcome::Pass(found) => found,
            Outcome::Refuse(refusal) => return refused(refusal),
            Outcome::Hold(verdict) => return verdict,
        };
        let deciding = Deciding { direction, method, id, params, call: &call, arrived };
        let decided = self.policy_stage(policy, &deciding);
        if let Outcome::Refuse(refusal) = self.pinning_stage(&deciding, &decided.decision) {
            return refused(refusal);
        }
        let decided = super::arguments::arguments_stage(policy, &call, decided);
        let reason = reason_for(&call, &decided, unlisted.as_ref());
        let asked = self.approvals_stage(&deciding, &decided.decision);
        self.audit_stage(&deciding, &decided, &reason, asked.as_ref());
        self.answer(&deciding, &decided.decision, &reason, asked)
    }

    /// The self-protection stage, then the policy stage: clawai's own files and trail are
    /// no tool's target whatever the policy says (links followed for a server on this
    /// machine even when the policy does not follow them); otherwise the first rule that
    /// matches decides, with the session's memory.
    fn policy_stage<'p>(&'p self, policy: &'p Policy, deciding: &Deciding<'_>) -> Decided<'p> {
        let call = deciding.call;
        let protected =
            self.policy.self_protection().and_then(|p| p.refuses(&call.with_links_followed(self.follow_links)));
        // A 2026-07-28 client's retry carrying a person's answer, under a state clawai sealed
        // for exactly this call (checked here, used up by the approvals stage), is the call
        // it retries, which was counted when it first came: decided without counting it
        // again. Anything else is a new call, counted (a forged state skips nothing).
        let retry = protected.is_none() && self.is_sealed_retry(deciding.method, deciding.params, call.name);
        let (decision, labels_added) = match protected {
            Some(refused) => (refused, Vec::new()),
            None if retry => policy.decide_again(call, &self.remembered),
            None => policy.decide_and_mark(call, &self.remembered),
        };
        Decided { decision, labels_added, credential: None }
    }

    /// What the sender gets, and the call's tracking, once the event is recorded.
    fn answer(&self, deciding: &Deciding<'_>, decision: &Decision<'_>, reason: &str, asked: Option<Asked>) -> Verdict {
        let Deciding { direction, method, id, params, call, arrived } = *deciding;
        let id_text = id.map(RawValue::get);
        match asked {
            Some(Asked::Allowed { forward, .. }) => {
                self.track(&self.from_client, id, method, arrived.at.instant);
                return match forward {
                    Some(bytes) => Verdict::Dispatch(vec![Outgoing::ToServer(bytes)]),
                    None => Verdict::Forward,
                };
            }
            Some(Asked::Held { verdict, .. }) => return verdict,
            Some(Asked::Duplicate) => {
                let text = "clawai refused the request: a call with this id already waits for a person; use another id";
                return Verdict::Reply(reply::error(id_text, reply::INVALID_REQUEST, text, None));
            }
            Some(Asked::Refused(e)) => {
                let text = format!("clawai refused the retry of {method}: {e}");
                return Verdict::Reply(reply::error(id_text, reply::INVALID_PARAMS, &text, None));
            }
            Some(Asked::Declined { .. }) => {
                let what = call.name.map_or_else(|| method.to_owned(), |n| format!("{method} {n}"));
                let text = format!("clawai denied {what}: a rule asks a person ({reason}), and the person declined");
                let stateless = reply::is_stateless_request(params);
                let data = serde_json::json!({"decision": "prompt"});
                return Verdict::Reply(not_approved(method, id_text, &text, stateless, data));
            }
            Some(Asked::Nobody) | None => {}
        }
        if decision.action.forwards() {
            let table = if direction == Direction::ClientToServer { &self.from_client } else { &self.from_server };
            self.track(table, id, method, arrived.at.instant);
            return Verdict::Forward;
        }
        let what = call.name.map_or_else(|| method.to_owned(), |n| format!("{method} {n}"));
        tracing::warn!("{} {what}: {reason}", decision.action);
        match id_text {
            None => Verdict::Drop,
            Some(_) => {
                Verdict::Reply(denial(method, id_text, decision, reason, &what, reply::is_stateless_request(params)))
            }
        }
    }

    /// Decides each request inside an `InputRequiredResult` (sampling, elicitation, roots
    /// asked of the client through the result of its own request). If one is not
    /// allowed, the client gets an error for its request instead of the result.
    pub(super) fn decide_input_requests(&self, id: Option<&RawValue>, result: &[u8], size: usize) -> Verdict {
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
            let decision = policy.decide_in(&call, &self.remembered);
            let shown = id.map(|id| self.shown_id(id.get()));
            let mut event = self.event(Direction::ServerToClient, EventKind::Request);
            event.method = Some(method);
            event.id = shown.as_deref();
            event.arguments = call.arguments.map(Redacted);
            event.decision = Some(decision.action.into());
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

impl Guard {
    /// The listing stage: a call whose decision depends on what the server's tool list
    /// says waits for that list. After the server said its tools changed, a call waits
    /// for clawai's own listing (compared with the pins as it passes), so a changed tool
    /// is refused even if the client never lists; a call the policy decides by the
    /// tool's annotations waits for them. Passes the call with the annotations known,
    /// and why they are not when they could not be had.
    #[allow(clippy::too_many_arguments)]
    fn listing_stage<'c>(
        &self,
        policy: &Arc<Policy>,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        params: Option<&Json<'_>>,
        call: Call<'c>,
        arrived: Arrived<'_>,
    ) -> Outcome<(Call<'c>, Option<Unlisted>)> {
        let at = arrived.at;
        if method == methods::TOOLS_CALL
            && direction == Direction::ClientToServer
            && self.listing.pins_stale()
            && self.pins().is_some()
        {
            match (call.name, id, arrived.line) {
                (Some(tool), Some(id), Some(line)) => {
                    if let Some(verdict) = self.hold_until_listed(line, at, id, tool, params, arrived.asking()) {
                        return Outcome::Hold(verdict);
                    }
                }
                // A request that waited already, and the listing it waited for did not
                // come: the server said its tools changed and did not show them.
                (_, Some(_), None) => {
                    let why = match self.listing.why_unlisted() {
                        Unlisted::NoList(why) => why,
                        Unlisted::NotInList => "it did not answer".to_owned(),
                    };
                    return Outcome::Refuse(Refusal::invalid(
                        Stage::Listing,
                        reply::SERVER_UNAVAILABLE,
                        format!(
                            "the server said its tools changed, and clawai could not get the server's tool list \
                             ({why}) to check the call against what was approved; call again (clawai asks again)"
                        ),
                    ));
                }
                _ => {}
            }
        }
        let (methods::TOOLS_CALL, Some(tool)) = (method, call.name) else { return Outcome::Pass((call, None)) };
        match self.listing.annotations(tool) {
            Some(known) => Outcome::Pass((call.with_annotations(Some(known)), None)),
            None if self.listing.policy_reads_annotations(policy)
                && depends_on_annotations(policy, &call, &self.remembered) =>
            {
                // The decision turns on what the server says of this tool, and it has
                // not said it in this session yet: ask it before deciding.
                if let (Some(id), Some(line), Direction::ClientToServer) = (id, arrived.line, direction)
                    && let Some(verdict) = self.hold_until_listed(line, at, id, tool, params, arrived.asking())
                {
                    return Outcome::Hold(verdict);
                }
                Outcome::Pass((call, Some(self.listing.why_unlisted())))
            }
            None => Outcome::Pass((call, None)),
        }
    }
}

/// Why the call was decided as it was, in the trail's and the answer's words: the
/// arguments stage's finding, a rule about what tools do applied to a tool its server
/// did not describe, or the deciding rule's own reason.
fn reason_for<'r>(call: &Call<'_>, decided: &'r Decided<'r>, unlisted: Option<&Unlisted>) -> Cow<'r, str> {
    let decision = &decided.decision;
    match (unlisted, decision.rule) {
        _ if let Some(kind) = decided.credential => Cow::Owned(super::arguments::credential_reason(kind)),
        (Some(why), Some((index, rule))) => {
            Cow::Owned(why.reason(call.name.unwrap_or_default(), &format!("rule {}", rule.label(index))))
        }
        (Some(why), None) => Cow::Owned(why.reason(call.name.unwrap_or_default(), "the policy's default")),
        (None, _) => Cow::Borrowed(decision.reason()),
    }
}

/// The parse stage of the params (read strictly: no duplicate or case-variant member)
/// and the params stage (the shape the policy needs).
fn params_stage<'j>(
    method: &str,
    params: Option<Result<Json<'j>, strict::Ambiguous>>,
) -> Result<Option<Json<'j>>, Refusal> {
    let params = params
        .transpose()
        .map_err(|e| Refusal::invalid(Stage::Parse, reply::AMBIGUOUS, format!("the message is ambiguous ({e})")))?;
    if let Some(key) = case_variant_member(params.as_ref()) {
        let why = format!("`params.{key}` differs only in case from a member the policy reads");
        return Err(Refusal::invalid(Stage::Parse, reply::AMBIGUOUS, why));
    }
    check_params(method, params.as_ref()).map_err(|why| Refusal::invalid(Stage::Params, reply::INVALID_PARAMS, why))?;
    Ok(params)
}

/// True when what the server says of the tool (`destructive`, `read_only`) changes how
/// the policy decides this call: the call is decided as a read-only tool, as a
/// destructive one and as one that is neither, and the outcomes differ.
fn depends_on_annotations(policy: &Policy, call: &Call, session: &clawai_policy::Session) -> bool {
    use clawai_policy::ToolAnnotations;
    let outcome = |annotations: ToolAnnotations| {
        let call = call.with_annotations(Some(annotations));
        // A `taint` rule may read annotations without deciding anything: its labels count.
        let (decision, labels) = policy.decide_looking(&call, session);
        (decision.action, decision.rule.map(|(index, _)| index), labels)
    };
    let unannotated = outcome(ToolAnnotations::default());
    let read_only = outcome(ToolAnnotations { read_only_hint: Some(true), destructive_hint: None });
    let harmless = outcome(ToolAnnotations { read_only_hint: Some(false), destructive_hint: Some(false) });
    let destructive = outcome(ToolAnnotations { read_only_hint: Some(false), destructive_hint: Some(true) });
    unannotated != read_only || unannotated != harmless || unannotated != destructive
}

impl Unlisted {
    /// Why a rule about what tools do decided a call to a tool the server did not
    /// describe: said as it is, not in the words of a rule written for tools the server
    /// does describe.
    fn reason(&self, tool: &str, decided_by: &str) -> String {
        let what = match self {
            Unlisted::NotInList => format!("the server's tool list has no tool `{tool}`"),
            Unlisted::NoList(why) => format!("clawai could not get the server's tool list ({why})"),
        };
        format!(
            "{what}, so nothing says whether `{tool}` is read-only or destructive; \
             {decided_by} decided it as a tool its server does not annotate (MCP's defaults for such a tool: \
             destructive, not read-only)"
        )
    }
}

/// The answer to a denied request: a tool result with `isError` for `tools/call` (so the
/// model reads why), a JSON-RPC error otherwise.
fn denial(method: &str, id: Option<&str>, decision: &Decision, reason: &str, what: &str, stateless: bool) -> Vec<u8> {
    let (code, text) = match decision.action {
        Action::Prompt => (
            reply::APPROVAL_REQUIRED,
            format!(
                "clawai: {what} needs a person's approval ({reason}), and nobody could be asked, so it was denied. \
                 To be asked: use a client that shows forms (MCP elicitation), or run `clawai ui`; \
                 to allow it always, add it to approvals.toml (`clawai policy explain` shows what applies)"
            ),
        ),
        _ => (reply::DENIED, format!("clawai denied {what}: {reason}")),
    };
    if method == methods::TOOLS_CALL {
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
        methods::TOOLS_CALL | methods::PROMPTS_GET => string("name"),
        methods::RESOURCES_READ => string("uri"),
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
