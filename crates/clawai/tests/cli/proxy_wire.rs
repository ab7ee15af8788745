//! `clawai proxy` on the wire, against the scripted server: what must pass untouched,
//! what must be refused, and what must never reach the other side.

use crate::support;

use std::time::Duration;

use serde_json::json;
use support::{ALLOW_ALL, Setup};

const DENY_ENV: &str = r#"
[[rule]]
id = "no-wipe"
action = "deny"
tool = "wipe"
description = "Wiping is not allowed"

[[rule]]
id = "no-etc"
action = "deny"
resource = "file:///etc/**"
description = "System files stay private"

[[rule]]
id = "no-sampling"
action = "deny"
method = "sampling/createMessage"

[[rule]]
id = "rest"
action = "allow"
method = "**"
"#;

#[test]
fn ids_of_every_shape_come_back_as_written() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    for id in ["0", "\"\"", "\"a b\\\"c\"", "1180591620717411303424", "-7", "1.0"] {
        p.send(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"test/echo"}}"#).as_bytes());
        let raw = p.recv_raw();
        let text = String::from_utf8(raw).unwrap();
        assert!(
            text.contains(&format!("\"id\":{id}"))
                || text.contains(&format!("\"id\": {id}"))
                || id == "1.0"
                || id == "1180591620717411303424",
            "{id}: {text}"
        );
    }
    // The server saw each id exactly as the client wrote it.
    let log = p.server_log();
    assert!(log.contains(r#""id":1180591620717411303424"#));
    assert!(log.contains(r#""id":1.0"#));
}

#[test]
fn messages_are_forwarded_byte_for_byte() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let odd = "{ \"jsonrpc\" : \"2.0\",\"id\":5, \"method\":\"test/echo\",\"params\":{\"z\":1,\"a\":\"\\u00e9\\n\",\"unknown\":[1.50,{\"x\":null}]},\"vendor\":true }";
    p.send(odd.as_bytes());
    let r = p.recv();
    assert_eq!(r["id"], 5);
    assert!(p.server_log().contains(&format!("{odd}\n")), "the server received the exact bytes");
    let call = r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"safe_read","arguments":{"path":"/a/./b","b":1e2},"_meta":{"progressToken":"p"}}}"#;
    p.send(call.as_bytes());
    let r = p.recv();
    assert_eq!(
        r["result"]["received"].as_str().unwrap().trim_end(),
        call,
        "decided messages are forwarded unchanged too"
    );
}

#[test]
fn invalid_lines_get_parse_errors_and_are_never_forwarded() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let bad: Vec<&[u8]> = vec![
        b"{not json",
        b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test/echo\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test/echo\",\"params\":{\"a\":\"\xff\"}}",
        // Invalid UTF-8 in a member nothing reads.
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test/echo\",\"x-extra\":\"\xfe\"}",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"test/echo\"}{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"test/echo\"}",
    ];
    // A request whose id can be read is answered under it, whatever else is wrong with
    // it (its sender waits for that id); what has none is answered with id null.
    for (line, id) in bad.iter().zip([json!(null), json!(null), json!(1), json!(1), json!(1)]) {
        p.send(line);
        let r = p.recv();
        assert_eq!(r["error"]["code"], -32700, "{}", String::from_utf8_lossy(line));
        assert_eq!(r["id"], id, "{}", String::from_utf8_lossy(line));
    }
    // Not JSON-RPC 2.0: a parse error too, under the request's id.
    for line in [&br#"{"jsonrpc":"1.0","id":9,"method":"test/echo"}"#[..], br#"{"id":9,"method":"test/echo"}"#] {
        p.send(line);
        let r = p.recv();
        assert_eq!(r["error"]["code"], -32700, "{}", String::from_utf8_lossy(line));
        assert_eq!(r["id"], 9, "{}", String::from_utf8_lossy(line));
    }
    p.send(br#"[{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"wipe"}}]"#);
    let r = p.recv();
    assert_eq!(r["error"]["code"], -32600);
    // Still serving.
    let r = p.call(&json!({"jsonrpc":"2.0","id":11,"method":"test/echo"}));
    assert_eq!(r["id"], 11);
    let log = p.server_log();
    assert!(
        !log.contains("\"id\":1,")
            && !log.contains("\"id\":2,")
            && !log.contains("\"id\":9")
            && !log.contains("\"id\":10"),
        "{log}"
    );
}

