//! The audit trail: JSON Lines, one event per message or decision.
//!
//! Events are collected in memory and written with a single `write` to a file opened
//! for appending. A decision must be on disk before the message it describes leaves
//! clawai: transports flush the trail before they write forwarded bytes whose decision
//! is still waiting ([`AuditLog::has_decision`], or per thread
//! [`AuditLog::decisions_written`]), so the kernel has the event first and even a
//! SIGKILL of clawai loses nothing already decided. Other events (responses, messages no
//! rule decides) wait for the next write: the next decision's, a full buffer's, or the
//! one [`FLUSH_EVERY`] at the latest, and every one is written when clawai exits (a
//! SIGKILL can lose the last [`FLUSH_EVERY`] of them, never a decision). This keeps the
//! trail to one `write` per batch of decided calls instead of one per message each way.
//! When the file passes its size limit it is rotated (`audit.jsonl` →
//! `audit.jsonl.1` → … up to `keep` files); a trail that is not a regular file (a
//! device such as `/dev/null`, a FIFO) is never rotated. The file a rotation pushes out
//! is freed by the flusher thread, not on the path of the call that filled the trail.

use std::cell::{Cell, RefCell};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use clawai_protocol::words;

/// Which way a message was going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the MCP client to the server.
    ClientToServer,
    /// From the server to the client.
    ServerToClient,
}

impl Direction {
    /// As written in the trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client->server",
            Direction::ServerToClient => "server->client",
        }
    }
}

/// One line of the audit trail. Absent fields are left out. Written by
/// [`Event::write_json`] (every message writes one, so it is written by hand, not derived).
#[derive(Debug, Default)]
pub struct Event<'a> {
    /// The time, written as RFC 3339 UTC.
    pub time: jiff::Timestamp,
    /// The proxy session (one per `clawai proxy` process).
    pub session: &'a str,
    /// The server name (`--server`).
    pub server: Option<&'a str>,
    /// Which way the message went.
    pub direction: Option<Direction>,
    /// `request`, `notification`, `response` or `refused`: a fixed word, written as is.
    pub kind: &'static str,
    /// The method (for a response: the method of its request, when known).
    pub method: Option<&'a str>,
    /// The JSON-RPC id exactly as written in the message (JSON text: `7`, `"a"`).
    pub id: Option<&'a str>,
    /// Tool name of a `tools/call`.
    pub tool: Option<&'a str>,
    /// URI of a `resources/read`.
    pub resource: Option<&'a str>,
    /// Name of a `prompts/get`.
    pub prompt: Option<&'a str>,
    /// The arguments, secrets redacted.
    pub arguments: Option<crate::redact::Redacted<'a>>,
    /// `allow`, `deny`, `prompt`, `audit` for decided messages; `pass` for messages no
    /// rule applies to; `refused` for messages that were not valid. A fixed word, written
    /// as is.
    pub decision: Option<&'static str>,
    /// The deciding rule's id.
    pub rule: Option<&'a str>,
    /// Why, in words.
    pub reason: Option<std::borrow::Cow<'a, str>>,
    /// For responses: milliseconds since the request was forwarded.
    pub duration_ms: Option<f64>,
    /// For responses: a JSON-RPC error, or a tool result with `isError: true`.
    pub is_error: Option<bool>,
    /// Size of the message in bytes.
    pub size: Option<usize>,
}

impl Event<'_> {
    /// Appends the event as one JSON object (no newline).
    pub fn write_json(&self, out: &mut Vec<u8>, encoder: &mut Encoder) {
        out.extend_from_slice(b"{\"time\":\"");
        encoder.write_time(self.time, out);
        out.push(b'"');
        encoder.write_origin(self.session, self.server, out);
        if let Some(direction) = self.direction {
            // One of two fixed words: no escaping to look for.
            out.extend_from_slice(b",\"direction\":\"");
            out.extend_from_slice(direction.as_str().as_bytes());
            out.push(b'"');
        }
        word_field(out, b",\"kind\":\"", self.kind);
        str_field(out, b",\"method\":", self.method);
        if let Some(id) = self.id {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(id.as_bytes());
        }
        str_field(out, b",\"tool\":", self.tool);
        str_field(out, b",\"resource\":", self.resource);
        str_field(out, b",\"prompt\":", self.prompt);
        if let Some(arguments) = &self.arguments {
            out.extend_from_slice(b",\"arguments\":");
            arguments.write_json(out);
        }
        if let Some(decision) = self.decision {
            word_field(out, b",\"decision\":\"", decision);
        }
        str_field(out, b",\"rule\":", self.rule);
        str_field(out, b",\"reason\":", self.reason.as_deref());
        if let Some(ms) = self.duration_ms.filter(|ms| ms.is_finite()) {
            out.extend_from_slice(b",\"duration_ms\":");
            write_millis(out, ms);
        }
        if let Some(is_error) = self.is_error {
            out.extend_from_slice(if is_error { b",\"is_error\":true" } else { b",\"is_error\":false" });
        }
        if let Some(size) = self.size {
            out.extend_from_slice(b",\"size\":");
            out.extend_from_slice(itoa::Buffer::new().format(size).as_bytes());
        }
        out.push(b'}');
    }
}

