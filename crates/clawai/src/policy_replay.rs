//! `clawai policy replay`: decide every call recorded in the audit trail with a candidate
//! policy and list what would change, before the policy is rolled out.
//!
//! A recorded call is a request event the guard decided (`tools/call`, `resources/read`,
//! `prompts/get`, a server's `sampling/createMessage`, …). It is rebuilt from the event:
//! the method, the server, the tool, prompt or resource, the arguments as recorded
//! (secrets redacted) and the tool's annotations as the server's list gave them. Paths are
//! matched as spelled: symbolic links are not followed (they may have changed since).
//! A call is *not decided faithfully* when the candidate's decision may turn on what the
//! trail does not hold: a redacted value read by a rule, or annotations not recorded
//! (trails written before they were) read by a rule. Those are counted and shown apart.

use clawai_protocol::methods;
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use clawai_policy::{Action, Call, Policy, Session, ToolAnnotations};
use clawai_protocol::Json;
use clawai_proxy::audit::{AuditLine, Channel, Decision, EventKind, Step};
use clawai_proxy::guard::{SECRETS_IN_ARGUMENTS, decided_with_credential};
use clawai_proxy::self_protection;
use serde_json::{Value, json};

use crate::audit_cmd::parse_since;
use crate::audit_verify::trail_files;
use crate::common_args::FileArg;
use crate::exit::ExitCode;

/// The text the audit trail writes in place of a secret.
const REDACTED: &str = "[REDACTED]";

/// Options of `clawai policy replay`.
#[derive(Debug, Args)]
pub(crate) struct ReplayArgs {
    /// The candidate policy.
    #[arg(long = "policy", value_name = "FILE")]
    policy: PathBuf,
    /// Only calls recorded at or after this time: RFC 3339, or how long ago (30m, 2h, 7d).
    #[arg(long, value_parser = parse_since, value_name = "TIME")]
    since: Option<jiff::Timestamp>,
    #[command(flatten)]
    file: FileArg,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    json: bool,
}

/// One recorded call and what the candidate policy decides for it.
struct Replayed {
    event: Value,
    recorded: String,
    decided: Action,
    rule: Option<String>,
    /// Why the decision may differ from what the real call would get, if it may.
    unfaithful: Option<&'static str>,
}

/// Runs `clawai policy replay`.
pub(crate) fn run(args: ReplayArgs) -> Result<ExitCode> {
    let policy = crate::common_args::load(&args.policy)?;
    let trail = args.file.resolve();
    let files = trail_files(&trail);
    if !files.iter().any(|file| file.exists()) {
        anyhow::bail!("there is no audit trail at {}; pass --audit FILE", trail.display());
    }
    let mut replayed = Vec::new();
    // Rules with `rate`, `taint` and `tainted` see each recorded session as it went.
    let mut sessions: HashMap<String, Session> = HashMap::new();
    for file in files.iter().filter(|file| file.exists()) {
        let reader =
            BufReader::new(std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?);
        for line in reader.lines() {
            let line = line.with_context(|| format!("cannot read {}", file.display()))?;
            let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
            let in_window = args.since.is_none_or(|since| recorded_at(&event).is_some_and(|t| t >= since));
            if recorded_call(&event) {
                // Calls before --since are decided too, unreported: the sessions they
                // marked and the rate windows they filled are as they were.
                let session = sessions.entry(event["session"].as_str().unwrap_or_default().to_owned()).or_default();
                let decided = replay(&policy, event, session);
                if in_window {
                    replayed.push(decided);
                }
            }
        }
    }
    let changed: Vec<&Replayed> = replayed.iter().filter(|r| r.recorded != r.decided.as_str()).collect();
    if args.json {
        println!("{}", report_json(&replayed, &changed));
    } else {
        print!("{}", report_text(&replayed, &changed, &args.policy));
    }
    Ok(if changed.is_empty() { ExitCode::Ok } else { ExitCode::Failure })
}

