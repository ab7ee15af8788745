//! The gateway over stdio: what a client launches. Each line from the client is checked
//! (one valid JSON-RPC message, strictly read: no duplicate keys, no batch) and handed
//! to the session on the reading task itself; what the gateway sends the client is
//! written by one task. No guard sits here: the session decides every message with its
//! guard for the server it goes to.

use std::io;
use std::os::fd::AsFd;

use clawai_http::framing::{Frame, next_frame};
use clawai_protocol::envelope::{Envelope, EnvelopeError};
use clawai_protocol::reply;
use clawai_protocol::skim::{leading_id, salvage};
use clawai_proxy::pipe::enlarge_pipe;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::signal::unix::{SignalKind, signal};

use crate::Gateway;

/// Serves one client on this process's stdin and stdout until the client closes its
/// input or a signal arrives. Returns the exit code (0, or 128 + signal).
pub async fn serve(gateway: &Gateway, max_message: usize) -> io::Result<i32> {
    enlarge_pipe(std::io::stdin().as_fd());
    enlarge_pipe(std::io::stdout().as_fd());
    let (session, mut outbox) = gateway.connect();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut message) = outbox.recv().await {
            if !message.ends_with(b"\n") {
                message.push(b'\n');
            }
            stdout.write_all(&message).await?;
            if outbox.is_empty() {
                stdout.flush().await?;
            }
        }
        stdout.flush().await
    });
    let reader = async {
        let mut stdin = BufReader::new(tokio::io::stdin());
        loop {
            match next_frame(&mut stdin, max_message).await? {
                None => return io::Result::Ok(()),
                Some(Frame::Line(line)) if line.iter().all(u8::is_ascii_whitespace) => {}
                Some(Frame::Line(line)) => match refusal(&line) {
                    None => session.receive(line).await,
                    Some(refused) => session.reply(refused),
                },
                Some(Frame::Oversize { prefix, length }) => {
                    let id = leading_id(&prefix).and_then(|id| std::str::from_utf8(id).ok());
                    tracing::warn!("refused a {length}-byte message from the client (limit {max_message} bytes)");
                    session.reply(reply::error(
                        id,
                        reply::TOO_LARGE,
                        &format!("clawai refused the message: {length} bytes is over the {max_message}-byte limit"),
                        None,
                    ));
                }
            }
        }
    };
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let code = tokio::select! {
        read = reader => {
            if let Err(error) = read {
                tracing::warn!("reading the client's input failed: {error}");
            }
            0
        }
        _ = terminate.recv() => 143,
        _ = interrupt.recv() => 130,
    };
    session.close().await;
    // The session is gone: the writer drains what was queued and ends.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    Ok(code)
}

/// The error a client line gets when it is not one valid JSON-RPC message, strictly read
/// (the gateway re-encodes what it forwards, and must read what the client meant).
fn refusal(line: &[u8]) -> Option<Vec<u8>> {
    let error = Envelope::parse_deciding(line, |_| true).err()?;
    let salvaged;
    let id = match &error {
        EnvelopeError::Invalid { id: Some(id), .. } => Some(id.as_str()),
        EnvelopeError::Invalid { id: None, .. } => {
            salvaged = salvage(line);
            salvaged.id.filter(|_| salvaged.request && !salvaged.response).and_then(|id| std::str::from_utf8(id).ok())
        }
        _ => None,
    };
    tracing::warn!("refused a message from the client: {error}");
    Some(reply::error(id, error.code(), &format!("clawai refused the message: {error}"), None))
}
