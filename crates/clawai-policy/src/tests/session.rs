//! What a session remembers, as the rules that read it decide.

use std::time::Duration;

use clawai_protocol::Json;
use serde_json::json;

use crate::session::*;
use crate::{Action, Call, Format, Policy, load_str};

const POLICY: &str = r#"
[defaults]
action = "allow"

[[rule]]
id = "reads-private"
action = "allow"
tool = "read_file"
args.path = "/home/u/private/**"
taint = "private"

[[rule]]
id = "no-exfiltration"
action = "prompt"
tool = "fetch"
tainted = "private"

[[rule]]
id = "fetch-flood"
action = "deny"
tool = "fetch"
rate = "3/min"
"#;

fn policy(text: &str) -> Policy {
    load_str(text, Format::Toml, "test.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Decides `tool(arguments)` in `session` at `at` seconds; the deciding rule's id.
fn decide(policy: &Policy, session: &Session, tool: &str, arguments: serde_json::Value, at: u64) -> (Action, String) {
    let params = json!({"name": tool, "arguments": arguments});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params));
    let decision = policy.decide_at(&call, session, Duration::from_secs(at));
    (decision.action, decision.rule_id().unwrap_or("default").to_owned())
}

#[test]
fn a_rate_lets_its_limit_by_in_the_window_and_matches_the_call_beyond() {
    let p = policy(POLICY);
    let s = Session::new();
    for second in 0..3 {
        assert_eq!(decide(&p, &s, "fetch", json!({}), second), (Action::Allow, "default".into()), "call {second}");
    }
    assert_eq!(decide(&p, &s, "fetch", json!({}), 3), (Action::Deny, "fetch-flood".into()));
    // The denied call counted too: the window holds four calls until the first ages out.
    assert_eq!(decide(&p, &s, "fetch", json!({}), 59), (Action::Deny, "fetch-flood".into()));
    // At 61 s the calls of 0 and 1 s are out of the minute; 2, 3, 59 and this one remain.
    assert_eq!(decide(&p, &s, "fetch", json!({}), 61), (Action::Deny, "fetch-flood".into()));
    // At 180 s the window is empty again.
    assert_eq!(decide(&p, &s, "fetch", json!({}), 180), (Action::Allow, "default".into()));
}

#[test]
fn a_rate_counts_only_calls_its_other_conditions_match_and_each_session_apart() {
    let p = policy(POLICY);
    let (s, other) = (Session::new(), Session::new());
    for second in 0..10 {
        assert_eq!(decide(&p, &s, "read_file", json!({"path": "/tmp/x"}), second).0, Action::Allow);
    }
    for second in 0..3 {
        assert_eq!(decide(&p, &s, "fetch", json!({}), second).0, Action::Allow);
    }
    assert_eq!(decide(&p, &other, "fetch", json!({}), 3).0, Action::Allow, "another session counts its own");
    assert_eq!(decide(&p, &s, "fetch", json!({}), 3).0, Action::Deny);
}

#[test]
fn a_rate_counts_calls_an_earlier_rule_decides() {
    let p = policy(
        r#"
[[rule]]
id = "echo-ok"
action = "allow"
tool = "echo"
args.text = "hi"

[[rule]]
id = "echo-flood"
action = "deny"
tool = "echo"
rate = "2/sec"

[[rule]]
action = "allow"
tool = "echo"
"#,
    );
    let s = Session::new();
    // Two calls the first rule allows fill the window of `echo-flood`…
    assert_eq!(decide(&p, &s, "echo", json!({"text": "hi"}), 0).1, "echo-ok");
    assert_eq!(decide(&p, &s, "echo", json!({"text": "hi"}), 0).1, "echo-ok");
    // …so the next call that reaches it is the third in the second.
    assert_eq!(decide(&p, &s, "echo", json!({"text": "other"}), 0), (Action::Deny, "echo-flood".into()));
}

#[test]
fn taint_marks_the_session_when_its_rule_decides_and_tainted_matches_only_then() {
    let p = policy(POLICY);
    let s = Session::new();
    assert_eq!(decide(&p, &s, "fetch", json!({}), 0).0, Action::Allow, "clean session");
    // A read outside the private tree is decided by the default: no taint.
    assert_eq!(decide(&p, &s, "read_file", json!({"path": "/tmp/x"}), 1).1, "default");
    assert!(s.labels().is_empty());
    assert_eq!(decide(&p, &s, "read_file", json!({"path": "/home/u/private/a"}), 2).1, "reads-private");
    assert_eq!(s.labels(), ["private"]);
    assert_eq!(decide(&p, &s, "fetch", json!({}), 3), (Action::Prompt, "no-exfiltration".into()));
    assert_eq!(decide(&p, &Session::new(), "fetch", json!({}), 3).0, Action::Allow, "other sessions stay clean");
}

