//! How the gateway runs: what its user chose at start, read by the core, the sessions
//! and every server.

use std::time::Duration;

use clawai_proxy::AskOptions;

/// How the gateway runs.
#[derive(Debug, Clone)]
pub struct GatewayOptions {
    /// How a call a `prompt` rule holds is asked about.
    pub ask: AskOptions,
    /// How long a removed server's calls in flight get before they are cancelled.
    pub drain: Duration,
    /// How long a child gets to exit, before SIGTERM and again before SIGKILL.
    pub grace: Duration,
    /// The largest message accepted either way.
    pub max_message: usize,
    /// The most items on one page of a merged list.
    pub page_size: usize,
    /// The pin store (`clawai pins`); `None`: what servers list is not pinned.
    pub pins_dir: Option<std::path::PathBuf>,
    /// How long a client session's own instance of a `"session": "per-client"` server
    /// may sit unused (no call) before it is stopped; its next call starts a new one.
    pub per_client_idle: Duration,
    /// The gateway serves one client session only (stdio): a per-client server then runs
    /// once, as a shared one does (an instance of its own would change nothing).
    pub one_client: bool,
    /// The embedding model of `search_tools` (`--embeddings`, `search.embeddings`);
    /// `None`: lexical ranking only.
    pub search_model: Option<crate::embeddings::SearchModel>,
}

impl Default for GatewayOptions {
    fn default() -> Self {
        GatewayOptions {
            ask: AskOptions::default(),
            drain: Duration::from_secs(30),
            grace: Duration::from_secs(2),
            max_message: 64 << 20,
            page_size: 500,
            pins_dir: None,
            per_client_idle: Duration::from_secs(600),
            one_client: false,
            search_model: None,
        }
    }
}
