//! JSON-RPC batches: allowed in sessions that negotiated 2025-03-26 (each element decided,
//! the allowed ones forwarded byte for byte, one answer per request in one array), and
//! refused whole in every later revision.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{Proxy, Setup};

const NO_WIPE: &str = r#"
[[rule]]
id = "no-wipe"
action = "deny"
tool = "wipe"
description = "Wiping is not allowed"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"#;

fn initialize(p: &mut Proxy, version: &str) {
    let r = p.call(&json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}));
    assert_eq!(r["result"]["protocolVersion"], version);
}

/// The next message from clawai that is not a notification.
fn answer(p: &mut Proxy) -> Value {
    loop {
        let m = p.recv();
        if m.get("method").is_none() {
            return m;
        }
    }
}

/// The batch answer's elements by id.
fn by_id(batch: &Value) -> std::collections::HashMap<String, Value> {
    batch
        .as_array()
        .unwrap_or_else(|| panic!("a batch answer: {batch}"))
        .iter()
        .map(|r| (r["id"].to_string(), r.clone()))
        .collect()
}

#[test]
fn a_2025_03_26_batch_is_decided_element_by_element() {
    let mut p = Setup::new(NO_WIPE).start();
    initialize(&mut p, "2025-03-26");
    let allowed =
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe_read","arguments":{ "p" : 1 }}}"#;
    let denied = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wipe","arguments":{}}}"#;
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}"#;
    let echo = r#"{"jsonrpc":"2.0","id":"e","method":"test/echo"}"#;
    p.send(format!("[{allowed}, {denied},{notification} ,{echo}, 7]").as_bytes());
    let batch = answer(&mut p);
    let answers = by_id(&batch);
    assert_eq!(answers.len(), 4, "one answer per request, and one for the invalid element: {batch}");
    assert_eq!(answers["1"]["result"]["content"][0]["text"], "called safe_read");
    assert_eq!(answers["2"]["result"]["isError"], true);
    assert!(answers["2"]["result"]["content"][0]["text"].as_str().unwrap().contains("no-wipe"));
    assert_eq!(answers["\"e\""]["result"]["received"].as_str().unwrap().trim_end(), echo);
    assert_eq!(answers["null"]["error"]["code"], -32600, "{batch}");
    // Each allowed element reached the server alone, byte for byte; the denied one never did.
    let log = p.server_log();
    for element in [allowed, notification, echo] {
        assert!(log.contains(&format!("{element}\n")), "{element} in {log}");
    }
    assert!(!log.contains("wipe") && !log.contains('['), "{log}");
    // A batch of notifications gets no answer; one of denied calls is answered at once.
    p.send(format!("[{notification}]").as_bytes());
    p.send(format!("[{}]", denied.replace("\"id\":2", "\"id\":3")).as_bytes());
    let batch = answer(&mut p);
    assert_eq!(by_id(&batch).keys().collect::<Vec<_>>(), ["3"], "{batch}");
    p.expect_silence(Duration::from_millis(200));
}

#[test]
fn batch_elements_that_wait_for_the_tool_list_are_answered_in_the_batch() {
    let policy = "[[rule]]\nid = \"no-destructive\"\naction = \"deny\"\ndestructive = true\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).start();
    initialize(&mut p, "2025-03-26");
    let read = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe_read"}}"#;
    let wipe = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wipe"}}"#;
    p.send(format!("[{read},{wipe}]").as_bytes());
    let batch = answer(&mut p);
    let answers = by_id(&batch);
    assert_eq!(answers["1"]["result"]["content"][0]["text"], "called safe_read", "{batch}");
    assert_eq!(answers["2"]["result"]["isError"], true, "{batch}");
}

#[test]
fn later_revisions_keep_refusing_batches() {
    for version in ["2025-06-18", "2025-11-25"] {
        let mut p = Setup::new(NO_WIPE).start();
        initialize(&mut p, version);
        p.send(br#"[{"jsonrpc":"2.0","id":1,"method":"test/echo"}]"#);
        let r = answer(&mut p);
        assert_eq!(r["error"]["code"], -32600, "{version}: {r}");
        assert!(!p.server_log().contains("test/echo"), "{version}");
    }
}
