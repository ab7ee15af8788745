//! The stdio proxy: the client talks to clawai's stdin/stdout, clawai talks to the
//! server it spawned.
//!
//! Two threads relay lines, one each way, with blocking I/O: a slow reader stalls the
//! writer instead of filling memory. Output is batched while more input is already
//! waiting and flushed as soon as none is, so a lone request costs one read and one
//! write on each side, and a burst of pipelined requests shares them. A flush that
//! carries a decided message writes the audit trail first: no message leaves before
//! the event that decided it. The main thread supervises: client EOF or a signal
//! closes the server's stdin, waits a grace period, then SIGTERM, then SIGKILL, always
//! to the server's whole tree (`npx` starts grandchildren; see [`crate::process_tree`]
//! for those that leave the tree); a server that exits fails every request still
//! waiting.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clawai_protocol::{FrameRef, LineReader};
use nix::sys::signal::Signal;

use crate::audit::{Stamp, stamp};
use crate::guard::{Deferred, Deliveries, Guard, Later, Outbox, Outlet, Side, dispatched};
use crate::pipe::enlarge_pipe;
use crate::process_tree::{ServerTag, ServerTree, TAG_VARIABLE, spawn_own};
use clawai_sandbox::Prepared;

/// How the proxy runs its server.
#[derive(Debug, Clone)]
pub struct StdioOptions {
    /// The server's command and arguments.
    pub command: Vec<String>,
    /// Time the server gets to exit after its stdin is closed, and again after SIGTERM.
    pub grace: Duration,
    /// The largest message accepted, in bytes.
    pub max_message: usize,
}

/// Why the proxy stopped.
enum Event {
    ClientClosed,
    ServerClosed,
    Signal(i32),
}

type Shared<W> = Arc<Mutex<W>>;

/// clawai's stdout as a plain file: `io::Stdout` would flush at every newline.
fn raw_stdout() -> io::Result<File> {
    Ok(File::from(io::stdout().as_fd().try_clone_to_owned()?))
}

/// clawai's stdin as a plain file, read through our own buffer only.
fn raw_stdin() -> io::Result<File> {
    Ok(File::from(io::stdin().as_fd().try_clone_to_owned()?))
}

/// Spawns the server and relays until one side ends. Returns the exit code for clawai.
pub fn run(guard: Arc<Guard>, options: &StdioOptions) -> io::Result<i32> {
    run_sandboxed(guard, options, None)
}

/// [`run`], with the server in `sandbox` (prepared for this command, with
/// `die_with_parent`: this function runs on the main thread). What was in force is said
/// on stderr and recorded in the audit trail.
pub fn run_sandboxed(guard: Arc<Guard>, options: &StdioOptions, sandbox: Option<Prepared>) -> io::Result<i32> {
    map_large_buffers_apart();
    let (program, args) = options
        .command
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no server command given (write it after `--`)"))?;
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
    #[cfg(target_os = "linux")]
    unsafe {
        // If clawai itself is killed, the server must not live on unguarded.
        command.pre_exec(|| {
            nix::sys::prctl::set_pdeathsig(Signal::SIGTERM).map_err(io::Error::from)?;
            Ok(())
        });
    }
    let mut sandbox = sandbox;
    #[cfg(target_os = "linux")]
    if let Some(prepared) = sandbox.as_mut() {
        command.envs(prepared.profile().env.iter().map(|(name, value, _)| (name, value)));
        // SAFETY: the stage is made to run between fork and exec.
        unsafe { command.pre_exec(prepared.child_stage()) };
    }
    // Inherited by everything the server starts: how what leaves its tree is found.
    let tag = ServerTag::new();
    command.env(TAG_VARIABLE, tag.value());
    let inside = if sandbox.is_some() { " in its sandbox" } else { "" };
    let spawn =
        || command.spawn().map_err(|e| io::Error::new(e.kind(), format!("cannot start `{program}`{inside}: {e}")));
    // `_own` is dropped at the end of this function, after the child was reaped.
    let spawned = spawn_own(spawn, |child| Some(child.id()));
    if let Some(prepared) = sandbox {
        let report = prepared.finish();
        if spawned.is_ok() {
            crate::sandboxed::announce(&guard, &report);
        }
    }
    let (mut child, _own) = spawned?;
    let tree = ServerTree::new(child.id(), tag);
    let server_in = child.stdin.take().expect("stdin is piped");
    let server_out = child.stdout.take().expect("stdout is piped");
    let (client_in, client_out) = (raw_stdin()?, raw_stdout()?);
    for pipe in [server_in.as_fd(), server_out.as_fd(), client_in.as_fd(), client_out.as_fd()] {
        enlarge_pipe(pipe);
    }
    let server_in: Shared<Option<Outbox<ChildStdin>>> = Arc::new(Mutex::new(Some(Outbox::new(server_in))));
    let client_out: Shared<Outbox<File>> = Arc::new(Mutex::new(Outbox::new(client_out)));
    let (events, rx) = mpsc::channel();
    guard.set_outlet(Arc::new(StdioOutlet {
        guard: Arc::downgrade(&guard),
        server_in: server_in.clone(),
        client_out: client_out.clone(),
    }));

    spawn_signals(events.clone())?;
    {
        let (guard, server_in, client_out, events) =
            (guard.clone(), server_in.clone(), client_out.clone(), events.clone());
        let max = options.max_message;
        thread::Builder::new().name("client-to-server".into()).spawn(move || {
            relay_client(&guard, max, client_in, &server_in, &client_out);
            let _ = events.send(Event::ClientClosed);
        })?;
    }
    let server_reader = {
        let (guard, server_in, client_out, events) =
            (guard.clone(), server_in.clone(), client_out.clone(), events.clone());
        let max = options.max_message;
        thread::Builder::new().name("server-to-client".into()).spawn(move || {
            relay_server(&guard, max, server_out, &server_in, &client_out);
            let _ = events.send(Event::ServerClosed);
        })?
    };
    drop(events);

    let code = supervise(&mut child, &tree, &rx, &server_in, &guard, options.grace);
    // Whatever the server still said is relayed before its pending requests are failed.
    let _ = server_reader.join();
    {
        let mut out = client_out.lock().unwrap_or_else(|p| p.into_inner());
        for message in guard.server_gone("the MCP server exited") {
            let _ = out.send(&guard, &message);
        }
        let _ = out.flush(&guard);
    }
    guard.flush_audit();
    Ok(code)
}

