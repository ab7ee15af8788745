//! `prompt` asks the person in the client, through the stdio proxy: clawai's own
//! `elicitation/create` to clients that declared elicitation (up to 2025-11-25), an
//! `input_required` result with a sealed state for 2026-07-28 requests; standing
//! approvals and session grants; time-outs, cancellations, declines; and nothing else
//! waits meanwhile.

use crate::support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Proxy, Setup};

const POLICY: &str = r#"
[[rule]]
id = "ask-writes"
action = "prompt"
tools = ["write_file", "mrtr_tool"]
description = "Writes need a person"

[[rule]]
action = "allow"
method = "**"
"#;

fn start(extra: &[&str]) -> Proxy {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("no-approvals.toml");
    let mut setup = Setup::new(POLICY).arg("--approvals").arg(none.to_str().unwrap());
    for a in extra {
        setup = setup.arg(a);
    }
    let proxy = setup.start();
    std::mem::forget(dir);
    proxy
}

fn initialize(p: &mut Proxy, capabilities: Value) {
    let r = p.call(&json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":capabilities,"clientInfo":{"name":"t","version":"1"}}}));
    assert_eq!(r["result"]["serverInfo"]["name"], "scripted");
}

fn write_call(id: Value, path: &str) -> Value {
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"write_file","arguments":{"path":path,"content":"x"}}})
}

/// The next message from the proxy that is a request (clawai's question).
fn next_question(p: &mut Proxy) -> Value {
    loop {
        let m = p.recv();
        if m.get("method").is_some() && m.get("id").is_some() {
            return m;
        }
    }
}

fn answer(p: &mut Proxy, question: &Value, decision: &str) {
    p.send_json(
        &json!({"jsonrpc":"2.0","id":question["id"],"result":{"action":"accept","content":{"decision":decision}}}),
    );
}

fn calls_seen_by_server(p: &Proxy) -> usize {
    p.server_log().lines().filter(|l| l.contains("\"tools/call\"") && l.contains("write_file")).count()
}

#[test]
fn the_client_is_asked_and_allow_once_forwards_the_original_bytes() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    let call = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/\u202eevil","content":"x"}}}"#;
    p.send(call);
    let question = next_question(&mut p);
    assert_eq!(question["method"], "elicitation/create");
    let own_id = question["id"].as_str().unwrap();
    assert!(own_id.starts_with("clawai-ask-"), "{own_id}");
    let message = question["params"]["message"].as_str().unwrap();
    for part in ["write_file", "Rule ask-writes: Writes need a person", "\\u{202E}evil"] {
        assert!(message.contains(part), "{part} in {message}");
    }
    assert_eq!(question["params"]["requestedSchema"]["required"][0], "decision");
    assert_eq!(calls_seen_by_server(&p), 0, "the call waits");
    answer(&mut p, &question, "allow_once");
    let reply = p.recv();
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["result"]["content"][0]["text"], "called write_file");
    let log = p.server_log();
    assert!(log.lines().any(|l| l.as_bytes() == call), "the server got the call byte for byte: {log}");
    assert!(!log.contains("clawai-ask-"), "clawai's question and its answer never reach the server");
    let events = p.audit();
    assert!(events.iter().any(|e| e["step"] == "asked" && e["channel"] == "client" && e["decision"] == "prompt"));
    assert!(
        events.iter().any(|e| e["kind"] == "approval"
            && e["step"] == "answered"
            && e["approved"] == true
            && e["scope"] == "once")
    );
    // Once: the identical call is asked about again.
    p.send(call);
    assert_eq!(next_question(&mut p)["method"], "elicitation/create");
}

#[test]
fn a_decline_or_an_unknown_answer_denies_and_nothing_reaches_the_server() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {"form": {}}}));
    for (n, result) in [
        json!({"action": "decline"}),
        json!({"action": "cancel"}),
        json!({"action": "accept", "content": {"decision": "yes please"}}),
        json!({"action": "accept", "content": {"decision": "deny"}}),
    ]
    .into_iter()
    .enumerate()
    {
        p.send_json(&write_call(json!(n), "/tmp/a"));
        let question = next_question(&mut p);
        p.send_json(&json!({"jsonrpc":"2.0","id":question["id"],"result":result}));
        let reply = p.recv();
        assert_eq!(reply["id"], n);
        assert_eq!(reply["result"]["isError"], true, "{reply}");
        assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("declined"), "{reply}");
    }
    // An error answer denies too.
    p.send_json(&write_call(json!("e"), "/tmp/a"));
    let question = next_question(&mut p);
    p.send_json(&json!({"jsonrpc":"2.0","id":question["id"],"error":{"code":-1,"message":"no"}}));
    assert_eq!(p.recv()["result"]["isError"], true);
    assert_eq!(calls_seen_by_server(&p), 0);
}

