//! Why `clawai ui` could not run. A leaf.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Why `clawai ui` could not run.
#[derive(Debug, thiserror::Error)]
pub enum UiError {
    /// A broker already listens on the socket.
    #[error("an approval broker is already running ({}){}; use it, or stop it first", .socket.display(), if .url.is_empty() { String::new() } else { format!(" at {}", .url) })]
    AlreadyRunning {
        /// Its socket.
        socket: PathBuf,
        /// Its page, from ui.url.
        url: String,
    },
    /// A non-loopback address without `--public`.
    #[error(
        "{0} is reachable from other machines; the page answers approvals, so it listens on loopback (127.0.0.1) unless you pass --public"
    )]
    NotLoopback(SocketAddr),
    /// A file or socket operation failed.
    #[error("{what}: {error}")]
    Io {
        /// What was being done.
        what: String,
        /// Why it failed.
        error: std::io::Error,
    },
}