/// A request the guard decided: its event has a decision other than `pass` (messages no
/// rule applies to) and is not the retry that carried a person's answer (the call was
/// counted when it first came).
fn recorded_call(event: &Value) -> bool {
    let Some(line) = AuditLine::of(event) else { return false };
    line.kind() == Some(EventKind::Request)
        && matches!(line.decision(), Some(Decision::Allow | Decision::Deny | Decision::Prompt | Decision::Audit))
        && line.str("method").is_some()
        && !(line.step() == Some(Step::Answered) && line.channel() == Some(Channel::ClientRetry))
}

fn recorded_at(event: &Value) -> Option<jiff::Timestamp> {
    event.get("time")?.as_str()?.parse().ok()
}

/// The `params` the call carried, as far as the event holds them.
fn params_of(event: &Value) -> Value {
    let method = event["method"].as_str().unwrap_or_default();
    let arguments = event.get("arguments").cloned();
    match method {
        methods::TOOLS_CALL | methods::PROMPTS_GET => {
            let name = if method == methods::TOOLS_CALL { &event["tool"] } else { &event["prompt"] };
            let mut params = json!({"name": name});
            if let Some(arguments) = arguments {
                params["arguments"] = arguments;
            }
            params
        }
        // The guard records the whole `params` of other methods as their arguments.
        methods::RESOURCES_READ => arguments.unwrap_or_else(|| json!({"uri": event["resource"]})),
        _ => arguments.unwrap_or(Value::Null),
    }
}

fn replay(policy: &Policy, event: Value, session: &Session) -> Replayed {
    let method = event["method"].as_str().unwrap_or_default().to_owned();
    let params = params_of(&event);
    let params = Json::from(&params);
    let recorded_annotations = event.get("annotations").map(ToolAnnotations::from_json);
    let call = Call::from_params(&method, (!matches!(params, Json::Null)).then_some(&params))
        .with_server(event.get("server").and_then(Value::as_str))
        .with_annotations(recorded_annotations);
    // Each call at the time it was made, in its session: rate windows as they were.
    let at = recorded_at(&event).map_or(Duration::ZERO, |t| Duration::from_millis(t.as_millisecond().max(0) as u64));
    let recorded_rule = event.get("rule").and_then(Value::as_str);
    let recorded = event["decision"].as_str().unwrap_or_default().to_owned();
    // Self-protection refuses before any rule is asked, whatever the policy: the call is
    // refused again, and (as in the proxy) counted by no rate.
    if recorded_rule == Some(self_protection::RULE_ID) {
        return Replayed {
            recorded,
            decided: Action::Deny,
            rule: recorded_rule.map(str::to_owned),
            unfaithful: None,
            event,
        };
    }
    let decision = policy.decide_at(&call, session, at);
    let considered = decision.rule.map_or(policy.rules().len(), |(index, _)| index + 1);
    let reads_arguments = policy.rules()[..considered].iter().any(|rule| rule.reads_arguments());
    let redacted = event.get("arguments").is_some_and(holds_redacted);
    // A call the arguments guard decided carried a credential: the candidate's
    // `secrets_in_arguments` decides it as the proxy would.
    let carried_credential = recorded_rule == Some(SECRETS_IN_ARGUMENTS);
    let decision = if carried_credential { decided_with_credential(policy, &call, decision) } else { decision };
    let unfaithful = if reads_arguments && redacted {
        Some("a rule reads the arguments, and the trail holds a value redacted")
    } else if redacted
        && !carried_credential
        && decided_with_credential(policy, &call, decision).action != decision.action
    {
        Some("the trail holds a value redacted, which may be a credential the arguments guard decides on")
    } else if method == methods::TOOLS_CALL && recorded_annotations.is_none() && turns_on_annotations(policy, &call) {
        Some("the decision turns on the tool's annotations, which the trail does not hold")
    } else {
        None
    };
    Replayed {
        recorded,
        decided: decision.action,
        rule: decision.rule.map(|(index, rule)| rule.id.clone().unwrap_or_else(|| rule.label(index))),
        unfaithful,
        event,
    }
}