#[test]
fn decide_without_a_session_never_matches_session_rules_and_changes_nothing() {
    let p = policy(POLICY);
    let tainted = Session::with_labels(["private".to_owned()]);
    let params = json!({"name": "fetch", "arguments": {}});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params));
    assert_eq!(p.decide(&call).action, Action::Allow);
    assert_eq!(p.decide_in(&call, &tainted).action, Action::Prompt);
    assert!(p.reads_session());
    assert!(!policy("[[rule]]\naction = \"allow\"\ntool = \"x\"\n").reads_session());
}

#[test]
fn explain_in_shows_why_and_leaves_the_session_as_it_was() {
    let p = policy(POLICY);
    let s = Session::new();
    s.add_prior_calls("fetch-flood", 3);
    let params = json!({"name": "fetch", "arguments": {}});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params));
    let (clean, _) = p.explain_in(&call, &s);
    let tainted_step = clean.steps.iter().find(|st| st.label == "`no-exfiltration`").expect("step");
    assert_eq!(tainted_step.outcome.clone().unwrap_err().to_string(), "the session is not tainted \"private\"");
    assert_eq!(clean.decision.rule_id(), Some("fetch-flood"));
    assert!(clean.steps.last().unwrap().summary.contains("beyond rate 3/min"));
    // Looking did not count: with two prior calls the explained call is the third.
    let s = Session::new();
    s.add_prior_calls("fetch-flood", 2);
    for _ in 0..3 {
        let (e, _) = p.explain_in(&call, &s);
        assert_eq!(e.decision.action, Action::Allow);
        let miss = e.steps.last().unwrap().outcome.clone().unwrap_err().to_string();
        assert!(miss.starts_with("call 3 of the 3/min"), "{miss}");
    }
}

#[test]
fn listing_never_hides_a_tool_a_session_rule_denies_only_sometimes() {
    let p = policy(
        r#"
[defaults]
action = "allow"

[[rule]]
action = "allow"
tool = "read"
taint = "private"

[[rule]]
id = "after-private"
action = "deny"
tool = "send"
tainted = "private"

[[rule]]
id = "flood"
action = "deny"
tool = "fetch"
rate = "5/min"

[[rule]]
id = "never"
action = "deny"
tools = ["send", "fetch", "wipe"]
args.force = "yes"
"#,
    );
    let always = |tool: &str| {
        let call = Call { method: "tools/call", name: Some(tool), ..Call::from_params("tools/call", None) };
        p.denies_whatever_the_arguments(&call).map(|d| d.rule_id().unwrap_or("default").to_owned())
    };
    // Denied only in a tainted session, or beyond a rate: listed.
    assert_eq!(always("send"), None);
    assert_eq!(always("fetch"), None);
    assert_eq!(always("other"), None);
    // The deny rules that read the session are passed over, not taken as "some get through".
    let p = policy(
        "[[rule]]\naction = \"allow\"\ntool = \"read\"\ntaint = \"x\"\n\n[[rule]]\naction = \"deny\"\ntool = \"send\"\ntainted = \"x\"\n\n[[rule]]\nid = \"no-send\"\naction = \"deny\"\ntool = \"send\"\n",
    );
    let call = Call { method: "tools/call", name: Some("send"), ..Call::from_params("tools/call", None) };
    assert_eq!(
        p.denies_whatever_the_arguments(&call).and_then(|d| d.rule_id().map(str::to_owned)).as_deref(),
        Some("no-send")
    );
}

#[test]
fn taint_marks_every_call_that_touches_what_its_rule_describes_however_spelt() {
    let p = policy(POLICY);
    let touching = [
        ("read_file", json!({"path": "/home/u/private/a", "extra": "x"})),
        ("read_file", json!({"path": "/home/u/./private/a"})),
        ("read_file", json!({"path": "/home/u//private/a"})),
        ("read_file", json!({"path": ["/tmp/x", "/home/u/private/a"]})),
        ("READ_FILE", json!({"path": "/home/u/private/a"})),
        (" read_file", json!({"path": "/home/u/private/a"})),
        ("read_file", json!({"Path": "/home/u/private/a"})),
    ];
    for (tool, arguments) in touching {
        let s = Session::new();
        decide(&p, &s, tool, arguments.clone(), 0);
        assert_eq!(s.labels(), ["private"], "{tool} {arguments}");
        assert_eq!(decide(&p, &s, "fetch", json!({}), 1).1, "no-exfiltration", "{tool} {arguments}");
    }
    let s = Session::new();
    decide(&p, &s, "read_file", json!({"path": "/home/u/public/a"}), 0);
    decide(&p, &s, "list_files", json!({"path": "/home/u/private"}), 0);
    assert!(s.labels().is_empty(), "nothing private touched");
}

