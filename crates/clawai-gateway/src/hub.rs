//! The hub: the open sessions, and what the servers' events mean for them.
//!
//! Servers report to the hub through the [`Reports`] they are given at start (in their
//! [`Context`]); they know no session and no core. The hub rebuilds the catalog when a
//! list changed and tells every session, hands an answer to the session whose key the
//! call carries, a log to the sessions that hear the server, and so on. It is the only
//! module that knows both the servers and the sessions: nothing below it points back up.

use std::sync::{Arc, Weak};

use clawai_http::link::Link;
use tokio::sync::mpsc;

use crate::core::Core;
use crate::registry::{Registry, SessionKey};
use crate::session::Session;
use crate::skills::Loaded;
use crate::upstream::Upstream;
use crate::upstream::events::{Audience, Context, Delivery, Event, Handled, Reports, ServerRequest};

/// The sessions, and the core they share.
pub(crate) struct Hub {
    core: Arc<Core>,
    sessions: Arc<Registry<Session>>,
    /// What every server is given at start: its reports come here.
    context: Arc<Context>,
}

impl std::fmt::Debug for Hub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Hub").finish_non_exhaustive()
    }
}

impl Hub {
    /// The hub of `core`; a reloaded policy tells every session.
    pub(crate) fn new(core: Arc<Core>) -> Arc<Hub> {
        let hub = Arc::new_cyclic(|hub: &Weak<Hub>| {
            // Weak: the hub holds the servers (through the core), which hold their context.
            let reports: Arc<dyn Reports> = Arc::new(ToHub(hub.clone()));
            let context = Arc::new(Context {
                policy: core.policy.clone(),
                audit: core.audit.clone(),
                options: Arc::clone(&core.options),
                reports,
            });
            Hub { core, sessions: Arc::default(), context }
        });
        // A reloaded policy may leave tools out of the lists, or put them back.
        let weak = Arc::downgrade(&hub);
        hub.core.policy.on_replace(Box::new(move || {
            if let Some(hub) = weak.upgrade() {
                for session in hub.sessions.all() {
                    session.view_may_have_changed();
                }
            }
        }));
        hub
    }

    /// What every server is given at start.
    pub(crate) fn context(&self) -> &Arc<Context> {
        &self.context
    }

    /// A new session behind a link (see [`Session::open`]).
    pub(crate) fn open_session(&self, shared: Option<&str>) -> Link {
        Session::open(&self.core, &self.sessions, shared)
    }

    /// A new session its caller drives (see [`Session::new`]).
    pub(crate) fn connect(&self) -> (Arc<Session>, mpsc::UnboundedReceiver<Vec<u8>>) {
        Session::new(&self.core, &self.sessions, None)
    }

    /// Something a session may see changed (a list, a server, the configuration): the
    /// catalog is rebuilt and every session told what changed for it.
    pub(crate) fn catalog_changed(&self) {
        if !self.core.rebuild_catalog() {
            return; // a later rebuild already landed
        }
        for session in self.sessions.all() {
            session.view_may_have_changed();
        }
        self.core.warn_of_unmatched_patterns();
        self.core.embed_in_background();
    }

    /// Replaces the skills; every session is told what its lists gained or lost.
    pub(crate) fn set_skills(&self, skills: Loaded) {
        let skills = self.core.set_skills(skills);
        for session in self.sessions.all() {
            // A skill that is gone is no longer active (a new one of its name is not
            // active until asked for).
            session.forget_skill_unless(|name| skills.get(name).is_some());
            session.view_may_have_changed();
        }
        self.core.embed_in_background();
        self.core.warn_of_unmatched_patterns();
    }

    /// The sessions of an audience that are open.
    fn audience(&self, audience: Audience) -> Vec<Arc<Session>> {
        match audience {
            Audience::Every => self.sessions.all(),
            Audience::Only(key) => self.sessions.get(key).into_iter().collect(),
        }
    }

    fn tell(&self, from: &Arc<Upstream>, event: Event<'_>) {
        match event {
            Event::ListsChanged => self.catalog_changed(),
            Event::StartFailed => self.core.warn_of_unmatched_patterns(),
            Event::CallTooLarge { call, prefix, length, limit } => {
                if let Some(session) = self.sessions.get(call.session) {
                    session.call_too_large(from, call, prefix, length, limit);
                }
            }
            Event::Notification { audience, message } => {
                for session in self.audience(audience) {
                    session.send(message.clone());
                }
            }
            Event::TaskStatus { audience, message } => {
                // To the session whose task it is, only.
                for session in self.audience(audience) {
                    if session.task_status(from, message) {
                        break;
                    }
                }
            }
            Event::CallsLost { calls, why, for_good } => self.calls_lost(from, calls, why, for_good),
        }
    }

