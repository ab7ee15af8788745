//! The stdio proxy: the client talks to clawai's stdin/stdout, clawai talks to the
//! server it spawned.
//!
//! Two threads relay lines, one each way, with blocking I/O: a message costs one read
//! and one write on each side, and a slow reader stalls the writer instead of filling
//! memory. The main thread supervises: client EOF or a signal closes the server's
//! stdin, waits a grace period, then SIGTERM, then SIGKILL, always to the whole process
//! group (`npx` starts grandchildren); a server that exits fails every request still
//! waiting.

use std::io::{self, BufReader, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clawai_protocol::{Frame, LineReader};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

use crate::guard::{Guard, Verdict};

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

/// Spawns the server and relays until one side ends. Returns the exit code for clawai.
pub fn run(guard: Arc<Guard>, options: &StdioOptions) -> io::Result<i32> {
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
    let mut child = command.spawn().map_err(|e| io::Error::new(e.kind(), format!("cannot start `{program}`: {e}")))?;
    let pgid = Pid::from_raw(child.id() as i32);
    let server_in: Shared<Option<ChildStdin>> = Arc::new(Mutex::new(child.stdin.take()));
    let server_out = child.stdout.take().expect("stdout is piped");
    let client_out: Shared<io::Stdout> = Arc::new(Mutex::new(io::stdout()));
    let (events, rx) = mpsc::channel();

    spawn_signals(events.clone())?;
    {
        let (guard, server_in, client_out, events) =
            (guard.clone(), server_in.clone(), client_out.clone(), events.clone());
        let max = options.max_message;
        thread::Builder::new().name("client-to-server".into()).spawn(move || {
            relay_client(&guard, max, &server_in, &client_out);
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

    let code = supervise(&mut child, pgid, &rx, &server_in, options.grace);
    // Whatever the server still said is relayed before its pending requests are failed.
    let _ = server_reader.join();
    for message in guard.server_gone("the MCP server exited") {
        write_line(&client_out, &message);
    }
    let _ = client_out.lock().map(|mut out| out.flush());
    guard.flush_audit();
    Ok(code)
}

fn supervise(
    child: &mut Child,
    pgid: Pid,
    events: &Receiver<Event>,
    server_in: &Shared<Option<ChildStdin>>,
    grace: Duration,
) -> i32 {
    match events.recv() {
        Ok(Event::ServerClosed) => {
            // The server closed stdout: it is exiting. Give it the grace period, then
            // make sure nothing of its group is left.
            let status = wait_for(child, grace).unwrap_or_else(|| terminate(child, pgid, grace));
            kill_group(pgid, Signal::SIGKILL);
            tracing::info!("the MCP server exited ({})", describe(&status));
            exit_code(&status)
        }
        Ok(Event::ClientClosed) | Err(_) => {
            let status = shut_down(child, pgid, server_in, grace);
            tracing::debug!("client closed the connection; server {}", describe(&status));
            if status.code().is_some_and(|c| c != 0) { exit_code(&status) } else { 0 }
        }
        Ok(Event::Signal(signal)) => {
            tracing::info!("received signal {signal}; stopping the MCP server");
            shut_down(child, pgid, server_in, grace);
            128 + signal
        }
    }
}

/// Closes the server's stdin, waits, then SIGTERM, then SIGKILL, to the whole group.
fn shut_down(child: &mut Child, pgid: Pid, server_in: &Shared<Option<ChildStdin>>, grace: Duration) -> ExitStatus {
    server_in.lock().unwrap_or_else(|p| p.into_inner()).take();
    let status = wait_for(child, grace).unwrap_or_else(|| terminate(child, pgid, grace));
    kill_group(pgid, Signal::SIGKILL);
    status
}

fn terminate(child: &mut Child, pgid: Pid, grace: Duration) -> ExitStatus {
    kill_group(pgid, Signal::SIGTERM);
    if let Some(status) = wait_for(child, grace) {
        return status;
    }
    kill_group(pgid, Signal::SIGKILL);
    child.wait().unwrap_or_else(|_| ExitStatus::from_raw(9))
}

fn kill_group(pgid: Pid, signal: Signal) {
    // ESRCH (nobody left in the group) is the normal case.
    let _ = killpg(pgid, signal);
}

fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
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

fn write_line<W: Write>(out: &Shared<W>, bytes: &[u8]) -> bool {
    let mut out = out.lock().unwrap_or_else(|p| p.into_inner());
    let ok = if bytes.ends_with(b"\n") {
        out.write_all(bytes)
    } else {
        out.write_all(bytes).and_then(|_| out.write_all(b"\n"))
    };
    ok.and_then(|_| out.flush()).is_ok()
}

fn write_to_server(server_in: &Shared<Option<ChildStdin>>, bytes: &[u8]) -> bool {
    let mut guard = server_in.lock().unwrap_or_else(|p| p.into_inner());
    let Some(stdin) = guard.as_mut() else {
        return false;
    };
    let ok = if bytes.ends_with(b"\n") {
        stdin.write_all(bytes)
    } else {
        stdin.write_all(bytes).and_then(|_| stdin.write_all(b"\n"))
    };
    ok.and_then(|_| stdin.flush()).is_ok()
}

fn relay_client(guard: &Guard, max: usize, server_in: &Shared<Option<ChildStdin>>, client_out: &Shared<io::Stdout>) {
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, io::stdin()), max);
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("reading from the client failed: {e}");
                return;
            }
        };
        let (verdict, line) = match &frame {
            Frame::Line(line) => (guard.from_client(line), line.as_slice()),
            Frame::Oversize { prefix, length } => (guard.oversize_from_client(prefix, *length, max), &[][..]),
        };
        match verdict {
            Verdict::Forward => {
                if !write_to_server(server_in, line) {
                    tracing::warn!("the MCP server is not reading its input any more");
                }
            }
            Verdict::Reply(answer) => {
                if !write_line(client_out, &answer) {
                    return;
                }
            }
            Verdict::Drop => {}
        }
    }
}

fn relay_server(
    guard: &Guard,
    max: usize,
    server_out: std::process::ChildStdout,
    server_in: &Shared<Option<ChildStdin>>,
    client_out: &Shared<io::Stdout>,
) {
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, server_out), max);
    loop {
        let frame = match reader.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(e) => {
                tracing::error!("reading from the MCP server failed: {e}");
                return;
            }
        };
        match frame {
            Frame::Line(line) => match guard.from_server(&line) {
                Verdict::Forward => {
                    if !write_line(client_out, &line) {
                        return;
                    }
                }
                Verdict::Reply(answer) => {
                    write_to_server(server_in, &answer);
                }
                Verdict::Drop => {}
            },
            Frame::Oversize { prefix, length } => {
                if let Some(message) = guard.oversize_from_server(&prefix, length, max) {
                    write_line(client_out, &message);
                }
            }
        }
    }
}