#[test]
fn allow_for_the_session_lets_the_identical_call_through_and_nothing_else() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!(1), "/tmp/a"));
    let question = next_question(&mut p);
    answer(&mut p, &question, "allow_session");
    assert_eq!(p.recv()["result"]["content"][0]["text"], "called write_file");
    // The same call, its arguments spelled in another order: no question.
    p.send(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"arguments":{"content":"x","path":"/tmp/a"},"name":"write_file"}}"#);
    assert_eq!(p.recv()["result"]["content"][0]["text"], "called write_file");
    // Another path: asked again.
    p.send_json(&write_call(json!(3), "/tmp/b"));
    assert_eq!(next_question(&mut p)["method"], "elicitation/create");
    assert!(p.audit().iter().any(|e| e["channel"] == "session_grant" && e["approved"] == true));
}

#[test]
fn no_answer_in_time_denies_and_withdraws_the_question() {
    let mut p = start(&["--ask-timeout", "0.5"]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!(1), "/tmp/a"));
    let question = next_question(&mut p);
    let started = Instant::now();
    let (mut cancelled, mut denied) = (false, false);
    while !(cancelled && denied) {
        let m = p.recv();
        if m["method"] == "notifications/cancelled" {
            assert_eq!(m["params"]["requestId"], question["id"]);
            cancelled = true;
        } else if m["id"] == 1 {
            assert!(
                m["result"]["content"][0]["text"].as_str().unwrap().contains("nobody answered within 0.5 s"),
                "{m}"
            );
            denied = true;
        }
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // A late answer changes nothing.
    answer(&mut p, &question, "allow_once");
    p.expect_silence(Duration::from_millis(300));
    assert_eq!(calls_seen_by_server(&p), 0);
    assert!(p.audit().iter().any(|e| e["step"] == "timed_out" && e["approved"] == false));
}

#[test]
fn a_cancelled_call_withdraws_the_question_and_never_reaches_the_server() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!("c1"), "/tmp/a"));
    let question = next_question(&mut p);
    p.send_json(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c1"}}));
    let withdrawn = p.recv();
    assert_eq!(withdrawn["method"], "notifications/cancelled");
    assert_eq!(withdrawn["params"]["requestId"], question["id"]);
    answer(&mut p, &question, "allow_once");
    p.expect_silence(Duration::from_millis(300));
    assert_eq!(calls_seen_by_server(&p), 0);
    assert!(!p.server_log().contains("notifications/cancelled"), "the server never saw the call, nor its cancellation");
}

#[test]
fn a_hundred_calls_go_through_while_one_waits_for_a_person() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!("held"), "/tmp/a"));
    let question = next_question(&mut p);
    for n in 0..100 {
        p.send_json(
            &json!({"jsonrpc":"2.0","id":n,"method":"tools/call","params":{"name":"safe_read","arguments":{}}}),
        );
    }
    let mut answered = 0;
    while answered < 100 {
        let m = p.recv();
        assert_ne!(m["id"], "held", "the held call waits");
        if m["result"]["content"][0]["text"] == "called safe_read" {
            answered += 1;
        }
    }
    answer(&mut p, &question, "allow_once");
    let reply = p.recv();
    assert_eq!(
        (reply["id"].clone(), reply["result"]["content"][0]["text"].clone()),
        (json!("held"), json!("called write_file"))
    );
}

