//! A session's skills: getting the prompt `skill__NAME` or calling the tool
//! `skill__NAME` activates the skill for this session (another replaces it), and the
//! tool called with `{"deactivate": true}` ends it. What the session sees changes with
//! it, and the client is told (`notifications/tools/list_changed`).

use clawai_protocol::Json;
use clawai_protocol::methods;
use clawai_proxy::guard::{OwnRequest, OwnRequests, OwnVerdict};
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
        let what = if deactivate { "skill deactivated for this session" } else { "skill activated for this session" };
        // The params stage before the policy, as for any call: a skill called without a
        // variable it needs is refused (and recorded) whatever the policy says of it.
        if !deactivate && self.refuse_without_variables(method, id, listed, skill, &arguments, modern) {
            return Some(());
        }
        if let OwnVerdict::Refuse(refusal) = self.decide_own(method, id, listed, message, modern, what) {
            self.send(refusal);
            return Some(());
        }
        let active_before = lock(&self.state).skill.clone();
        let active_after = match deactivate {
            true if active_before.as_deref() == Some(name) => None,
            true => active_before.clone(),
            false => Some(name.to_owned()),
        };
        // Written through before the answer: a replica that takes the session over
        // serves the skill the client was told is active (or refuses, saying why).
        if active_after != active_before
            && let Err(why) = self.remembered.memory().set_fact(super::SKILL_FACT, active_after.as_deref())
        {
            let why = format!("clawai gateway: the skill {name} did not change: {why}; try again");
            self.send(crate::rewrite::error(id, clawai_protocol::reply::SERVER_UNAVAILABLE, &why));
            return Some(());
        }
        lock(&self.state).skill.clone_from(&active_after);
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

    /// Refuses to activate `skill` when a required variable is not given, naming each
    /// (so that the model never reads a literal `{{placeholder}}`): a tool call gets an
    /// error result the model can act on, a prompt -32602. True when refused.
    fn refuse_without_variables(
        &self,
        method: &str,
        id: &Value,
        listed: &str,
        skill: &crate::skills::Skill,
        arguments: &Map<String, Value>,
        modern: bool,
    ) -> bool {
        let missing = skill.missing_variables(arguments);
        if missing.is_empty() {
            return false;
        }
        let names: Vec<String> = missing.iter().map(|name| format!("`{name}`")).collect();
        let why = format!(
            "the skill {} needs {} (not given); call it again with {} as {}, and it activates",
            skill.name(),
            names.join(" and "),
            if missing.len() == 1 { "it" } else { "them" },
            if missing.len() == 1 { "an argument" } else { "arguments" },
        );
        self.with_own_requests(|own| own.refuse_invalid(method, &crate::raw_ids::trail_text(id), listed, &why));
        match method {
            "prompts/get" => {
                let error = format!("clawai gateway: {why}");
                self.send(crate::rewrite::error(id, clawai_protocol::reply::INVALID_PARAMS, &error));
            }
            _ => self.answer(id, json!({"content": [{"type": "text", "text": why}], "isError": true}), modern),
        }
        true
    }

    /// Ends the active skill unless `still_there` says it is still loaded.
    pub(crate) fn forget_skill_unless(&self, still_there: impl Fn(&str) -> bool) {
        let mut state = lock(&self.state);
        if state.skill.as_deref().is_some_and(|name| !still_there(name)) {
            state.skill = None;
            // A skill that is gone activates nothing elsewhere either; a failed write
            // leaves a name that no replica finds among its skills.
            let _ = self.remembered.memory().set_fact(super::SKILL_FACT, None);
        }
    }

    /// Decides a request for one of the gateway's own tools or prompts (a skill, the
    /// search) with the policy, as a server's call is decided, and records it: `doing`
    /// says what the gateway does if it answers.
    pub(super) fn decide_own(
        &self,
        method: &str,
        id: &Value,
        listed: &str,
        message: &Value,
        modern: bool,
        doing: &str,
    ) -> OwnVerdict {
        let params = message.get("params").map(Json::from);
        let id = crate::raw_ids::trail_text(id);
        let request = OwnRequest { method, id: &id, name: listed, params: params.as_ref(), stateless: modern };
        self.with_own_requests(|own| own.decide(&request, doing))
    }

    /// Records a request for a name this session cannot use (hidden or not there).
    pub(super) fn record_unknown(&self, method: &str, id: &Value, name: &str) {
        self.with_own_requests(|own| own.refuse_unknown(method, &crate::raw_ids::trail_text(id), name));
    }

    /// Runs `then` with the stage that decides and records what the gateway answers
    /// itself, for this session.
    pub(crate) fn with_own_requests<R>(&self, then: impl FnOnce(&OwnRequests<'_>) -> R) -> R {
        let policy = self.core.policy.current();
        then(&OwnRequests { policy: &policy, remembered: &self.remembered, audit: &self.core.audit, session: &self.id })
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
