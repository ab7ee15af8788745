//! `subscriptions/listen` (2026-07-28): a client opens a long-lived request and gets the
//! change notifications it opted in to on it, each stamped with the request's id, until
//! the subscription ends. The gateway answers it itself: its lists are its own (merged
//! from every server and scoped to the session's view), so the list changes it tells are
//! those of this session's view, as `list_changed` tells a session of an older revision.
//!
//! Resource subscriptions (`resourceSubscriptions`, URIs as the gateway lists them) are
//! taken to the servers that hold the resources: each server that declares
//! `resources.subscribe` is subscribed (`resources/subscribe` through the gateway's guard
//! for it, or for a 2026-07-28 server on the gateway's subscription to it) before the
//! acknowledgment names the URI; a URI of a server that cannot subscribe, or that this
//! session cannot read, is left out of it. An update goes to the subscription that asked,
//! only; a server stays subscribed while any session wants the URI. Tasks of the
//! extension (`taskIds`) are followed the same way. Over stdio the notifications share
//! the client's one channel; over `--listen` the HTTP front puts each on the event stream
//! of its `subscriptions/listen` POST.

use std::sync::{Arc, Weak};

use serde_json::{Value, json};

use super::{Session, lock};
use crate::lists::ListKind;
use crate::names;
use crate::rewrite;
use crate::upstream::Upstream;

/// The error for a request that lacks a capability the server requires (2026-07-28).
const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// `_meta` key of the subscription a notification belongs to.
const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";

/// One open subscription: its request's id and the change kinds it takes.
pub(crate) struct Listening {
    id: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
    /// The resources it is told of: as listed, and the server subscribed for it.
    updates: Vec<Subscribed>,
    /// The tasks (of the 2026-07-28 extension) it is told of.
    tasks: Vec<Subscribed>,
}

/// A resource or a task a subscription is told of.
struct Subscribed {
    /// Its URI or task id as the gateway lists it.
    listed: String,
    /// The server instance that tells of it, and its own URI or id there.
    upstream: Weak<Upstream>,
    original: String,
}