/// Appends a duration in milliseconds to the microsecond (`12.345`): integer digits,
/// cheaper than the shortest float form every response would otherwise pay for.
fn write_millis(out: &mut Vec<u8>, ms: f64) {
    if !(0.0..1e12).contains(&ms) {
        out.extend_from_slice(ryu::Buffer::new().format_finite(ms).as_bytes());
        return;
    }
    let micros = (ms * 1000.0).round() as u64;
    out.extend_from_slice(itoa::Buffer::new().format(micros / 1000).as_bytes());
    let fraction = (micros % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ]);
}

/// Appends `member` (`,"name":"`), a word that needs no escaping (the fixed words of
/// `kind` and `decision`), and the closing quote.
fn word_field(out: &mut Vec<u8>, member: &[u8], word: &'static str) {
    debug_assert!(words::first_to_escape(word.as_bytes()).is_none(), "{word:?} needs escaping");
    out.extend_from_slice(member);
    out.extend_from_slice(word.as_bytes());
    out.push(b'"');
}

/// Appends `member` (`,"name":`, written whole) and the value as a JSON string, when
/// there is a value.
fn str_field(out: &mut Vec<u8>, member: &[u8], value: Option<&str>) {
    if let Some(value) = value {
        out.extend_from_slice(member);
        json_str(out, value);
    }
}

/// Appends `text` as a JSON string. Runs of bytes that need no escape are copied whole;
/// `"`, `\\` and control characters are escaped as serde_json escapes them.
pub(crate) fn json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(offset) = words::first_to_escape(&bytes[start..]) {
        let at = start + offset;
        out.extend_from_slice(&bytes[start..at]);
        let escaped: &[u8] = match bytes[at] {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            control => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(control >> 4)]);
                out.push(HEX[usize::from(control & 0xf)]);
                start = at + 1;
                continue;
            }
        };
        out.extend_from_slice(escaped);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// What a thread keeps between the events it encodes: event times are RFC 3339 UTC with
/// microseconds, the date and time of day formatted once per second; the session and
/// server members, the same in every event of a session, are escaped once.
#[derive(Debug, Default)]
pub struct Encoder {
    second: Option<i64>,
    prefix: String,
    /// The session and server the fragment below was written for.
    origin: (String, Option<String>),
    /// `,"session":"…","server":"…"`.
    origin_json: Vec<u8>,
}

impl Encoder {
    fn write_time(&mut self, time: jiff::Timestamp, out: &mut Vec<u8>) {
        let second = time.as_second();
        let micros = time.subsec_microsecond();
        if second < 0 || micros < 0 {
            // Before 1970: not worth a fast path.
            out.extend_from_slice(time.to_string().as_bytes());
            return;
        }
        if self.second != Some(second) {
            self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            self.second = Some(second);
        }
        out.extend_from_slice(self.prefix.as_bytes());
        let mut fraction = *b".000000Z";
        let mut rest = micros as u32;
        for digit in fraction[1..7].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        out.extend_from_slice(&fraction);
    }

    fn write_origin(&mut self, session: &str, server: Option<&str>, out: &mut Vec<u8>) {
        if self.origin.0 != session || self.origin.1.as_deref() != server || self.origin_json.is_empty() {
            self.origin = (session.to_owned(), server.map(str::to_owned));
            self.origin_json.clear();
            self.origin_json.extend_from_slice(b",\"session\":");
            json_str(&mut self.origin_json, session);
            str_field(&mut self.origin_json, b",\"server\":", server);
        }
        out.extend_from_slice(&self.origin_json);
    }
}