fn supervise(
    child: &mut Child,
    tree: &ServerTree,
    events: &Receiver<Event>,
    server_in: &Shared<Option<Outbox<ChildStdin>>>,
    guard: &Guard,
    grace: Duration,
) -> i32 {
    match first_event(events) {
        Ok(Event::ServerClosed) => {
            // The server closed stdout: it is exiting. Give it the grace period, then
            // make sure nothing of its tree is left.
            let status = wait_for(child, grace).unwrap_or_else(|| terminate(child, tree, grace));
            tree.end_left(grace);
            tracing::info!("the MCP server exited ({})", describe(&status));
            exit_code(&status)
        }
        Ok(Event::ClientClosed) | Err(_) => {
            let status = shut_down(child, tree, server_in, guard, grace);
            tracing::debug!("client closed the connection; server {}", describe(&status));
            if status.code().is_some_and(|c| c != 0) { exit_code(&status) } else { 0 }
        }
        Ok(Event::Signal(signal)) => {
            tracing::info!("received signal {signal}; stopping the MCP server");
            shut_down(child, tree, server_in, guard, grace);
            128 + signal
        }
    }
}

/// How long after start the freed start-up memory is given back.
const SETTLE: Duration = Duration::from_millis(250);

/// Waits for the first event; if the session is still running after [`SETTLE`], gives
/// back the heap that start-up (argument parsing, policy compilation) freed, off the
/// start's path.
fn first_event(events: &Receiver<Event>) -> Result<Event, mpsc::RecvError> {
    match events.recv_timeout(SETTLE) {
        Ok(event) => Ok(event),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(mpsc::RecvError),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            release_freed_memory();
            events.recv()
        }
    }
}

/// Returns free heap pages to the system (glibc keeps them otherwise: a quarter of a
/// MiB after start-up, which a proxy running for days would hold for nothing).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        unsafe extern "C" {
            fn malloc_trim(pad: usize) -> i32;
        }
        // SAFETY: malloc_trim only gives back memory that is free; it locks each arena
        // while it works, so the relay threads may allocate meanwhile.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// Allocations of [`OWN_MAPPING`] bytes or more get their own mapping, given back to
/// the system when freed. glibc's default moves that threshold up to the largest
/// buffer freed so far, after which the relay's large buffers (the read buffers, the
/// assembly of a large message, the table of requests in flight, the audit buffers as
/// they grow) are carved from the threads' heaps, and what they leave behind when they
/// grow stays resident (100–250 KiB after the benchmark's pipelined burst).
fn map_large_buffers_apart() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const M_MMAP_THRESHOLD: i32 = -3;
        unsafe extern "C" {
            fn mallopt(param: i32, value: i32) -> i32;
        }
        // SAFETY: mallopt only changes a tuning parameter of the allocator; called
        // before the relay threads start.
        unsafe {
            mallopt(M_MMAP_THRESHOLD, OWN_MAPPING as i32);
        }
    }
}

