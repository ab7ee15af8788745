//! A blocking client of the broker: one connection per asked call or per command.

use std::io::{BufRead, BufReader, ErrorKind, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::protocol::{Answer, Ask, PendingItem, Reply, Request, Scope};

/// What can go wrong talking to the broker.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Nothing listens on the socket: `clawai ui` is not running.
    #[error("no approval broker is running (nothing listens on {}); start one with `clawai ui`", .0.display())]
    NoBroker(PathBuf),
    /// Reading or writing the socket failed.
    #[error("talking to the approval broker failed: {0}")]
    Io(#[from] std::io::Error),
    /// The broker closed the connection before answering.
    #[error("the approval broker closed the connection before answering")]
    Closed,
    /// The broker sent a line that is not part of the protocol.
    #[error("the approval broker sent an unexpected reply: {0}")]
    Protocol(String),
    /// The broker refused the request.
    #[error("{0}")]
    Refused(String),
}

/// A connection to the broker.
pub struct Client {
    stream: UnixStream,
    reader: BufReader<UnixStream>,
    /// Bytes of a line not yet complete when a read timed out.
    partial: Vec<u8>,
}

impl Client {
    /// Connects to the broker at [`crate::socket_path`].
    pub fn connect() -> Result<Client, Error> {
        Client::connect_to(&crate::socket_path())
    }

    /// Connects to the broker listening at `path`.
    pub fn connect_to(path: &Path) -> Result<Client, Error> {
        let stream = UnixStream::connect(path).map_err(|e| match e.kind() {
            ErrorKind::NotFound | ErrorKind::ConnectionRefused => Error::NoBroker(path.to_path_buf()),
            _ => Error::Io(e),
        })?;
        let reader = BufReader::new(stream.try_clone()?);
        Ok(Client { stream, reader, partial: Vec::new() })
    }

    /// Asks a person about a call. The answer may already be there (a grant); else the
    /// call is queued and [`Pending::wait`] waits for the person.
    pub fn ask(mut self, ask: &Ask) -> Result<Pending, Error> {
        self.send(&Request::Ask { ask: Box::new(ask.clone()) })?;
        // The broker queues at once; one that does not answer must not stall the proxy.
        match self.read(Some(Instant::now() + ASK_TAKEN_WITHIN))? {
            Some(Reply::Queued { id }) => Ok(Pending { client: self, id, answer: None }),
            Some(Reply::Answer(answer)) => Ok(Pending { client: self, id: answer.id.clone(), answer: Some(answer) }),
            other => Err(unexpected(other)),
        }
    }

    /// The pending approvals, oldest first.
    pub fn list(mut self) -> Result<Vec<PendingItem>, Error> {
        self.send(&Request::List)?;
        match self.read(None)? {
            Some(Reply::Pending { items }) => Ok(items),
            other => Err(unexpected(other)),
        }
    }

    /// Approves the pending call `id`.
    pub fn approve(mut self, id: &str, scope: Scope) -> Result<(), Error> {
        self.send(&Request::Approve { id: id.to_owned(), scope })?;
        self.expect_ok()
    }

    /// Refuses the pending call `id`.
    pub fn deny(mut self, id: &str) -> Result<(), Error> {
        self.send(&Request::Deny { id: id.to_owned() })?;
        self.expect_ok()
    }

    fn expect_ok(&mut self) -> Result<(), Error> {
        match self.read(None)? {
            Some(Reply::Ok) => Ok(()),
            other => Err(unexpected(other)),
        }
    }

    fn send(&mut self, request: &Request) -> Result<(), Error> {
        let mut line = serde_json::to_vec(request).map_err(|e| Error::Protocol(e.to_string()))?;
        line.push(b'\n');
        self.stream.write_all(&line)?;
        Ok(())
    }

    /// Reads one reply; `Ok(None)` when `deadline` passed first.
    fn read(&mut self, deadline: Option<Instant>) -> Result<Option<Reply>, Error> {
        loop {
            let timeout = match deadline {
                Some(deadline) => match deadline.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Ok(None),
                },
                None => None,
            };
            self.stream.set_read_timeout(timeout)?;
            // read_until keeps what it read before a timeout in `partial`, so a line
            // split across two waits is still read whole.
            match self.reader.read_until(b'\n', &mut self.partial) {
                Ok(0) => return Err(Error::Closed),
                Ok(_) if !self.partial.ends_with(b"\n") => return Err(Error::Closed),
                Ok(_) => {
                    let line = std::mem::take(&mut self.partial);
                    let reply = serde_json::from_slice::<Reply>(&line)
                        .map_err(|_| Error::Protocol(String::from_utf8_lossy(&line).trim().to_owned()))?;
                    return match reply {
                        Reply::Error { message } => Err(Error::Refused(message)),
                        reply => Ok(Some(reply)),
                    };
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            }
        }
    }
}

fn unexpected(reply: Option<Reply>) -> Error {
    match reply {
        Some(reply) => Error::Protocol(serde_json::to_string(&reply).unwrap_or_default()),
        None => Error::Closed,
    }
}

/// How long the broker may take to queue an ask before the proxy stops waiting for it.
const ASK_TAKEN_WITHIN: Duration = Duration::from_secs(3);

/// An asked call: queued at the broker, or already answered by a grant. Dropping it
/// closes the connection, which withdraws the ask (as [`Pending::cancel`] does).
pub struct Pending {
    client: Client,
    id: String,
    answer: Option<Answer>,
}

impl Pending {
    /// The approval's id, which a person types in `clawai approve ID`.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Waits up to `timeout` for the answer; `None` when none came in time (then call
    /// [`Pending::timed_out`] or [`Pending::cancel`], or wait again).
    pub fn wait(&mut self, timeout: Duration) -> Result<Option<Answer>, Error> {
        if let Some(answer) = self.answer.clone() {
            return Ok(Some(answer));
        }
        let deadline = Instant::now() + timeout;
        match self.client.read(Some(deadline))? {
            None => Ok(None),
            Some(Reply::Answer(answer)) if answer.id == self.id => {
                self.answer = Some(answer.clone());
                Ok(Some(answer))
            }
            other => Err(unexpected(other)),
        }
    }

    /// Tells the broker the call was answered "approval pending": the approval stays
    /// listed, and approving it lets the next identical call through once.
    pub fn timed_out(mut self) -> Result<(), Error> {
        let id = self.id.clone();
        self.client.send(&Request::Timeout { id })
    }

    /// Withdraws the ask (the client cancelled the call).
    pub fn cancel(mut self) -> Result<(), Error> {
        let id = self.id.clone();
        self.client.send(&Request::Cancel { id })
    }

    /// A handle another thread can use to withdraw the ask while this one blocks in
    /// [`Pending::wait`] (a client's cancellation of the held call).
    pub fn canceller(&self) -> Result<Canceller, Error> {
        Ok(Canceller { stream: self.client.stream.try_clone()?, id: self.id.clone() })
    }
}

/// Withdraws an asked call from another thread; see [`Pending::canceller`].
pub struct Canceller {
    stream: UnixStream,
    id: String,
}

impl Canceller {
    /// Sends `cancel` and ends the connection, so that a [`Pending::wait`] in progress
    /// returns [`Error::Closed`] at once.
    pub fn cancel(mut self) -> Result<(), Error> {
        let mut line =
            serde_json::to_vec(&Request::Cancel { id: self.id.clone() }).map_err(|e| Error::Protocol(e.to_string()))?;
        line.push(b'\n');
        self.stream.write_all(&line)?;
        self.stream.shutdown(std::net::Shutdown::Both)?;
        Ok(())
    }
}