/// Longest time a buffered event waits before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Buffered events are written once this many bytes wait: more than the events of the
/// calls one read can bring (a 64 KiB read of small calls records about 150 KiB of
/// events), so that a burst is written in one piece before it is forwarded.
const BUFFER_LIMIT: usize = 256 * 1024;

/// A thread's encoding buffer is kept for the next event unless one event (huge
/// arguments) grew it past this.
const KEEP_SCRATCH: usize = 64 * 1024;

/// [`AuditLog::record_all`] hands its events over in pieces of about this size, well
/// under [`KEEP_SCRATCH`].
const BATCH_BYTES: usize = 16 * 1024;

/// Where events go. Clones share one file and one buffer (every session of an HTTP
/// front writes to the same trail).
#[derive(Clone)]
pub struct AuditLog {
    shared: Arc<Shared>,
    /// False for [`AuditLog::disabled`]: nothing is encoded.
    enabled: bool,
}

/// Every decision recorded in any log gets the next number, so that a transport can ask
/// whether the decisions *it* recorded are on disk ([`AuditLog::decisions_written`])
/// without waiting for the other direction's.
static DECISION_NUMBERS: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The number of the last decision this thread recorded (0: none).
    static LAST_DECISION: Cell<u64> = const { Cell::new(0) };
}

/// What the clones of a log share. Events are appended to `waiting` under its own lock,
/// and written under `output`'s: the thread writing to the file holds only that one, so
/// the other direction's thread records its events meanwhile instead of waiting for the
/// disk.
struct Shared {
    waiting: Mutex<Waiting>,
    output: Mutex<Output>,
    /// The number of the last decision recorded in this log.
    recorded: AtomicU64,
    /// Every decision of this log numbered up to this one is on disk (or failed to be
    /// written, which was reported).
    written: AtomicU64,
}

/// Events recorded and not yet handed to the file.
struct Waiting {
    events: Vec<u8>,
    /// The number of the last decision among them, or of an earlier one.
    last_decision: u64,
}

/// The file and what rotation needs to know.
struct Output {
    file: Option<File>,
    path: PathBuf,
    written: u64,
    max_bytes: u64,
    keep: usize,
    /// The buffer being written; swapped with [`Waiting::events`] so that both keep
    /// their allocations.
    spare: Vec<u8>,
    /// Disk space is reserved for the file up to this offset (see [`RESERVE_AHEAD`]);
    /// `None` once reserving failed or for a trail that is not a regular file.
    reserved: Option<u64>,
    /// Files a rotation displaced, held open so that the kernel frees them when they are
    /// closed, off the writing thread ([`Shared::close_retired`]): the last link to a
    /// file going away while nobody has it open makes the renaming thread drop its page
    /// cache and free its blocks there and then, several milliseconds for a 64 MiB
    /// file, on the path of the decided call that happened to fill the trail.
    retired: Vec<File>,
}

/// A regular trail file gets its disk blocks reserved this far ahead of its end
/// (`fallocate` keeping the size, so readers see only what was written). On ext4 an
/// append into blocks reserved this way costs a fifth less CPU than one that makes the
/// file system reserve them as it goes (0.16 → 0.13 µs per 560-byte event in the
/// 130 KiB writes of a pipelined burst, on the benchmark machine), and the trail is
/// written on the path of every decided call. What is left unused at the end of a file
/// when clawai exits or rotates it stays allocated (at most this much per file) until
/// the file is deleted.
const RESERVE_AHEAD: u64 = 1024 * 1024;

