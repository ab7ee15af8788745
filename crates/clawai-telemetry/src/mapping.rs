//! What an audit event becomes in OpenTelemetry: which events are decisions, the span's
//! name, the attributes of the span and of each metric. Never the arguments: nothing
//! here reads `Event::arguments` (nor `reason`, which can quote them).

use clawai_proxy::audit::{Decision, Event};
use opentelemetry::KeyValue;

/// The MCP method (`tools/call`), as the OpenTelemetry conventions for MCP name it.
pub const METHOD: &str = "mcp.method.name";
/// The tool's name in a `tools/call`, the server's own name.
pub const TOOL: &str = "gen_ai.tool.name";
/// The prompt's name in a `prompts/get`.
pub const PROMPT: &str = "gen_ai.prompt.name";
/// The resource's URI in a `resources/read`.
pub const RESOURCE: &str = "mcp.resource.uri";
/// Through the gateway: the name the client used (`github__create_issue`).
pub const LISTED_AS: &str = "clawai.listed_as";
/// The server's name (`--server`, or the gateway's name for it).
pub const SERVER: &str = "clawai.server";
/// `allow`, `deny`, `prompt`, `audit` or `refused`.
pub const DECISION: &str = "clawai.decision";
/// The id of the rule that decided.
pub const RULE: &str = "clawai.rule";
/// `client->server` or `server->client`.
pub const DIRECTION: &str = "clawai.direction";
/// The clawai session (one per proxy process, or per client of a front or gateway).
pub const SESSION: &str = "clawai.session";
/// `request`, `notification`, `response`, `refused`, `approval`.
pub const KIND: &str = "clawai.kind";

/// The span of each decided message is named this, then the method.
pub const SPAN_PREFIX: &str = "clawai.decide";

/// True for an event that records a decision on a message: a rule's (or the default's)
/// `allow`, `deny`, `prompt`, `audit`, or a refusal of a message that was not valid.
/// `pass` (no rule applies to the method), responses and the steps of asking a person
/// decide nothing.
pub fn is_decided(event: &Event<'_>) -> bool {
    event.decision.is_some_and(|decision| decision != Decision::Pass)
}

/// `clawai.decide tools/call`.
pub fn span_name(event: &Event<'_>) -> String {
    format!("{SPAN_PREFIX} {}", event.method.unwrap_or("unknown"))
}

/// The attributes of a decided message's span.
pub fn span_attributes(event: &Event<'_>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(10);
    let mut add = |key: &'static str, value: Option<&str>| {
        if let Some(value) = value {
            attributes.push(KeyValue::new(key, value.to_owned()));
        }
    };
    add(METHOD, event.method);
    add(TOOL, event.tool);
    add(PROMPT, event.prompt);
    add(RESOURCE, event.resource);
    add(LISTED_AS, event.listed_as);
    add(SERVER, event.server);
    add(DECISION, event.decision.map(Decision::as_str));
    add(RULE, event.rule);
    add(DIRECTION, event.direction.map(|direction| direction.as_str()));
    add(SESSION, Some(event.session).filter(|session| !session.is_empty()));
    add(KIND, Some(event.kind.as_str()));
    attributes
}

/// The attributes of the message counter: method, direction, kind (few values each).
pub fn message_attributes(event: &Event<'_>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(3);
    if let Some(method) = event.method {
        attributes.push(KeyValue::new(METHOD, method.to_owned()));
    }
    if let Some(direction) = event.direction {
        attributes.push(KeyValue::new(DIRECTION, direction.as_str()));
    }
    attributes.push(KeyValue::new(KIND, event.kind.as_str()));
    attributes
}

/// The attributes of the decision counter and the latency histogram: the action, the
/// method and the server (not the tool or the session: one series per tool and session
/// would grow without bound).
pub fn decision_attributes(event: &Event<'_>) -> Vec<KeyValue> {
    let mut attributes = Vec::with_capacity(3);
    if let Some(decision) = event.decision {
        attributes.push(KeyValue::new(DECISION, decision.as_str()));
    }
    if let Some(method) = event.method {
        attributes.push(KeyValue::new(METHOD, method.to_owned()));
    }
    if let Some(server) = event.server {
        attributes.push(KeyValue::new(SERVER, server.to_owned()));
    }
    attributes
}

/// Milliseconds from the message's arrival (`event.time`) to `now` (when it was decided
/// and recorded); 0 when the clock went back meanwhile.
pub fn decision_millis(event: &Event<'_>, now: jiff::Timestamp) -> f64 {
    let nanos = now.as_nanosecond() - event.time.as_nanosecond();
    (nanos.max(0) as f64) / 1e6
}

#[cfg(test)]
mod tests {
    use clawai_proxy::audit::{Direction, EventKind, Step};
    use opentelemetry::{Key, Value};

    use super::*;

    fn value<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a Value> {
        attributes.iter().find(|kv| kv.key == Key::from(key.to_owned())).map(|kv| &kv.value)
    }

    fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
        value(attributes, key).map(|value| value.as_str().into_owned())
    }

    fn denied_call() -> Event<'static> {
        Event {
            session: "s-1",
            server: Some("filesystem"),
            direction: Some(Direction::ClientToServer),
            kind: EventKind::Request,
            method: Some("tools/call"),
            id: Some("7"),
            tool: Some("read_file"),
            listed_as: Some("filesystem__read_file"),
            decision: Some(Decision::Deny),
            rule: Some("no-ssh"),
            reason: Some("rule no-ssh: path /home/u/.ssh/id_rsa".into()),
            ..Event::default()
        }
    }

    #[test]
    fn a_decided_calls_span_names_the_method_tool_server_decision_rule_direction_and_session() {
        let event = denied_call();
        assert!(is_decided(&event));
        assert_eq!(span_name(&event), "clawai.decide tools/call");
        let attributes = span_attributes(&event);
        for (key, expected) in [
            (METHOD, "tools/call"),
            (TOOL, "read_file"),
            (LISTED_AS, "filesystem__read_file"),
            (SERVER, "filesystem"),
            (DECISION, "deny"),
            (RULE, "no-ssh"),
            (DIRECTION, "client->server"),
            (SESSION, "s-1"),
            (KIND, "request"),
        ] {
            assert_eq!(text(&attributes, key).as_deref(), Some(expected), "{key}");
        }
        assert_eq!(attributes.len(), 9, "no attribute beyond those: {attributes:?}");
    }

    #[test]
    fn arguments_and_reasons_never_reach_an_attribute() {
        let arguments = serde_json::json!({"path": "/home/u/.ssh/id_rsa"});
        let arguments = clawai_protocol::Json::from(&arguments);
        let event = Event { arguments: Some(clawai_proxy::redact::Redacted(&arguments)), ..denied_call() };
        let everything = [span_attributes(&event), message_attributes(&event), decision_attributes(&event)].concat();
        for kv in everything {
            assert!(!kv.value.as_str().contains(".ssh"), "{kv:?} shows an argument or the reason");
        }
    }

    #[test]
    fn prompts_and_resources_are_named_by_their_own_attributes() {
        let prompt = Event {
            method: Some("prompts/get"),
            prompt: Some("review"),
            decision: Some(Decision::Allow),
            ..Event::default()
        };
        let attributes = span_attributes(&prompt);
        assert_eq!(text(&attributes, PROMPT).as_deref(), Some("review"));
        assert_eq!(value(&attributes, TOOL), None);
        let read = Event {
            method: Some("resources/read"),
            resource: Some("file:///etc/hosts"),
            decision: Some(Decision::Audit),
            ..Event::default()
        };
        assert_eq!(text(&span_attributes(&read), RESOURCE).as_deref(), Some("file:///etc/hosts"));
        assert_eq!(value(&span_attributes(&read), SESSION), None, "an empty session is left out");
    }

    #[test]
    fn pass_responses_and_asking_steps_are_not_decisions() {
        let pass = Event {
            kind: EventKind::Notification,
            method: Some("notifications/initialized"),
            decision: Some(Decision::Pass),
            ..Event::default()
        };
        let response =
            Event { kind: EventKind::Response, method: Some("tools/call"), duration_ms: Some(3.0), ..Event::default() };
        let step = Event {
            kind: EventKind::Approval,
            method: Some("tools/call"),
            step: Some(Step::Answered),
            ..Event::default()
        };
        for event in [pass, response, step] {
            assert!(!is_decided(&event), "{event:?}");
        }
        let refused = Event { kind: EventKind::Refused, decision: Some(Decision::Refused), ..Event::default() };
        assert!(is_decided(&refused));
        assert_eq!(span_name(&refused), "clawai.decide unknown");
    }

    #[test]
    fn metric_attributes_stay_few_and_bounded() {
        let event = denied_call();
        let messages = message_attributes(&event);
        assert_eq!(messages.len(), 3);
        assert_eq!(text(&messages, METHOD).as_deref(), Some("tools/call"));
        assert_eq!(text(&messages, DIRECTION).as_deref(), Some("client->server"));
        assert_eq!(text(&messages, KIND).as_deref(), Some("request"));
        let decisions = decision_attributes(&event);
        assert_eq!(decisions.len(), 3, "action, method, server; no tool or session: {decisions:?}");
        assert_eq!(text(&decisions, DECISION).as_deref(), Some("deny"));
        assert_eq!(text(&decisions, SERVER).as_deref(), Some("filesystem"));
    }

    #[test]
    fn latency_runs_from_arrival_to_decision() {
        let arrived = jiff::Timestamp::from_microsecond(1_700_000_000_000_000).unwrap();
        let event = Event { time: arrived, ..denied_call() };
        let decided = arrived.checked_add(jiff::SignedDuration::from_micros(1_250)).unwrap();
        assert!((decision_millis(&event, decided) - 1.25).abs() < 1e-9);
        let before = arrived.checked_sub(jiff::SignedDuration::from_millis(5)).unwrap();
        assert_eq!(decision_millis(&event, before), 0.0, "a clock that went back gives 0, not a negative time");
    }
}
