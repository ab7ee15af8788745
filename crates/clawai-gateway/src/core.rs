//! What every session of the gateway shares: the policy and audit trail, the running
//! servers, the merged catalog, and the sessions themselves (told when what they see
//! changes).

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::Duration;

use clawai_policy::Policy;
use clawai_policy::glob::Glob;
use clawai_proxy::{AskOptions, AuditLog, PolicyHandle};

use crate::catalog::Catalog;
use crate::cursor::Cursors;
use crate::lock;
use crate::session::Session;
use crate::skills::Loaded;
use crate::upstream::Upstream;

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

/// The shared state.
pub(crate) struct Core {
    pub(crate) policy: PolicyHandle,
    pub(crate) audit: AuditLog,
    pub(crate) options: GatewayOptions,
    pub(crate) cursors: Cursors,
    /// The running servers, by name (a removed one is not here; it drains on its own).
    upstreams: RwLock<BTreeMap<String, Arc<Upstream>>>,
    /// Servers removed from the configuration, named in the error their calls get.
    removed: Mutex<HashSet<String>>,
    /// `agent.allowedTools`: the most any session may see.
    allowed_tools: RwLock<Option<Arc<Glob>>>,
    catalog: RwLock<Arc<Catalog>>,
    generation: AtomicU64,
    sessions: Mutex<Vec<Weak<Session>>>,
    /// Servers on their way out, stopped at shutdown if still there.
    pub(crate) draining: Mutex<Vec<Arc<Upstream>>>,
    /// When the gateway started: first lists wait a moment for servers still starting.
    started: std::time::Instant,
    /// The tools the policy always denies, for the catalog generation and policy they
    /// were worked out for (once, for every session).
    always_denied: Mutex<Option<AlwaysDenied>>,
    /// The skills, as last loaded.
    skills: RwLock<Arc<Loaded>>,
    /// The search index, for the catalog generation and skills it was built from.
    search: Mutex<Option<SearchIndex>>,
    /// The serial number of the search index for a catalog generation and skills.
    search_serial: Mutex<Option<(u64, Arc<Loaded>, u64)>>,
    /// The unmatched `allowed-tools` patterns already logged.
    pub(crate) patterns_told: crate::check::PatternsTold,
}

/// The tools a policy denies whatever their arguments (by tool position in the catalog),
/// for the catalog generation and the policy they were worked out for.
type AlwaysDenied = (u64, Arc<Policy>, Arc<Vec<bool>>);

/// The search index, for the catalog generation and the skills it was built from.
type SearchIndex = (u64, Arc<Loaded>, Built);

/// A search index and its serial number (the key of its documents' vectors).
pub(crate) type Built = (Arc<crate::search::Index>, u64);

/// How long after start the first lists wait for servers still starting.
const SETTLE: Duration = Duration::from_millis(1500);

impl Core {
    pub(crate) fn new(policy: PolicyHandle, audit: AuditLog, options: GatewayOptions) -> Arc<Core> {
        let cursors = Cursors::with_key(options.ask.stores.keyring.key(clawai_store::KeyPurpose::Cursors));
        let core = Arc::new(Core {
            policy,
            audit,
            options,
            cursors,
            upstreams: RwLock::default(),
            removed: Mutex::default(),
            allowed_tools: RwLock::default(),
            catalog: RwLock::default(),
            generation: AtomicU64::new(0),
            sessions: Mutex::default(),
            draining: Mutex::default(),
            started: std::time::Instant::now(),
            always_denied: Mutex::default(),
            skills: RwLock::default(),
            search: Mutex::default(),
            search_serial: Mutex::default(),
            patterns_told: Mutex::default(),
        });
        // A reloaded policy may leave tools out of the lists, or put them back.
        let weak = Arc::downgrade(&core);
        core.policy.on_replace(Box::new(move || {
            if let Some(core) = weak.upgrade() {
                for session in core.sessions() {
                    session.view_may_have_changed();
                }
            }
        }));
        core
    }

