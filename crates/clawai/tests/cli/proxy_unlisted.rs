//! A `tools/call` that arrives before any `tools/list` went through the proxy: when the
//! policy decides on what the server says of the tool (`destructive`, `read_only`),
//! clawai asks the server for its list itself, with ids the client never sees, and
//! decides on what the server really says.

use crate::support;

use serde_json::{Value, json};
use support::Setup;

const DESTRUCTIVE_DENIED: &str = r#"
[[rule]]
id = "no-destructive"
action = "deny"
destructive = true
description = "The server marks this tool as destructive"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"#;

fn call(id: u64, tool: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": {}}})
}

fn text(response: &Value) -> &str {
    response["result"]["content"][0]["text"].as_str().unwrap_or_default()
}

/// The lines of the server's log that are requests of this method.
fn requests(log: &str, method: &str) -> Vec<Value> {
    log.lines().filter_map(|line| serde_json::from_str::<Value>(line).ok()).filter(|m| m["method"] == method).collect()
}

#[test]
fn a_call_before_any_listing_is_decided_on_what_the_server_says_of_the_tool() {
    let mut p = Setup::new(DESTRUCTIVE_DENIED).start();
    p.initialize();
    // Read-only for the server: allowed, although nobody listed the tools.
    let r = p.call(&call(1, "safe_read"));
    assert_eq!(r["id"], 1);
    assert_eq!(text(&r), "called safe_read", "{r}");
    // Destructive for the server: denied, in the rule's words.
    let r = p.call(&call(2, "wipe"));
    assert_eq!(r["result"]["isError"], true, "{r}");
    assert!(text(&r).contains("The server marks this tool as destructive"), "{r}");
    // Not in the server's list: denied, saying so.
    let r = p.call(&call(3, "ghost"));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let said = text(&r);
    assert!(said.contains("no tool `ghost`") && said.contains("no-destructive"), "{said}");
    assert!(!said.contains("The server marks"), "the server marks nothing about `ghost`: {said}");
    // clawai asked once (the list is complete), with an id of its own that the client
    // never saw an answer to.
    let log = p.server_log();
    let lists = requests(&log, "tools/list");
    assert_eq!(lists.len(), 1, "{log}");
    let own_id = lists[0]["id"].as_str().expect("a string id").to_owned();
    assert!(own_id.starts_with("clawai-tools-list-"), "{own_id}");
    let r = p.call(&json!({"jsonrpc": "2.0", "id": 4, "method": "test/echo"}));
    assert_eq!(r["id"], 4, "no answer to clawai's own request reached the client first: {r}");
    // A client request that uses clawai's ids is refused, never forwarded.
    let r = p.call(&json!({"jsonrpc": "2.0", "id": own_id.replace("-1", "-9"), "method": "test/echo"}));
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(requests(&p.server_log(), "test/echo").len(), 1);
    // The trail records clawai's own request and its answer, and decisions on the real annotations.
    let audit = p.audit();
    assert!(audit.iter().any(|e| e["method"] == "tools/list" && e["id"] == own_id.as_str() && e["kind"] == "request"));
    assert!(audit.iter().any(|e| e["tool"] == "safe_read" && e["decision"] == "allow"));
}

#[test]
fn other_messages_flow_while_a_call_waits_for_the_list_and_every_page_is_read() {
    let mut p =
        Setup::new(DESTRUCTIVE_DENIED).env("SCRIPTED_LIST_DELAY_MS", "300").env("SCRIPTED_LIST_PAGED", "1").start();
    p.initialize();
    // `gentle` is on the last page: destructiveHint false.
    p.send_json(&call(1, "gentle"));
    p.send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "test/echo"}));
    let first = p.recv();
    assert_eq!(first["id"], 2, "the echo was not held behind the call: {first}");
    let second = p.recv();
    assert_eq!((second["id"].clone(), text(&second)), (json!(1), "called gentle"), "{second}");
    let log = p.server_log();
    let lists = requests(&log, "tools/list");
    assert_eq!(lists.len(), 3, "one request per page: {log}");
    assert_eq!(lists[1]["params"]["cursor"], "1");
    let order: Vec<String> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|m| m["method"].as_str().map(str::to_owned))
        .filter(|m| m != "initialize")
        .collect();
    assert_eq!(order.first().map(String::as_str), Some("tools/list"), "{order:?}");
    assert_eq!(
        order.last().map(String::as_str),
        Some("tools/call"),
        "the call went on once the list was in: {order:?}"
    );
}

#[test]
fn a_policy_that_does_not_read_annotations_asks_nothing() {
    // Without pinning: with it, the server's `list_changed` at start has clawai compare
    // the list with the pins before the first call (tests/e2e/test_pins.py).
    let policy = "[guards]\npinning = false\n[[rule]]\nid = \"no-wipe\"\naction = \"deny\"\ntool = \"wipe\"\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).start();
    p.initialize();
    assert_eq!(text(&p.call(&call(1, "safe_read"))), "called safe_read");
    assert_eq!(p.call(&call(2, "wipe"))["result"]["isError"], true);
    assert!(requests(&p.server_log(), "tools/list").is_empty(), "{}", p.server_log());
}

#[test]
fn a_call_cancelled_while_it_waits_for_the_list_never_reaches_the_server() {
    let mut p = Setup::new(DESTRUCTIVE_DENIED).env("SCRIPTED_LIST_DELAY_MS", "300").start();
    p.initialize();
    p.send_json(&call(1, "safe_read"));
    p.send_json(&json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let r = p.call(&json!({"jsonrpc": "2.0", "id": 2, "method": "test/echo"}));
    assert_eq!(r["id"], 2, "no answer to the cancelled call: {r}");
    p.expect_silence(std::time::Duration::from_millis(200));
    assert!(requests(&p.server_log(), "tools/call").is_empty(), "{}", p.server_log());
}

#[test]
fn a_list_too_large_to_read_still_gets_the_waiting_call_decided() {
    // Without pinning: decided as a tool the server did not describe.
    let unpinned = format!("[guards]\npinning = false\n{DESTRUCTIVE_DENIED}");
    let mut p = Setup::new(&unpinned).arg("--max-message-size").arg("4096").env("SCRIPTED_LIST_PAD", "10000").start();
    p.initialize();
    let r = p.call(&call(1, "safe_read"));
    assert_eq!(r["result"]["isError"], true, "{r}");
    let said = text(&r);
    assert!(said.contains("could not get the server's tool list") && said.contains("--max-message-size"), "{said}");
    // With pinning (the default), the server said its tools changed (at start) and the
    // list that would show them cannot be read: the call is refused, naming the cause,
    // since it cannot be checked against what was approved.
    let mut p =
        Setup::new(DESTRUCTIVE_DENIED).arg("--max-message-size").arg("4096").env("SCRIPTED_LIST_PAD", "10000").start();
    p.initialize();
    let r = p.call(&call(1, "safe_read"));
    assert_eq!(r["error"]["code"], -32005, "{r}");
    let said = r["error"]["message"].as_str().unwrap();
    assert!(said.contains("could not get the server's tool list") && said.contains("--max-message-size"), "{said}");
    assert!(requests(&p.server_log(), "tools/call").is_empty(), "{}", p.server_log());
}