#[test]
fn taint_marks_whatever_decides_the_call_even_a_denial() {
    let p = policy(
        r#"
[[rule]]
id = "allow-reads"
action = "allow"
tool = "read_*"

[[rule]]
id = "tripwire"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"
taint = "suspicious"

[[rule]]
id = "private"
action = "audit"
tool = "read_file"
args.path = "/p/**"
taint = "private"

[[rule]]
action = "deny"
tool = "fetch"
tainted = ["private", "suspicious"]

[[rule]]
action = "allow"
tool = "fetch"
"#,
    );
    let s = Session::new();
    // An earlier allow decides the read; the taint rule below it still marks the session.
    assert_eq!(decide(&p, &s, "read_file", json!({"path": "/p/a"}), 0).1, "allow-reads");
    assert_eq!(s.labels(), ["private"]);
    let s = Session::new();
    assert_eq!(decide(&p, &s, "cat", json!({"file": "/home/u/.ssh/id_rsa"}), 0), (Action::Deny, "tripwire".into()));
    assert_eq!(s.labels(), ["suspicious"], "a denied attempt marks the session too");
    assert_eq!(decide(&p, &s, "fetch", json!({}), 1).0, Action::Deny);
}

#[test]
fn a_retry_already_counted_is_decided_without_a_second_count() {
    let p = policy(
        "[[rule]]\nid = \"flood\"\naction = \"deny\"\ntool = \"calc\"\nrate = \"2/min\"\n\n[[rule]]\naction = \"prompt\"\ntool = \"calc\"\n",
    );
    let s = Session::new();
    let params = json!({"name": "calc", "arguments": {}});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params));
    for _ in 0..2 {
        assert_eq!(p.decide_in(&call, &s).action, Action::Prompt);
        assert_eq!(p.decide_again(&call, &s).0.action, Action::Prompt, "the retry is the same call");
    }
    assert_eq!(p.decide_in(&call, &s).rule_id(), Some("flood"), "the third call");
}

#[test]
fn two_rate_rules_never_share_a_count() {
    let bad = |text: &str| load_str(text, Format::Toml, "p.toml").unwrap_err().to_string();
    let e = bad(
        "[[rule]]\nid = \"r\"\naction = \"deny\"\ntool = \"a\"\nrate = \"1/min\"\n[[rule]]\nid = \"r\"\naction = \"deny\"\ntool = \"b\"\nrate = \"5/hour\"\n",
    );
    assert!(e.starts_with("p.toml:6:") && e.contains("same id as the rate rule at line 1"), "{e}");
    let e = bad("[[rule]]\nid = \"#1\"\naction = \"deny\"\ntool = \"a\"\nrate = \"1/min\"\n");
    assert!(e.contains("starting with `#`"), "{e}");
}

#[test]
fn rates_are_read_as_written_and_bad_ones_refused() {
    let rate: Rate = "30/min".parse().unwrap();
    assert_eq!((rate.limit, rate.window), (30, Duration::from_secs(60)));
    assert_eq!("5/sec".parse::<Rate>().unwrap().window, Duration::from_secs(1));
    assert_eq!("1/hour".parse::<Rate>().unwrap().to_string(), "1/hour");
    for bad in ["30", "0/min", "-1/min", "30/day", "x/min", "200000/sec", ""] {
        assert!(bad.parse::<Rate>().is_err(), "{bad:?}");
    }
}

#[test]
fn a_bad_rate_or_label_or_an_unset_label_stops_the_policy_with_its_line() {
    let bad = |text: &str| load_str(text, Format::Toml, "p.toml").unwrap_err().to_string();
    let e = bad("[[rule]]\naction = \"deny\"\ntool = \"x\"\nrate = \"30/day\"\n");
    assert!(e.starts_with("p.toml:4:8:") && e.contains("unknown unit `day`"), "{e}");
    let e = bad("[[rule]]\naction = \"deny\"\ntool = \"x\"\ntaint = \"a b\"\n");
    assert!(e.starts_with("p.toml:4:") && e.contains("is not a word"), "{e}");
    let e = bad("[[rule]]\naction = \"deny\"\ntool = \"x\"\ntainted = \"privat\"\n");
    assert!(e.starts_with("p.toml:1:") && e.contains("can never match") && e.contains("taint = \"privat\""), "{e}");
    let e = bad(&format!("{POLICY}\n[[rule]]\naction = \"deny\"\ntool = \"y\"\ntainted = \"privat\"\n"));
    assert!(e.contains("the rules taint sessions \"private\""), "{e}");
}

