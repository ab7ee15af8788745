//! Reaching a server: a child process with a minimal environment in its own process
//! group, or a remote endpoint through the `--upstream` client; then the handshake and
//! the first listing.

use std::io;
use std::sync::Arc;

use clawai_http::child::{self, ChildServer};
use clawai_http::link::{FromServer, Link};
use clawai_http::{RemoteOptions, remote};
use serde_json::json;
use tokio::sync::watch;

use super::{INITIALIZE_TIMEOUT, Status, Upstream, lock};
use crate::catalog::ListKind;
use crate::config::McpServerConfig;

/// The variables a child inherits from the gateway (besides its own `env`): what a
/// program needs to run, never the gateway's API keys.
const INHERITED: [&str; 9] = ["PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "SHELL", "TZ"];

/// True for a variable a child inherits.
pub fn inherited(name: &str) -> bool {
    INHERITED.contains(&name) || name.starts_with("LC_")
}

/// The revision the gateway proposes to its servers.
const PROPOSED_VERSION: &str = "2025-11-25";

impl Upstream {
    /// Starts the child, or opens the remote session.
    pub(super) fn connect(&self) -> io::Result<(Link, Option<ChildServer>)> {
        let max_message = self.core().map_or(64 << 20, |core| core.options.max_message);
        match &self.entry.transport {
            McpServerConfig::Stdio { command, args, env } => {
                let mut line = vec![command.clone()];
                line.extend(args.iter().cloned());
                let cwd = self.entry.cwd.clone();
                let (link, child) = child::spawn_with(
                    &line,
                    |command| {
                        command.env_clear();
                        command.envs(std::env::vars_os().filter(|(name, _)| name.to_str().is_some_and(inherited)));
                        command.envs(env);
                        if let Some(cwd) = &cwd {
                            command.current_dir(cwd);
                        }
                    },
                    max_message,
                )?;
                Ok((link, Some(child)))
            }
            McpServerConfig::Http { url, headers } | McpServerConfig::Sse { url, headers } => {
                let lines: Vec<String> = headers.iter().map(|(name, value)| format!("{name}: {value}")).collect();
                // The values were expanded when the configuration was read.
                let options = RemoteOptions::parse(url, &lines, |_| None).map_err(io::Error::other)?;
                Ok((remote::connect(options, max_message), None))
            }
        }
    }

    /// Relays the server's messages until it goes away or is stopped; meanwhile the
    /// handshake and the first listing run. Returns why it ended.
    pub(super) async fn serve(self: &Arc<Self>, link: Link, stop: &mut watch::Receiver<bool>) -> String {
        let Link { to_server, mut from_server } = link;
        *lock(&self.sender) = Some(to_server);
        let setup = tokio::spawn(Arc::clone(self).set_up());
        let reason = loop {
            let item = tokio::select! {
                item = from_server.recv() => item,
                _ = stop.wait_for(|stop| *stop) => break "stopped by the gateway".to_owned(),
            };
            match item {
                Some(FromServer::Message(message)) => self.on_message(message).await,
                Some(FromServer::Oversize { length, .. }) => {
                    tracing::warn!("server `{}` sent a message of {length} bytes, over the limit; dropped", self.name);
                }
                Some(FromServer::Closed(reason)) => break reason,
                None => break "the server's output ended".to_owned(),
            }
        };
        setup.abort();
        reason
    }

    /// `initialize`, `notifications/initialized`, then every list the server has.
    async fn set_up(self: Arc<Self>) {
        let params = json!({
            "protocolVersion": PROPOSED_VERSION,
            // Roots without listChanged: the session is shared, so clients' roots are
            // asked for during their calls only.
            "capabilities": {"sampling": {}, "elicitation": {}, "roots": {}},
            "clientInfo": {"name": "clawai-gateway", "version": env!("CARGO_PKG_VERSION")},
        });
        let result = match self.request("initialize", Some(params), INITIALIZE_TIMEOUT).await {
            Ok(result) => result,
            Err(why) => {
                tracing::warn!("server `{}`: {why}", self.name);
                // Ending the link stops the child; the run loop starts it again later.
                lock(&self.sender).take();
                return;
            }
        };
        *self.initialized.write().unwrap_or_else(|p| p.into_inner()) = Some(result.clone());
        self.notify("notifications/initialized", None).await;
        for kind in ListKind::ALL {
            if result.pointer(&format!("/capabilities/{}", kind.capability())).is_some_and(|c| !c.is_null()) {
                self.refresh(kind).await;
            }
        }
        if matches!(self.status(), Status::Starting) {
            self.set_status(Status::Up);
        }
        tracing::info!("server `{}` is up: {} tools", self.name, self.lists().items[ListKind::Tools.index()].len());
        if let Some(core) = self.core() {
            core.catalog_changed();
        }
    }
}
