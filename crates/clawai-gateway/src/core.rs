//! What every session of the gateway shares: the policy and audit trail, the running
//! servers, the merged catalog, the skills and the search index. The core knows no
//! session: the hub (`crate::hub`) holds the sessions and tells them what changed.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use clawai_policy::Policy;
use clawai_policy::glob::Glob;
use clawai_proxy::{AuditLog, PolicyHandle};

use crate::catalog::Catalog;
use crate::check::{Report, ServerReport, UnmatchedPattern};
use crate::cursor::Cursors;
use crate::lists::ListKind;
use crate::lock;
use crate::options::GatewayOptions;
use crate::skills::Loaded;
use crate::upstream::{Status, Upstream};

/// The shared state.
pub(crate) struct Core {
    pub(crate) policy: PolicyHandle,
    pub(crate) audit: AuditLog,
    pub(crate) options: Arc<GatewayOptions>,
    pub(crate) cursors: Cursors,
    /// The running servers, by name (a removed one is not here; it drains on its own).
    upstreams: RwLock<BTreeMap<String, Arc<Upstream>>>,
    /// Servers removed from the configuration, named in the error their calls get.
    removed: Mutex<HashSet<String>>,
    /// `agent.allowedTools`: the most any session may see.
    allowed_tools: RwLock<Option<Arc<Glob>>>,
    catalog: RwLock<Arc<Catalog>>,
    generation: AtomicU64,
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
    patterns_told: Mutex<HashSet<UnmatchedPattern>>,
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
        Arc::new(Core {
            policy,
            audit,
            options: Arc::new(options),
            cursors,
            upstreams: RwLock::default(),
            removed: Mutex::default(),
            allowed_tools: RwLock::default(),
            catalog: RwLock::default(),
            generation: AtomicU64::new(0),
            draining: Mutex::default(),
            started: std::time::Instant::now(),
            always_denied: Mutex::default(),
            skills: RwLock::default(),
            search: Mutex::default(),
            search_serial: Mutex::default(),
            patterns_told: Mutex::default(),
        })
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

    /// Replaces the skills (the hub tells the sessions); returns them.
    pub(crate) fn set_skills(&self, skills: Loaded) -> Arc<Loaded> {
        let skills = Arc::new(skills);
        *self.skills.write().unwrap_or_else(|p| p.into_inner()) = Arc::clone(&skills);
        skills
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
        let index = Arc::new(crate::tool_search::index(catalog, skills));
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
            model.index_changed(serial, Box::new(move || crate::tool_search::embedding_texts(&catalog, &skills)));
        }
        serial
    }

    /// With an embedding model, has the current tools and skills embedded now rather
    /// than at the first search.
    pub(crate) fn embed_in_background(&self) {
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

    /// Rebuilds the catalog from the running servers' lists; false when a later rebuild
    /// landed first (this one is dropped: the sessions were or will be told of that one).
    pub(crate) fn rebuild_catalog(&self) -> bool {
        let generation = self.generation.fetch_add(1, Ordering::Relaxed) + 1;
        let catalog = Arc::new(Catalog::build(&self.upstreams(), generation));
        let mut current = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        if current.generation > generation {
            return false;
        }
        *current = catalog;
        true
    }

    /// Waits, in the gateway's first moments only, for servers still starting: a client
    /// that lists at once gets what comes up quickly, and nothing waits for a slow one
    /// (its tools come later, with `list_changed`).
    pub(crate) async fn settle(&self) {
        let deadline = self.started + SETTLE;
        while std::time::Instant::now() < deadline
            && self.upstreams().iter().any(|upstream| matches!(upstream.status(), Status::Starting))
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Core {
    /// Every server is up, or failed to start at least once (or is going away).
    pub(crate) fn every_server_started(&self) -> bool {
        self.upstreams().iter().all(|upstream| {
            !matches!(upstream.status(), Status::Starting | Status::Down(_)) || upstream.last_failure().is_some()
        })
    }

    pub(crate) fn report(&self) -> Report {
        let draining: Vec<_> = lock(&self.draining).clone();
        let servers = self
            .upstreams()
            .iter()
            .chain(&draining)
            .map(|upstream| {
                let failure = upstream.last_failure();
                let state = match upstream.status() {
                    Status::Up => "up",
                    Status::Draining => "draining",
                    Status::Stopped => "stopped",
                    Status::Starting | Status::Down(_) if failure.is_some() => "failed",
                    Status::Starting | Status::Down(_) => "starting",
                };
                ServerReport {
                    name: upstream.name.clone(),
                    state: state.to_owned(),
                    failure,
                    tools: upstream.lists().items[ListKind::Tools.index()].len(),
                    held: upstream.held_tools(),
                    internal: upstream.entry.internal_only,
                }
            })
            .collect();
        let skills = self.skills();
        Report {
            servers,
            skills: skills.skills.iter().map(|skill| (skill.listed_name(), skill.file().to_owned())).collect(),
            skill_problems: skills.problems.iter().map(ToString::to_string).collect(),
            unmatched: self.unmatched_patterns(),
        }
    }

    /// The `allowed-tools` patterns that match no tool, leaving out those that name a
    /// server that is not up (its tools are not known; its failure is its own problem).
    pub(crate) fn unmatched_patterns(&self) -> Vec<UnmatchedPattern> {
        let catalog = self.catalog();
        let tools: Vec<&str> = catalog.items(ListKind::Tools).map(|item| item.listed.full_name.as_str()).collect();
        let not_up: Vec<String> = self
            .upstreams()
            .iter()
            .filter(|upstream| !upstream.is_up())
            .map(|upstream| upstream.name.clone())
            .collect();
        let mut unmatched = Vec::new();
        for skill in &self.skills().skills {
            for (pattern, line) in skill.unmatched_patterns(&tools) {
                let server = pattern.split_once(crate::names::SEPARATOR).map_or(pattern, |(server, _)| server);
                if not_up.iter().any(|name| name == server) {
                    continue;
                }
                unmatched.push(UnmatchedPattern {
                    skill: skill.name().to_owned(),
                    file: skill.file().to_owned(),
                    line,
                    pattern: pattern.to_owned(),
                });
            }
        }
        unmatched
    }

    /// Once every server has started: each `allowed-tools` pattern that matches no tool
    /// is logged, with its skill's file and line, once.
    pub(crate) fn warn_of_unmatched_patterns(&self) {
        if !self.every_server_started() {
            return;
        }
        let unmatched = self.unmatched_patterns();
        let mut told = lock(&self.patterns_told);
        for pattern in unmatched {
            if told.insert(pattern.clone()) {
                tracing::warn!("{pattern}");
            }
        }
    }
}
