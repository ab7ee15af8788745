//! A harness for driving `clawai proxy` in front of the scripted server.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use serde_json::Value;

pub(crate) const TIMEOUT: Duration = Duration::from_secs(20);

pub(crate) fn clawai() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_clawai"))
}

pub(crate) fn scripted_server() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/scripted/server.py")
}

pub(crate) use clawai_testkit::policies::ALLOW_ALL;

/// A running proxy with its server, and the files the test looks at.
pub(crate) struct Proxy {
    pub child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Vec<u8>>,
    pub dir: tempfile::TempDir,
}

pub(crate) struct Setup<'a> {
    pub policy: &'a str,
    pub args: Vec<String>,
    pub env: Vec<(&'a str, &'a str)>,
}

impl<'a> Setup<'a> {
    pub(crate) fn new(policy: &'a str) -> Self {
        Setup { policy, args: Vec::new(), env: Vec::new() }
    }
    pub(crate) fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_owned());
        self
    }
    pub(crate) fn env(mut self, k: &'a str, v: &'a str) -> Self {
        self.env.push((k, v));
        self
    }
    pub(crate) fn start(self) -> Proxy {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("policy.toml"), self.policy).unwrap();
        let mut cmd = Command::new(clawai());
        cmd.arg("proxy")
            .arg("--policy")
            .arg(dir.path().join("policy.toml"))
            .arg("--audit")
            .arg(dir.path().join("audit.jsonl"))
            .args(&self.args)
            .arg("--")
            .arg("python3")
            .arg(scripted_server())
            .env("SCRIPTED_LOG", dir.path().join("server.log"))
            // Each test's own pins: what one test's server lists is no other's.
            .env("CLAWAI_PINS", dir.path().join("pins"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("clawai starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut r = BufReader::new(stdout);
            loop {
                let mut line = Vec::new();
                match r.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {
                        if tx.send(line).is_err() {
                            return;
                        }
                    }
                }
            }
        });
        let stdin = child.stdin.take();
        Proxy { child, stdin, lines: rx, dir }
    }
}

impl Proxy {
    pub(crate) fn send(&mut self, line: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line).unwrap();
        if !line.ends_with(b"\n") {
            stdin.write_all(b"\n").unwrap();
        }
        stdin.flush().unwrap();
    }

    pub(crate) fn send_json(&mut self, v: &Value) {
        self.send(serde_json::to_string(v).unwrap().as_bytes());
    }

    /// The next line from the proxy, raw.
    pub(crate) fn recv_raw(&mut self) -> Vec<u8> {
        self.lines.recv_timeout(TIMEOUT).expect("a message from clawai in time")
    }

    pub(crate) fn recv(&mut self) -> Value {
        let line = self.recv_raw();
        serde_json::from_slice(&line)
            .unwrap_or_else(|e| panic!("clawai wrote invalid JSON ({e}): {}", String::from_utf8_lossy(&line)))
    }

    /// Nothing arrives within `wait`.
    pub(crate) fn expect_silence(&mut self, wait: Duration) {
        if let Ok(line) = self.lines.recv_timeout(wait) {
            panic!("unexpected message: {}", String::from_utf8_lossy(&line));
        }
    }

    /// A request and its response, skipping server notifications.
    pub(crate) fn call(&mut self, v: &Value) -> Value {
        self.send_json(v);
        loop {
            let m = self.recv();
            if m.get("id").is_some() {
                return m;
            }
        }
    }

    pub(crate) fn initialize(&mut self) {
        let r = self.call(&serde_json::json!({"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}));
        assert_eq!(r["result"]["serverInfo"]["name"], "scripted");
    }

    pub(crate) fn close_stdin(&mut self) {
        self.stdin.take();
    }

    pub(crate) fn wait(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                return s;
            }
            assert!(Instant::now() < deadline, "clawai did not exit within {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn server_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
    }

    pub(crate) fn audit(&self) -> Vec<Value> {
        clawai_testkit::trail::read(&self.dir.path().join("audit.jsonl"))
    }

    pub(crate) fn stderr(&mut self) -> String {
        let mut s = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut s);
        }
        s
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn pid_alive(pid: i32) -> bool {
    // Signal 0 only checks existence; a zombie still counts, so check /proc state too.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat.split_whitespace().nth(2).is_none_or(|s| s != "Z"),
        Err(_) => false,
    }
}