#[test]
fn denied_tool_call_is_an_error_result_and_never_reaches_the_server() {
    let mut p = Setup::new(DENY_ENV).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":"w","method":"tools/call","params":{"name":"wipe","arguments":{}}}));
    assert_eq!(r["id"], "w");
    assert_eq!(r["result"]["isError"], true);
    let text = r["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("no-wipe") && text.contains("Wiping is not allowed"), "{text}");
    assert!(r["result"].get("resultType").is_none(), "handshake-era results keep their shape");
    assert!(!p.server_log().contains("wipe"));
    // A 2026-07-28 request gets a result its client accepts: `resultType` is required.
    let stateless = json!({"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"wipe","arguments":{},
        "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}});
    let r = p.call(&stateless);
    assert_eq!(r["result"]["isError"], true);
    assert_eq!(r["result"]["resultType"], "complete");
    let r =
        p.call(&json!({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///srv/../etc/shadow"}}));
    assert_eq!(r["error"]["code"], -32001);
    assert_eq!(r["error"]["data"]["rule"], "no-etc");
    assert!(!p.server_log().contains("shadow"));
    let r = p.call(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe_read","arguments":{}}}));
    assert_eq!(r["result"]["content"][0]["text"], "called safe_read");
    // Escapes are decoded before deciding: the name, a key and a value spelled with them
    // are the ones the server will read.
    p.send(br#"{"jsonrpc":"2.0","id":"esc","method":"tools/call","params":{"n\u0061me":"w\u0069pe","arguments":{}}}"#);
    let r = p.recv();
    assert_eq!((&r["id"], &r["result"]["isError"]), (&json!("esc"), &json!(true)), "{r}");
    p.send(br#"{"jsonrpc":"2.0","id":"esc2","method":"resources/read","params":{"\u0075ri":"file:///srv/..\/etc\/shadow"}}"#);
    let r = p.recv();
    assert_eq!((&r["id"], &r["error"]["data"]["rule"]), (&json!("esc2"), &json!("no-etc")), "{r}");
    assert!(!p.server_log().contains("shadow") && !p.server_log().contains("esc"));
    // `params` written before `method` are decided all the same.
    p.send(br#"{"params":{"name":"wipe","arguments":{}},"jsonrpc":"2.0","id":"late","method":"tools/call"}"#);
    let r = p.recv();
    assert_eq!((&r["id"], &r["result"]["isError"]), (&json!("late"), &json!(true)), "{r}");
    assert!(!p.server_log().contains("wipe"));
    // The name read as a server that trims names or ignores case would read it.
    for (id, name) in [("u", "WIPE"), ("s", " wipe"), ("n", "wipe\n"), ("z", "\u{feff}Wipe")] {
        let r = p.call(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":name,"arguments":{}}}));
        assert_eq!((&r["id"], &r["result"]["isError"]), (&json!(id), &json!(true)), "{name:?}: {r}");
    }
    assert!(!p.server_log().to_lowercase().contains("wipe"));
}

#[test]
fn decided_methods_sent_as_notifications_are_dropped_when_denied() {
    let mut p = Setup::new(DENY_ENV).start();
    p.initialize();
    p.send(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"wipe","arguments":{}}}"#);
    p.expect_silence(Duration::from_millis(300));
    let _ = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/echo"}));
    assert!(!p.server_log().contains("wipe"));
    let denied: Vec<_> = p.audit().into_iter().filter(|e| e["tool"] == "wipe").collect();
    assert_eq!(denied[0]["kind"], "notification");
    assert_eq!(denied[0]["decision"], "deny");
}

#[test]
fn ambiguous_calls_are_refused() {
    let mut p = Setup::new(DENY_ENV).start();
    p.initialize();
    let smuggled = [
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe_read","name":"wipe"}}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe_read","Name":"wipe"}}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"safe_read","arguments":{},"Arguments":{"x":1}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","Method":"tools/list","params":{"name":"wipe"}}"#,
        r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"safe_read","arguments":{"p":"/ok","p":"/etc/shadow"}}}"#,
        r#"{"jsonrpc":"2.0","id":6,"method":"test/echo","METHOD":"tools/call","params":{"name":"wipe"}}"#,
        r#"{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"safe_read","Arguments":{"path":"/etc/shadow"}}}"#,
        r#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":{"URI":"file:///etc/shadow","uri":"file:///ok"}}"#,
        // `params` before `method`: read after the envelope, as strictly.
        r#"{"jsonrpc":"2.0","id":10,"params":{"name":"safe_read","name":"wipe"},"method":"tools/call"}"#,
        r#"{"params":{"name":"safe_read","arguments":{"p":1,"P":2}},"jsonrpc":"2.0","id":11,"method":"tools/call"}"#,
        // A method that reads as a decided one in a lenient server's dispatch.
        r#"{"jsonrpc":"2.0","id":12,"method":"Tools/Call","params":{"name":"wipe","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":13,"method":"tools/call ","params":{"name":"wipe","arguments":{}}}"#,
        r#"{"jsonrpc":"2.0","id":14,"method":"RESOURCES/READ","params":{"uri":"file:///etc/shadow"}}"#,
    ];
    for line in smuggled {
        p.send(line.as_bytes());
        let r = p.recv();
        assert!(r["error"]["code"] == -32003 || r["error"]["code"] == -32600, "{line}: {r}");
        assert!(r["error"]["message"].as_str().unwrap().contains("clawai refused"), "{r}");
        // Answered for its id, so the client does not wait (serde_json reads the one id).
        let sent: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["id"], sent["id"], "{line}: {r}");
    }
    let r = p.call(&json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{}}}));
    assert_eq!(r["error"]["code"], -32602, "a tools/call without a name is refused");
    let log = p.server_log();
    assert!(!log.contains("wipe") && !log.contains("shadow") && !log.contains("\"id\":7"), "{log}");
}

#[test]
fn denied_server_requests_are_answered_to_the_server_and_never_reach_the_client() {
    let mut p = Setup::new(DENY_ENV).start();
    p.initialize();
    // The server asks for sampling with an id that collides with the client's request.
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/ask","params":{"method":"sampling/createMessage"}}));
    assert_eq!(r["id"], 1);
    let answer = &r["result"]["client_answered"];
    assert_eq!(answer["error"]["code"], -32001, "clawai answered the server: {r}");
    // An allowed server request reaches the client, which answers it.
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"method":"test/ask","params":{"method":"roots/list","params":{}}}));
    let ask = p.recv();
    assert_eq!(ask["method"], "roots/list");
    assert_eq!(ask["id"], 2, "server ids pass untouched even when they collide with client ids");
    p.send_json(&json!({"jsonrpc":"2.0","id":2,"result":{"roots":[]}}));
    let r = p.recv();
    assert_eq!(r["result"]["client_answered"]["result"]["roots"], json!([]));
}

