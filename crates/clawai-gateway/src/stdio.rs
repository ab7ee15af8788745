//! The gateway over stdio: what a client launches. Each line from the client is checked
//! (one valid JSON-RPC message, strictly read: no duplicate keys, no batch) and handed
//! to the session on the reading task itself; what the gateway sends the client is
//! written by one task. No guard sits here: the session decides every message with its
//! guard for the server it goes to.

use std::io;
use std::os::fd::AsFd;

use std::io::Write as _;

use clawai_protocol::{Frame, LineReader};
use clawai_proxy::pipe::enlarge_pipe;
use tokio::signal::unix::{SignalKind, signal};

use crate::Gateway;

/// Serves one client on this process's stdin and stdout until the client closes its
/// input or a signal arrives. Returns the exit code (0, or 128 + signal).
///
/// stdin and stdout are read and written by threads of their own with blocking calls
/// (tokio's stdin and stdout hand every call to its blocking pool: a hop each way per
/// message); the reading thread runs the session's handling of each line itself.
pub async fn serve(gateway: &Gateway, max_message: usize) -> io::Result<i32> {
    enlarge_pipe(std::io::stdin().as_fd());
    enlarge_pipe(std::io::stdout().as_fd());
    let (session, mut outbox) = gateway.connect();
    let session = std::sync::Arc::new(session);
    let writer = std::thread::Builder::new().name("clawai-stdout".into()).spawn(move || {
        let mut stdout = std::io::stdout().lock();
        while let Some(mut message) = outbox.blocking_recv() {
            if !message.ends_with(b"\n") {
                message.push(b'\n');
            }
            stdout.write_all(&message)?;
            if outbox.is_empty() {
                stdout.flush()?;
            }
        }
        stdout.flush()
    })?;
    let (finished, read_all) = tokio::sync::oneshot::channel::<io::Result<()>>();
    let runtime = tokio::runtime::Handle::current();
    let reading = std::sync::Arc::clone(&session);
    std::thread::Builder::new().name("clawai-stdin".into()).spawn(move || {
        let mut reader = LineReader::new(std::io::stdin().lock(), max_message);
        let outcome = loop {
            match reader.next_frame() {
                Ok(None) => break Ok(()),
                Ok(Some(Frame::Line(line))) if line.iter().all(u8::is_ascii_whitespace) => {}
                Ok(Some(Frame::Line(line))) => {
                    // An id parsing would change (a float, an integer beyond 64 bits) or
                    // refuse (`1e400`) goes back as written, and a cancellation naming it
                    // finds it: carried as a string before anything reads the line.
                    let line = crate::raw_ids::carry(line);
                    if !reading.refuse_unparsable(&line) {
                        runtime.block_on(reading.receive(line));
                    }
                }
                Ok(Some(Frame::Oversize { prefix, length })) => reading.refuse_oversize(&prefix, length, max_message),
                Err(error) => break Err(error),
            }
        };
        let _ = finished.send(outcome);
    })?;
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let code = tokio::select! {
        read = read_all => {
            if let Ok(Err(error)) = read {
                tracing::warn!("reading the client's input failed: {error}");
            }
            0
        }
        _ = terminate.recv() => 143,
        _ = interrupt.recv() => 130,
    };
    // The reading thread may still hold the session (blocked on stdin after a signal):
    // the calls in flight are cancelled all the same.
    session.cancel_all().await;
    drop(session);
    // Once the session is gone, the writer drains what was queued and ends (after a
    // signal the reading thread may keep it: the process exits anyway).
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), tokio::task::spawn_blocking(move || writer.join()))
        .await;
    Ok(code)
}
