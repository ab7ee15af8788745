//! `clawai proxy` lifecycle: start-up refusals, shutdown, server death, signals,
//! process groups, policy reload.

use crate::support;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;
use support::{ALLOW_ALL, Setup, clawai, pid_alive, scripted_server};

#[test]
fn missing_policy_refuses_to_start_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(clawai())
        .args(["proxy", "--policy"])
        .arg(dir.path().join("nope.toml"))
        .args(["--audit"])
        .arg(dir.path().join("a.jsonl"))
        .args(["--", "python3"])
        .arg(scripted_server())
        .env("SCRIPTED_LOG", dir.path().join("server.log"))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("clawai policy init"), "{err}");
    assert!(!dir.path().join("server.log").exists(), "the server was never started");
}

#[test]
fn empty_policy_and_audit_variables_mean_the_defaults() {
    // As a client configuration may set them: `"env": {"CLAWAI_POLICY": ""}`.
    let dir = tempfile::tempdir().unwrap();
    let proxy = || {
        let mut command = Command::new(clawai());
        command
            .args(["proxy", "--", "python3"])
            .arg(scripted_server())
            .env("CLAWAI_POLICY", "")
            .env("CLAWAI_AUDIT", "")
            .env("HOME", dir.path())
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_STATE_HOME", dir.path().join("state"))
            .env("SCRIPTED_LOG", dir.path().join("server.log"));
        command
    };
    let out = proxy().output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    let default_policy = dir.path().join("config/clawai/policy.toml");
    assert!(err.contains(&format!("no policy at {}", default_policy.display())), "{err}");
    assert!(err.contains("clawai policy init"), "{err}");
    assert!(!dir.path().join("server.log").exists(), "the server was never started");

    // With a policy in the default place, the proxy starts and the trail is the default.
    std::fs::create_dir_all(dir.path().join("config/clawai")).unwrap();
    std::fs::write(&default_policy, ALLOW_ALL).unwrap();
    let out = proxy().stdin(std::process::Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(dir.path().join("state/clawai/audit.jsonl").exists());
}

#[test]
fn invalid_policy_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), "[[rule]]\naction = \"allow\"\ntol = \"*\"\n").unwrap();
    let out = Command::new(clawai())
        .args(["proxy", "--policy"])
        .arg(dir.path().join("p.toml"))
        .args(["--", "python3"])
        .arg(scripted_server())
        .env("CLAWAI_AUDIT", dir.path().join("a.jsonl"))
        .env("SCRIPTED_LOG", dir.path().join("server.log"))
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("p.toml:3") && err.contains("tol"), "{err}");
    assert!(!dir.path().join("server.log").exists());
}

#[test]
fn client_eof_ends_a_cooperative_server_quickly() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let started = Instant::now();
    p.close_stdin();
    let status = p.wait(Duration::from_secs(5));
    assert_eq!(status.code(), Some(0));
    assert!(started.elapsed() < Duration::from_secs(2), "no need to wait the grace period");
}

#[test]
fn a_stubborn_server_and_its_grandchildren_are_killed_after_the_grace_period() {
    let mut p = Setup::new(ALLOW_ALL)
        .arg("--grace")
        .arg("0.3")
        .env("SCRIPTED_IGNORE_EOF", "1")
        .env("SCRIPTED_IGNORE_TERM", "1")
        .start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/grandchild"}));
    let grandchild = r["result"]["pid"].as_i64().unwrap() as i32;
    assert!(pid_alive(grandchild));
    let started = Instant::now();
    p.close_stdin();
    p.wait(Duration::from_secs(5));
    assert!(started.elapsed() >= Duration::from_millis(500), "waited the grace period twice (EOF, then SIGTERM)");
    std::thread::sleep(Duration::from_millis(200));
    assert!(!pid_alive(grandchild), "the whole process group is gone");
}

#[test]
fn server_exit_fails_pending_requests_and_passes_on_its_code() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    p.send_json(&json!({"jsonrpc":"2.0","id":"pending","method":"test/hang"}));
    p.send_json(&json!({"jsonrpc":"2.0","id":"bye","method":"test/exit","params":{"code":7}}));
    let mut ids = vec![p.recv(), p.recv()];
    ids.sort_by_key(|m| m["id"].as_str().unwrap().to_owned());
    for m in &ids {
        assert_eq!(m["error"]["code"], -32005, "{m}");
    }
    assert_eq!(ids[0]["id"], "bye");
    assert_eq!(ids[1]["id"], "pending");
    assert_eq!(p.wait(Duration::from_secs(5)).code(), Some(7));
}

