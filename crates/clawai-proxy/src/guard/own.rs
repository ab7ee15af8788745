//! Requests a front answers itself, with no server behind them: the gateway's own tools
//! (`skill__NAME`, `search_tools`) and the names a session asks for that no server of its
//! lists has. They go through the same policy stage as a server's call and are recorded
//! by the same writer, so a rule can deny `search_tools` or a skill, and the trail names
//! the decision and the rule like any call's.

use std::borrow::Cow;

use clawai_policy::{Action, Call, Policy};
use clawai_protocol::{Envelope, Json, methods, reply};

use crate::audit::{AuditLog, Decision, Direction, Event, EventKind};
use crate::redact::Redacted;

/// Where a front's own requests are decided and recorded: the policy in force, what it
/// remembers of the client's session, the trail, and the session's id in it.
pub struct OwnRequests<'a> {
    /// The policy in force.
    pub policy: &'a Policy,
    /// What the policy remembers of this client session (`rate`, `taint`).
    pub remembered: &'a clawai_policy::Session,
    /// The audit trail.
    pub audit: &'a AuditLog,
    /// The client session's id, as the trail writes it.
    pub session: &'a str,
}

/// One request a front answers itself.
pub struct OwnRequest<'a> {
    /// `tools/call` or `prompts/get`.
    pub method: &'a str,
    /// The request's id, as JSON text.
    pub id: &'a str,
    /// The tool's or prompt's name, as the client called it.
    pub name: &'a str,
    /// Its `params`, as the policy reads them.
    pub params: Option<&'a Json<'a>>,
    /// A 2026-07-28 request: a refusal says `resultType: "complete"`.
    pub stateless: bool,
}

/// What the policy said of a request a front answers itself.
#[must_use]
#[derive(Debug, PartialEq, Eq)]
pub enum OwnVerdict {
    /// The front answers it.
    Answer,
    /// The front sends this refusal instead (newline-terminated), already recorded.
    Refuse(Vec<u8>),
}

impl OwnRequests<'_> {
    /// Decides `request` with the policy (the rules see no server: these tools are
    /// clawai's own), records the decision before anything is answered, and says what
    /// to send. `doing` says what the front does if it answers (it is added to the
    /// trail's reason). A rule that asks a person denies: clawai does not ask about its
    /// own tools; allow or deny them in the policy.
    pub fn decide(&self, request: &OwnRequest<'_>, doing: &str) -> OwnVerdict {
        let call = Call::from_params(request.method, request.params);
        let (decision, tainted) = self.policy.decide_and_mark(&call, self.remembered);
        let action = decision.action;
        let reason = match action {
            Action::Allow | Action::Audit => format!("{}; {doing}", decision.reason()),
            Action::Prompt => format!(
                "{}; clawai does not ask a person about its own tools, so it was denied (allow or deny `{}` in \
                 the policy)",
                decision.reason(),
                request.name
            ),
            Action::Deny => decision.reason().to_owned(),
        };
        let mut event = self.event(request, Decision::from(action), reason.as_str().into());
        event.arguments = call.arguments.map(Redacted);
        event.rule = decision.rule_id();
        event.tainted = Some(tainted.as_slice()).filter(|added| !added.is_empty());
        self.audit.record_decision(&event);
        // On disk before the answer leaves, like every decision.
        self.audit.flush();
        if action.forwards() {
            return OwnVerdict::Answer;
        }
        let text = format!("clawai denied {} `{}`: {reason}", what(request.method), request.name);
        OwnVerdict::Refuse(if request.method == methods::TOOLS_CALL {
            reply::tool_error(Some(request.id), &text, request.stateless)
        } else {
            let code = if action == Action::Prompt { reply::APPROVAL_REQUIRED } else { reply::DENIED };
            let data = serde_json::json!({"rule": decision.rule_id(), "decision": action.as_str()});
            reply::error(Some(request.id), code, &text, Some(data))
        })
    }

    /// Records the refusal of a request for a name this session cannot use (hidden, or
    /// no server has it): the trail shows probing of hidden names. The event names what
    /// the client asked for, not which server, if any, has it. Written before the
    /// refusal leaves.
    pub fn refuse_unknown(&self, method: &str, id: &str, name: &str) {
        self.refuse_invalid(method, id, name, "not in this session's lists (hidden, or no server has it)");
    }

    /// Records the refusal of a request whose params the front cannot take as they are
    /// (the params stage, before the policy: a skill called without a variable it
    /// needs), naming why. Written before the refusal leaves.
    pub fn refuse_invalid(&self, method: &str, id: &str, name: &str, why: &str) {
        let request = OwnRequest { method, id, name, params: None, stateless: false };
        self.audit.record_decision(&self.event(&request, Decision::Refused, why.into()));
        self.audit.flush();
    }

    /// A client line the front cannot take as one valid JSON-RPC message (read strictly,
    /// as the guard reads what it decides): recorded, and the error it gets; `None`
    /// when the line is valid.
    pub fn refuse_unparsable(&self, line: &[u8]) -> Option<Vec<u8>> {
        let error = Envelope::parse_deciding(line, |_| true).err()?;
        let (id, answer) = super::refuse::refusal_answer(line, &error);
        self.record_refusal(id.map(|id| id.get()), error.to_string(), line.len());
        Some(answer)
    }

    /// A client line over the front's size limit: recorded, and the error it gets.
    pub fn refuse_oversize(&self, prefix: &[u8], length: usize, limit: usize) -> Vec<u8> {
        let (why, answer) = super::refuse::oversize_answer(prefix, length, limit);
        self.record_refusal(None, why, length);
        answer
    }

    fn record_refusal(&self, id: Option<&str>, why: String, size: usize) {
        let mut event = Event {
            time: crate::audit::stamp().wall,
            session: self.session,
            direction: Some(Direction::ClientToServer),
            kind: EventKind::Refused,
            id,
            decision: Some(Decision::Refused),
            reason: Some(why.into()),
            ..Default::default()
        };
        event.size = Some(size);
        self.audit.record_decision(&event);
        self.audit.flush();
    }

    fn event<'e>(&'e self, request: &'e OwnRequest<'_>, decision: Decision, reason: Cow<'e, str>) -> Event<'e> {
        Event {
            time: crate::audit::stamp().wall,
            session: self.session,
            direction: Some(Direction::ClientToServer),
            kind: EventKind::Request,
            method: Some(request.method),
            id: Some(request.id),
            listed_as: Some(request.name),
            decision: Some(decision),
            reason: Some(reason),
            ..Default::default()
        }
    }
}