/// Displaced files held open for the flusher to close (see [`Output::retired`]).
const MAX_RETIRED: usize = 4;

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
        let metadata = file.metadata()?;
        // Only a regular file rotates: renaming `/dev/null`, a FIFO read by a collector
        // or `/dev/stderr` away and creating a file in its place would break the system
        // or the reader, and none of them grows.
        let max_bytes = if metadata.is_file() { max_bytes } else { u64::MAX };
        let written = metadata.len();
        let reserved = metadata.is_file().then_some(written);
        let output = Output {
            file: Some(file),
            path: path.to_owned(),
            written,
            max_bytes,
            keep,
            spare: Vec::new(),
            reserved,
            retired: Vec::new(),
        };
        let shared = Arc::new(Shared::new(output));
        spawn_flusher(Arc::downgrade(&shared))?;
        Ok(AuditLog { shared, enabled: true })
    }

    /// A log that writes nowhere (tests and benchmarks of the decision path alone).
    pub fn disabled() -> AuditLog {
        let output = Output {
            file: None,
            path: PathBuf::new(),
            written: 0,
            max_bytes: u64::MAX,
            keep: 0,
            spare: Vec::new(),
            reserved: None,
            retired: Vec::new(),
        };
        AuditLog { shared: Arc::new(Shared::new(output)), enabled: false }
    }

    /// Records a decision or a refusal. Transports write it before the message leaves
    /// (see [`AuditLog::has_decision`] and [`AuditLog::decisions_written`]).
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
        self.shared.recorded.load(Ordering::Acquire) > self.shared.written.load(Ordering::Acquire)
    }

    /// The number of the last decision the calling thread recorded, in any log (0:
    /// none). A transport that queues a message on the thread that decided it keeps the
    /// highest such number of what it queued, and writes the trail before sending
    /// unless [`AuditLog::decisions_written`] says that is done.
    pub fn last_decision_of_this_thread() -> u64 {
        LAST_DECISION.get()
    }

    /// True when every decision of this log numbered up to `number` is on disk.
    /// (A number from another log can only make this false, never wrongly true.)
    pub fn decisions_written(&self, number: u64) -> bool {
        !self.enabled || self.shared.written.load(Ordering::Acquire) >= number
    }

    /// Records events that decide nothing (the responses a relay thread forwarded since
    /// its last flush), taking the shared buffer's lock once per [`BATCH_BYTES`] of
    /// them instead of once per event: the other direction's thread takes that lock for
    /// every decision, and each hand-over moves the lock between cores.
    pub fn record_all<'e>(&self, events: impl IntoIterator<Item = Event<'e>>) {
        if !self.enabled {
            // `append_with` would take none of them, and the loop below would not end.
            return;
        }
        let mut events = events.into_iter().peekable();
        while events.peek().is_some() {
            self.append_with(false, |line, encoder| {
                for event in events.by_ref() {
                    event.write_json(line, encoder);
                    line.push(b'\n');
                    if line.len() >= BATCH_BYTES {
                        break;
                    }
                }
            });
        }
    }

    fn append(&self, event: &Event, decision: bool) {
        self.append_with(decision, |line, encoder| {
            event.write_json(line, encoder);
            line.push(b'\n');
        });
    }

    /// Adds the lines `encode` writes to the shared buffer. Errors are reported on
    /// stderr, never fatal: the guard keeps deciding even when the disk is full.
    fn append_with(&self, decision: bool, encode: impl FnOnce(&mut Vec<u8>, &mut Encoder)) {
        if !self.enabled {
            return;
        }
        thread_local! {
            /// Each thread encodes its events here, so that the shared buffer is locked
            /// only to copy the finished bytes: the two relay threads of a stdio proxy
            /// (and the tasks of an HTTP front) record at the same time.
            static SCRATCH: RefCell<(Vec<u8>, Encoder)> = RefCell::default();
        }
        let full = SCRATCH.with_borrow_mut(|(line, encoder)| {
            line.clear();
            encode(line, encoder);
            let full = {
                let mut waiting = self.shared.waiting.lock().unwrap_or_else(|p| p.into_inner());
                waiting.events.extend_from_slice(line);
                if decision {
                    // Numbered under the lock: numbers rise in the order events are written.
                    let number = DECISION_NUMBERS.fetch_add(1, Ordering::Relaxed);
                    waiting.last_decision = number;
                    self.shared.recorded.store(number, Ordering::Release);
                    LAST_DECISION.set(number);
                }
                waiting.events.len() >= BUFFER_LIMIT
            };
            if line.capacity() > KEEP_SCRATCH {
                *line = Vec::new();
            }
            full
        });
        if full {
            self.flush();
        }
    }

    /// Writes every buffered event now.
    pub fn flush(&self) {
        self.shared.write_waiting();
    }
}

impl Drop for AuditLog {
    fn drop(&mut self) {
        self.flush();
    }
}

fn spawn_flusher(shared: Weak<Shared>) -> io::Result<()> {
    std::thread::Builder::new().name("audit-flush".into()).spawn(move || {
        loop {
            std::thread::sleep(FLUSH_EVERY);
            let Some(shared) = shared.upgrade() else { return };
            shared.write_waiting();
            shared.close_retired();
        }
    })?;
    Ok(())
}

impl Shared {
    fn new(output: Output) -> Shared {
        Shared {
            waiting: Mutex::new(Waiting { events: Vec::new(), last_decision: 0 }),
            output: Mutex::new(output),
            recorded: AtomicU64::new(0),
            written: AtomicU64::new(0),
        }
    }