#[test]
fn sigterm_stops_the_server_and_the_proxy() {
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let r = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"test/grandchild"}));
    let grandchild = r["result"]["pid"].as_i64().unwrap() as i32;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(p.child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = p.wait(Duration::from_secs(6));
    assert_eq!(status.code(), Some(128 + 15));
    std::thread::sleep(Duration::from_millis(200));
    assert!(!pid_alive(grandchild));
}

#[test]
fn policy_edits_apply_without_restart_and_bad_edits_are_ignored() {
    let deny = "[[rule]]\nid = \"no\"\naction = \"deny\"\ntool = \"safe_read\"\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(ALLOW_ALL).start();
    p.initialize();
    let call = |p: &mut support::Proxy, id: i64| {
        p.call(&json!({"jsonrpc":"2.0","id":id,"method":"tools/call","params":{"name":"safe_read"}}))
    };
    assert_eq!(call(&mut p, 1)["result"]["content"][0]["text"], "called safe_read");
    let policy = p.dir.path().join("policy.toml");
    // Replace by rename, as editors do.
    std::fs::write(p.dir.path().join("policy.toml.tmp"), deny).unwrap();
    std::fs::rename(p.dir.path().join("policy.toml.tmp"), &policy).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut id = 2;
    loop {
        if call(&mut p, id)["result"]["isError"] == true {
            break;
        }
        assert!(Instant::now() < deadline, "the new policy never took effect");
        id += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    std::fs::write(&policy, "[[rule]]\naction = \"allow\"\ntool = \n").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(call(&mut p, 100)["result"]["isError"], true, "an invalid edit keeps the previous policy");
}

#[test]
fn sigkill_loses_no_decision() {
    let policy = "[[rule]]\nid = \"no-wipe\"\naction = \"deny\"\ntool = \"wipe\"\n[[rule]]\nid = \"rest\"\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).start();
    p.initialize();
    let denied = p.call(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wipe"}}));
    assert_eq!(denied["result"]["isError"], true);
    let allowed = p.call(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe_read"}}));
    assert_eq!(allowed["result"]["content"][0]["text"], "called safe_read");
    p.child.kill().unwrap();
    p.child.wait().unwrap();
    let events = p.audit();
    let decided: Vec<(&str, &str)> = events
        .iter()
        .filter(|e| e["method"] == "tools/call" && e["kind"] == "request")
        .map(|e| (e["tool"].as_str().unwrap(), e["decision"].as_str().unwrap()))
        .collect();
    assert_eq!(decided, vec![("wipe", "deny"), ("safe_read", "allow")]);
}

#[test]
fn audit_tail_and_query_read_what_the_proxy_wrote() {
    let policy = "[[rule]]\nid = \"no-wipe\"\naction = \"deny\"\ntool = \"wipe\"\ndescription = \"never\"\n[[rule]]\nid = \"rest\"\naction = \"allow\"\nmethod = \"**\"\n";
    let mut p = Setup::new(policy).arg("--server").arg("scripted").start();
    p.initialize();
    p.call(&json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wipe"}}));
    p.call(&json!({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"safe_read"}}));
    p.close_stdin();
    p.wait(Duration::from_secs(5));
    let audit = p.dir.path().join("audit.jsonl");
    let run = |args: &[&str]| {
        let out = Command::new(clawai()).arg("audit").args(args).arg("--audit").arg(&audit).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let denied = run(&["query", "--decision", "deny"]);
    assert_eq!(denied.lines().count(), 1, "{denied}");
    assert!(denied.contains("wipe") && denied.contains("[no-wipe]") && denied.contains("never"), "{denied}");
    let json = run(&["query", "--tool", "safe_*", "--json"]);
    let events: Vec<serde_json::Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["decision"], "allow");
    assert_eq!(events[0]["server"], "scripted");
    let last = run(&["tail", "-n", "3"]);
    assert_eq!(last.lines().count(), 3, "{last}");
    assert!(run(&["query", "--since", "2999-01-01T00:00:00Z"]).is_empty());
}

#[test]
fn audit_query_into_a_reader_that_stops_early_ends_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    // More events than a pipe holds, so the query is still printing when `head` goes.
    let dir = tempfile::tempdir().unwrap();
    let audit = dir.path().join("audit.jsonl");
    let event = r#"{"time":"2026-11-24T10:00:00Z","session":"s","direction":"client->server","kind":"request","method":"ping","id":1,"decision":"pass","size":40}"#;
    std::fs::write(&audit, format!("{event}\n").repeat(20_000)).unwrap();
    let mut child = Command::new(clawai())
        .args(["audit", "query", "--audit"])
        .arg(&audit)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).unwrap();
    assert!(first.contains("ping"), "{first}");
    // The reader is gone (dropped with the BufReader).
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success() || out.status.signal() == Some(13), "{:?}: {stderr}", out.status);
}

