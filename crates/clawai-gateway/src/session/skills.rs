//! A session's skills: getting the prompt `skill__NAME` or calling the tool
//! `skill__NAME` activates the skill for this session (another replaces it), and the
//! tool called with `{"deactivate": true}` ends it. What the session sees changes with
//! it, and the client is told (`notifications/tools/list_changed`).

use clawai_protocol::methods;
use clawai_proxy::audit::{Decision, Direction, Event, EventKind};
use serde_json::{Map, Value, json};

use super::{Session, lock};
use crate::skills::skill::PREFIX;

impl Session {
    /// `tools/call` or `prompts/get` of `skill__NAME`: `None` when the name is not a
    /// skill's (the call goes on to the servers).
    pub(super) fn skill_request(&self, method: &str, id: &Value, message: &Value, modern: bool) -> Option<()> {
        let listed = message.pointer("/params/name").and_then(Value::as_str)?;
        let name = listed.strip_prefix(PREFIX)?;
        let skills = self.core.skills();
        // A skill with `user-invocable: false` is for the model only: no prompt (what
        // clients offer people as a slash command), so `prompts/get` finds none.
        let skill = skills.get(name).filter(|skill| method == methods::TOOLS_CALL || skill.user_invocable())?;
        let arguments = message.pointer("/params/arguments").and_then(Value::as_object).cloned().unwrap_or_default();
        let deactivate = method == methods::TOOLS_CALL && arguments.get("deactivate") == Some(&Value::Bool(true));
        let (active_before, active_after) = {
            let mut state = lock(&self.state);
            let before = state.skill.clone();
            if deactivate {
                if state.skill.as_deref() == Some(name) {
                    state.skill = None;
                }
            } else {
                state.skill = Some(name.to_owned());
            }
            (before, state.skill.clone())
        };
        let what = if deactivate { "skill deactivated for this session" } else { "skill activated for this session" };
        self.record_own(method, id, listed, what);
        if active_before != active_after {
            self.view_may_have_changed();
        }
        let text = if deactivate {
            match active_before.as_deref() == Some(name) {
                true => format!("The skill {name} is no longer active."),
                false => format!("The skill {name} was not active; nothing changed."),
            }
        } else {
            skill.render(&string_arguments(&arguments))
        };
        let result = match method {
            methods::PROMPTS_GET => json!({
                "description": skill.description(),
                "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
            }),
            _ => json!({"content": [{"type": "text", "text": text}], "isError": false}),
        };
        self.answer(id, result, modern);
        Some(())
    }

    /// Ends the active skill unless `still_there` says it is still loaded.
    pub(crate) fn forget_skill_unless(&self, still_there: impl Fn(&str) -> bool) {
        let mut state = lock(&self.state);
        if state.skill.as_deref().is_some_and(|name| !still_there(name)) {
            state.skill = None;
        }
    }

    /// A call of one of the gateway's own tools (a skill, the search), in the trail.
    pub(super) fn record_own(&self, method: &str, id: &Value, listed: &str, what: &str) {
        self.record_gateways_own(method, id, listed, Decision::Allow, what);
    }

    /// An event for a request the gateway answered itself (no server saw it), under the
    /// name the client used.
    pub(super) fn record_gateways_own(&self, method: &str, id: &Value, listed: &str, decision: Decision, why: &str) {
        let id = id.to_string();
        let event = Event {
            time: jiff::Timestamp::now(),
            session: &self.id,
            direction: Some(Direction::ClientToServer),
            kind: EventKind::Request,
            method: Some(method),
            id: Some(&id),
            listed_as: Some(listed),
            decision: Some(decision),
            reason: Some(why.into()),
            ..Default::default()
        };
        self.core.audit.record_decision(&event);
    }
}

/// The arguments a template is rendered with: strings as they are, other values as JSON.
fn string_arguments(arguments: &Map<String, Value>) -> Map<String, Value> {
    arguments
        .iter()
        .filter(|(key, _)| key.as_str() != "deactivate")
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect()
}
