//! `prompt` asked out of band: a client that cannot show a form, a `clawai ui` broker
//! running, and a person answering with `clawai approve` / `clawai deny`.

use crate::support;
use crate::ui_support;

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{Proxy, Setup};
use ui_support::Ui;

const POLICY: &str = r#"
[[rule]]
id = "ask-writes"
action = "prompt"
tool = "write_file"
description = "Writes need a person"

[[rule]]
action = "allow"
method = "**"
"#;

fn proxy_beside(ui: &Ui, extra: &[&str]) -> Proxy {
    let dir = ui.dir.path();
    let mut setup =
        Setup::new(POLICY).arg("--approvals").arg(dir.join("config/clawai/approvals.toml").to_str().unwrap());
    for a in extra {
        setup = setup.arg(a);
    }
    let run = dir.join("run");
    let state = dir.join("state");
    let config = dir.join("config");
    let setup = setup
        .env("XDG_RUNTIME_DIR", Box::leak(run.to_string_lossy().into_owned().into_boxed_str()))
        .env("XDG_STATE_HOME", Box::leak(state.to_string_lossy().into_owned().into_boxed_str()))
        .env("XDG_CONFIG_HOME", Box::leak(config.to_string_lossy().into_owned().into_boxed_str()));
    let mut p = setup.start();
    let r = p.call(&json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}));
    assert_eq!(r["result"]["serverInfo"]["name"], "scripted");
    p
}

fn write_call(id: Value, progress: Option<&str>) -> Value {
    let mut params = json!({"name":"write_file","arguments":{"path":"/tmp/a","content":"x"}});
    if let Some(token) = progress {
        params["_meta"] = json!({"progressToken": token});
    }
    json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":params})
}

/// The approvals the broker lists, waiting until there are `n`.
fn pending(ui: &Ui, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let out = ui.cli(&["approvals", "--json"]);
        let items: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap_or_default();
        if items.len() >= n || Instant::now() > deadline {
            return items;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn seen_by_server(p: &Proxy) -> usize {
    p.server_log().lines().filter(|l| l.contains("write_file")).count()
}

#[test]
fn a_person_approves_at_the_terminal_and_the_held_call_goes_on() {
    let ui = Ui::start();
    let mut p = proxy_beside(&ui, &[]);
    p.send_json(&write_call(json!(1), None));
    let items = pending(&ui, 1);
    assert_eq!(items.len(), 1, "the call is queued at the broker");
    assert_eq!((items[0]["name"].as_str(), items[0]["rule"].as_str()), (Some("write_file"), Some("ask-writes")));
    assert_eq!(seen_by_server(&p), 0);
    // Other calls go on meanwhile.
    assert_eq!(
        p.call(&json!({"jsonrpc":"2.0","id":"r","method":"tools/call","params":{"name":"safe_read"}}))["result"]["content"]
            [0]["text"],
        "called safe_read"
    );
    let id = items[0]["id"].as_str().unwrap();
    assert!(ui.cli(&["approve", id]).status.success());
    let reply = p.recv();
    assert_eq!(
        (reply["id"].clone(), reply["result"]["content"][0]["text"].clone()),
        (json!(1), json!("called write_file"))
    );
    let events = p.audit();
    assert!(events.iter().any(|e| e["step"] == "asked" && e["channel"] == "broker" && e["approval"] == id));
    assert!(
        events
            .iter()
            .any(|e| e["step"] == "answered" && e["channel"] == "broker" && e["approved"] == true && e["by"] == "cli")
    );
}

#[test]
fn a_denial_at_the_terminal_denies() {
    let ui = Ui::start();
    let mut p = proxy_beside(&ui, &[]);
    p.send_json(&write_call(json!(1), None));
    let items = pending(&ui, 1);
    assert!(ui.cli(&["deny", items[0]["id"].as_str().unwrap()]).status.success());
    let reply = p.recv();
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("declined"), "{reply}");
    assert_eq!(seen_by_server(&p), 0);
}

#[test]
fn past_the_time_out_the_approval_stays_pending_and_the_retry_passes_once() {
    let ui = Ui::start();
    let mut p = proxy_beside(&ui, &["--ask-timeout", "1"]);
    p.send_json(&write_call(json!(1), Some("tok")));
    let mut progress = 0;
    let reply = loop {
        let m = p.recv();
        if m["method"] == "notifications/progress" {
            assert_eq!(m["params"]["progressToken"], "tok");
            progress += 1;
        } else {
            break m;
        }
    };
    let text = reply["result"]["content"][0]["text"].as_str().unwrap().to_owned();
    let id = pending(&ui, 1)[0]["id"].as_str().unwrap().to_owned();
    assert!(text.contains(&format!("approval under {id}")) && text.contains(&format!("clawai approve {id}")), "{text}");
    assert!(progress >= 1, "a call with a progress token hears that it waits");
    assert!(ui.cli(&["approve", &id]).status.success());
    // The identical call passes at once, once.
    let retry = p.call(&write_call(json!(2), None));
    assert_eq!(retry["result"]["content"][0]["text"], "called write_file", "{retry}");
    p.send_json(&write_call(json!(3), None));
    assert_eq!(pending(&ui, 1).len(), 1, "the second retry is asked about again");
    assert_eq!(seen_by_server(&p), 1);
}

#[test]
fn a_cancelled_call_is_withdrawn_from_the_broker() {
    let ui = Ui::start();
    let mut p = proxy_beside(&ui, &[]);
    p.send_json(&write_call(json!("c"), None));
    assert_eq!(pending(&ui, 1).len(), 1);
    p.send_json(&json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c"}}));
    let deadline = Instant::now() + Duration::from_secs(10);
    while !pending(&ui, 0).is_empty() {
        assert!(Instant::now() < deadline, "the ask is withdrawn");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(seen_by_server(&p), 0);
    assert!(!p.server_log().contains("notifications/cancelled"));
}

#[test]
fn clawais_own_answers_to_a_2026_call_say_their_result_type() {
    let ui = Ui::start();
    let mut p = proxy_beside(&ui, &[]);
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}});
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/tmp/a"},"_meta":meta}}));
    let items = pending(&ui, 1);
    assert!(ui.cli(&["deny", items[0]["id"].as_str().unwrap()]).status.success());
    let reply = p.recv();
    assert_eq!(reply["result"]["resultType"], "complete", "{reply}");
    assert!(reply["result"]["content"][0]["text"].as_str().unwrap().contains("rule `ask-writes`"), "{reply}");
}