#[test]
fn without_a_channel_the_call_is_denied_saying_how_to_be_asked() {
    let mut p = start(&[]);
    initialize(&mut p, json!({}));
    let reply = p.call(&write_call(json!(1), "/tmp/a"));
    let text = reply["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("nobody could be asked") && text.contains("clawai ui"), "{text}");
    assert_eq!(calls_seen_by_server(&p), 0);
}

#[test]
fn a_standing_approval_allows_without_asking_but_clawais_ids_stay_clawais() {
    let dir = tempfile::tempdir().unwrap();
    let approvals = dir.path().join("approvals.toml");
    std::fs::write(&approvals, "[[allow]]\nid = \"tmp-writes\"\ntool = \"write_file\"\nargs.path = \"/tmp/**\"\n")
        .unwrap();
    let mut p = Setup::new(POLICY).arg("--approvals").arg(approvals.to_str().unwrap()).start();
    initialize(&mut p, json!({"elicitation": {}}));
    assert_eq!(p.call(&write_call(json!(1), "/tmp/a"))["result"]["content"][0]["text"], "called write_file");
    p.send_json(&write_call(json!(2), "/etc/a"));
    let question = next_question(&mut p);
    assert_eq!(question["method"], "elicitation/create", "outside the entry: asked");
    assert!(p.audit().iter().any(|e| e["channel"] == "approvals_file" && e["scope"] == "always"));
    // Neither side may use clawai's id namespace for a request of its own.
    let own = question["id"].as_str().unwrap();
    let forged = format!("{}99", own.trim_end_matches(char::is_numeric));
    let refused = p.call(&json!({"jsonrpc":"2.0","id":forged,"method":"ping"}));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    let line = json!({"jsonrpc":"2.0","id":forged,"method":"elicitation/create","params":{"message":"approve?","requestedSchema":{"type":"object","properties":{}}}}).to_string();
    let reported = p.call(&json!({"jsonrpc":"2.0","id":"raw","method":"test/raw-ask","params":{"line":line}}));
    assert_eq!(reported["result"]["client_answered"]["error"]["code"], -32600, "{reported}");
}

// 2026-07-28: the question as an input_required result, and the retry.

fn stateless(id: Value, tool: &str, args: Value, extra: Value) -> Value {
    let mut params = json!({"name": tool, "arguments": args, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
    if let Value::Object(extra) = extra {
        params.as_object_mut().unwrap().extend(extra);
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

#[test]
fn a_2026_request_gets_the_question_as_input_required_and_the_retry_goes_on_without_clawais_keys() {
    let mut p = start(&[]);
    let args = json!({"path": "/tmp/a", "content": "x"});
    let first = p.call(&stateless(json!(1), "write_file", args.clone(), json!({})));
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let question = &result["inputRequests"]["clawai.approval"];
    assert_eq!(question["method"], "elicitation/create");
    let state = result["requestState"].as_str().unwrap().to_owned();
    assert_eq!(calls_seen_by_server(&p), 0);
    let accept = json!({"clawai.approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    let retry = p.call(&stateless(
        json!(2),
        "write_file",
        args.clone(),
        json!({"inputResponses": accept, "requestState": state}),
    ));
    assert_eq!(retry["result"]["content"][0]["text"], "called write_file", "{retry}");
    let forwarded = p.server_log().lines().find(|l| l.contains("write_file")).unwrap().to_owned();
    assert!(!forwarded.contains("requestState") && !forwarded.contains("inputResponses"), "{forwarded}");
    // Replayed: refused.
    let replay = p.call(&stateless(
        json!(3),
        "write_file",
        args.clone(),
        json!({"inputResponses": accept, "requestState": state}),
    ));
    assert!(replay["error"]["message"].as_str().unwrap().contains("already used"), "{replay}");
    assert_eq!(calls_seen_by_server(&p), 1);
}

#[test]
fn a_tampered_retargeted_or_foreign_state_is_refused_and_a_decline_denies() {
    let mut p = start(&[]);
    let args = json!({"path": "/tmp/a", "content": "x"});
    let accept = json!({"clawai.approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    let state = |p: &mut Proxy, id: i64| {
        p.call(&stateless(json!(id), "write_file", json!({"path": "/tmp/a", "content": "x"}), json!({})))["result"]["requestState"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Another path than the one asked about.
    let s = state(&mut p, 1);
    let other = p.call(&stateless(
        json!(2),
        "write_file",
        json!({"path": "/etc/passwd", "content": "x"}),
        json!({"inputResponses": accept, "requestState": s}),
    ));
    assert!(other["error"]["message"].as_str().unwrap().contains("another call"), "{other}");
    // Edited.
    let s = state(&mut p, 3);
    let mut edited = s.clone();
    let flipped = if edited.ends_with('A') { 'B' } else { 'A' };
    edited.pop();
    edited.push(flipped);
    let tampered = p.call(&stateless(
        json!(4),
        "write_file",
        args.clone(),
        json!({"inputResponses": accept, "requestState": edited}),
    ));
    assert!(tampered.get("error").is_some(), "{tampered}");
    // Made up, in clawai's spelling.
    let forged = p.call(&stateless(
        json!(5),
        "write_file",
        args.clone(),
        json!({"inputResponses": accept, "requestState": "clawai.v1.e30.AAAA"}),
    ));
    assert!(forged.get("error").is_some(), "{forged}");
    // Declined.
    let s = state(&mut p, 6);
    let decline = json!({"clawai.approval": {"action": "decline"}});
    let declined =
        p.call(&stateless(json!(7), "write_file", args.clone(), json!({"inputResponses": decline, "requestState": s})));
    assert!(declined["result"]["content"][0]["text"].as_str().unwrap().contains("declined"), "{declined}");
    assert_eq!(declined["result"]["resultType"], "complete");
    // No answer in the retry at all: denied.
    let s = state(&mut p, 8);
    let unanswered = p.call(&stateless(json!(9), "write_file", args, json!({"requestState": s})));
    assert_eq!(unanswered["result"]["isError"], true, "{unanswered}");
    assert_eq!(calls_seen_by_server(&p), 0);
}

#[test]
fn the_servers_own_input_required_state_travels_inside_clawais() {
    let mut p = start(&[]);
    let accept = json!({"clawai.approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    let first = p.call(&stateless(json!(1), "mrtr_tool", json!({}), json!({})));
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    // Approved: the server now asks for input of its own.
    let second =
        p.call(&stateless(json!(2), "mrtr_tool", json!({}), json!({"inputResponses": accept, "requestState": state})));
    assert_eq!(second["result"]["resultType"], "input_required", "{second}");
    assert!(second["result"]["inputRequests"]["confirm"].is_object());
    let wrapped = second["result"]["requestState"].as_str().unwrap().to_owned();
    assert!(wrapped.starts_with("clawai.v1.") && !wrapped.contains("server-state-1"), "{wrapped}");
    // The retry with the server's answer: not asked again; the server gets its own state back.
    let confirm = json!({"confirm": {"action": "accept", "content": {}}});
    let third = p.call(&stateless(
        json!(3),
        "mrtr_tool",
        json!({}),
        json!({"inputResponses": confirm, "requestState": wrapped}),
    ));
    let text = third["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.starts_with("completed with") && text.contains("confirm") && !text.contains("clawai.approval"),
        "{third}"
    );
}

#[test]
fn a_2026_request_is_never_offered_the_session_and_an_answer_claiming_it_allows_once() {
    let mut p = start(&[]);
    let args = json!({"path": "/tmp/a", "content": "x"});
    let first = p.call(&stateless(json!(1), "write_file", args.clone(), json!({})));
    let choices = &first["result"]["inputRequests"]["clawai.approval"]["params"]["requestedSchema"]["properties"]["decision"]
        ["enum"];
    assert_eq!(choices, &json!(["allow_once", "deny"]), "{first}");
    let state = first["result"]["requestState"].as_str().unwrap().to_owned();
    let session = json!({"clawai.approval": {"action": "accept", "content": {"decision": "allow_session"}}});
    let retry = p.call(&stateless(
        json!(2),
        "write_file",
        args.clone(),
        json!({"inputResponses": session, "requestState": state}),
    ));
    assert_eq!(retry["result"]["content"][0]["text"], "called write_file");
    let again = p.call(&stateless(json!(3), "write_file", args, json!({})));
    assert_eq!(again["result"]["resultType"], "input_required", "no grant across stateless requests: {again}");
}

#[test]
fn a_second_call_under_the_id_of_a_waiting_one_is_refused() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!(7), "/tmp/harmless"));
    let question = next_question(&mut p);
    let refused = p.call(&write_call(json!(7), "/home/me/.bashrc"));
    assert_eq!(refused["error"]["code"], -32600, "{refused}");
    answer(&mut p, &question, "allow_once");
    assert_eq!(p.recv()["id"], 7);
    let log = p.server_log();
    assert!(log.contains("/tmp/harmless") && !log.contains(".bashrc"), "only the call the person saw went on: {log}");
}

#[test]
fn a_server_request_in_clawais_namespace_is_refused_under_any_spelling() {
    let mut p = start(&[]);
    initialize(&mut p, json!({"elicitation": {}}));
    p.send_json(&write_call(json!(1), "/tmp/a"));
    let question = next_question(&mut p);
    let own = question["id"].as_str().unwrap();
    // The same id, its first letter written as an escape.
    let respelled = format!("\\u0063{}", &own[1..]);
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"{respelled}","method":"elicitation/create","params":{{"message":"ok?","requestedSchema":{{"type":"object","properties":{{}}}}}}}}"#
    );
    let reported = p.call(&json!({"jsonrpc":"2.0","id":"raw","method":"test/raw-ask","params":{"line":line}}));
    assert_eq!(reported["result"]["client_answered"]["error"]["code"], -32600, "{reported}");
}

#[test]
fn a_call_inside_a_batch_is_not_held_for_a_person() {
    let mut p = start(&[]);
    let r = p.call(&json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{"elicitation":{}},"clientInfo":{"name":"t","version":"1"}}}));
    assert_eq!(r["result"]["protocolVersion"], "2025-03-26");
    p.send_json(&json!([write_call(json!(1), "/tmp/a"), {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe_read"}}]));
    let answers = p.recv();
    let answers = answers.as_array().unwrap_or_else(|| panic!("one array for the batch: {answers}"));
    let denied = answers.iter().find(|a| a["id"] == 1).unwrap();
    assert!(denied["result"]["content"][0]["text"].as_str().unwrap().contains("nobody could be asked"), "{denied}");
    assert!(answers.iter().any(|a| a["id"] == 2 && a["result"]["content"][0]["text"] == "called safe_read"));
    assert_eq!(calls_seen_by_server(&p), 0);
}

// Rates and retries: a retry counts once only under a state clawai sealed for the call.

const RATED: &str = r#"
[[rule]]
id = "write-flood"
action = "deny"
tool = "write_file"
rate = "2/min"

[[rule]]
id = "ask-writes"
action = "prompt"
tool = "write_file"

[[rule]]
action = "allow"
method = "**"
"#;

#[test]
fn a_forged_request_state_does_not_keep_a_call_out_of_its_rate() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("no-approvals.toml");
    let mut p = Setup::new(RATED).arg("--approvals").arg(none.to_str().unwrap()).start();
    initialize(&mut p, json!({"elicitation": {"form": {}}}));
    // The person allows writes for the session.
    p.send_json(&write_call(json!(1), "/tmp/a"));
    let question = next_question(&mut p);
    answer(&mut p, &question, "allow_session");
    assert_eq!(p.recv()["result"]["content"][0]["text"], "called write_file");
    // Later calls carry a state that looks like clawai's: the session grant lets them
    // through without asking, and each is counted all the same.
    let forged = |id: i64| {
        let mut call = write_call(json!(id), "/tmp/a");
        call["params"]["requestState"] = json!("clawai.v1.eyJmb3JnZWQiOnRydWV9.AAAA");
        call
    };
    assert_eq!(p.call(&forged(2))["result"]["content"][0]["text"], "called write_file");
    let third = p.call(&forged(3));
    let text = third["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(third["result"]["isError"] == true && text.contains("write-flood"), "{third}");
    assert_eq!(calls_seen_by_server(&p), 2);
}

#[test]
fn a_2026_retry_under_clawais_sealed_state_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    let none = dir.path().join("no-approvals.toml");
    let mut p = Setup::new(RATED).arg("--approvals").arg(none.to_str().unwrap()).start();
    let args = json!({"path": "/tmp/a", "content": "x"});
    let accept = json!({"clawai.approval": {"action": "accept", "content": {"decision": "allow_once"}}});
    for id in [1, 3] {
        let first = p.call(&stateless(json!(id), "write_file", args.clone(), json!({})));
        let state = first["result"]["requestState"].as_str().expect("asked").to_owned();
        let retry = p.call(&stateless(
            json!(id + 1),
            "write_file",
            args.clone(),
            json!({"inputResponses": accept, "requestState": state}),
        ));
        assert_eq!(retry["result"]["content"][0]["text"], "called write_file", "{retry}");
    }
    let third = p.call(&stateless(json!(5), "write_file", args.clone(), json!({})));
    let text = third["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("write-flood"), "the third write in the minute: {third}");
}
