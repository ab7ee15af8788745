#![warn(missing_docs)]
//! `clawai gateway`: many MCP servers behind one guarded endpoint.
//!
//! The gateway is an MCP server to its clients and a client to its servers. It answers
//! `initialize` and the lists itself, from a catalog of what every server listed, and
//! routes each call to the server that has what it names, through the same decision path
//! as `clawai proxy` (policy, approvals, audit), on the server's own names.
//!
//! * [`config`]: the configuration file (servers, `agent.allowedTools`).
//! * [`names`]: `S__tool`, short forms of long names, `clawai://S/URI`.
//! * `upstream`: one server: started, listed, restarted, drained; it reports what
//!   happened as typed events (`upstream::events`) to the `hub`, which holds the
//!   sessions (`registry`) and tells them.
//! * `lists`: the four kinds of list, a server's items as the gateway lists them.
//! * `catalog`: every server's items under the gateway's names.
//! * `core`: what every session shares (policy, audit, servers, catalog, skills).
//! * `view`: what one session sees (computed in one place).
//! * `session`: one client session; `pair`: its guard for one server.
//! * [`cursor`]: opaque cursors of the merged lists; `snapshots`: the lists they page.
//! * [`reload`]: the configuration, watched.
//! * [`search`]: ranking tools for a free-text query.
//! * [`check`]: what the gateway has and what is wrong with it (`--check`).

mod catalog;
pub mod check;
pub mod config;
mod core;
pub mod cursor;
pub mod embeddings;
mod hub;
mod lists;
pub mod names;
mod options;
mod pair;
mod raw_ids;
mod registry;
pub mod reload;
mod rewrite;
pub mod search;
mod session;
pub mod skills;
mod snapshots;
pub mod stdio;
mod sync;
mod tool_search;
mod upstream;
mod view;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clawai_http::link::{Link, OpenLink};
use clawai_policy::glob::Glob;
use clawai_proxy::{AuditLog, PolicyHandle};

pub use crate::config::{GatewayConfig, InProcessServer, McpServerConfig, ServerEntry, SessionMode, Transport};
use crate::core::Core;
pub use crate::options::GatewayOptions;
pub(crate) use crate::sync::lock;
use crate::upstream::Upstream;
pub use clawai_http::child::inherited_variable;

/// The name under which clawai's built-in tools are served (`builtin__read_file`, …).
pub const BUILTIN_SERVER: &str = config::BUILTIN_NAME;

/// A configuration the gateway cannot apply.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// A glob of `agent.allowedTools` is not valid.
    #[error("agent.allowedTools: {0}")]
    AllowedTools(String),
}

/// The gateway: its servers and its sessions.
#[derive(Debug)]
pub struct Gateway {
    core: Arc<Core>,
    /// The sessions, and where the servers report.
    hub: Arc<hub::Hub>,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core").finish_non_exhaustive()
    }
}

impl Gateway {
    /// Starts every server of `config` (in the background: this returns at once). Must be
    /// called inside a tokio runtime.
    pub fn start(
        config: &GatewayConfig,
        policy: PolicyHandle,
        audit: AuditLog,
        options: GatewayOptions,
    ) -> Result<Arc<Gateway>, GatewayError> {
        let core = Core::new(policy, audit, options);
        let gateway = Arc::new(Gateway { hub: hub::Hub::new(Arc::clone(&core)), core });
        gateway.apply(config)?;
        tell_internal_servers(config);
        Ok(gateway)
    }

    /// Makes the running servers those of `config`: added ones start, removed ones
    /// drain, changed ones start anew while the old instance drains. Nothing changes when
    /// the configuration cannot be applied.
    pub fn apply(&self, config: &GatewayConfig) -> Result<(), GatewayError> {
        let allowed = match &config.allowed_tools {
            Some(globs) => Some(Glob::any_of(globs).map_err(|error| GatewayError::AllowedTools(error.to_string()))?),
            None => None,
        };
        let core = &self.core;
        core.set_allowed_tools(allowed);
        let wanted: BTreeMap<&String, &ServerEntry> =
            config.servers.iter().filter(|(_, entry)| !entry.disabled).collect();
        for (name, entry) in &wanted {
            match core.upstream(name) {
                Some(running) if running.entry == **entry => {}
                Some(_) | None => {
                    let upstream = Upstream::start(self.hub.context(), (*name).clone(), (*entry).clone());
                    if let Some(old) = core.put_upstream(upstream) {
                        tracing::info!("server `{name}` changed: starting it anew; the old one drains");
                        self.drain(old);
                    } else {
                        tracing::info!("server `{name}`: starting");
                    }
                }
            }
        }
        for running in core.upstreams() {
            if !wanted.contains_key(&running.name)
                && let Some(old) = core.remove_upstream(&running.name)
            {
                tracing::info!("server `{}` was removed: draining it", old.name);
                self.drain(old);
            }
        }
        self.hub.catalog_changed();
        Ok(())
    }

