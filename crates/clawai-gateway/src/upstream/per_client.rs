//! Servers declared `"session": "per-client"`: a server that keeps state per session
//! must not be shared (Claude Code's `claude mcp serve` answers a second read of a file
//! with `file_unchanged` and no content, whichever client read it first).
//!
//! The server's first instance, its lister, belongs to no client session: it lists the
//! server's tools, prompts and resources for the catalog (pinned and scanned as any
//! server's), and no call goes to it. Each client session that calls the server gets an
//! instance of its own (stdio: a process; HTTP: an upstream session), started on its
//! first call. That instance serves only that session: the session's calls, and the
//! server's requests and notifications go back to it alone. It stops when the session
//! ends, after [`crate::GatewayOptions::per_client_idle`] without a call, or with its
//! lister when the server is removed or changed (drained with it) and at shutdown.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use super::events::Audience;
use super::{Lists, Status, Upstream, lock};
use crate::registry::SessionKey;

/// How long a session's first call waits for its instance to come up.
const START_WAIT: Duration = Duration::from_secs(60);

/// What an instance of a server is for.
pub(crate) enum Role {
    /// Every client session's (the default).
    Shared,
    /// A per-client server's lister, with the client sessions' instances.
    Lister(Instances),
    /// One client session's own instance of a per-client server.
    Own(Owner),
}

/// The instances of a per-client server, by client session id.
#[derive(Default)]
pub(crate) struct Instances {
    by_session: Mutex<HashMap<String, Arc<Upstream>>>,
}

/// Whose instance it is.
pub(crate) struct Owner {
    session: SessionKey,
    lister: Weak<Upstream>,
    last_used: Mutex<Instant>,
}

impl Upstream {
    /// True for the lister of a per-client server.
    pub(crate) fn is_per_client(&self) -> bool {
        matches!(self.role, Role::Lister(_))
    }

    /// True for a client session's own instance.
    pub(crate) fn is_own_instance(&self) -> bool {
        matches!(self.role, Role::Own(_))
    }

    /// The sessions that hear what the server says on its own (logs, resource updates):
    /// the owner of an instance, else every session.
    pub(crate) fn audience(&self) -> Audience {
        match &self.role {
            Role::Own(owner) => Audience::Only(owner.session),
            _ => Audience::Every,
        }
    }

    /// The session a server request goes to when no call of any is in flight: the owner
    /// of an instance (nobody else can be meant).
    pub(crate) fn owner(&self) -> Option<SessionKey> {
        match &self.role {
            Role::Own(owner) => Some(owner.session),
            _ => None,
        }
    }

    /// What the catalog lists of this server (an instance lists nothing itself: its
    /// lister's lists, for the policy's annotations).
    pub(crate) fn catalog_lists(&self) -> Arc<Lists> {
        match &self.role {
            Role::Own(owner) => owner.lister.upgrade().map_or_else(|| self.lists(), |lister| lister.lists()),
            _ => self.lists(),
        }
    }

    /// Where `session`'s calls to this server go: this server, or for a per-client server
    /// the session's own instance (started now if it has none), once it is up.
    /// `session`: the session's key, and its id (what the audit trail names it).
    pub(crate) async fn serving(self: &Arc<Self>, session: (SessionKey, &str)) -> Result<Arc<Upstream>, String> {
        let (key, id) = session;
        let Role::Lister(instances) = &self.role else { return Ok(Arc::clone(self)) };
        let instance = {
            let mut by_session = lock(&instances.by_session);
            if matches!(self.status(), Status::Draining | Status::Stopped) {
                return Err(format!("server `{}` was removed from the gateway's configuration", self.name));
            }
            match by_session.get(id) {
                Some(instance) => Arc::clone(instance),
                None => {
                    let instance = self.start_own(key, id).ok_or("the gateway is stopping")?;
                    by_session.insert(id.to_owned(), Arc::clone(&instance));
                    instance
                }
            }
        };
        instance.touch();
        instance.until_up(START_WAIT).await?;
        Ok(instance)
    }

