//! The trail's file: events buffered in memory and written with one `write`, decisions
//! before the messages they let through, rotation by size, a flusher thread.

use std::cell::{Cell, RefCell};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::chain::Chain;
use super::event::{Encoder, Event};

/// Longest time a buffered event waits before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(200);

/// Buffered events are written once this many bytes wait: more than the events of the
/// calls one read can bring (a 64 KiB read of small calls records about 150 KiB of
/// events), so that a burst is written in one piece before it is forwarded.
pub(super) const BUFFER_LIMIT: usize = 256 * 1024;

/// A thread's encoding buffer is kept for the next event unless one event (huge
/// arguments) grew it past this.
pub(super) const KEEP_SCRATCH: usize = 64 * 1024;

/// [`AuditLog::record_all`] hands its events over in pieces of about this size, well
/// under [`KEEP_SCRATCH`].
pub(super) const BATCH_BYTES: usize = 16 * 1024;

/// Where events go. Clones share one file and one buffer (every session of an HTTP
/// front writes to the same trail).
#[derive(Clone)]
pub struct AuditLog {
    pub(super) shared: Arc<Shared>,
    /// False for [`AuditLog::disabled`]: nothing is encoded.
    enabled: bool,
    /// Sees every event recorded ([`AuditLog::with_observer`]); `None` costs one branch.
    pub(super) observer: Option<Arc<dyn super::AuditObserver>>,
    /// True for [`AuditLog::refusals_only`]: other events are not recorded.
    only_refusals: bool,
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
pub(super) struct Shared {
    waiting: Mutex<Waiting>,
    pub(super) output: Mutex<Output>,
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
pub(super) struct Output {
    file: Option<File>,
    path: PathBuf,
    written: u64,
    max_bytes: u64,
    keep: usize,
    /// The buffer being written; swapped with [`Waiting::events`] so that both keep
    /// their allocations.
    spare: Vec<u8>,
    /// This process's chain of lines ([`super::chain`]).
    pub(super) chain: Chain,
    /// `spare` with the chain's members added: what is written.
    sealed: Vec<u8>,
    /// Disk space is reserved for the file up to this offset (see [`RESERVE_AHEAD`]);
    /// `None` once reserving failed or for a trail that is not a regular file.
    reserved: Option<u64>,
    /// Files a rotation displaced, held open so that the kernel frees them when they are
    /// closed, off the writing thread ([`Shared::close_retired`]): the last link to a
    /// file going away while nobody has it open makes the renaming thread drop its page
    /// cache and free its blocks there and then, several milliseconds for a 64 MiB
    /// file, on the path of the decided call that happened to fill the trail.
    pub(super) retired: Vec<File>,
}

/// A regular trail file gets its disk blocks reserved this far ahead of its end
/// (`fallocate` keeping the size, so readers see only what was written). On ext4 an
/// append into blocks reserved this way costs a fifth less CPU than one that makes the
/// file system reserve them as it goes (0.16 → 0.13 µs per 560-byte event in the
/// 130 KiB writes of a pipelined burst, on the benchmark machine), and the trail is
/// written on the path of every decided call. What is left unused at the end of a file
/// when clawai exits or rotates it stays allocated (at most this much per file) until
/// the file is deleted.
pub(super) const RESERVE_AHEAD: u64 = 1024 * 1024;

/// Displaced files held open for the flusher to close (see [`Output::retired`]).
pub(super) const MAX_RETIRED: usize = 4;

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
            chain: Chain::new(),
            sealed: Vec::new(),
            reserved,
            retired: Vec::new(),
        };
        let shared = Arc::new(Shared::new(output));
        spawn_flusher(Arc::downgrade(&shared))?;
        Ok(AuditLog { shared, enabled: true, observer: None, only_refusals: false })
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
            chain: Chain::new(),
            sealed: Vec::new(),
            reserved: None,
            retired: Vec::new(),
        };
        AuditLog { shared: Arc::new(Shared::new(output)), enabled: false, observer: None, only_refusals: false }
    }

    /// The same trail, recording only refusals (messages refused before any rule was
    /// asked): for a front whose messages a guard behind it decides and records (the
    /// gateway's HTTP front), so that what the front alone refuses is in the trail and
    /// nothing is recorded twice.
    pub fn refusals_only(&self) -> AuditLog {
        let mut log = self.clone();
        log.only_refusals = true;
        log
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

    /// True when every decision of this log numbered up to `number` is on disk. The
    /// numbers count the decisions of every log of the process, so `number` must be one
    /// this log gave (the mark of a decision recorded here): asked about another log's
    /// decision, a log that has written later ones of its own would answer true.
    pub fn decisions_written(&self, number: u64) -> bool {
        !self.enabled || self.shared.written.load(Ordering::Acquire) >= number
    }

    /// Records events that decide nothing (the responses a relay thread forwarded since
    /// its last flush), taking the shared buffer's lock once per [`BATCH_BYTES`] of
    /// them instead of once per event: the other direction's thread takes that lock for
    /// every decision, and each hand-over moves the lock between cores.
    pub fn record_all<'e>(&self, events: impl IntoIterator<Item = Event<'e>>) {
        if !self.enabled || self.only_refusals {
            // `append_with` would take none of them, and the loop below would not end.
            return;
        }
        let mut events = events.into_iter().peekable();
        while events.peek().is_some() {
            self.append_with(false, |line, encoder| {
                for event in events.by_ref() {
                    if let Some(observer) = &self.observer {
                        observer.observe(&event);
                    }
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
        if self.only_refusals && event.decision != Some(super::Decision::Refused) {
            return;
        }
        if let Some(observer) = &self.observer {
            observer.observe(event);
        }
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

    /// The id this log's lines carry as `writer` (see [`super::chain`]).
    pub fn writer_id(&self) -> String {
        self.shared.output.lock().unwrap_or_else(|p| p.into_inner()).chain.writer().to_owned()
    }

    /// This log's newest line once everything recorded so far is written (`None`
    /// before its first line, or for a disabled log).
    pub fn head(&self) -> Option<super::chain::ChainHead> {
        if !self.enabled {
            return None;
        }
        self.flush();
        self.shared.output.lock().unwrap_or_else(|p| p.into_inner()).chain.head()
    }

    /// Records a `checkpoint` naming `heads` (the other writers' newest lines this
    /// process saw) as `replica`, writes it, and returns this log's head after it.
    pub fn record_checkpoint(
        &self,
        replica: &str,
        heads: &[super::chain::ChainHead],
    ) -> Option<super::chain::ChainHead> {
        let event = Event {
            time: jiff::Timestamp::now(),
            session: replica,
            kind: super::EventKind::Checkpoint,
            heads: Some(heads),
            ..Event::default()
        };
        self.append(&event, false);
        self.head()
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
            shared.follow_other_writers();
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

    /// Keeps up with the other processes writing the same trail: when one of them
    /// rotated it, this one's next lines go to the new file instead of the renamed one
    /// (which a later rotation would delete under it); and the size that decides this
    /// process's next rotation counts their lines too. Two `stat`s, on the flusher's
    /// thread, not on the path of a call.
    pub(super) fn follow_other_writers(&self) {
        let mut output = self.output.lock().unwrap_or_else(|p| p.into_inner());
        if output.rotates() && !output.follow_moved_trail() {
            output.refresh_size();
        }
    }

    /// Closes the files rotations displaced (see [`Output::retired`]), outside the
    /// output lock: freeing them takes a while, and nobody waits for it.
    pub(super) fn close_retired(&self) {
        let retired = std::mem::take(&mut self.output.lock().unwrap_or_else(|p| p.into_inner()).retired);
        drop(retired);
    }
}

impl Output {
    fn write_out(&mut self) {
        let before = self.chain.clone();
        self.sealed.clear();
        self.chain.seal(&self.spare, &mut self.sealed);
        let length = self.sealed.len() as u64;
        // Another process may have rotated the trail already (its lines count only
        // since this one last looked): follow it rather than rotate its new file away.
        if self.written + length > self.max_bytes
            && self.written > 0
            && let Err(e) = self.rotate_unless_moved()
        {
            tracing::error!("audit trail {} could not be rotated: {e}", self.path.display());
        }
        self.reserve_for(length);
        let rotates = self.rotates();
        match self.file.as_mut().map(|f| f.write_all(&self.sealed).map(|()| f)) {
            // Appending leaves the offset at the file's end, other processes' lines
            // included: one `lseek` keeps this process's view of the size exact, so it
            // rotates on time and moves off a file another process rotated after one
            // batch, not at the flusher's next look.
            Some(Ok(f)) if rotates => self.written = f.stream_position().unwrap_or(self.written + length),
            Some(Ok(_)) => self.written += length,
            Some(Err(e)) => {
                // Lines not written are not in the chain: the next ones follow the last
                // line on disk (a partial write shows as a cut line).
                self.chain = before;
                tracing::error!("audit trail {} could not be written: {e}", self.path.display());
            }
            None => {}
        }
        if self.sealed.capacity() > BUFFER_LIMIT * 2 {
            self.sealed = Vec::new();
        }
    }

    /// Whether this trail rotates (a regular file).
    fn rotates(&self) -> bool {
        self.max_bytes != u64::MAX && self.file.is_some()
    }

    /// When the file at the trail's path is no longer the one this process writes
    /// (another process rotated it), opens the one there now. True when it did.
    fn follow_moved_trail(&mut self) -> bool {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            let Some(file) = self.file.as_ref() else { return false };
            let same = match (file.metadata(), fs::metadata(&self.path)) {
                (Ok(ours), Ok(there)) => ours.dev() == there.dev() && ours.ino() == there.ino(),
                (_, Err(e)) if e.kind() == io::ErrorKind::NotFound => false,
                _ => true,
            };
            if same {
                return false;
            }
            match open_append(&self.path) {
                Ok(new) => {
                    self.written = new.metadata().map_or(0, |m| m.len());
                    self.reserved = Some(self.written);
                    let old = self.file.replace(new);
                    if self.retired.len() >= MAX_RETIRED {
                        self.retired.clear();
                    }
                    self.retired.extend(old);
                    true
                }
                Err(e) => {
                    tracing::error!("audit trail {} could not be reopened: {e}", self.path.display());
                    false
                }
            }
        }
        #[cfg(not(unix))]
        false
    }

    /// Counts the lines other processes appended since this one last looked.
    fn refresh_size(&mut self) {
        if let Some(len) = self.file.as_ref().and_then(|f| f.metadata().ok()).map(|m| m.len()) {
            self.written = self.written.max(len);
        }
    }

    /// Rotates the trail, unless another process rotated it meanwhile (then writes on
    /// into the new file). Processes writing one trail take turns through a lock on a
    /// file beside it: two rotating at once each shifted the numbered files, and one
    /// rename replaced a file the other had just moved there (a CI run lost 19 of a
    /// proxy's 25 calls that way).
    fn rotate_unless_moved(&mut self) -> io::Result<()> {
        let _turn = self.rotation_turn()?;
        if self.follow_moved_trail() {
            return Ok(());
        }
        self.rotate()
    }

    /// An exclusive lock on `TRAIL.lock`, held until dropped.
    #[cfg(unix)]
    fn rotation_turn(&self) -> io::Result<nix::fcntl::Flock<File>> {
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(format!("{}.lock", self.path.display()))?;
        nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(|(_, errno)| io::Error::from(errno))
    }

    #[cfg(not(unix))]
    fn rotation_turn(&self) -> io::Result<()> {
        Ok(())
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
