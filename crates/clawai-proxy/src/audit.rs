//! The audit trail: JSON Lines, one event per message or decision.
//!
//! Each event is written with a single `write` to a file opened for appending, before
//! the message it describes is forwarded; the kernel has it from then on, so even a
//! SIGKILL of clawai loses nothing already decided. When the file passes its size
//! limit it is rotated (`audit.jsonl` → `audit.jsonl.1` → … up to `keep` files).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

/// Which way a message was going.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub enum Direction {
    /// From the MCP client to the server.
    #[serde(rename = "client->server")]
    ClientToServer,
    /// From the server to the client.
    #[serde(rename = "server->client")]
    ServerToClient,
}

/// One line of the audit trail. Absent fields are left out.
#[derive(Debug, Default, Serialize)]
pub struct Event<'a> {
    /// RFC 3339 time, UTC.
    pub time: String,
    /// The proxy session (one per `clawai proxy` process).
    pub session: &'a str,
    /// The server name (`--server`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<&'a str>,
    /// Which way the message went.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub direction: Option<Direction>,
    /// `request`, `notification`, `response` or `refused`.
    pub kind: &'a str,
    /// The method (for a response: the method of its request, when known).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'a str>,
    /// The JSON-RPC id as written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a RawValue>,
    /// Tool name of a `tools/call`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool: Option<&'a str>,
    /// URI of a `resources/read`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource: Option<&'a str>,
    /// Name of a `prompts/get`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<&'a str>,
    /// The arguments, secrets redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// `allow`, `deny`, `prompt`, `audit` for decided messages; `pass` for messages no
    /// rule applies to; `refused` for messages that were not valid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision: Option<&'a str>,
    /// The deciding rule's id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'a str>,
    /// Why, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// For responses: milliseconds since the request was forwarded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// For responses: a JSON-RPC error, or a tool result with `isError: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// Size of the message in bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size: Option<usize>,
}

/// Where events go.
pub struct AuditLog {
    sink: Mutex<Sink>,
}

struct Sink {
    file: Option<File>,
    path: PathBuf,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl AuditLog {
    /// Default size before rotation.
    pub const DEFAULT_MAX_BYTES: u64 = 64 * 1024 * 1024;
    /// Default number of rotated files kept.
    pub const DEFAULT_KEEP: usize = 5;

    /// Opens (creating directories as needed) an audit file for appending.
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<AuditLog> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            fs::create_dir_all(dir)?;
        }
        let file = open_append(path)?;
        let written = file.metadata()?.len();
        Ok(AuditLog { sink: Mutex::new(Sink { file: Some(file), path: path.to_owned(), written, max_bytes, keep }) })
    }

    /// A log that writes nowhere (tests and benchmarks of the decision path alone).
    pub fn disabled() -> AuditLog {
        AuditLog {
            sink: Mutex::new(Sink { file: None, path: PathBuf::new(), written: 0, max_bytes: u64::MAX, keep: 0 }),
        }
    }

    /// Writes one event as one line. Errors are reported on stderr, never fatal: the
    /// guard keeps deciding even when the disk is full.
    pub fn record(&self, event: &Event) {
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        if sink.file.is_none() {
            return;
        }
        let mut line = match serde_json::to_vec(event) {
            Ok(l) => l,
            Err(e) => {
                tracing::error!("audit event could not be encoded: {e}");
                return;
            }
        };
        line.push(b'\n');
        if sink.written + line.len() as u64 > sink.max_bytes && sink.written > 0 {
            if let Err(e) = sink.rotate() {
                tracing::error!("audit trail {} could not be rotated: {e}", sink.path.display());
            }
        }
        let result = sink.file.as_mut().map(|f| f.write_all(&line));
        match result {
            Some(Ok(())) => sink.written += line.len() as u64,
            Some(Err(e)) => tracing::error!("audit trail {} could not be written: {e}", sink.path.display()),
            None => {}
        }
    }
}

impl Sink {
    fn rotate(&mut self) -> io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        for n in (1..self.keep).rev() {
            let from = numbered(n);
            if from.exists() {
                fs::rename(&from, numbered(n + 1))?;
            }
        }
        if self.keep > 0 {
            fs::rename(&self.path, numbered(1))?;
        } else {
            fs::remove_file(&self.path)?;
        }
        self.file = Some(open_append(&self.path)?);
        self.written = 0;
        Ok(())
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// The current time as RFC 3339.
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_lines_and_rotation_keeps_files() {
        let dir = std::env::temp_dir().join(format!("clawai-audit-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("audit.jsonl");
        let log = AuditLog::open(&path, 400, 2).unwrap();
        for _ in 0..10 {
            log.record(&Event {
                time: now(),
                session: "s",
                kind: "request",
                method: Some("tools/call"),
                ..Default::default()
            });
        }
        let text = fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["method"], "tools/call");
        }
        assert!(dir.join("audit.jsonl.1").exists());
        assert!(dir.join("audit.jsonl.2").exists());
        assert!(!dir.join("audit.jsonl.3").exists());
        assert!(fs::metadata(&path).unwrap().len() <= 400);
        fs::remove_dir_all(&dir).unwrap();
    }
}