fn holds_redacted(value: &Value) -> bool {
    match value {
        Value::String(text) => text.contains(REDACTED),
        Value::Array(items) => items.iter().any(holds_redacted),
        Value::Object(members) => members.values().any(holds_redacted),
        _ => false,
    }
}

/// Whether deciding the call as a read-only, a destructive or a harmless tool gives
/// different outcomes.
fn turns_on_annotations(policy: &Policy, call: &Call) -> bool {
    let outcome = |annotations| policy.decide(&call.with_annotations(Some(annotations))).action;
    let destructive = outcome(ToolAnnotations::default());
    destructive != outcome(ToolAnnotations { read_only_hint: Some(true), destructive_hint: None })
        || destructive != outcome(ToolAnnotations { read_only_hint: Some(false), destructive_hint: Some(false) })
}

/// What the call names: `server tool`, `server resource`, or the method.
fn subject(event: &Value) -> String {
    let name = ["tool", "prompt", "resource"].iter().find_map(|key| event.get(*key).and_then(Value::as_str));
    let server = event.get("server").and_then(Value::as_str).unwrap_or("-");
    let method = event["method"].as_str().unwrap_or_default();
    match name {
        Some(name) => format!("{method} {server}/{name}"),
        None => format!("{method} {server}"),
    }
}