    /// Starts session `key`'s own instance (`id`: the session's id); `None` once the
    /// session is closed (the gateway is stopping).
    fn start_own(self: &Arc<Self>, key: SessionKey, id: &str) -> Option<Arc<Upstream>> {
        if !self.context.reports.is_open(key) {
            return None;
        }
        let owner = Owner { session: key, lister: Arc::downgrade(self), last_used: Mutex::new(Instant::now()) };
        tracing::info!("server `{}`: starting an instance of its own for session {id}", self.name);
        let (name, entry, pins) = (self.name.clone(), self.entry.clone(), Arc::clone(&self.pins));
        let instance = Upstream::new(&self.context, name, entry, pins, Role::Own(owner));
        tokio::spawn(Arc::clone(&instance).run());
        Some(instance)
    }

    /// Waits until the instance answers; `Err` says why it does not.
    async fn until_up(&self, limit: Duration) -> Result<(), String> {
        let deadline = Instant::now() + limit;
        loop {
            match self.status() {
                Status::Up => return Ok(()),
                Status::Down(why) => {
                    return Err(format!("server `{}` did not start for this session: {why}", self.name));
                }
                Status::Draining | Status::Stopped => {
                    return Err(format!("server `{}`: this session's instance was stopped", self.name));
                }
                Status::Starting if Instant::now() >= deadline => {
                    return Err(format!(
                        "server `{}` did not start for this session in {}s",
                        self.name,
                        limit.as_secs()
                    ));
                }
                Status::Starting => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    }

    /// An instance was used (a call, or a message from its server).
    pub(crate) fn touch(&self) {
        if let Role::Own(owner) = &self.role {
            *lock(&owner.last_used) = Instant::now();
        }
    }

    /// `session`'s instance of this per-client server, if it has one (none is started).
    pub(crate) fn instance_of(&self, session: &str) -> Option<Arc<Upstream>> {
        match &self.role {
            Role::Lister(instances) => lock(&instances.by_session).get(session).cloned(),
            _ => None,
        }
    }

    /// The instances of a per-client server, taken out (the server is going: they go
    /// with it).
    pub(crate) fn take_instances(&self) -> Vec<Arc<Upstream>> {
        match &self.role {
            Role::Lister(instances) => lock(&instances.by_session).drain().map(|(_, instance)| instance).collect(),
            _ => Vec::new(),
        }
    }

    /// Session `session` ended: its instance stops, with everything it started (the
    /// session's calls were cancelled already).
    pub(crate) async fn end_instance_of(&self, session: &str) {
        let instance = match &self.role {
            Role::Lister(instances) => lock(&instances.by_session).remove(session),
            _ => None,
        };
        if let Some(instance) = instance {
            tracing::info!("server `{}`: session {session} ended; its instance stops", self.name);
            instance.retire(Duration::ZERO).await;
        }
    }

    /// The instances unused for `idle` with no call in flight, or whose session is gone,
    /// taken out.
    fn take_idle(&self, idle: Duration) -> Vec<Arc<Upstream>> {
        let Role::Lister(instances) = &self.role else { return Vec::new() };
        let mut by_session = lock(&instances.by_session);
        let unused: Vec<String> = by_session
            .iter()
            .filter(|(_, instance)| match &instance.role {
                Role::Own(owner) => {
                    !self.context.reports.is_open(owner.session)
                        || (lock(&owner.last_used).elapsed() >= idle && instance.calls_in_flight() == 0)
                }
                _ => false,
            })
            .map(|(session, _)| session.clone())
            .collect();
        unused.iter().filter_map(|session| by_session.remove(session)).collect()
    }
}

/// Stops the instances of `lister` that sit unused for `idle`, until the lister goes.
pub(crate) async fn stop_idle_instances(lister: Weak<Upstream>, idle: Duration) {
    let every = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
    loop {
        tokio::time::sleep(every).await;
        let Some(lister) = lister.upgrade() else { return };
        if matches!(lister.status(), Status::Draining | Status::Stopped) {
            return;
        }
        for instance in lister.take_idle(idle) {
            tracing::info!("server `{}`: an instance unused for {}s stops", lister.name, idle.as_secs());
            tokio::spawn(instance.retire(Duration::ZERO));
        }
    }
}