    /// Each session's guard for the server answers what it holds (and records it), so
    /// that a call held for a person is not sent later to the server's next run; the rest
    /// of the lost calls get an error.
    fn calls_lost(
        &self,
        from: &Arc<Upstream>,
        mut calls: std::collections::HashMap<String, crate::upstream::CallFrom>,
        why: &str,
        for_good: bool,
    ) {
        for session in self.sessions.all() {
            for answer in session.server_gone(from.instance, why, for_good) {
                let Ok(message) = serde_json::from_slice::<serde_json::Value>(&answer) else { continue };
                let key = message.get("id").map(crate::rewrite::id_key).unwrap_or_default();
                if let Some(call) = calls.remove(&key) {
                    session.answer_lost_call(from, &call, message);
                }
            }
        }
        for call in calls.into_values() {
            if let Some(session) = self.sessions.get(call.session) {
                session.fail_call(&call, &format!("clawai: {why}; the request got no answer"));
            }
        }
    }

    async fn deliver(&self, from: &Arc<Upstream>, delivery: Delivery<'_>) {
        match delivery {
            Delivery::CallAnswered { call, bytes, id_at } => {
                if let Some(session) = self.sessions.get(call.session) {
                    session.call_answered(from, call, bytes, id_at).await;
                }
            }
            Delivery::GuardAnswered { session, bytes } => {
                if let Some(session) = self.sessions.get(session) {
                    session.guard_answered(from, bytes).await;
                }
            }
            Delivery::Progress { session, token, message, bytes } => {
                if let Some(session) = self.sessions.get(session) {
                    session.progress(from, token, message, bytes).await;
                }
            }
            Delivery::Cancelled { upstream_id } => {
                for session in self.sessions.all() {
                    session.server_cancelled(from, &upstream_id).await;
                }
            }
            Delivery::ResourceUpdated { audience, listed, message } => {
                for session in self.audience(audience) {
                    session.resource_updated(from, &listed, message).await;
                }
            }
        }
    }

    async fn server_request(
        &self,
        from: &Arc<Upstream>,
        candidates: Vec<SessionKey>,
        request: ServerRequest<'_>,
    ) -> Result<(), String> {
        let sessions: Vec<Arc<Session>> = candidates.into_iter().filter_map(|key| self.sessions.get(key)).collect();
        let ServerRequest { method, id, message, bytes } = request;
        match sessions.as_slice() {
            [session] => session.take_server_request(from, method, id, message, bytes).await,
            [] => Err(format!(
                "clawai gateway: no client call is in flight on server `{}`, so `{method}` has nobody to go to",
                from.name
            )),
            _ => Err(format!(
                "clawai gateway: several client sessions have calls in flight on server `{}`; `{method}` cannot be told which one it is for",
                from.name
            )),
        }
    }
}

/// The [`Reports`] the servers are given: to the hub, while there is one.
struct ToHub(Weak<Hub>);

impl Reports for ToHub {
    fn tell(&self, from: &Arc<Upstream>, event: Event<'_>) {
        if let Some(hub) = self.0.upgrade() {
            hub.tell(from, event);
        }
    }

    fn deliver<'a>(&'a self, from: &'a Arc<Upstream>, delivery: Delivery<'a>) -> Handled<'a> {
        Box::pin(async move {
            if let Some(hub) = self.0.upgrade() {
                hub.deliver(from, delivery).await;
            }
        })
    }

    fn server_request<'a>(
        &'a self,
        from: &'a Arc<Upstream>,
        candidates: Vec<SessionKey>,
        request: ServerRequest<'a>,
    ) -> Handled<'a, Result<(), String>> {
        Box::pin(async move {
            match self.0.upgrade() {
                Some(hub) => hub.server_request(from, candidates, request).await,
                None => Err("clawai gateway: the gateway is stopping".to_owned()),
            }
        })
    }

    fn resources_followed(&self, at: &Upstream) -> Vec<String> {
        let Some(hub) = self.0.upgrade() else { return Vec::new() };
        hub.sessions.all().iter().flat_map(|session| session.resources_followed_at(at)).collect()
    }

    fn is_open(&self, key: SessionKey) -> bool {
        self.0.upgrade().is_some_and(|hub| hub.sessions.is_open(key))
    }
}
