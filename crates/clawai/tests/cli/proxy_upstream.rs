//! `clawai proxy --upstream URL` when nothing listens at the URL: the client's first
//! request is answered at once with an error that names the cause.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::{ALLOW_ALL, clawai};

/// A local URL nothing listens at: a port the system gave out, then closed.
fn refused_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}/mcp")
}

#[test]
fn an_upstream_that_refuses_connections_fails_the_first_request_at_once_naming_the_cause() {
    let first_requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}),
    ];
    for request in first_requests {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("policy.toml"), ALLOW_ALL).unwrap();
        let url = refused_url();
        let mut child = Command::new(clawai())
            .args(["proxy", "--upstream", &url, "--policy"])
            .arg(dir.path().join("policy.toml"))
            .arg("--audit")
            .arg(dir.path().join("audit.jsonl"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("clawai starts");
        let mut stdin = child.stdin.take().unwrap();
        let (lines, rx) = std::sync::mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let _ = lines.send(line);
            }
        });
        let sent = Instant::now();
        writeln!(stdin, "{request}").unwrap();
        let answer = rx.recv_timeout(Duration::from_secs(5)).expect("an answer").unwrap();
        let took = sent.elapsed();
        let _ = child.kill();
        let _ = child.wait();
        let answer: Value = serde_json::from_str(&answer).unwrap();
        assert!(took < Duration::from_secs(2), "{} answered after {took:?}", request["method"]);
        assert_eq!(answer["id"], 1, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(&format!("connection refused to {url}")), "{message}");
    }
}