    fn drain(&self, old: Arc<Upstream>) {
        let core = Arc::clone(&self.core);
        core.draining.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::clone(&old));
        let drain = core.options.drain;
        tokio::spawn(async move {
            Arc::clone(&old).drain(drain).await;
            core.draining.lock().unwrap_or_else(|p| p.into_inner()).retain(|u| !Arc::ptr_eq(u, &old));
        });
    }

    /// A new client session behind a link (for the HTTP front). `shared`: the id its
    /// memory is kept under in the session store (the front's session id, so that a
    /// replica taking the session over finds its taint, grants and active skill).
    pub fn open_session(&self, shared: Option<&str>) -> Link {
        self.hub.open_session(shared)
    }

    /// A new client session that the caller drives: it hands each message from the
    /// client to [`ClientSession::receive`] and writes what comes out of the receiver.
    pub fn connect(&self) -> (ClientSession, tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>) {
        let (session, outbox) = self.hub.connect();
        (ClientSession(session), outbox)
    }

    /// Serves these skills (replacing the ones before): each as a prompt and a tool
    /// `skill__NAME`; sessions are told what their lists gained or lost.
    pub fn set_skills(&self, skills: skills::Loaded) {
        self.hub.set_skills(skills);
    }

    /// Stops every server (and every process they started), per-client servers' instances
    /// included.
    pub async fn shutdown(&self) {
        let mut all = self.core.upstreams();
        all.extend(self.core.draining.lock().unwrap_or_else(|p| p.into_inner()).iter().cloned());
        let instances: Vec<Arc<Upstream>> = all.iter().flat_map(|upstream| upstream.take_instances()).collect();
        all.extend(instances);
        let stopping: Vec<_> =
            all.into_iter().map(|upstream| tokio::spawn(async move { upstream.stop().await })).collect();
        for stopped in stopping {
            let _ = stopped.await;
        }
        self.core.audit.flush();
    }

    /// The names of the running servers and where each is in its life, for logs.
    pub fn servers(&self) -> Vec<(String, String)> {
        self.core.upstreams().iter().map(|u| (u.name.clone(), format!("{:?}", u.status()))).collect()
    }
}

impl Gateway {
    /// Waits until every server is up or has failed to start once, at most `timeout`.
    pub async fn wait_until_started(&self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline && !self.core.every_server_started() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the gateway has now, and what is wrong with it.
    pub fn report(&self) -> check::Report {
        self.core.report()
    }
}

/// Says at start which servers are internal (their tools are listed only while a skill
/// shows them), and how to list them: otherwise a client sees a list of almost nothing
/// and nothing says why.
fn tell_internal_servers(config: &GatewayConfig) {
    let running = config.servers.iter().filter(|(_, entry)| !entry.disabled);
    let internal: Vec<&str> =
        running.clone().filter(|(_, entry)| entry.internal_only).map(|(name, _)| name.as_str()).collect();
    if internal.is_empty() {
        return;
    }
    let how = "a skill whose `allowed-tools` names their tools shows them, and `search_tools` finds them; \
               `\"internalOnly\": false` on a server lists its tools always";
    if internal.len() == running.count() {
        tracing::warn!(
            "every server is internal ({}): clients are listed only `search_tools` and the skills; {how}",
            internal.join(", ")
        );
    } else {
        tracing::info!("internal servers, their tools not listed: {}; {how}", internal.join(", "));
    }
}

/// A client session a front drives itself (see [`Gateway::connect`]).
pub struct ClientSession(Arc<session::Session>);

impl ClientSession {
    /// One message from the client, which the front checked is one valid JSON-RPC
    /// message.
    pub async fn receive(&self, message: Vec<u8>) {
        self.0.from_client(message).await;
    }

    /// A message for the client from the front itself, in order with the gateway's.
    pub fn reply(&self, message: Vec<u8>) {
        self.0.send(message);
    }

    /// A client line that is not one valid JSON-RPC message: refused through the guard's
    /// refusal stage (recorded in the trail), and answered. False when the line is valid
    /// (the front hands it to [`ClientSession::receive`]).
    pub fn refuse_unparsable(&self, line: &[u8]) -> bool {
        let refused = self.0.with_own_requests(|own| own.refuse_unparsable(line));
        refused.map(|answer| self.0.send(answer)).is_some()
    }

    /// A client line over the front's size limit: refused (recorded) and answered.
    pub fn refuse_oversize(&self, prefix: &[u8], length: usize, limit: usize) {
        let answer = self.0.with_own_requests(|own| own.refuse_oversize(prefix, length, limit));
        self.0.send(answer);
    }

    /// The client is going away: its calls still in flight are cancelled at the servers
    /// (for a front that cannot give the session up at once).
    pub async fn cancel_all(&self) {
        self.0.closed().await;
    }
}

impl OpenLink for Gateway {
    fn open_link(&self, shared: Option<&str>) -> std::io::Result<Link> {
        Ok(self.open_session(shared))
    }
}