#[test]
fn oversize_messages_are_refused_with_their_id_and_the_session_goes_on() {
    let mut p = Setup::new(ALLOW_ALL).arg("--max-message-size").arg("2000").start();
    p.initialize();
    let big = "y".repeat(5000);
    p.send(format!(r#"{{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{{"name":"safe_read","arguments":{{"data":"{big}"}}}}}}"#).as_bytes());
    let r = p.recv();
    assert_eq!(r["id"], "big");
    assert_eq!(r["error"]["code"], -32004);
    assert!(!p.server_log().contains("yyyy"));
    // A server result over the limit: the client gets an error for its request instead.
    let r = p.call(&json!({"jsonrpc":"2.0","id":3,"method":"test/big","params":{"bytes":10000}}));
    assert_eq!(r["id"], 3);
    assert_eq!(r["error"]["code"], -32004);
    let r = p.call(&json!({"jsonrpc":"2.0","id":4,"method":"test/echo"}));
    assert_eq!(r["id"], 4);
}

#[test]
fn large_results_pass_intact() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/big","params":{"bytes":8 * 1024 * 1024}}));
    assert_eq!(r["result"]["content"][0]["text"].as_str().unwrap().len(), 8 * 1024 * 1024);
}

#[cfg(target_os = "linux")]
#[test]
fn the_pipes_to_the_server_have_room_for_large_results() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/pipes"}));
    // Linux's default is 64 KiB; clawai gives its server's pipes 256 KiB.
    assert_eq!(r["result"]["stdin"], 256 * 1024, "{r}");
    assert_eq!(r["result"]["stdout"], 256 * 1024, "{r}");
}

#[test]
fn notifications_before_the_initialize_result_and_discover_first() {
    let mut p = Setup::new(ALLOW_ALL).start();
    let r = p.call(&json!({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}));
    assert_eq!(r["result"]["method"], "server/discover", "server/discover may come first");
    p.send_json(&json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}));
    let first = p.recv();
    assert_eq!(first["method"], "notifications/tools/list_changed");
    let second = p.recv();
    assert_eq!(second["id"], 1);
}

