//! The approvals stage for 2026-07-28 clients, which have no session to be asked in:
//! clawai answers the call with an `input_required` result carrying its question and a
//! state it sealed for exactly this call; the client retries the call with the person's
//! answer and that state, which is checked here and decides the retry.

use clawai_protocol::Json;
use clawai_protocol::methods;
use clawai_protocol::reply;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::{Approved, Ask, Asked, INPUT_KEY, STATE_TTL, offers_form};
use crate::ask::form::{self, Choice, Question};
use crate::ask::key::arguments_digest;
use crate::ask::seal::{Binding, Sealer, Stage, State};
use crate::audit::{Channel, Scope};
use crate::guard::{Guard, Verdict};

impl Guard {
    /// True when `params` are a 2026-07-28 retry carrying a state clawai sealed for
    /// exactly this call, which opens now (checked, not used up): the call it retries was
    /// decided, counted and marked when it first came.
    pub(in crate::guard) fn is_sealed_retry(
        &self,
        method: &str,
        params: Option<&Json<'_>>,
        name: Option<&str>,
    ) -> bool {
        let Some(params) = params else { return false };
        if !reply::is_stateless_request(Some(params)) {
            return false;
        }
        let Some(state) = params.get("requestState").and_then(Json::as_str).filter(|s| Sealer::is_ours(s)) else {
            return false;
        };
        let digest = retry_digest(&params.to_value());
        self.asking.sealer.would_open(state, &self.sealed_for(method, name, &digest))
    }

    /// What a sealed state of this session binds: the server, the method, the name and
    /// the digest of the call's arguments.
    fn sealed_for<'a>(&'a self, method: &'a str, name: Option<&'a str>, digest: &'a str) -> Binding<'a> {
        Binding { session: &self.session, server: self.server.as_deref(), method, name, digest }
    }

    /// A 2026-07-28 request: a retry with clawai's sealed state is decided by the answer
    /// it carries; a first call is answered with the question.
    pub(super) fn ask_stateless(&self, ask: &Ask) -> Asked {
        let params = ask.params.map(Json::to_value).unwrap_or(Value::Null);
        let digest = retry_digest(&params);
        let binding = self.sealed_for(ask.method, ask.call.name, &digest);
        let state = params.get("requestState").and_then(Value::as_str);
        if let Some(state) = state.filter(|s| Sealer::is_ours(s)) {
            let opened = match self.asking.sealer.open(state, &binding) {
                Ok(opened) => opened,
                Err(e) => return Asked::Refused(e),
            };
            let scope = match opened.stage {
                Stage::Approved => Scope::Once,
                Stage::Asked => {
                    let answer = params.get("inputResponses").and_then(|r| r.get(INPUT_KEY));
                    // A stateless request has no session: "for the session" is never
                    // offered, and an answer that says it anyway allows once (the
                    // shared guard of `--listen` serves many clients).
                    match answer.map_or(Choice::Deny, form::read_answer) {
                        Choice::Deny => return Asked::Declined { channel: Channel::ClientRetry },
                        Choice::AllowSession | Choice::AllowOnce => Scope::Once,
                    }
                }
            };
            self.asking.approved().insert(
                ask.id.get().to_owned(),
                Approved { method: ask.method.to_owned(), name: ask.call.name.map(str::to_owned), digest },
            );
            let forward = retry_without_clawai(ask.id, ask.method, params, opened.inner);
            return Asked::Allowed {
                channel: Channel::ClientRetry,
                scope,
                by: "client".into(),
                forward: Some(forward),
            };
        }
        let capabilities = params.get("_meta").and_then(|m| m.get("io.modelcontextprotocol/clientCapabilities"));
        if !capabilities.and_then(|c| c.get("elicitation")).is_some_and(offers_form) {
            return Asked::Nobody;
        }
        let arguments = ask.call.arguments.map(Json::to_value);
        let question = Question {
            server: self.server.as_deref(),
            method: ask.method,
            name: ask.call.name,
            arguments: arguments.as_ref(),
            rule: ask.rule.as_deref(),
            description: ask.description,
        };
        // The server's own state of an earlier round rides inside clawai's.
        let inner = state.map(str::to_owned);
        let sealed = self.asking.sealer.seal(&binding, State { stage: Stage::Asked, inner }, STATE_TTL);
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {INPUT_KEY: {"method": methods::ELICITATION_CREATE, "params": form::elicitation_params(&question, true, false)}},
            "requestState": sealed,
        });
        Asked::Held {
            verdict: Verdict::Reply(reply::result(Some(ask.id.get()), &result)),
            channel: Channel::Client,
            approval: None,
        }
    }

    /// A server's `input_required` answer to a call a person allowed: its state goes
    /// inside a sealed one of clawai's, so that the retry is known as allowed. `None`
    /// when the response is not to such a call.
    pub(in crate::guard) fn reseal(&self, id: &RawValue, result: &[u8]) -> Option<Verdict> {
        let approved = self.asking.approved().remove(id.get())?;
        let mut result: Value = serde_json::from_slice(result).ok()?;
        let inner = result.get("requestState").and_then(Value::as_str).map(str::to_owned);
        let binding = self.sealed_for(&approved.method, approved.name.as_deref(), &approved.digest);
        let sealed = self.asking.sealer.seal(&binding, State { stage: Stage::Approved, inner }, STATE_TTL);
        result["requestState"] = Value::String(sealed);
        Some(Verdict::Replace(reply::result(Some(id.get()), &result)))
    }

    /// A response to a forwarded call that needs no resealing.
    pub(in crate::guard) fn forget_approved(&self, id: &RawValue) {
        if !self.asking.approved().is_empty() {
            self.asking.approved().remove(id.get());
        }
    }
}

/// The digest a sealed state binds: the call's parameters without the members a retry
/// adds (`requestState`, `inputResponses`) and the per-request `_meta`.
fn retry_digest(params: &Value) -> String {
    let mut bound = params.clone();
    if let Some(members) = bound.as_object_mut() {
        for key in ["requestState", "inputResponses", "_meta"] {
            members.remove(key);
        }
    }
    arguments_digest(Some(&bound))
}

/// The retry as the server gets it: clawai's answer and state removed, the server's
/// own state (if clawai held it) put back.
fn retry_without_clawai(id: &RawValue, method: &str, mut params: Value, inner: Option<String>) -> Vec<u8> {
    if let Some(members) = params.as_object_mut() {
        members.remove("requestState");
        if let Some(Value::Object(responses)) = members.get_mut("inputResponses") {
            responses.remove(INPUT_KEY);
            if responses.is_empty() {
                members.remove("inputResponses");
            }
        }
        if let Some(inner) = inner {
            members.insert("requestState".into(), Value::String(inner));
        }
    }
    let mut message = Map::new();
    message.insert("jsonrpc".into(), json!("2.0"));
    message.insert("id".into(), serde_json::from_str(id.get()).unwrap_or(Value::Null));
    message.insert("method".into(), json!(method));
    message.insert("params".into(), params);
    let mut bytes = serde_json::to_vec(&Value::Object(message)).unwrap_or_default();
    bytes.push(b'\n');
    bytes
}
