//! The broker's Unix socket: proxies ask, the terminal commands list and answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawai_approvals::{By, Reply, Request};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{UnixListener, UnixStream};

use crate::broker::{Asked, Broker, Decision};
use crate::error::UiError;

/// The longest line accepted: an ask carries the call's arguments, which can be large,
/// but not unbounded.
const MAX_LINE: usize = 4 * 1024 * 1024;

/// Binds the socket at `path` (its directory created 0700, the socket 0600). A socket
/// left by a broker that is gone is replaced; a live broker is an error naming its URL.
pub(crate) fn bind(path: &Path, url_file: &Path) -> Result<UnixListener, UiError> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let io = |what: String| move |error| UiError::Io { what, error };
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(io(format!("cannot create {}", dir.display())))?;
    }
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        use std::os::unix::fs::FileTypeExt;
        if !meta.file_type().is_socket() {
            return Err(UiError::Io {
                what: format!("{} is in the way of the broker's socket; move it elsewhere", path.display()),
                error: std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            });
        }
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            let url = std::fs::read_to_string(url_file).unwrap_or_default();
            return Err(UiError::AlreadyRunning { socket: path.to_path_buf(), url: url.trim().to_owned() });
        }
        std::fs::remove_file(path).map_err(io(format!("cannot remove the stale socket {}", path.display())))?;
    }
    // Bound with a umask that leaves the socket to its owner, so no other user can
    // connect even for the moment before the chmod below.
    let old = nix::sys::stat::umask(nix::sys::stat::Mode::from_bits_truncate(0o077));
    let bound = UnixListener::bind(path);
    nix::sys::stat::umask(old);
    let listener = bound.map_err(io(format!("cannot listen on {}", path.display())))?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .map_err(io(format!("cannot make {} private", path.display())))?;
    Ok(listener)
}

/// Accepts connections until the task is dropped.
pub(crate) async fn serve(listener: UnixListener, broker: Arc<Broker>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, broker.clone()));
            }
            Err(e) => {
                tracing::warn!("the approval socket stopped accepting: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
        }
    }
}

/// A line read from a connection.
enum Line {
    Request(Request),
    Malformed(String),
    Closed,
}

async fn next(reader: &mut BufReader<OwnedReadHalf>, buf: &mut Vec<u8>) -> Line {
    buf.clear();
    loop {
        let available = match reader.fill_buf().await {
            Ok([]) | Err(_) => return Line::Closed,
            Ok(bytes) => bytes,
        };
        let (take, done) = match memchr_newline(available) {
            Some(at) => (at + 1, true),
            None => (available.len(), false),
        };
        buf.extend_from_slice(&available[..take]);
        reader.consume(take);
        if buf.len() > MAX_LINE {
            return Line::Malformed(format!("a line longer than {MAX_LINE} bytes"));
        }
        if done {
            return match serde_json::from_slice::<Request>(buf) {
                Ok(request) => Line::Request(request),
                Err(e) => Line::Malformed(format!("not a request of the approval protocol: {e}")),
            };
        }
    }
}

fn memchr_newline(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&b| b == b'\n')
}

async fn send(writer: &mut OwnedWriteHalf, reply: &Reply) -> bool {
    let mut line = serde_json::to_vec(reply).unwrap_or_default();
    line.push(b'\n');
    writer.write_all(&line).await.is_ok()
}

fn error(message: impl Into<String>) -> Reply {
    Reply::Error { message: message.into() }
}

async fn connection(stream: UnixStream, broker: Arc<Broker>) {
    let (read, mut writer) = stream.into_split();
    let mut reader = BufReader::new(read);
    let mut buf = Vec::new();
    let reply = match next(&mut reader, &mut buf).await {
        Line::Closed => return,
        Line::Malformed(problem) => error(problem),
        Line::Request(Request::Ask { ask }) => return asked(*ask, reader, writer, broker).await,
        Line::Request(Request::List) => Reply::Pending { items: broker.list() },
        Line::Request(Request::Approve { id, scope }) => {
            answered(broker.answer(&id, Decision::Approve(scope), By::Cli))
        }
        Line::Request(Request::Deny { id }) => answered(broker.answer(&id, Decision::Deny, By::Cli)),
        Line::Request(Request::Timeout { .. } | Request::Cancel { .. }) => {
            error("`timeout` and `cancel` are sent on the connection that asked, after its ask")
        }
    };
    send(&mut writer, &reply).await;
}

fn answered(result: Result<(), String>) -> Reply {
    match result {
        Ok(()) => Reply::Ok,
        Err(message) => error(message),
    }
}

/// One asked call: queued (or granted), then the person's answer, or the proxy's
/// timeout, cancel or departure.
async fn asked(
    ask: clawai_approvals::Ask,
    mut reader: BufReader<OwnedReadHalf>,
    mut writer: OwnedWriteHalf,
    broker: Arc<Broker>,
) {
    let notice = (ask.server.clone(), ask.name.clone().unwrap_or_else(|| ask.method.clone()));
    let (id, mut answer) = match broker.ask(ask) {
        Asked::Granted(answer) => {
            send(&mut writer, &Reply::Answer(answer)).await;
            return;
        }
        Asked::Queued { id, answer } => (id, answer),
    };
    crate::notify::approval_needed(notice.0.as_deref(), &notice.1, &id);
    if !send(&mut writer, &Reply::Queued { id: id.clone() }).await {
        broker.withdraw(&id);
        return;
    }
    let mut buf = Vec::new();
    tokio::select! {
        answered = &mut answer => {
            if let Ok(answer) = answered {
                send(&mut writer, &Reply::Answer(answer)).await;
            }
        }
        line = next(&mut reader, &mut buf) => match line {
            Line::Request(Request::Timeout { id: said }) if said == id => broker.timed_out(&id),
            Line::Request(Request::Cancel { id: said }) if said == id => broker.withdraw(&id),
            Line::Closed => broker.withdraw(&id),
            Line::Request(_) => {
                let problem = format!("this connection waits for {id}; only `timeout` or `cancel` for it can follow");
                send(&mut writer, &error(problem)).await;
                broker.withdraw(&id);
            }
            Line::Malformed(problem) => {
                send(&mut writer, &error(problem)).await;
                broker.withdraw(&id);
            }
        }
    }
}

/// Removes the socket and the URL file when the broker stops.
pub(crate) struct Cleanup(pub Vec<PathBuf>);

impl Drop for Cleanup {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}