#[test]
fn annotations_from_tools_list_feed_destructive_rules() {
    let policy = "[[rule]]\nid = \"ask\"\naction = \"prompt\"\ndestructive = true\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).start();
    p.initialize();
    // A tool the server does not list counts as destructive.
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ghost","arguments":{}}}));
    assert_eq!(r["result"]["isError"], true);
    assert!(r["result"]["content"][0]["text"].as_str().unwrap().contains("approval"));
    let _ = p.call(&json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}));
    let r = p.call(&json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gentle","arguments":{}}}));
    assert_eq!(r["result"]["content"][0]["text"], "called gentle");
    let r = p.call(&json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"wipe","arguments":{}}}));
    assert_eq!(r["result"]["isError"], true);
}

#[test]
fn server_rules_see_the_server_name() {
    let policy = "[[rule]]\nid = \"gh\"\naction = \"deny\"\ntool = \"**\"\nserver = \"github\"\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).arg("--server").arg("github").start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe_read"}}));
    assert_eq!(r["result"]["isError"], true);
    let mut p = Setup::new(policy).arg("--server").arg("gitlab").start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"safe_read"}}));
    assert_eq!(r["result"]["content"][0]["text"], "called safe_read");
}

#[test]
fn audit_events_are_written_before_forwarding_and_secrets_are_redacted() {
    // The token in the arguments would be asked about (nobody here to ask): let it go.
    let policy = format!("{ALLOW_ALL}\n[guards]\nsecrets_in_arguments = \"allow\"\n");
    let mut p = Setup::new(&policy).arg("--server").arg("s1").start();
    p.initialize();
    let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
    let r = p.call(&json!({"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"safe_read","arguments":{"password":"hunter2","note":format!("token {token}"),"path":"/tmp/x"}}}));
    assert_eq!(r["id"], "c1");
    let events = p.audit();
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains("hunter2") && !text.contains(token), "{text}");
    let call = events.iter().find(|e| e["tool"] == "safe_read" && e["kind"] == "request").unwrap();
    for key in
        ["time", "session", "server", "direction", "method", "id", "tool", "arguments", "decision", "rule", "reason"]
    {
        assert!(call.get(key).is_some(), "missing {key} in {call}");
    }
    assert_eq!(call["arguments"]["path"], "/tmp/x");
    assert_eq!(call["server"], "s1");
    // A response's event is written right after the response is forwarded.
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let events = loop {
        let events = p.audit();
        if events.iter().any(|e| e["kind"] == "response" && e["id"] == "c1") || std::time::Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let response = events.iter().find(|e| e["kind"] == "response" && e["id"] == "c1").expect("the response event");
    assert_eq!(response["is_error"], false);
    assert!(response["duration_ms"].as_f64().unwrap() >= 0.0);
    assert!(response["size"].as_u64().unwrap() > 0);
    // The server received the secret unredacted: redaction is for the audit copy only.
    assert!(p.server_log().contains("hunter2"));
}

#[test]
fn audit_times_are_when_each_message_arrived() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    // Two requests in one write reach clawai in one read; the server answers the first
    // after 150 ms and the second right after it.
    p.send(
        concat!(
            r#"{"jsonrpc":"2.0","id":"slow","method":"test/slow","params":{"ms":150}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"next","method":"test/echo"}"#
        )
        .as_bytes(),
    );
    assert_eq!(p.recv()["id"], "slow");
    assert_eq!(p.recv()["id"], "next");
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    let events = loop {
        let events = p.audit();
        if events.iter().filter(|e| e["kind"] == "response").count() >= 3 || std::time::Instant::now() > deadline {
            break events;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let event = |kind: &str, id: &str| {
        events.iter().find(|e| e["kind"] == kind && e["id"] == id).unwrap_or_else(|| panic!("{kind} {id}: {events:?}"))
    };
    let time = |e: &serde_json::Value| e["time"].as_str().unwrap().parse::<jiff::Timestamp>().unwrap();
    for id in ["slow", "next"] {
        let (request, response) = (event("request", id), event("response", id));
        let waited = time(response).duration_since(time(request)).as_secs_f64() * 1000.0;
        assert!(waited >= 150.0, "{id}: the response is stamped when it arrived ({waited} ms after the request)");
        let duration = response["duration_ms"].as_f64().unwrap();
        assert!(
            duration >= 150.0 && (duration - waited).abs() < 1.0,
            "{id}: duration {duration} ms, times {waited} ms"
        );
    }
}

#[test]
fn methods_named_by_method_rules_are_decided_too() {
    let policy = "[[rule]]\nid = \"no-roots\"\naction = \"deny\"\nmethod = \"roots/list\"\n[[rule]]\nid = \"no-complete\"\naction = \"deny\"\nmethod = \"completion/*\"\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{}}));
    assert_eq!(r["error"]["code"], -32001);
    assert_eq!(r["error"]["data"]["rule"], "no-complete");
    // A server request the policy names is answered to the server.
    let r = p.call(&json!({"jsonrpc":"2.0","id":2,"method":"test/ask","params":{"method":"roots/list","params":{}}}));
    assert_eq!(r["result"]["client_answered"]["error"]["data"]["rule"], "no-roots");
    // Methods no rule names pass through.
    let r = p.call(&json!({"jsonrpc":"2.0","id":3,"method":"test/echo"}));
    assert_eq!(r["id"], 3);
    assert!(!p.server_log().contains("completion/complete"));
}

#[test]
fn requests_inside_input_required_results_are_decided() {
    // 2026-07-28 (MRTR): the server asks for sampling inside the result of the client's request.
    let mut p = Setup::new(DENY_ENV).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":"mrtr","method":"test/input-required"}));
    assert_eq!(r["id"], "mrtr");
    assert_eq!(r["error"]["code"], -32001, "{r}");
    assert_eq!(r["error"]["data"]["rule"], "no-sampling");
    assert_eq!(r["error"]["data"]["inputRequest"], "s1");
    // Allowed input requests (elicitation is not denied by this policy) pass untouched.
    let asks = json!({"e1": {"method": "elicitation/create", "params": {"message": "ok?", "requestedSchema": {"type": "object"}}}});
    let r = p.call(&json!({"jsonrpc":"2.0","id":2,"method":"test/input-required","params":{"inputRequests": asks}}));
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(r["result"]["inputRequests"]["e1"]["method"], "elicitation/create");
    // Ambiguous input requests are refused.
    let smuggled = json!({"s1": {"method": "elicitation/create", "METHOD": "sampling/createMessage"}});
    let r =
        p.call(&json!({"jsonrpc":"2.0","id":3,"method":"test/input-required","params":{"inputRequests": smuggled}}));
    assert_eq!(r["error"]["code"], -32003, "{r}");
}

#[test]
fn a_refused_server_message_leaves_nobody_waiting() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    // An ambiguous request of the server: it never reaches the client; the server is
    // answered with an error for its own id.
    for line in [
        r#"{"jsonrpc":"2.0","id":"s1","Method":"sampling/createMessage","method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{},"method":"ping"}"#,
    ] {
        let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/raw-ask","params":{"line": line}}));
        assert_eq!(r["id"], 1, "the client's own request came back, and nothing before it: {r}");
        let answer = &r["result"]["client_answered"];
        assert_eq!((&answer["id"], &answer["error"]["code"]), (&json!("s1"), &json!(-32600)), "{line}: {r}");
    }
    // A refused response: the client's request gets an error instead of waiting.
    for (n, line) in [
        r#"{"jsonrpc":"2.0","id":{id},"result":{"x":1},"result":{"x":2}}"#,
        r#"{"jsonrpc":"2.0","id":{id},"result":{"x":1},"Result":{"x":2}}"#,
        r#"{"jsonrpc":"2.0","id":{id},"result":{"x":1"#,
    ]
    .into_iter()
    .enumerate()
    {
        let r = p.call(&json!({"jsonrpc":"2.0","id":10 + n,"method":"test/raw-answer","params":{"line": line}}));
        assert_eq!((&r["id"], &r["error"]["code"]), (&json!(10 + n), &json!(-32005)), "{line}: {r}");
        assert!(r.get("result").is_none(), "{r}");
    }
    let r = p.call(&json!({"jsonrpc":"2.0","id":20,"method":"test/echo"}));
    assert_eq!(r["id"], 20, "still serving");
    // Each refusal is in the audit trail with the id it was answered for.
    let refused: Vec<serde_json::Value> = p
        .audit()
        .into_iter()
        .filter(|e| e["decision"] == "refused" && e["direction"] == "server->client")
        .map(|e| e["id"].clone())
        .collect();
    assert_eq!(refused, [json!("s1"), json!("s1"), json!(10), json!(11), json!(12)]);
}