fn what(method: &str) -> &'static str {
    match method {
        methods::TOOLS_CALL => "the tool",
        methods::PROMPTS_GET => "the prompt",
        methods::RESOURCES_READ => "the resource",
        _ => "the request for",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decide(policy: &str, method: &str, name: &str) -> (OwnVerdict, serde_json::Value) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let audit = AuditLog::open(&path, u64::MAX, 1).unwrap();
        let policy = clawai_policy::load_str(policy, clawai_policy::Format::Toml, "test").unwrap();
        let remembered = clawai_policy::Session::new();
        let own = OwnRequests { policy: &policy, remembered: &remembered, audit: &audit, session: "s" };
        let params = serde_json::json!({"name": name, "arguments": {"query": "memory"}});
        let params = Json::from(&params);
        let request = OwnRequest { method, id: "7", name, params: Some(&params), stateless: false };
        let verdict = own.decide(&request, "searched the catalog");
        let line = std::fs::read_to_string(&path).unwrap();
        (verdict, serde_json::from_str(line.trim()).unwrap())
    }

    #[test]
    fn a_rule_denies_the_search_and_the_trail_names_it() {
        let policy = "[[rule]]\nid = \"no-search\"\naction = \"deny\"\ntool = \"search_tools\"\n\n\
                      [[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
        let (verdict, event) = decide(policy, methods::TOOLS_CALL, "search_tools");
        let OwnVerdict::Refuse(answer) = verdict else { panic!("the search was answered: {verdict:?}") };
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(answer["result"]["content"][0]["text"].as_str().unwrap().contains("no-search"), "{answer}");
        assert_eq!(event["decision"], "deny");
        assert_eq!(event["rule"], "no-search");
        assert_eq!(event["listed_as"], "search_tools");
        assert_eq!(event["arguments"]["query"], "memory");
    }

    #[test]
    fn an_allowed_skill_is_answered_and_recorded_as_the_policy_decided() {
        let policy = "[[rule]]\nid = \"mark-skills\"\naction = \"audit\"\ntool = \"skill__*\"\n\n\
                      [[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
        let (verdict, event) = decide(policy, methods::TOOLS_CALL, "skill__review");
        assert_eq!(verdict, OwnVerdict::Answer);
        assert_eq!(event["decision"], "audit");
        assert_eq!(event["rule"], "mark-skills");
        assert!(event["reason"].as_str().unwrap().ends_with("searched the catalog"), "{event}");
    }

    #[test]
    fn a_prompt_rule_denies_a_skill_prompt_with_the_approval_code() {
        let policy = "[[rule]]\nid = \"ask\"\naction = \"prompt\"\nprompt = \"skill__*\"\n\n\
                      [[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
        let (verdict, event) = decide(policy, methods::PROMPTS_GET, "skill__review");
        let OwnVerdict::Refuse(answer) = verdict else { panic!("the prompt was answered") };
        let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
        assert_eq!(answer["error"]["code"], reply::APPROVAL_REQUIRED, "{answer}");
        assert_eq!(event["decision"], "prompt");
    }
}
