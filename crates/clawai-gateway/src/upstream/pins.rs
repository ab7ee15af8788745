//! Pinning behind the gateway: what a server lists is compared with what a person
//! approved before it enters the catalog, exactly as `clawai proxy` compares what passes
//! it (the same pin store, so `clawai pins` reviews both). A changed or added tool is
//! left out of every session's list and its calls are refused by the sessions' guards;
//! changed `instructions` hold the whole server. What is new or changed is scanned for
//! poisoning too, and a tool with a finding at or above `quarantine_on` is quarantined
//! (held the same way, also on first sight). An approval re-lists the server, so
//! sessions get `list_changed` and the tool back.
//!
//! clawai's built-in tools and in-process SDK servers are compiled in, so they are
//! not pinned.

use std::path::Path;
use std::sync::{Arc, Mutex};

use clawai_proxy::pins::{Identity, Kind, Listener, ScanSettings, Tracker};
use serde_json::Value;

use super::Upstream;
use crate::config::{McpServerConfig, Transport};
use crate::lists::ListKind;

/// A server's pins: its tracker, or why the pin file could not be read.
pub(crate) struct Pins {
    tracker: Result<Option<Arc<Tracker>>, String>,
    /// Re-lists the server when a person approves something (held weakly by the
    /// tracker: kept alive here).
    listener: Mutex<Option<Arc<Listener>>>,
}

impl Pins {
    /// The pins of server `name` in `dir` (`None`: the gateway pins nothing), or in
    /// `shared` (cluster mode: the pins every replica reads) when pinning is on.
    pub(crate) fn open(
        dir: Option<&Path>,
        shared: Option<&Arc<dyn clawai_store::Documents>>,
        name: &str,
        transport: &Transport,
    ) -> Pins {
        let identity = match transport {
            Transport::Mcp(McpServerConfig::Stdio { command, args, .. }) => {
                let argv: Vec<String> = std::iter::once(command.clone()).chain(args.iter().cloned()).collect();
                Some(Identity::command(name, &argv))
            }
            Transport::Mcp(McpServerConfig::Http { url, .. } | McpServerConfig::Sse { url, .. }) => {
                Some(Identity::url(name, url.clone()))
            }
            Transport::Builtin | Transport::InProcess(_) => None,
        };
        let tracker = match (dir, identity) {
            (Some(dir), Some(identity)) => {
                let store = match shared {
                    Some(documents) => clawai_proxy::pins::store::PinStore::in_documents(Arc::clone(documents)),
                    None => clawai_proxy::pins::store::PinStore::dir(dir),
                };
                Tracker::open_in(store, identity)
                    .map(|tracker| Some(Arc::new(tracker)))
                    .map_err(|error| error.to_string())
            }
            _ => Ok(None),
        };
        Pins { tracker, listener: Mutex::new(None) }
    }
}

fn pinned_kind(kind: ListKind) -> Option<Kind> {
    match kind {
        ListKind::Tools => Some(Kind::Tool),
        ListKind::Prompts => Some(Kind::Prompt),
        ListKind::Templates => Some(Kind::ResourceTemplate),
        ListKind::Resources => None,
    }
}

impl Upstream {
    /// The tracker, when the policy in force pins (`[guards] pinning`, on by default).
    pub(crate) fn pins(&self) -> Option<Arc<Tracker>> {
        self.pins_and_scan().map(|(tracker, _)| tracker)
    }

    /// The tracker and the poisoning scan's settings (`[guards] scan`, `quarantine_on`),
    /// when the policy in force pins.
    fn pins_and_scan(&self) -> Option<(Arc<Tracker>, ScanSettings)> {
        let guards = self.context.policy.current().guards();
        if !guards.pinning {
            return None;
        }
        let tracker = self.pins.tracker.as_ref().ok().cloned().flatten()?;
        Some((tracker, clawai_proxy::scan_settings(&guards)))
    }

    /// Why the server cannot start: its pin file cannot be read while pinning is on (it
    /// is never pinned anew silently).
    pub(super) fn pins_problem(&self) -> Option<String> {
        let problem = self.pins.tracker.as_ref().err()?;
        self.context
            .policy
            .current()
            .guards()
            .pinning
            .then(|| format!("{problem}; pinning is on, so the server was not started"))
    }

    /// What pinning holds of this server now, for the line that says it is up: the
    /// number of held tools, and whether its instructions hold all of it.
    pub(super) fn held_now(&self) -> (usize, bool) {
        let Some((tracker, _)) = self.pins_and_scan() else { return (0, false) };
        let file = tracker.snapshot();
        (file.tools.values().filter(|entry| entry.state().is_held()).count(), file.blocked())
    }

    /// Leaves out of a complete listing what changed or appeared since a person approved
    /// it, or what the poisoning scan quarantined (everything when the server's
    /// instructions changed or were quarantined).
    pub(super) fn keep_approved(&self, kind: ListKind, items: &mut Vec<Value>) {
        if let (Some((tracker, scan)), Some(pinned)) = (self.pins_and_scan(), pinned_kind(kind)) {
            let compared = tracker.retain_approved(pinned, items, scan);
            self.guard.record_compared(kind.method(), &compared, tracker.blocked());
        }
    }

    /// The `initialize` result to keep: without `instructions` that changed since they
    /// were approved (the server is then held until they are).
    pub(super) fn approved_initialize(&self, result: Value) -> Value {
        let Some((tracker, scan)) = self.pins_and_scan() else { return result };
        let bytes = serde_json::to_vec(&result).expect("a JSON value encodes");
        match tracker.filter_instructions(&bytes, scan) {
            Some(stripped) => serde_json::from_slice(&stripped).unwrap_or(result),
            None => result,
        }
    }

    /// From now on, a person's approval of something this server listed re-lists it
    /// (the sessions are told what their lists gained).
    pub(super) fn listen_for_approvals(self: &Arc<Self>) {
        let Some(tracker) = self.pins.tracker.as_ref().ok().cloned().flatten() else { return };
        let mut slot = self.pins.listener.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_some() {
            return;
        }
        let upstream = Arc::downgrade(self);
        let runtime = tokio::runtime::Handle::current();
        let listener: Arc<Listener> = Arc::new(move |_released: &[Kind]| {
            let Some(upstream) = upstream.upgrade() else { return };
            runtime.spawn(async move {
                for kind in [ListKind::Tools, ListKind::Prompts, ListKind::Templates] {
                    upstream.refresh(kind).await;
                }
            });
        });
        tracker.subscribe(&listener);
        *slot = Some(listener);
    }
}