/// Changes grouped by `from → to`, in a stable order.
fn groups<'a>(changed: &[&'a Replayed]) -> BTreeMap<(String, &'static str), Vec<&'a Replayed>> {
    let mut groups: BTreeMap<(String, &'static str), Vec<&Replayed>> = BTreeMap::new();
    for item in changed {
        groups.entry((item.recorded.clone(), item.decided.as_str())).or_default().push(item);
    }
    groups
}

fn report_text(replayed: &[Replayed], changed: &[&Replayed], policy: &std::path::Path) -> String {
    let mut out = String::new();
    let unfaithful = replayed.iter().filter(|r| r.unfaithful.is_some()).count();
    out.push_str(&format!(
        "{} recorded calls decided with {}: {} would change\n",
        replayed.len(),
        policy.display(),
        changed.len()
    ));
    for ((from, to), items) in groups(changed) {
        out.push_str(&format!("\n{from} → {to}: {}\n", items.len()));
        for item in items {
            let time = item.event["time"].as_str().unwrap_or_default();
            let rule = item.rule.as_deref().map_or("the default".to_owned(), |rule| format!("rule `{rule}`"));
            let mark = if item.unfaithful.is_some() { " (not faithful, see below)" } else { "" };
            out.push_str(&format!("  {time}  {}  by {rule}{mark}\n", subject(&item.event)));
        }
    }
    if unfaithful > 0 {
        out.push_str(&format!("\n{unfaithful} calls could not be decided faithfully:\n"));
        for item in replayed.iter().filter(|r| r.unfaithful.is_some()) {
            let why = item.unfaithful.unwrap_or_default();
            out.push_str(&format!(
                "  {}  {}: {why}\n",
                item.event["time"].as_str().unwrap_or_default(),
                subject(&item.event)
            ));
        }
    }
    out
}

fn report_json(replayed: &[Replayed], changed: &[&Replayed]) -> Value {
    let call = |item: &Replayed| {
        let name = ["tool", "prompt", "resource"].iter().find_map(|key| item.event.get(*key));
        json!({
            "time": item.event["time"], "server": item.event.get("server"), "method": item.event["method"],
            "name": name,
            "recorded": item.recorded, "decided": item.decided.as_str(), "rule": item.rule,
            "faithful": item.unfaithful.is_none(), "why_not_faithful": item.unfaithful,
        })
    };
    let changes: Vec<Value> = groups(changed)
        .into_iter()
        .map(|((from, to), items)| {
            json!({"from": from, "to": to, "count": items.len(), "calls": items.iter().map(|i| call(i)).collect::<Vec<_>>()})
        })
        .collect();
    json!({
        "checked": replayed.len(),
        "changed": changed.len(),
        "changes": changes,
        "not_faithful": replayed.iter().filter(|r| r.unfaithful.is_some()).map(call).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(text: &str) -> Policy {
        clawai_policy::load_str(text, clawai_policy::Format::Toml, "test").unwrap()
    }

    /// Replays one event in a session of its own.
    fn replay_alone(policy: &Policy, event: Value) -> Replayed {
        replay(policy, event, &Session::new())
    }

    fn call_event(tool: &str, arguments: Value, decision: &str) -> Value {
        json!({"time": "2026-11-25T10:00:00Z", "server": "fs", "kind": "request", "method": "tools/call",
               "direction": "client->server", "tool": tool, "arguments": arguments, "decision": decision})
    }

    #[test]
    fn calls_the_guards_decided_are_decided_as_the_guards_would() {
        let allow = policy("[defaults]\naction = \"allow\"\n");
        // Self-protection refuses whatever the policy says.
        let mut protected = call_event("write_file", json!({"path": "/home/u/.cursor/mcp.json"}), "deny");
        protected["rule"] = json!("self-protection");
        let replayed = replay_alone(&allow, protected);
        assert_eq!((replayed.decided, replayed.rule.as_deref()), (Action::Deny, Some("self-protection")));
        // A call the arguments guard decided carried a credential: the candidate's
        // `secrets_in_arguments` decides it, unless its rules are stricter.
        let mut carried = call_event("send", json!({"body": "key [REDACTED]"}), "prompt");
        carried["rule"] = json!("secrets-in-arguments");
        let replayed = replay_alone(&allow, carried.clone());
        assert_eq!((replayed.decided, replayed.rule.as_deref()), (Action::Prompt, Some("secrets-in-arguments")));
        let deny_secrets = policy("[guards]\nsecrets_in_arguments = \"deny\"\n\n[defaults]\naction = \"allow\"\n");
        assert_eq!(replay_alone(&deny_secrets, carried.clone()).decided, Action::Deny);
        let no_send = policy(
            "[[rule]]\nid = \"no-send\"\naction = \"deny\"\ntool = \"send\"\n\n[defaults]\naction = \"allow\"\n",
        );
        let replayed = replay_alone(&no_send, carried);
        assert_eq!((replayed.decided, replayed.rule.as_deref()), (Action::Deny, Some("no-send")));
        // A redacted value the rules decided on may have been a credential: a candidate
        // that lets it through cannot say what the guard would have done.
        let denied = call_event("send", json!({"body": "key [REDACTED]"}), "deny");
        let replayed = replay_alone(&allow, denied);
        assert_eq!(replayed.decided, Action::Allow);
        assert!(replayed.unfaithful.is_some_and(|why| why.contains("arguments guard")));
    }

    #[test]
    fn a_call_is_rebuilt_and_decided_by_the_candidate() {
        let strict = policy(
            "[[rule]]\nid = \"no-tmp\"\naction = \"deny\"\ntool = \"read_file\"\nargs = { path = \"/tmp/**\" }\n\n[defaults]\naction = \"allow\"\n",
        );
        let replayed = replay_alone(&strict, call_event("read_file", json!({"path": "/tmp/x"}), "allow"));
        assert_eq!(
            (replayed.decided, replayed.rule.as_deref(), replayed.unfaithful),
            (Action::Deny, Some("no-tmp"), None)
        );
        let replayed = replay_alone(&strict, call_event("read_file", json!({"path": "/home/x"}), "allow"));
        assert_eq!(replayed.decided, Action::Allow);
    }

    #[test]
    fn a_redacted_value_read_by_a_rule_is_not_faithful() {
        let reads = policy(
            "[[rule]]\nid = \"r\"\naction = \"deny\"\ntool = \"send\"\nany_arg = \"*secret*\"\n\n[defaults]\naction = \"allow\"\n",
        );
        let replayed = replay_alone(&reads, call_event("send", json!({"token": "[REDACTED]"}), "allow"));
        assert!(replayed.unfaithful.is_some());
        let names_only = policy("[[rule]]\nid = \"r\"\naction = \"deny\"\ntool = \"send\"\n");
        assert!(
            replay_alone(&names_only, call_event("send", json!({"token": "[REDACTED]"}), "allow")).unfaithful.is_none()
        );
    }

    #[test]
    fn recorded_annotations_decide_and_missing_ones_are_flagged() {
        let asks =
            policy("[[rule]]\nid = \"d\"\naction = \"prompt\"\ndestructive = true\n\n[defaults]\naction = \"allow\"\n");
        let mut read_only = call_event("read", json!({}), "allow");
        read_only["annotations"] = json!({"readOnlyHint": true});
        let replayed = replay_alone(&asks, read_only);
        assert_eq!((replayed.decided, replayed.unfaithful), (Action::Allow, None));
        let replayed = replay_alone(&asks, call_event("read", json!({}), "allow"));
        assert_eq!(replayed.decided, Action::Prompt, "absent hints count as destructive");
        assert!(replayed.unfaithful.is_some());
    }

    #[test]
    fn only_decided_requests_are_replayed() {
        assert!(recorded_call(&call_event("t", json!({}), "deny")));
        let mut pass = call_event("t", json!({}), "pass");
        assert!(!recorded_call(&pass));
        pass["decision"] = json!("allow");
        pass["kind"] = json!("response");
        assert!(!recorded_call(&pass));
        let mut retry = call_event("t", json!({}), "prompt");
        retry["step"] = json!("answered");
        retry["channel"] = json!("client_retry");
        assert!(!recorded_call(&retry));
    }

    #[test]
    fn a_resource_read_is_rebuilt_from_its_params() {
        let denies = policy(
            "[[rule]]\nid = \"keys\"\naction = \"deny\"\nresource = \"file:///**/.ssh/**\"\n\n[defaults]\naction = \"allow\"\n",
        );
        let event = json!({"time": "2026-11-25T10:00:00Z", "server": "fs", "kind": "request", "method": "resources/read",
                           "resource": "file:///home/u/.ssh/id_rsa", "arguments": {"uri": "file:///home/u/.ssh/id_rsa"},
                           "decision": "allow"});
        assert_eq!(replay_alone(&denies, event).decided, Action::Deny);
    }

    #[test]
    fn sessions_are_replayed_as_they_went_taint_and_rate_included() {
        let watched = policy(
            r#"
[defaults]
action = "allow"

[[rule]]
id = "reads-private"
action = "allow"
tool = "read_private"
taint = "private"

[[rule]]
id = "no-send-after-private"
action = "deny"
tool = "send"
tainted = "private"

[[rule]]
id = "send-flood"
action = "deny"
tool = "send"
rate = "2/min"
"#,
        );
        let at = |tool: &str, time: &str, session: &str| {
            let mut event = call_event(tool, json!({}), "allow");
            event["time"] = json!(time);
            event["session"] = json!(session);
            event
        };
        let (a, b) = (Session::new(), Session::new());
        let decided = |event, session| replay(&watched, event, session).decided;
        assert_eq!(decided(at("send", "2026-11-25T10:00:00Z", "a"), &a), Action::Allow);
        assert_eq!(decided(at("read_private", "2026-11-25T10:00:01Z", "a"), &a), Action::Allow);
        assert_eq!(decided(at("send", "2026-11-25T10:00:02Z", "a"), &a), Action::Deny, "tainted by its read");
        assert_eq!(decided(at("send", "2026-11-25T10:00:02Z", "b"), &b), Action::Allow, "b read nothing");
        assert_eq!(decided(at("send", "2026-11-25T10:00:30Z", "b"), &b), Action::Allow);
        assert_eq!(decided(at("send", "2026-11-25T10:00:59Z", "b"), &b), Action::Deny, "third in the minute");
        // Recorded times decide the window, not the replay's clock.
        assert_eq!(decided(at("send", "2026-11-25T10:05:00Z", "b"), &b), Action::Allow);
    }
}
