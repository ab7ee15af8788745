//! The audit trail: JSON Lines, one event per message or decision.
//!
//! Events are collected in memory and written with a single `write` to a file opened
//! for appending. A decision must be on disk before the message it describes leaves
//! clawai: when one is pending ([`AuditLog::has_decision`]) transports flush the trail
//! before they write forwarded bytes, so the kernel has the event first and even a
//! SIGKILL of clawai loses nothing already decided. Other events (responses, messages no
//! rule decides) wait for the next write: the next decision's, a full buffer's, or the
//! one [`FLUSH_EVERY`] at the latest, and every one is written when clawai exits (a
//! SIGKILL can lose the last [`FLUSH_EVERY`] of them, never a decision). This keeps the
//! trail to one `write` per decided call instead of one per message each way.
//! When the file passes its size limit it is rotated (`audit.jsonl` →
//! `audit.jsonl.1` → … up to `keep` files).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
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
    /// The time, written as RFC 3339 UTC.
    pub time: jiff::Timestamp,
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
    pub arguments: Option<crate::redact::Redacted<'a>>,
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

/// Longest time a buffered event waits before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Buffered events are written once this many bytes wait.
const BUFFER_LIMIT: usize = 64 * 1024;

/// Where events go. Clones share one file and one buffer (every session of an HTTP
/// front writes to the same trail).
#[derive(Clone)]
pub struct AuditLog {
    sink: Arc<Mutex<Sink>>,
    /// The sink's flag, read without its lock: every message forwarded asks it.
    decision_pending: Arc<AtomicBool>,
}

struct Sink {
    pending: Vec<u8>,
    /// A decision (or refusal) is among the pending events. Set and cleared only with
    /// the sink locked; a thread that recorded a decision always sees its own setting.
    decision_pending: Arc<AtomicBool>,
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
        let decision_pending = Arc::new(AtomicBool::new(false));
        let sink = Sink {
            pending: Vec::new(),
            decision_pending: decision_pending.clone(),
            file: Some(file),
            path: path.to_owned(),
            written,
            max_bytes,
            keep,
        };
        let sink = Arc::new(Mutex::new(sink));
        spawn_flusher(Arc::downgrade(&sink))?;
        Ok(AuditLog { sink, decision_pending })
    }

    /// A log that writes nowhere (tests and benchmarks of the decision path alone).
    pub fn disabled() -> AuditLog {
        let decision_pending = Arc::new(AtomicBool::new(false));
        let sink = Sink {
            pending: Vec::new(),
            decision_pending: decision_pending.clone(),
            file: None,
            path: PathBuf::new(),
            written: 0,
            max_bytes: u64::MAX,
            keep: 0,
        };
        AuditLog { sink: Arc::new(Mutex::new(sink)), decision_pending }
    }

    /// Records a decision or a refusal. Transports write it before the message leaves
    /// (see [`AuditLog::has_decision`]).
    pub fn record_decision(&self, event: &Event) {
        self.append(event, true);
    }

    /// Records any other event (a response, a message no rule decides). It is written
    /// with the next decision, or within [`FLUSH_EVERY`], or when the log is dropped.
    pub fn record(&self, event: &Event) {
        self.append(event, false);
    }

    /// True when a decision waits to be written: the transport must flush the audit
    /// trail before it forwards anything.
    pub fn has_decision(&self) -> bool {
        self.decision_pending.load(Ordering::Acquire)
    }

    /// Errors are reported on stderr, never fatal: the guard keeps deciding even when the
    /// disk is full.
    fn append(&self, event: &Event, decision: bool) {
        let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
        if sink.file.is_none() {
            return;
        }
        let start = sink.pending.len();
        if let Err(e) = serde_json::to_writer(&mut sink.pending, event) {
            sink.pending.truncate(start);
            tracing::error!("audit event could not be encoded: {e}");
            return;
        }
        sink.pending.push(b'\n');
        if decision {
            sink.decision_pending.store(true, Ordering::Release);
        }
        if sink.pending.len() >= BUFFER_LIMIT {
            sink.write_pending();
        }
    }

    /// Writes every buffered event now.
    pub fn flush(&self) {
        self.sink.lock().unwrap_or_else(|p| p.into_inner()).write_pending();
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn spawn_flusher(sink: Weak<Mutex<Sink>>) -> io::Result<()> {
    std::thread::Builder::new().name("audit-flush".into()).spawn(move || {
        loop {
            std::thread::sleep(FLUSH_EVERY);
            let Some(sink) = sink.upgrade() else { return };
            let mut sink = sink.lock().unwrap_or_else(|p| p.into_inner());
            if !sink.pending.is_empty() {
                sink.write_pending();
            }
        }
    })?;
    Ok(())
}

impl Sink {
    /// One `write` for everything pending; the file is rotated first when it would
    /// pass its limit.
    fn write_pending(&mut self) {
        if !self.pending.is_empty() && self.file.is_some() {
            self.write_out();
        }
        // Cleared only once the write is done: a transport that sees `false` may forward.
        self.decision_pending.store(false, Ordering::Release);
    }

    fn write_out(&mut self) {
        if self.written + self.pending.len() as u64 > self.max_bytes
            && self.written > 0
            && let Err(e) = self.rotate()
        {
            tracing::error!("audit trail {} could not be rotated: {e}", self.path.display());
        }
        let pending = std::mem::take(&mut self.pending);
        match self.file.as_mut().map(|f| f.write_all(&pending)) {
            Some(Ok(())) => self.written += pending.len() as u64,
            Some(Err(e)) => tracing::error!("audit trail {} could not be written: {e}", self.path.display()),
            None => {}
        }
        // Keep the allocation for the next events.
        self.pending = pending;
        self.pending.clear();
    }

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

/// The current time (written as RFC 3339).
pub fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

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
            // As a transport does before it forwards the message.
            log.flush();
        }
        let unflushed = fs::read_to_string(&path).unwrap();
        log.record(&Event { time: now(), session: "s", kind: "response", ..Default::default() });
        assert_eq!(fs::read_to_string(&path).unwrap(), unflushed, "recorded events wait for a flush");
        log.flush();
        let text = fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(v["kind"] == "response" || v["method"] == "tools/call", "{v}");
        }
        assert!(dir.join("audit.jsonl.1").exists());
        assert!(dir.join("audit.jsonl.2").exists());
        assert!(!dir.join("audit.jsonl.3").exists());
        assert!(fs::metadata(&path).unwrap().len() <= 400);
        assert!(fs::read_to_string(&path).unwrap().contains("\"response\""), "buffered events are written on flush");
        fs::remove_dir_all(&dir).unwrap();
    }
}
