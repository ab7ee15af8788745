//! `clawai audit tail|query` read as a person reads them, on a trail written here.

use std::path::Path;
use std::process::Command;

fn clawai_audit(trail: &Path, args: &[&str]) -> (i32, String, String) {
    let out =
        Command::new(env!("CARGO_BIN_EXE_clawai")).arg("audit").args(args).arg("--audit").arg(trail).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// A decided `tools/call` of `read_file` at `time`.
fn call(time: &str, id: u32, decision: &str, arguments: serde_json::Value, extra: serde_json::Value) -> String {
    let mut event = serde_json::json!({
        "time": time, "session": "s", "server": "fs", "direction": "client->server", "kind": "request",
        "method": "tools/call", "id": id, "tool": "read_file", "arguments": arguments, "decision": decision,
        "rule": "r", "reason": "because",
    });
    if let (Some(event), Some(extra)) = (event.as_object_mut(), extra.as_object()) {
        event.extend(extra.clone());
    }
    event.to_string()
}

fn trail(dir: &Path, lines: &[String]) -> std::path::PathBuf {
    let path = dir.join("audit.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn ago(seconds: i64) -> String {
    (jiff::Timestamp::now() - jiff::SignedDuration::from_secs(seconds)).to_string()
}

#[test]
fn readable_lines_show_the_arguments_short_and_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let t = "2026-11-24T10:00:00Z";
    let none = serde_json::json!({});
    let long = "x".repeat(500);
    let path = trail(
        dir.path(),
        &[
            call(t, 1, "deny", serde_json::json!({"path": "/home/u/.ssh/id_rsa"}), none.clone()),
            call(t, 2, "deny", serde_json::json!({"path": "/home/u/.aws/credentials"}), none.clone()),
            call(t, 3, "deny", serde_json::json!({"path": "/etc/shadow", "token": "[REDACTED]"}), none.clone()),
            call(t, 4, "allow", serde_json::json!({"path": long, "note": "a\nb\u{1b}[31m\u{202e}"}), none.clone()),
            call(t, 5, "allow", serde_json::json!({"opts": {"k": ["v\u{202e}"]}}), none.clone()),
        ],
    );
    for args in [&["query"][..], &["tail"]] {
        let (code, out, err) = clawai_audit(&path, args);
        assert_eq!(code, 0, "{err}");
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains(r#"read_file(path="/home/u/.ssh/id_rsa") -> deny"#), "{out}");
        assert!(lines[1].contains(r#"(path="/home/u/.aws/credentials")"#), "{out}");
        assert!(lines[2].contains(r#"(path="/etc/shadow", token="[REDACTED]")"#), "{out}");
        assert!(
            lines[3].contains(&format!("path=\"{}…\"", "x".repeat(60))) && !lines[3].contains(&"x".repeat(61)),
            "{out}"
        );
        assert!(lines[3].contains(r#"note="a\nb\u{1b}[31m\u{202e}""#), "{out}");
        assert!(lines[4].contains(r#"read_file(opts={"k":["v\u{202e}"]})"#), "{out}");
        assert!(!out.contains('\u{1b}') && !out.contains('\u{202e}'), "nothing a terminal acts on: {out:?}");
    }
}

#[test]
fn decision_is_checked_and_blocked_lists_every_call_that_did_not_go_through() {
    let dir = tempfile::tempdir().unwrap();
    let t = "2026-11-24T10:00:00Z";
    let none = serde_json::json!({});
    let path = trail(
        dir.path(),
        &[
            call(t, 1, "allow", serde_json::json!({"n": 1}), none.clone()),
            call(t, 2, "deny", serde_json::json!({"n": 2}), none.clone()),
            call(t, 3, "prompt", serde_json::json!({"n": 3}), none.clone()),
            call(t, 4, "prompt", serde_json::json!({"n": 4}), serde_json::json!({"approved": true})),
            call(t, 5, "audit", serde_json::json!({"n": 5}), none.clone()),
            r#"{"time":"2026-11-24T10:00:00Z","session":"s","direction":"client->server","kind":"refused","id":6,"decision":"refused","reason":"not JSON-RPC"}"#.to_owned(),
            // Asked about, then approved by the person: it went through.
            call(t, 7, "prompt", serde_json::json!({"n": 7}), serde_json::json!({"step": "asked", "channel": "client"})),
            r#"{"time":"2026-11-24T10:00:01Z","session":"s","direction":"client->server","kind":"approval","method":"tools/call","id":7,"tool":"read_file","step":"answered","channel":"client","scope":"once","approved":true}"#.to_owned(),
            // Asked about, then declined: blocked (its approval event says so).
            call(t, 8, "prompt", serde_json::json!({"n": 8}), serde_json::json!({"step": "asked", "channel": "broker"})),
            r#"{"time":"2026-11-24T10:00:01Z","session":"s","direction":"client->server","kind":"approval","method":"tools/call","id":8,"tool":"read_file","step":"timed_out","channel":"broker","approved":false}"#.to_owned(),
        ],
    );
    let (code, out, err) = clawai_audit(&path, &["query", "--decision", "denied"]);
    assert_eq!(code, 2, "{out}");
    assert!(err.contains("denied") && err.contains("allow, deny, prompt, audit, pass, refused, blocked"), "{err}");
    let (code, out, err) = clawai_audit(&path, &["query", "--decision", "blocked"]);
    assert_eq!(code, 0, "{err}");
    let ids: Vec<&str> = out.lines().filter_map(|l| l.split(" #").nth(1)?.split(' ').next()).collect();
    assert_eq!(ids, ["2", "3", "6", "8"], "{out}");
    let (_, out, _) = clawai_audit(&path, &["query", "--decision", "deny"]);
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn since_takes_how_long_ago() {
    let dir = tempfile::tempdir().unwrap();
    let none = serde_json::json!({});
    let path = trail(
        dir.path(),
        &[
            call(&ago(3 * 86_400), 1, "allow", none.clone(), none.clone()),
            call(&ago(2 * 3600), 2, "allow", none.clone(), none.clone()),
            call(&ago(20 * 60), 3, "allow", none.clone(), none.clone()),
            call(&ago(10), 4, "allow", none.clone(), none.clone()),
        ],
    );
    for (since, expected) in [("1h", 2), ("30m", 2), ("45s", 1), ("2d", 3), ("1w", 4)] {
        let (code, out, err) = clawai_audit(&path, &["query", "--since", since]);
        assert_eq!(code, 0, "{err}");
        assert_eq!(out.lines().count(), expected, "--since {since}: {out}");
    }
    let (_, out, _) = clawai_audit(&path, &["query", "--since", &ago(3 * 3600)]);
    assert_eq!(out.lines().count(), 3, "RFC 3339 still works: {out}");
    let (code, _, err) = clawai_audit(&path, &["query", "--since", "1y"]);
    assert_eq!(code, 2);
    assert!(err.contains("`1y`") && err.contains("30m"), "{err}");
}