    /// One `write` for every event waiting; the file is rotated first when it would
    /// pass its limit. Writers take turns (the output lock), so whoever returns from
    /// here knows that every event recorded before it was called is on disk: either it
    /// took them itself, or a writer before it took them and finished.
    fn write_waiting(&self) {
        let mut output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        let output = &mut *output;
        let through = {
            let mut waiting = self.waiting.lock().unwrap_or_else(|p| p.into_inner());
            if waiting.events.is_empty() {
                return;
            }
            std::mem::swap(&mut waiting.events, &mut output.spare);
            waiting.last_decision
        };
        if output.file.is_some() {
            output.write_out();
        }
        output.spare.clear();
        // Raised only once the write is done: a transport that sees it may forward.
        self.written.fetch_max(through, Ordering::Release);
    }

    /// Closes the files rotations displaced (see [`Output::retired`]), outside the
    /// output lock: freeing them takes a while, and nobody waits for it.
    fn close_retired(&self) {
        let retired = std::mem::take(&mut self.output.lock().unwrap_or_else(|p| p.into_inner()).retired);
        drop(retired);
    }
}

impl Output {
    fn write_out(&mut self) {
        if self.written + self.spare.len() as u64 > self.max_bytes
            && self.written > 0
            && let Err(e) = self.rotate()
        {
            tracing::error!("audit trail {} could not be rotated: {e}", self.path.display());
        }
        self.reserve_for(self.spare.len() as u64);
        match self.file.as_mut().map(|f| f.write_all(&self.spare)) {
            Some(Ok(())) => self.written += self.spare.len() as u64,
            Some(Err(e)) => tracing::error!("audit trail {} could not be written: {e}", self.path.display()),
            None => {}
        }
    }

    fn rotate(&mut self) -> io::Result<()> {
        let numbered = |n: usize| PathBuf::from(format!("{}.{n}", self.path.display()));
        // Rotations faster than the flusher closes their files (a tiny size limit) close
        // them here instead of holding descriptors without bound.
        if self.retired.len() >= MAX_RETIRED {
            self.retired.clear();
        }
        // The oldest file is about to lose its last name: held open until the flusher
        // closes it. (With `keep` 0 that is the current file, retired below.)
        if self.keep > 0 {
            self.retired.extend(File::open(numbered(self.keep)).ok());
        }
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
        let previous = self.file.replace(open_append(&self.path)?);
        if self.keep == 0 {
            self.retired.extend(previous);
        }
        self.written = 0;
        self.reserved = self.reserved.map(|_| 0);
        Ok(())
    }

    /// Makes sure blocks are reserved for the next `length` bytes, reserving
    /// [`RESERVE_AHEAD`] more when they are not. Only an optimisation: a file system
    /// that cannot reserve (or a full disk, which the write then reports) stops it.
    fn reserve_for(&mut self, length: u64) {
        #[cfg(target_os = "linux")]
        if let (Some(reserved), Some(file)) = (self.reserved, self.file.as_ref())
            && self.written + length > reserved
        {
            use nix::fcntl::{FallocateFlags, fallocate};
            // From the file's real end: other clawai processes may append to the same
            // trail, past what this one counted.
            let end = file.metadata().map_or(self.written, |m| m.len().max(self.written));
            let (from, ahead) = (end, length.max(RESERVE_AHEAD));
            let reserved = i64::try_from(from)
                .ok()
                .zip(i64::try_from(ahead).ok())
                .and_then(|(from, ahead)| fallocate(file, FallocateFlags::FALLOC_FL_KEEP_SIZE, from, ahead).ok());
            self.reserved = reserved.map(|()| from + ahead);
        }
    }
}

fn open_append(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

/// When something happened, from one clock read: the wall-clock time an event records
/// and the monotonic instant a duration is measured from.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    /// Wall-clock time.
    pub wall: jiff::Timestamp,
    /// The same moment on the monotonic clock.
    pub instant: Instant,
}

/// How long a thread derives wall-clock times from the monotonic clock before it reads
/// the system clock again. Within it a time can be off by the clock's slew (at most
/// 0.5 ms a second under NTP); a step of the system clock shows within this period.
const ANCHOR_FOR: Duration = Duration::from_secs(1);