/// See [`map_large_buffers_apart`]: the size of the read buffers, so that each has a
/// mapping of its own.
const OWN_MAPPING: usize = 64 * 1024;

/// Closes the server's stdin, waits, then SIGTERM, then SIGKILL, to the whole tree.
fn shut_down(
    child: &mut Child,
    tree: &ServerTree,
    server_in: &Shared<Option<Outbox<ChildStdin>>>,
    guard: &Guard,
    grace: Duration,
) -> ExitStatus {
    if let Some(mut input) = server_in.lock().unwrap_or_else(|p| p.into_inner()).take() {
        // What was already decided and queued still reaches the server, then EOF.
        let _ = input.flush(guard);
    }
    let status = wait_for(child, grace).unwrap_or_else(|| terminate(child, tree, grace));
    tree.end_left(grace);
    status
}

/// SIGTERM to the server and its tree, the grace period, then SIGKILL; returns once
/// the server is reaped.
fn terminate(child: &mut Child, tree: &ServerTree, grace: Duration) -> ExitStatus {
    tree.signal_all(Signal::SIGTERM);
    if let Some(status) = wait_for(child, grace) {
        return status;
    }
    tree.signal_all(Signal::SIGKILL);
    child.wait().unwrap_or_else(|_| ExitStatus::from_raw(9))
}

fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    // Short naps first: a server that is exiting is usually gone within a millisecond.
    let mut nap = Duration::from_micros(250);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => {
                thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(10));
            }
            Ok(None) => return None,
            Err(_) => return None,
        }
    }
}

fn exit_code(status: &ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

fn describe(status: &ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        _ => "unknown status".into(),
    }
}

fn spawn_signals(events: Sender<Event>) -> io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(signal) = signals.forever().next() {
            let _ = events.send(Event::Signal(signal));
        }
    })?;
    Ok(())
}

/// The two outputs a relay thread can write to, which of them hold messages not yet
/// flushed, and the audit events of responses queued since the last flush.
struct Outputs<'a> {
    guard: &'a Guard,
    server_in: &'a Shared<Option<Outbox<ChildStdin>>>,
    client_out: &'a Shared<Outbox<File>>,
    server_queued: bool,
    client_queued: bool,
    deferred: Deferred,
}

impl<'a> Outputs<'a> {
    fn new(
        guard: &'a Guard,
        server_in: &'a Shared<Option<Outbox<ChildStdin>>>,
        client_out: &'a Shared<Outbox<File>>,
    ) -> Self {
        Outputs {
            guard,
            server_in,
            client_out,
            server_queued: false,
            client_queued: false,
            deferred: Deferred::default(),
        }
    }

    /// Queues a message for the server. False when the server no longer takes input.
    fn queue_for_server(&mut self, bytes: &[u8]) -> bool {
        self.server_queued = true;
        let mut slot = self.server_in.lock().unwrap_or_else(|p| p.into_inner());
        slot.as_mut().is_some_and(|input| input.send(self.guard, bytes).is_ok())
    }

    /// Queues a message for the client. False when the client is gone.
    fn queue_for_client(&mut self, bytes: &[u8]) -> bool {
        self.client_queued = true;
        self.client_out.lock().unwrap_or_else(|p| p.into_inner()).send(self.guard, bytes).is_ok()
    }

    /// Queues each message of a verdict for its side. False when the client is gone.
    fn deliver(&mut self, deliveries: Deliveries<'_>) -> bool {
        let mut deliveries = deliveries;
        deliveries.all(|delivery| match delivery.to {
            Side::Server => self.queue_for_server(&delivery.bytes) || warn_server_gone(),
            Side::Client => self.queue_for_client(&delivery.bytes),
        })
    }

    /// Sends what this thread queued (no input is waiting any more), then records the
    /// responses' audit events. False when the client is gone.
    fn flush(&mut self) -> bool {
        if std::mem::take(&mut self.server_queued)
            && let Some(input) = self.server_in.lock().unwrap_or_else(|p| p.into_inner()).as_mut()
            && input.flush(self.guard).is_err()
        {
            tracing::warn!("the MCP server is not reading its input any more");
        }
        let client_alive = !std::mem::take(&mut self.client_queued)
            || self.client_out.lock().unwrap_or_else(|p| p.into_inner()).flush(self.guard).is_ok();
        self.guard.record_deferred(&mut self.deferred);
        client_alive
    }
}

impl Drop for Outputs<'_> {
    fn drop(&mut self) {
        // A relay that stops without a last flush (the client went away) still records.
        self.guard.record_deferred(&mut self.deferred);
    }
}

