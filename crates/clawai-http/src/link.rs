//! [`Link`]: the two channels between a front (stdio or HTTP) and a server (a child
//! process or a remote endpoint). Every message in either direction is one complete
//! JSON-RPC message; the front runs each through the session's guard.

use tokio::sync::mpsc;

/// Messages queued towards one side before the sender waits (backpressure).
pub const CHANNEL_DEPTH: usize = 64;

/// What arrives from the server.
#[derive(Debug)]
pub enum FromServer {
    /// One message, as the server wrote it.
    Message(Vec<u8>),
    /// A message over the size limit: its first bytes and its length.
    Oversize {
        /// The first bytes (enough to find the id).
        prefix: Vec<u8>,
        /// Its full length.
        length: usize,
    },
    /// The server is gone (exited, unreachable for good); nothing follows.
    Closed(String),
}

/// A front's handle on a server.
pub struct Link {
    /// Messages for the server. Dropping every sender ends the session with it: a child's
    /// stdin is closed, a remote session is deleted.
    pub to_server: mpsc::Sender<Vec<u8>>,
    /// Messages from the server.
    pub from_server: mpsc::Receiver<FromServer>,
}

impl Link {
    /// A link and the server-side ends of its channels.
    pub fn pair() -> (Link, mpsc::Receiver<Vec<u8>>, mpsc::Sender<FromServer>) {
        let (to_server, to_server_rx) = mpsc::channel(CHANNEL_DEPTH);
        let (from_server_tx, from_server) = mpsc::channel(CHANNEL_DEPTH);
        (Link { to_server, from_server }, to_server_rx, from_server_tx)
    }
}

/// Opens a link to a server that lives in this process (the gateway): one per session of
/// a front.
pub trait OpenLink: Send + Sync + std::fmt::Debug {
    /// A new session with the server. `shared`: the id the session's memory is kept
    /// under in the session store (the front's session id), when it has one.
    fn open_link(&self, shared: Option<&str>) -> std::io::Result<Link>;
}
