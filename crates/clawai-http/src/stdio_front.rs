//! A stdio client in front of a remote server: `clawai proxy --upstream URL`.
//!
//! The client launches clawai as if it were a stdio server; each line it writes goes
//! through the guard and, when allowed, to the remote server; each message from the
//! server goes through the guard and back as one line. The audit trail is written
//! before any message it decided leaves.

use std::io;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use clawai_proxy::guard::{Deliveries, Side, dispatched};
use clawai_proxy::pipe::enlarge_pipe;
use clawai_proxy::{Guard, Later, Outlet};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::framing::{Frame, next_frame};
use crate::link::{FromServer, Link};

type ServerSender = Arc<Mutex<Option<mpsc::Sender<Vec<u8>>>>>;

async fn to_server(server: &ServerSender, message: Vec<u8>) {
    let sender = server.lock().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(sender) = sender {
        let _ = sender.send(message).await;
    }
}

/// Sends each message of a verdict to its side.
async fn deliver(server: &ServerSender, client: &mpsc::Sender<Vec<u8>>, deliveries: Deliveries<'_>) {
    for delivery in deliveries {
        match delivery.to {
            Side::Server => to_server(server, delivery.bytes.into_owned()).await,
            Side::Client => {
                let _ = client.send(delivery.bytes.into_owned()).await;
            }
        }
    }
}

/// Takes what the guard decides later (a question's time-out, the approval broker's
/// answer) onto this front's queues.
struct FrontOutlet {
    guard: std::sync::Weak<Guard>,
    server: ServerSender,
    /// Weak: the writer ends once the reader and the pump are done, without waiting.
    client: mpsc::WeakSender<Vec<u8>>,
    runtime: tokio::runtime::Handle,
}

impl Outlet for FrontOutlet {
    fn later(&self, later: Later) {
        let Some(guard) = self.guard.upgrade() else { return };
        let Some(client) = self.client.upgrade() else { return };
        let server = Arc::clone(&self.server);
        self.runtime.spawn(async move {
            let messages = guard.settle(later);
            deliver(&server, &client, dispatched(messages)).await;
        });
    }
}

/// Relays between this process's stdin/stdout and `link` until the client closes its
/// input or a signal arrives. Returns the exit code (0, or 128 + signal).
pub async fn run(guard: Arc<Guard>, link: Link, max_message: usize) -> io::Result<i32> {
    let Link { to_server: sender, mut from_server } = link;
    enlarge_pipe(std::io::stdin().as_fd());
    enlarge_pipe(std::io::stdout().as_fd());
    let server: ServerSender = Arc::new(Mutex::new(Some(sender)));
    let (to_client, mut client_queue) = mpsc::channel::<Vec<u8>>(crate::link::CHANNEL_DEPTH);
    guard.set_outlet(Arc::new(FrontOutlet {
        guard: Arc::downgrade(&guard),
        server: Arc::clone(&server),
        client: to_client.downgrade(),
        runtime: tokio::runtime::Handle::current(),
    }));

    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut message) = client_queue.recv().await {
            if !message.ends_with(b"\n") {
                message.push(b'\n');
            }
            stdout.write_all(&message).await?;
            if client_queue.is_empty() {
                stdout.flush().await?;
            }
        }
        stdout.flush().await
    });

    let pump_guard = Arc::clone(&guard);
    let pump_server = Arc::clone(&server);
    let pump_client = to_client.clone();
    let pump = tokio::spawn(async move {
        while let Some(item) = from_server.recv().await {
            match item {
                FromServer::Message(message) => {
                    let verdict = pump_guard.from_server(&message);
                    deliver(&pump_server, &pump_client, verdict.deliveries(message, Side::Server)).await;
                }
                FromServer::Oversize { prefix, length } => {
                    let verdict = pump_guard.oversize_from_server(&prefix, length, max_message);
                    deliver(&pump_server, &pump_client, verdict.deliveries(Vec::new(), Side::Server)).await;
                }
                FromServer::Closed(reason) => {
                    for error in pump_guard.server_gone(&reason) {
                        let _ = pump_client.send(error).await;
                    }
                }
            }
        }
    });

    let reader_guard = Arc::clone(&guard);
    let reader_server = Arc::clone(&server);
    let reader_client = to_client.clone();
    let reader = tokio::spawn(async move {
        let mut stdin = BufReader::new(tokio::io::stdin());
        loop {
            let (verdict, line) = match next_frame(&mut stdin, max_message).await? {
                None => return io::Result::Ok(()),
                Some(Frame::Line(line)) => (reader_guard.from_client(&line), line),
                Some(Frame::Oversize { prefix, length }) => {
                    (reader_guard.oversize_from_client(&prefix, length, max_message), Vec::new())
                }
            };
            deliver(&reader_server, &reader_client, verdict.deliveries(line, Side::Client)).await;
        }
    });
    drop(to_client);

    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let code = tokio::select! {
        finished = reader => {
            if let Ok(Err(error)) = finished {
                tracing::warn!("reading the client's input failed: {error}");
            }
            0
        }
        _ = terminate.recv() => 143,
        _ = interrupt.recv() => 130,
    };
    // The client is done: ending the link ends the remote session (DELETE).
    server.lock().unwrap_or_else(|p| p.into_inner()).take();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(3), pump).await;
    guard.flush_audit();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(1), writer).await;
    Ok(code)
}