fn relay_client(
    guard: &Guard,
    max: usize,
    client_in: File,
    server_in: &Shared<Option<Outbox<ChildStdin>>>,
    client_out: &Shared<Outbox<File>>,
) {
    let out = Outputs::new(guard, server_in, client_out);
    relay(LineReader::new(client_in, max), out, "the client", |frame, at, out| match frame {
        FrameRef::Line(line) => out.deliver(guard.queued_from_client(line, at).deliveries(line, Side::Client)),
        FrameRef::Oversize { prefix, length } => {
            out.deliver(guard.oversize_from_client(prefix, length, max).deliveries(Vec::new(), Side::Client))
        }
    });
}

/// Where the guard sends what it decides off the path of any message (a question to
/// the client that ran out of time): straight to each side, audit trail first.
struct StdioOutlet {
    guard: std::sync::Weak<Guard>,
    server_in: Shared<Option<Outbox<ChildStdin>>>,
    client_out: Shared<Outbox<File>>,
}

impl Outlet for StdioOutlet {
    fn later(&self, later: Later) {
        let Some(guard) = self.guard.upgrade() else { return };
        let messages = guard.settle(later);
        for delivery in dispatched(messages) {
            let bytes = delivery.bytes;
            let sent = match delivery.to {
                Side::Server => {
                    let mut slot = self.server_in.lock().unwrap_or_else(|p| p.into_inner());
                    slot.as_mut()
                        .is_some_and(|input| input.send(&guard, &bytes).and_then(|()| input.flush(&guard)).is_ok())
                }
                Side::Client => {
                    let mut out = self.client_out.lock().unwrap_or_else(|p| p.into_inner());
                    out.send(&guard, &bytes).and_then(|()| out.flush(&guard)).is_ok()
                }
            };
            if !sent {
                // The client or the server went away meanwhile: nothing is wrong with clawai.
                tracing::debug!("a message clawai decided on later could not be sent: the other side is gone");
            }
        }
    }
}

fn warn_server_gone() -> bool {
    tracing::warn!("the MCP server is not reading its input any more");
    true
}

fn relay_server(
    guard: &Guard,
    max: usize,
    server_out: std::process::ChildStdout,
    server_in: &Shared<Option<Outbox<ChildStdin>>>,
    client_out: &Shared<Outbox<File>>,
) {
    let out = Outputs::new(guard, server_in, client_out);
    relay(LineReader::new(server_out, max), out, "the MCP server", |frame, at, out| match frame {
        FrameRef::Line(line) => {
            let verdict = guard.queued_from_server(line, at, &mut out.deferred);
            out.deliver(verdict.deliveries(line, Side::Server))
        }
        FrameRef::Oversize { prefix, length } => {
            out.deliver(guard.oversize_from_server(prefix, length, max).deliveries(Vec::new(), Side::Server))
        }
    });
}

/// Reads frames from one side until it ends, hands each to `handle` with the time it
/// arrived (which queues what goes where and returns false once the client is gone),
/// and flushes whenever no further line is already waiting.
fn relay<R: std::io::Read>(
    mut reader: LineReader<R>,
    mut out: Outputs<'_>,
    from: &str,
    mut handle: impl FnMut(FrameRef<'_>, Stamp, &mut Outputs<'_>) -> bool,
) {
    let mut arrived = stamp();
    let mut needs_read = true;
    let mut lines_in_read = 0usize;
    loop {
        let frame = reader.next_frame_ref();
        if needs_read {
            // The lines one read brings arrived together: one clock read for them all.
            arrived = stamp();
            lines_in_read = 0;
        }
        lines_in_read += 1;
        let client_alive = match frame {
            Ok(Some(frame)) => handle(frame, arrived, &mut out),
            Ok(None) => break,
            Err(e) => {
                tracing::error!("reading from {from} failed: {e}");
                break;
            }
        };
        needs_read = !reader.has_buffered_line();
        // Nothing else waiting: everything queued either way goes out now.
        if !client_alive || (needs_read && !out.flush()) {
            return;
        }
        if needs_read && lines_in_read > 1 {
            // A burst: the other side is writing faster than one line per read. Before
            // this thread sleeps in the next read, the processes the flush just woke get
            // the processor, and the read then finds more lines waiting: fewer sleeps and
            // wake-ups per message on a busy machine (on two cores, 8–10% less CPU per
            // pipelined call). A lone request, one line per read, does not wait for it. The
            // cost: on a machine whose other processes keep the processor busy, the first
            // line after a burst can wait up to a scheduler slice (milliseconds) more.
            std::thread::yield_now();
        }
    }
    out.flush();
}