#[test]
fn a_rule_with_tainted_or_rate_is_not_unconditional_so_it_shadows_nothing() {
    policy(
        r#"
[[rule]]
action = "deny"
tool = "**"
rate = "100/min"

[[rule]]
action = "allow"
tool = "echo"
"#,
    );
}

#[test]
fn approvals_cannot_carry_session_keys() {
    let e = crate::approvals::Approvals::parse("[[allow]]\ntool = \"x\"\nrate = \"1/min\"\n", "approvals.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("`rate` belongs in the policy's rules"), "{e}");
}

#[test]
fn decide_and_mark_names_only_the_labels_this_call_added() {
    let p = policy(POLICY);
    let s = Session::new();
    let params = json!({"name": "read_file", "arguments": {"path": "/home/u/private/a"}});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params));
    assert_eq!(p.decide_looking(&call, &s).1, ["private"], "looking");
    assert!(s.labels().is_empty(), "looking marks nothing");
    assert_eq!(p.decide_and_mark(&call, &s).1, ["private"]);
    assert!(p.decide_and_mark(&call, &s).1.is_empty(), "already carried");
    assert!(p.decide_looking(&call, &s).1.is_empty());
}

/// A session memory whose shared store is away: reads answer (the owner's copy), every
/// write fails.
#[derive(Debug, Default)]
struct StoreAway;

impl clawai_store::SessionMemory for StoreAway {
    fn labels(&self) -> std::collections::BTreeSet<String> {
        Default::default()
    }
    fn add_labels(&self, _: &[String]) -> Result<(), clawai_store::Unavailable> {
        Err(clawai_store::Unavailable::Unreachable("connection refused".into()))
    }
    fn count(
        &self,
        _: &str,
        _: std::time::Duration,
        _: u32,
        _: std::time::Duration,
        _: clawai_store::Count,
    ) -> Result<u32, clawai_store::Unavailable> {
        Err(clawai_store::Unavailable::TakenOver)
    }
    fn seed(&self, _: &str, _: u32, _: std::time::Duration) {}
    fn grant(&self, _: &str) -> Result<(), clawai_store::Unavailable> {
        Err(clawai_store::Unavailable::Unreachable("connection refused".into()))
    }
    fn granted(&self, _: &str) -> bool {
        false
    }
    fn fact(&self, _: &str) -> Option<String> {
        None
    }
    fn set_fact(&self, _: &str, _: Option<&str>) -> Result<(), clawai_store::Unavailable> {
        Err(clawai_store::Unavailable::Unreachable("connection refused".into()))
    }
}

#[test]
fn a_call_whose_count_or_taint_cannot_be_written_is_denied_whatever_the_rule_says() {
    let p = policy(
        r#"
        [[rule]]
        id = "counted-but-allowed"
        action = "allow"
        tool = "fetch"
        rate = "1000/min"

        [[rule]]
        id = "reads"
        action = "allow"
        tool = "read"
        taint = "private"

        [[rule]]
        action = "allow"
        tool = "*"
        "#,
    );
    let away = Session::in_memory(std::sync::Arc::new(StoreAway));
    let params = |tool: &str| json!({"name": tool, "arguments": {}});
    let (fetch_params, read_params, list_params) = (params("fetch"), params("read"), params("list"));
    let (fetch_json, read_json, list_json) =
        (Json::from(&fetch_params), Json::from(&read_params), Json::from(&list_params));
    let call = |json| Call::from_params("tools/call", Some(json));
    let (fetch, _) = p.decide_and_mark(&call(&fetch_json), &away);
    assert_eq!(fetch.action, Action::Deny, "a counted call is denied while its window cannot be counted");
    assert!(fetch.reason().contains("Redis"), "{}", fetch.reason());
    let (read, added) = p.decide_and_mark(&call(&read_json), &away);
    assert_eq!(read.action, Action::Deny, "a tainting call is denied while its mark cannot be written");
    assert!(read.reason().contains("taint"), "{}", read.reason());
    assert!(added.is_empty());
    assert_eq!(p.decide_and_mark(&call(&list_json), &away).0.action, Action::Allow, "other calls are not touched");
}