/// The current [`Stamp`]. Every message needs both a wall time (its event) and an
/// instant (the duration of its request); reading one clock instead of two per message
/// matters because a clock read is a sizeable share of a decision in a VM.
pub fn stamp() -> Stamp {
    thread_local! {
        static ANCHOR: Cell<Option<(Instant, jiff::Timestamp)>> = const { Cell::new(None) };
    }
    let instant = Instant::now();
    ANCHOR.with(|anchor| {
        let (at, wall) = match anchor.get() {
            Some((at, wall)) if instant.saturating_duration_since(at) < ANCHOR_FOR => (at, wall),
            _ => {
                let fresh = (instant, jiff::Timestamp::now());
                anchor.set(Some(fresh));
                fresh
            }
        };
        let since = instant.saturating_duration_since(at);
        Stamp { wall: wall.checked_add(since).unwrap_or(wall), instant }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use serde_json::value::RawValue;

    #[test]
    fn stamps_follow_the_system_clock_and_the_monotonic_one() {
        let close = |a: jiff::Timestamp, b: jiff::Timestamp| a.duration_since(b).abs().as_millis() < 50;
        let first = stamp();
        assert!(close(first.wall, jiff::Timestamp::now()), "derived from an anchor read this second");
        std::thread::sleep(Duration::from_millis(20));
        let second = stamp();
        let wall_step = second.wall.duration_since(first.wall).as_micros() as i64;
        let mono_step = second.instant.duration_since(first.instant).as_micros() as i64;
        assert!(wall_step >= 20_000 && mono_step >= 20_000, "{wall_step} µs, {mono_step} µs");
        assert!(close(second.wall, jiff::Timestamp::now()));
    }

    #[test]
    fn durations_are_written_to_the_microsecond() {
        for (ms, text) in [
            (0.0, "0.000"),
            (0.0123456, "0.012"),
            (0.0125, "0.013"),
            (1.25, "1.250"),
            (999.9996, "1000.000"),
            (86_400_000.5, "86400000.500"),
            (-1.5, "-1.5"),
            (2e12, "2000000000000.0"),
        ] {
            let mut out = Vec::new();
            write_millis(&mut out, ms);
            assert_eq!(String::from_utf8(out).unwrap(), text, "{ms}");
            let parsed: f64 = serde_json::from_str(text).unwrap();
            assert!((parsed - ms).abs() <= 0.0005 + ms.abs() * 1e-12, "{ms} read back as {parsed}");
        }
    }

    #[test]
    fn one_encoder_writes_each_events_own_session_and_server() {
        let mut encoder = Encoder::default();
        // The first event of a thread may well have the encoder's empty starting values.
        let cases = [
            ("", None),
            ("s-1", Some("a")),
            ("s-1", Some("a")),
            ("s-1", None),
            ("s-1", Some("b\"")),
            ("s-2", Some("b\"")),
            ("", None),
            ("s-2", Some("")),
        ];
        for (session, server) in cases {
            let mut out = Vec::new();
            Event { session, server, kind: "request", ..Default::default() }.write_json(&mut out, &mut encoder);
            let v: Value = serde_json::from_slice(&out).unwrap();
            assert_eq!(v["session"], session);
            assert_eq!(v.get("server").and_then(Value::as_str), server);
        }
    }

    #[test]
    fn events_are_json_with_every_field_escaped() {
        let id = RawValue::from_string("\"a\\\"b\"".into()).unwrap();
        let arguments = serde_json::json!({"path": "/tmp/x", "token": "ghp_abcdefghijklmnopqrstuvwxyz0123"});
        let time: jiff::Timestamp = "2026-11-22T10:00:01.000042987Z".parse().unwrap();
        let event = Event {
            time,
            session: "s-1",
            server: Some("fs \"quoted\""),
            direction: Some(Direction::ClientToServer),
            kind: "request",
            method: Some("tools/call"),
            id: Some(id.get()),
            tool: Some("read\nfile\u{7}"),
            resource: None,
            prompt: None,
            arguments: Some(crate::redact::Redacted(&clawai_protocol::Json::from(&arguments))),
            decision: Some("deny"),
            rule: Some("r\\1"),
            reason: Some("rule `r`: ünïcode ✓".into()),
            duration_ms: Some(1.25),
            is_error: Some(false),
            size: Some(123),
        };
        let mut out = Vec::new();
        event.write_json(&mut out, &mut Encoder::default());
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["time"], "2026-11-22T10:00:01.000042Z");
        assert_eq!(v["session"], "s-1");
        assert_eq!(v["server"], "fs \"quoted\"");
        assert_eq!(v["direction"], "client->server");
        assert_eq!(v["kind"], "request");
        assert_eq!(v["method"], "tools/call");
        assert_eq!(v["id"], "a\"b");
        assert_eq!(v["tool"], "read\nfile\u{7}");
        assert!(v.get("resource").is_none() && v.get("prompt").is_none());
        assert_eq!(v["arguments"], serde_json::json!({"path": "/tmp/x", "token": "[REDACTED]"}));
        assert_eq!(v["decision"], "deny");
        assert_eq!(v["rule"], "r\\1");
        assert_eq!(v["reason"], "rule `r`: ünïcode ✓");
        assert_eq!(v["duration_ms"], 1.25);
        assert_eq!(v["is_error"], false);
        assert_eq!(v["size"], 123);
        // The cached date is reused within the second and replaced after it.
        let mut encoder = Encoder::default();
        let mut times = Vec::new();
        for t in ["2026-11-22T10:00:01.5Z", "2026-11-22T10:00:01.999999Z", "2026-11-22T10:00:02Z"] {
            let mut out = Vec::new();
            Event { time: t.parse().unwrap(), ..Default::default() }.write_json(&mut out, &mut encoder);
            let v: Value = serde_json::from_slice(&out).unwrap();
            times.push(v["time"].as_str().unwrap().to_owned());
        }
        assert_eq!(
            times,
            ["2026-11-22T10:00:01.500000Z", "2026-11-22T10:00:01.999999Z", "2026-11-22T10:00:02.000000Z"]
        );
    }

    #[test]
    fn a_decision_is_on_disk_once_its_thread_is_told_so() {
        // Two threads record decisions and flush concurrently, as the two relay threads
        // of a stdio proxy do: one may take the other's event into its own write, and
        // the other must then not go on before that write is done.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, u64::MAX, 0).unwrap();
        let other = AuditLog::disabled();
        std::thread::scope(|scope| {
            for thread in ["a", "b"] {
                let (log, other, path) = (&log, &other, &path);
                scope.spawn(move || {
                    for i in 0..2000 {
                        let id = format!("\"{thread}{i}\"");
                        // The event lands after whatever the file holds now.
                        let before = fs::metadata(path).unwrap().len();
                        let event = Event { session: "s", kind: "request", id: Some(&id), ..Default::default() };
                        log.record_decision(&event);
                        // Responses in between, as the other direction records them.
                        log.record(&Event { session: "s", kind: "response", ..Default::default() });
                        other.record_decision(&event);
                        let mark = AuditLog::last_decision_of_this_thread();
                        assert!(mark > 0);
                        if !log.decisions_written(mark) {
                            log.flush();
                        }
                        assert!(log.decisions_written(mark));
                        let mut file = File::open(path).unwrap();
                        io::Seek::seek(&mut file, io::SeekFrom::Start(before)).unwrap();
                        let mut text = String::new();
                        io::Read::read_to_string(&mut file, &mut text).unwrap();
                        assert!(text.contains(&format!("\"id\":{id}")), "decision {id} is not on disk");
                    }
                });
            }
        });
        assert!(!log.has_decision());
        // A decision another thread recorded is not this thread's to wait for, but
        // `has_decision` sees it.
        let mark = AuditLog::last_decision_of_this_thread();
        std::thread::scope(|scope| {
            scope.spawn(|| log.record_decision(&Event { session: "s", kind: "request", ..Default::default() }));
        });
        assert!(log.decisions_written(mark));
        assert!(log.has_decision());
        log.flush();
        assert!(!log.has_decision());
        assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 8001);
    }

    #[test]
    fn events_are_lines_and_rotation_keeps_files() {
        let dir = std::env::temp_dir().join(format!("clawai-audit-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let path = dir.join("audit.jsonl");
        let log = AuditLog::open(&path, 400, 2).unwrap();
        for _ in 0..10 {
            log.record(&Event {
                time: stamp().wall,
                session: "s",
                kind: "request",
                method: Some("tools/call"),
                ..Default::default()
            });
            // As a transport does before it forwards the message.
            log.flush();
        }
        let unflushed = fs::read_to_string(&path).unwrap();
        log.record(&Event { time: stamp().wall, session: "s", kind: "response", ..Default::default() });
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

    #[test]
    fn events_recorded_together_are_written_whole_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let log = AuditLog::open(&path, AuditLog::DEFAULT_MAX_BYTES, 1).unwrap();
        // Far more than one piece of `BATCH_BYTES`, so that several hand-overs happen.
        let ids: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
        let events =
            || ids.iter().map(|id| Event { session: "s", kind: "response", id: Some(id), ..Default::default() });
        assert!(events().map(|e| e.id.unwrap().len() + 100).sum::<usize>() > 4 * BATCH_BYTES);
        log.record_all(events());
        log.flush();
        let written: Vec<String> = fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].to_string())
            .collect();
        assert_eq!(written, ids);
        // A disabled log takes them and writes nothing (and returns).
        AuditLog::disabled().record_all(events());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn space_is_reserved_ahead_and_readers_see_only_events() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        fs::write(&path, "{\"earlier\":true}\n").unwrap();
        let log = AuditLog::open(&path, AuditLog::DEFAULT_MAX_BYTES, 1).unwrap();
        for _ in 0..3 {
            log.record_decision(&Event { session: "s", kind: "request", ..Default::default() });
            log.flush();
        }
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 4, "{text:?}");
        assert!(text.starts_with("{\"earlier\":true}\n") && text.ends_with("}\n") && !text.contains('\0'));
        for line in text.lines() {
            serde_json::from_str::<Value>(line).unwrap();
        }
        let metadata = fs::metadata(&path).unwrap();
        assert_eq!(metadata.len(), text.len() as u64, "the reservation must not show as content");
        let probe = File::create(dir.path().join("probe")).unwrap();
        let reserving_works =
            nix::fcntl::fallocate(&probe, nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE, 0, 4096).is_ok();
        if reserving_works {
            assert!(metadata.blocks() * 512 >= RESERVE_AHEAD, "{} bytes allocated", metadata.blocks() * 512);
        }
    }

    /// The file a rotation pushes out is freed when the flusher closes it, not by the
    /// rename on the writing thread: that thread must still hold it, unlinked, after the
    /// rotation, and must not once the flusher has run.
    #[cfg(unix)]
    #[test]
    fn the_file_a_rotation_displaces_is_closed_off_the_writing_thread() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        for keep in [0, 1, 3] {
            let log = AuditLog::open(&path, 400, keep).unwrap();
            let oldest = if keep == 0 { path.clone() } else { dir.path().join(format!("audit.jsonl.{keep}")) };
            let mut displaced = None;
            for _ in 0..40 {
                let before = fs::metadata(&oldest).ok().map(|m| m.ino());
                log.record(&Event { time: stamp().wall, session: "s", kind: "request", ..Default::default() });
                log.flush();
                let retired = &log.shared.output.lock().unwrap().retired;
                if let (Some(inode), Some(file)) = (before, retired.last()) {
                    let held = file.metadata().unwrap();
                    if held.ino() == inode {
                        assert_eq!(held.nlink(), 0, "keep {keep}: the displaced file still has a name");
                        displaced = Some(inode);
                        break;
                    }
                }
            }
            assert!(displaced.is_some(), "keep {keep}: no rotation left its displaced file open");
            log.shared.close_retired();
            assert!(log.shared.output.lock().unwrap().retired.is_empty());
            drop(log);
            for entry in fs::read_dir(dir.path()).unwrap() {
                fs::remove_file(entry.unwrap().path()).unwrap();
            }
        }
    }

    /// Rotations faster than the flusher runs hold a few files open, never more.
    #[test]
    fn rotations_hold_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let log = AuditLog::open(&dir.path().join("audit.jsonl"), 100, 1).unwrap();
        for _ in 0..200 {
            log.record(&Event { time: stamp().wall, session: "s", kind: "request", ..Default::default() });
            log.flush();
            assert!(log.shared.output.lock().unwrap().retired.len() <= MAX_RETIRED);
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_trail_that_is_not_a_regular_file_is_never_rotated() {
        let dir = tempfile::tempdir().unwrap();
        // A link to the device, so that a rotation, if one happened, would rename the
        // link and leave a regular file in its place, never touch `/dev/null` itself.
        let path = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink("/dev/null", &path).unwrap();
        let log = AuditLog::open(&path, 100, 2).unwrap();
        for _ in 0..10 {
            log.record_decision(&Event {
                session: "s",
                kind: "request",
                method: Some("tools/call"),
                ..Default::default()
            });
            log.flush();
        }
        assert!(fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the trail's path was replaced");
        assert!(!dir.path().join("audit.jsonl.1").exists(), "a device was rotated");
    }
}
