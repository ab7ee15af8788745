//! The guard of one client session with one server: the decision path of `clawai
//! proxy`, run on the server's own names with `server` = the configured name. Each pair
//! has its own approvals ("allow for this session" is this client session's) and writes
//! the client session's id in the audit trail.

use clawai_protocol::methods;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use clawai_proxy::{Guard, Later, Outlet};

use crate::core::Core;
use crate::names;
use crate::upstream::Upstream;

/// Where a pair's guard hands what it decides later (an approval, a time-out): given by
/// the session that owns the pair, which delivers it. The pair knows no session.
pub(crate) type Settled = Arc<dyn Fn(Arc<Pair>, Later) + Send + Sync>;

/// One client session's guard for one server.
pub(crate) struct Pair {
    /// The server.
    pub upstream: Arc<Upstream>,
    /// The guard.
    pub guard: Arc<Guard>,
    /// The version of the server's lists the guard last learnt the tools of.
    tools_version: AtomicU64,
}

impl Pair {
    /// The guard of client session `session` (its id in the audit trail) for
    /// `upstream`: `remembered`, what the policy remembers of the session; `settled`,
    /// where what the guard decides later goes.
    pub(crate) fn new(
        core: &Core,
        session: &str,
        remembered: &Arc<clawai_policy::Session>,
        upstream: Arc<Upstream>,
        settled: Settled,
    ) -> Arc<Pair> {
        let server = upstream.name.clone();
        let guard = Guard::new(core.policy.clone(), core.audit.clone(), Some(server.clone()))
            .with_session(session.to_owned())
            .with_ask_options(core.options.ask.clone())
            .remembering_in(Arc::clone(remembered))
            .with_sandbox_cell(upstream.sandbox_cell())
            // The trail shows the ids the client sent, not the gateway's.
            .showing_client_ids()
            .listing_names_as(Arc::new(move |method, name| match method {
                methods::TOOLS_CALL | methods::PROMPTS_GET => Some(names::namespaced(&server, name)),
                methods::RESOURCES_READ => Some(names::resource_uri(&server, name)),
                _ => None,
            }));
        let guard = if upstream.entry.transport.is_remote() { guard.for_remote_server() } else { guard };
        // Calls to what changed since it was approved are refused in the server's names.
        let guard = match upstream.pins() {
            Some(pins) => guard.with_pins(pins),
            None => guard,
        };
        let pair = Arc::new(Pair { upstream, guard: Arc::new(guard), tools_version: AtomicU64::new(u64::MAX) });
        pair.guard.set_outlet(Arc::new(PairOutlet { pair: Arc::downgrade(&pair), settled }));
        pair
    }

    /// Teaches the guard the server's tools (their annotations), when they changed.
    pub(crate) fn learn_tools(&self) {
        let lists = self.upstream.catalog_lists();
        if self.tools_version.swap(lists.version, Ordering::Relaxed) != lists.version {
            let tools = &lists.items[crate::lists::ListKind::Tools.index()];
            self.guard.know_tools(tools.iter().map(|tool| (tool.original.as_str(), tool.annotations)));
        }
    }
}

/// Takes what the guard decides later (an approval, a time-out) to the session. Holds
/// its pair weakly: the guard holds its outlet.
struct PairOutlet {
    pair: Weak<Pair>,
    settled: Settled,
}

impl Outlet for PairOutlet {
    fn later(&self, later: Later) {
        let Some(pair) = self.pair.upgrade() else { return };
        (self.settled)(pair, later);
    }
}
