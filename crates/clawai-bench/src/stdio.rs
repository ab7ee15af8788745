//! A JSON-RPC session with a child process over its stdin and stdout, one message a line.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

/// The `initialize` request every benchmark sends (id 0, no client capabilities).
pub const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;

/// A child process spoken to over its stdin and stdout.
pub struct Session {
    /// The process.
    pub child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
    /// The last line read, with its newline.
    pub line: Vec<u8>,
}

impl Session {
    /// Spawns `command` with piped stdin and stdout (stderr as the command says, else
    /// inherited).
    pub fn spawn(mut command: Command) -> Result<Session> {
        let mut child = command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().context("spawn")?;
        let input = child.stdin.take().context("stdin")?;
        let output = BufReader::with_capacity(1 << 16, child.stdout.take().context("stdout")?);
        Ok(Session { child, input, output, line: Vec::new() })
    }

    /// Writes one message and its newline.
    pub fn send(&mut self, msg: &str) {
        self.input.write_all(msg.as_bytes()).unwrap();
        self.input.write_all(b"\n").unwrap();
        self.input.flush().unwrap();
    }

    /// Reads one line into [`Session::line`]; returns its length. Panics when the child
    /// closed its output: a benchmark cannot go on.
    pub fn recv(&mut self) -> usize {
        self.line.clear();
        let n = self.output.read_until(b'\n', &mut self.line).unwrap();
        assert!(n > 0, "server closed");
        n
    }

    /// Reads lines until the response whose id is `id` (written as JSON, e.g. `7`),
    /// skipping notifications and requests; returns the notifications' methods.
    pub fn recv_response(&mut self, id: &str) -> Vec<String> {
        let mut skipped = Vec::new();
        loop {
            self.recv();
            if response_id(&self.line).as_deref() == Some(id) {
                return skipped;
            }
            let message: serde_json::Value = serde_json::from_slice(&self.line).unwrap_or_default();
            skipped.push(message["method"].as_str().unwrap_or("?").to_string());
        }
    }

    /// Sends [`INITIALIZE`] and reads its answer.
    pub fn initialize(&mut self) {
        self.send(INITIALIZE);
        self.recv_response("0");
    }

    /// Writes `lines` (holding `count` calls) from a second thread while reading the
    /// `count` responses; returns the time from the first write to the last response.
    pub fn burst(&mut self, lines: &[u8], count: usize) -> Duration {
        let Session { input, output, line, .. } = self;
        let t = Instant::now();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                input.write_all(lines).unwrap();
                input.flush().unwrap();
            });
            for _ in 0..count {
                line.clear();
                assert!(output.read_until(b'\n', line).unwrap() > 0, "server closed");
            }
        });
        t.elapsed()
    }

    /// A `kB` figure of the child's `/proc/PID/status` (`VmRSS`, `VmHWM`, …).
    pub fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let prefix = format!("{field}:");
        status.lines().find(|l| l.starts_with(&prefix))?.split_whitespace().nth(1)?.parse().ok()
    }

    /// Closes the child's input, reads what is left of its output and waits for it to
    /// exit; returns how long that took.
    pub fn finish(mut self) -> Duration {
        let t = Instant::now();
        drop(self.input);
        let mut rest = Vec::new();
        let _ = self.output.read_to_end(&mut rest);
        let _ = self.child.wait();
        t.elapsed()
    }
}

/// The id of a response line, as JSON text (`7`, `"a"`); `None` for notifications and
/// requests. The usual shape (`{"jsonrpc":"2.0","id":ID,"result"…`) is read without
/// parsing the line: the lists measured are hundreds of KiB.
pub fn response_id(line: &[u8]) -> Option<String> {
    const PREFIX: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    if let Some(rest) = line.strip_prefix(PREFIX)
        && let Some(end) = rest.iter().position(|b| *b == b',')
    {
        let after = &rest[end + 1..];
        if after.starts_with(br#""result""#) || after.starts_with(br#""error""#) {
            return Some(String::from_utf8_lossy(&rest[..end]).into_owned());
        }
    }
    let message: serde_json::Value = serde_json::from_slice(line).ok()?;
    if message.get("method").is_some() {
        return None;
    }
    message.get("id").map(|id| id.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn response_id_reads_the_id_and_skips_notifications() {
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#).as_deref(), Some("7"));
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":"a","error":{"code":1}}"#).as_deref(), Some("\"a\""));
        assert_eq!(response_id(br#"{"result":{"id":1},"id":2,"jsonrpc":"2.0"}"#).as_deref(), Some("2"));
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","id":3,"method":"roots/list"}"#), None);
        assert_eq!(response_id(br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#), None);
    }
}