impl Session {
    /// `subscriptions/listen`: acknowledged with what the gateway honors; it lasts until
    /// the client cancels it (or goes).
    pub(super) async fn listen(self: &Arc<Self>, id: Value, params: &Value) {
        let asked = |key: &str| params.pointer(&format!("/notifications/{key}")) == Some(&Value::Bool(true));
        let uris: Vec<String> = params
            .pointer("/notifications/resourceSubscriptions")
            .and_then(Value::as_array)
            .map(|uris| uris.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        // First: a request that cannot follow tasks is refused before anything is subscribed.
        let Some(tasks) = self.follow_tasks(&id, params).await else {
            lock(&self.opening).remove(&rewrite::id_key(&id));
            return;
        };
        let mut updates = Vec::with_capacity(uris.len());
        for uri in uris {
            if updates.iter().any(|known: &Subscribed| known.listed == uri) {
                continue;
            }
            if let Some(subscribed) = self.subscribe_upstream(&uri).await {
                updates.push(subscribed);
            }
        }
        let listening = Listening {
            id: id.clone(),
            tools: asked("toolsListChanged"),
            prompts: asked("promptsListChanged"),
            resources: asked("resourcesListChanged"),
            updates,
            tasks,
        };
        let mut honored = serde_json::Map::new();
        for (key, on) in [
            ("toolsListChanged", listening.tools),
            ("promptsListChanged", listening.prompts),
            ("resourcesListChanged", listening.resources),
        ] {
            if on {
                honored.insert(key.to_owned(), json!(true));
            }
        }
        for (key, followed) in [("resourceSubscriptions", &listening.updates), ("taskIds", &listening.tasks)] {
            if !followed.is_empty() {
                let listed: Vec<&str> = followed.iter().map(|known| known.listed.as_str()).collect();
                honored.insert(key.to_owned(), json!(listed));
            }
        }
        {
            // From now, a change of what the session sees is news to it.
            let view = self.view();
            let mut state = lock(&self.state);
            state.announced.get_or_insert(view.digests);
        }
        if !lock(&self.opening).remove(&rewrite::id_key(&id)) {
            // The client cancelled it while the servers were being subscribed.
            return self.unsubscribe_unneeded(vec![listening]);
        }
        // Acknowledged before any notification can be told on it: under the same lock.
        let mut all = lock(&self.listening);
        all.push(listening);
        self.send(stamped("notifications/subscriptions/acknowledged", json!({"notifications": honored}), &id));
    }

    /// A `subscriptions/listen` request `id` is being set up ([`Session::listen`]).
    pub(super) fn opening_subscription(&self, id: &Value) {
        lock(&self.opening).insert(rewrite::id_key(id));
    }

    /// Subscribes the server that holds the resource listed as `uri`, for this session;
    /// `None` when the session cannot read it or its server cannot subscribe.
    async fn subscribe_upstream(self: &Arc<Self>, uri: &str) -> Option<Subscribed> {
        let upstream = self.resource_server(uri)?;
        let original = names::split_resource_uri(uri)?.1.to_owned();
        // A per-client server: this session's own instance of it.
        let upstream = upstream.serving((self.key, &self.id)).await.ok()?;
        if !upstream.subscribe_resource(&original).await {
            return None;
        }
        Some(Subscribed { listed: uri.to_owned(), upstream: Arc::downgrade(&upstream), original })
    }

    /// The tasks a subscription asks to follow (`taskIds`, the extension's): those of this
    /// session held by 2026-07-28 servers, each followed on the gateway's subscription to
    /// its server. `None` (the client answered with an error) when the request did not
    /// declare the extension, as the extension requires.
    async fn follow_tasks(self: &Arc<Self>, id: &Value, params: &Value) -> Option<Vec<Subscribed>> {
        let asked: Vec<&str> = params
            .pointer("/notifications/taskIds")
            .and_then(Value::as_array)
            .map(|ids| ids.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if asked.is_empty() {
            return Some(Vec::new());
        }
        let declared = params
            .pointer("/_meta")
            .and_then(|meta| meta.get(rewrite::CLIENT_CAPABILITIES_META))
            .and_then(|capabilities| capabilities.get("extensions"))
            .is_some_and(|extensions| extensions.get(super::tasks::EXTENSION).is_some());
        if !declared {
            let required = json!({"requiredCapabilities": {"extensions": {super::tasks::EXTENSION: {}}}});
            let why = "Missing required client capability: following tasks takes the tasks extension";
            self.send(rewrite::error_with_data(id, MISSING_REQUIRED_CLIENT_CAPABILITY, why, required));
            return None;
        }
        let mut followed = Vec::new();
        for listed in asked {
            if let Some((upstream, original)) = self.task_server(listed).await
                && upstream.speaks_modern()
                && !followed.iter().any(|known: &Subscribed| known.listed == listed)
            {
                upstream.follow_task(&original, true).await;
                followed.push(Subscribed { listed: listed.to_owned(), upstream: Arc::downgrade(&upstream), original });
            }
        }
        Some(followed)
    }

    /// A task of this session's changed (`params`, the task as its server tells it, under
    /// the gateway's id `listed`): each subscription that follows it is told.
    pub(super) fn tell_task_subscriptions(&self, listed: &str, params: Value) {
        for listening in lock(&self.listening).iter() {
            if listening.tasks.iter().any(|known| known.listed == listed) {
                self.send(stamped(super::tasks::NOTIFIED, params.clone(), &listening.id));
            }
        }
    }

    /// What this session sees changed (`kinds`): each subscription that takes such
    /// changes is told.
    pub(super) fn tell_subscriptions(&self, changed: impl Fn(ListKind) -> bool) {
        for listening in lock(&self.listening).iter() {
            let tell = [
                (listening.tools && changed(ListKind::Tools), "notifications/tools/list_changed"),
                (listening.prompts && changed(ListKind::Prompts), "notifications/prompts/list_changed"),
                (
                    listening.resources && (changed(ListKind::Resources) || changed(ListKind::Templates)),
                    "notifications/resources/list_changed",
                ),
            ];
            for (_, method) in tell.iter().filter(|(on, _)| *on) {
                self.send(stamped(method, json!({}), &listening.id));
            }
        }
    }

    /// A resource listed as `listed` changed at `upstream`: each subscription of this
    /// session that asked for it is told, on its own stream. True when one was.
    pub(super) fn tell_resource_subscriptions(&self, upstream: &Upstream, listed: &str, message: &Value) -> bool {
        let mut told = false;
        for listening in lock(&self.listening).iter() {
            let asked = listening.updates.iter().any(|known| {
                known.listed == listed && known.upstream.upgrade().is_some_and(|u| u.instance == upstream.instance)
            });
            if asked {
                let mut params = message.get("params").cloned().unwrap_or_else(|| json!({}));
                params["uri"] = json!(listed);
                self.send(stamped("notifications/resources/updated", params, &listening.id));
                told = true;
            }
        }
        told
    }

    /// The client cancelled request `id`: if it is a subscription, it ends, and the
    /// servers it subscribed that nobody else needs are unsubscribed.
    pub(super) fn stop_listening(&self, id: &Value) {
        lock(&self.opening).remove(&rewrite::id_key(id));
        let ended: Vec<Listening> = {
            let mut listening = lock(&self.listening);
            let (ended, kept) = std::mem::take(&mut *listening).into_iter().partition(|l| &l.id == id);
            *listening = kept;
            ended
        };
        self.unsubscribe_unneeded(ended);
    }

    /// Every subscription of this session ends (the client went away).
    pub(super) fn stop_all_listening(&self) {
        let ended = std::mem::take(&mut *lock(&self.listening));
        self.unsubscribe_unneeded(ended);
    }

    fn unsubscribe_unneeded(&self, ended: Vec<Listening>) {
        let mut updates = Vec::new();
        for listening in ended {
            updates.extend(listening.updates);
            for task in listening.tasks {
                // A task is this session's alone.
                let followed = lock(&self.listening).iter().any(|l| l.tasks.iter().any(|t| t.listed == task.listed));
                if let Some(upstream) = task.upstream.upgrade().filter(|_| !followed) {
                    tokio::spawn(async move { upstream.follow_task(&task.original, false).await });
                }
            }
        }
        for subscribed in updates {
            let Some(upstream) = subscribed.upstream.upgrade() else { continue };
            let wanted = self.peers.all().iter().any(|session| session.wants_resource(&subscribed.listed));
            if !wanted {
                tokio::spawn(async move { upstream.unsubscribe_resource(&subscribed.original).await });
            }
        }
    }

    /// Whether this session is subscribed to the resource listed as `listed`, either way.
    pub(super) fn wants_resource(&self, listed: &str) -> bool {
        lock(&self.state).subscriptions.contains(listed)
            || lock(&self.listening).iter().any(|l| l.updates.iter().any(|known| known.listed == listed))
    }

    /// The resources of server instance `upstream` this session's subscriptions follow
    /// (their URIs at the server): subscribed again when it restarts.
    pub(crate) fn resources_followed_at(&self, upstream: &Upstream) -> Vec<String> {
        lock(&self.listening)
            .iter()
            .flat_map(|listening| listening.updates.iter())
            .filter(|known| known.upstream.upgrade().is_some_and(|u| u.instance == upstream.instance))
            .map(|known| known.original.clone())
            .collect()
    }

    /// Whether the client has a subscription open.
    pub(super) fn is_listening(&self) -> bool {
        !lock(&self.listening).is_empty()
    }
}

/// A notification of subscription `id`.
fn stamped(method: &str, mut params: Value, id: &Value) -> Vec<u8> {
    if !params.get("_meta").is_some_and(Value::is_object) {
        params["_meta"] = json!({});
    }
    params["_meta"][SUBSCRIPTION_ID_META] = id.clone();
    rewrite::notification(method, Some(params))
}