#[test]
fn a_slow_client_does_not_make_the_proxy_buffer_without_bound() {
    use std::io::{BufRead, BufReader, Write};
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("p.toml"), ALLOW_ALL).unwrap();
    let mut child = Command::new(clawai())
        .args(["proxy", "--policy"])
        .arg(dir.path().join("p.toml"))
        .arg("--audit")
        .arg(dir.path().join("a.jsonl"))
        .args(["--", "python3"])
        .arg(scripted_server())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // 1,000 notifications of 64 KiB (64 MiB) while the client reads nothing.
    writeln!(stdin, r#"{{"jsonrpc":"2.0","id":"flood","method":"test/flood","params":{{"count":1000}}}}"#).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let rss_kib = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1).map(|v| v.parse::<u64>().unwrap()))
        .unwrap();
    assert!(rss_kib < 32 * 1024, "the proxy holds {rss_kib} KiB while the client is not reading");
    // Everything still arrives, in order, once the client reads.
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut notifications = 0;
    let mut line = String::new();
    loop {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the response arrives");
        let m: serde_json::Value = serde_json::from_str(&line).unwrap();
        if m.get("id").is_some() {
            assert_eq!(m["result"]["flooded"], true);
            break;
        }
        notifications += 1;
    }
    assert_eq!(notifications, 1000);
    drop(stdin);
    child.wait().unwrap();
}

#[test]
fn http_transports_are_handed_to_clawai_http_and_its_absence_is_explained() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, ALLOW_ALL).unwrap();
    // The real pair: `clawai` execs `clawai-http`, which refuses a bad URL in its own words.
    let output =
        Command::new(clawai()).args(["proxy", "--upstream", "not a url", "--policy"]).arg(&policy).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("is not a URL"), "{output:?}");
    // A `clawai` without its helper says what is missing.
    let alone = dir.path().join("clawai");
    std::fs::copy(clawai(), &alone).unwrap();
    let output = Command::new(&alone)
        .args(["proxy", "--upstream", "http://127.0.0.1:9/mcp", "--policy"])
        .arg(&policy)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("clawai-http") && stderr.contains("cargo install"), "{stderr}");
}

/// A desktop client hides clawai's stderr: with a policy that does not load, clawai
/// starts no server and answers `initialize` and every request with an error that
/// carries the message (file, line, what to do), under the request's id, until the
/// client closes its input.
#[test]
fn an_invalid_policy_is_told_to_the_client_in_every_answer() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[[rule]]\naction = \"allow\"\ntol = \"x\"\n").unwrap();
    let mut child = Command::new(clawai())
        .args(["proxy", "--policy"])
        .arg(&policy)
        .args(["--audit"])
        .arg(dir.path().join("a.jsonl"))
        .args(["--", "python3"])
        .arg(scripted_server())
        .env("SCRIPTED_LOG", dir.path().join("server.log"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let initialize = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    for request in [
        initialize,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}),
    ] {
        writeln!(stdin, "{request}").unwrap();
    }
    for id in [json!("init"), json!(7)] {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["error"]["code"], -32006, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains("policy.toml:3:") && message.contains("tol"), "{message}");
    }
    drop(stdin);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(2), "the status of any start-up error");
    assert!(!dir.path().join("server.log").exists(), "the server was never started");
}

/// The same for the gateway: a configuration that does not load is told in the answer
/// to `initialize`, with the file and the key.
#[test]
fn an_invalid_gateway_configuration_is_told_to_the_client() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("gateway.json");
    std::fs::write(&config, "{\"mcpServers\": {\"a\": {\"comand\": \"x\"}}}").unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, ALLOW_ALL).unwrap();
    let mut child = Command::new(clawai())
        .args(["gateway", "--config"])
        .arg(&config)
        .args(["--policy"])
        .arg(&policy)
        .args(["--audit"])
        .arg(dir.path().join("a.jsonl"))
        .env("XDG_STATE_HOME", dir.path().join("state"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})).unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let answer: serde_json::Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["error"]["code"], -32006, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("gateway.json") && message.contains("comand"), "{message}");
    drop(stdin);
    assert_eq!(child.wait().unwrap().code(), Some(2));
}