    /// The running server named `name`.
    pub(crate) fn upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    /// Every running server, in name order.
    pub(crate) fn upstreams(&self) -> Vec<Arc<Upstream>> {
        self.upstreams.read().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// Puts `upstream` in service under its name; returns the one it replaces.
    pub(crate) fn put_upstream(&self, upstream: Arc<Upstream>) -> Option<Arc<Upstream>> {
        lock(&self.removed).remove(&upstream.name);
        self.upstreams.write().unwrap_or_else(|p| p.into_inner()).insert(upstream.name.clone(), upstream)
    }

    /// Takes server `name` out of service (removed from the configuration).
    pub(crate) fn remove_upstream(&self, name: &str) -> Option<Arc<Upstream>> {
        lock(&self.removed).insert(name.to_owned());
        self.upstreams.write().unwrap_or_else(|p| p.into_inner()).remove(name)
    }

    /// True when server `name` was removed from the configuration.
    pub(crate) fn was_removed(&self, name: &str) -> bool {
        lock(&self.removed).contains(name)
    }

    /// `agent.allowedTools`.
    pub(crate) fn allowed_tools(&self) -> Option<Arc<Glob>> {
        self.allowed_tools.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    pub(crate) fn set_allowed_tools(&self, allowed: Option<Glob>) {
        *self.allowed_tools.write().unwrap_or_else(|p| p.into_inner()) = allowed.map(Arc::new);
    }

    /// The skills, as last loaded.
    pub(crate) fn skills(&self) -> Arc<Loaded> {
        Arc::clone(&self.skills.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// Replaces the skills; every session is told what its lists gained or lost.
    pub(crate) fn set_skills(&self, skills: Loaded) {
        *self.skills.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(skills);
        let skills = self.skills();
        for session in self.sessions() {
            // A skill that is gone is no longer active (a new one of its name is not
            // active until asked for).
            session.forget_skill_unless(|name| skills.get(name).is_some());
            session.view_may_have_changed();
        }
        self.embed_in_background();
        self.warn_of_unmatched_patterns();
    }

    /// The search index of `catalog`'s tools and `skills` (built once for both), and its
    /// serial number (the key of its documents' vectors).
    pub(crate) fn search_index(&self, catalog: &Arc<Catalog>, skills: &Arc<Loaded>) -> Built {
        let serial = self.search_serial(catalog, skills);
        let mut cached = lock(&self.search);
        if let Some((generation, seen, (index, built_serial))) = cached.as_ref()
            && *generation == catalog.generation
            && Arc::ptr_eq(seen, skills)
        {
            return (Arc::clone(index), *built_serial);
        }
        let index = Arc::new(crate::session::search_index(catalog, skills));
        *cached = Some((catalog.generation, Arc::clone(skills), (Arc::clone(&index), serial)));
        (index, serial)
    }

    /// The serial number of the search index of `catalog` and `skills`. A new one is
    /// handed to the embedding model, if there is one, whose thread makes the texts and
    /// embeds them: whoever saw the change does not wait.
    fn search_serial(&self, catalog: &Arc<Catalog>, skills: &Arc<Loaded>) -> u64 {
        let mut current = lock(&self.search_serial);
        if let Some((generation, seen, serial)) = current.as_ref()
            && *generation == catalog.generation
            && Arc::ptr_eq(seen, skills)
        {
            return *serial;
        }
        let serial = current.as_ref().map_or(0, |(_, _, serial)| serial + 1);
        *current = Some((catalog.generation, Arc::clone(skills), serial));
        if let Some(model) = &self.options.search_model {
            let (catalog, skills) = (Arc::clone(catalog), Arc::clone(skills));
            model.index_changed(serial, Box::new(move || crate::session::embedding_texts(&catalog, &skills)));
        }
        serial
    }

    /// With an embedding model, has the current tools and skills embedded now rather
    /// than at the first search.
    fn embed_in_background(&self) {
        if self.options.search_model.is_some() {
            self.search_serial(&self.catalog(), &self.skills());
        }
    }

    /// The merged catalog.
    pub(crate) fn catalog(&self) -> Arc<Catalog> {
        Arc::clone(&self.catalog.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The policy in force and, by tool index of `catalog`, the tools it denies whatever
    /// their arguments.
    pub(crate) fn always_denied(&self, catalog: &Catalog) -> (Arc<Policy>, Arc<Vec<bool>>) {
        let policy = self.policy.current();
        let mut cached = lock(&self.always_denied);
        if let Some((generation, seen, denied)) = cached.as_ref()
            && *generation == catalog.generation
            && Arc::ptr_eq(seen, &policy)
        {
            return (policy, Arc::clone(denied));
        }
        let denied = Arc::new(catalog.always_denied_tools(&policy));
        *cached = Some((catalog.generation, Arc::clone(&policy), Arc::clone(&denied)));
        (policy, denied)
    }

    /// Something a session may see changed (a list, a server, the configuration): the
    /// catalog is rebuilt and every session told what changed for it.
    pub(crate) fn catalog_changed(&self) {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let catalog = Arc::new(Catalog::build(&self.upstreams(), generation));
        {
            let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
            if current.generation > generation {
                return; // a later rebuild already landed
            }
            *current = catalog;
        }
        for session in self.sessions() {
            session.view_may_have_changed();
        }
        self.warn_of_unmatched_patterns();
        self.embed_in_background();
    }

    /// Every open session.
    pub(crate) fn sessions(&self) -> Vec<Arc<Session>> {
        let mut sessions = lock(&self.sessions);
        sessions.retain(|session| session.strong_count() > 0);
        sessions.iter().filter_map(Weak::upgrade).collect()
    }

    /// Waits, in the gateway's first moments only, for servers still starting: a client
    /// that lists at once gets what comes up quickly, and nothing waits for a slow one
    /// (its tools come later, with `list_changed`).
    pub(crate) async fn settle(&self) {
        let deadline = self.started + SETTLE;
        while std::time::Instant::now() < deadline
            && self.upstreams().iter().any(|upstream| matches!(upstream.status(), crate::upstream::Status::Starting))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub(crate) fn add_session(&self, session: &Arc<Session>) {
        lock(&self.sessions).push(Arc::downgrade(session));
    }
}
