//! `subscriptions/listen` (2026-07-28): a client opens a long-lived request and gets the
//! change notifications it opted in to on it, each stamped with the request's id, until
//! the subscription ends. The gateway answers it itself: its lists are its own (merged
//! from every server and scoped to the session's view), so the list changes it tells are
//! those of this session's view, as `list_changed` tells a session of an older revision.
//! Resource subscriptions are not honored (left out of the acknowledgment).

use serde_json::{Value, json};

use super::{Session, lock};
use crate::catalog::ListKind;
use crate::rewrite;

/// `_meta` key of the subscription a notification belongs to.
const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";

/// One open subscription: its request's id and the change kinds it takes.
pub(crate) struct Listening {
    id: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
}

impl Session {
    /// `subscriptions/listen`: acknowledged with what the gateway honors; it lasts until
    /// the client cancels it (or goes).
    pub(super) fn listen(&self, id: Value, params: &Value) {
        if self.behind_http.load(std::sync::atomic::Ordering::Relaxed) {
            let why = "clawai gateway: `subscriptions/listen` is served over stdio only, not yet over --listen; \
                       list again to see changes";
            return self.send(rewrite::error(&id, rewrite::METHOD_NOT_FOUND, why));
        }
        let asked = |key: &str| params.pointer(&format!("/notifications/{key}")) == Some(&Value::Bool(true));
        let listening = Listening {
            id: id.clone(),
            tools: asked("toolsListChanged"),
            prompts: asked("promptsListChanged"),
            resources: asked("resourcesListChanged"),
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
        {
            // From now, a change of what the session sees is news to it.
            let view = self.view();
            let mut state = lock(&self.state);
            state.announced.get_or_insert(view.digests);
        }
        lock(&self.listening).push(listening);
        self.send(stamped("notifications/subscriptions/acknowledged", json!({"notifications": honored}), &id));
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

    /// The client cancelled request `id`: if it is a subscription, it ends.
    pub(super) fn stop_listening(&self, id: &Value) {
        lock(&self.listening).retain(|listening| &listening.id != id);
    }

    /// Whether the client has a subscription open.
    pub(super) fn is_listening(&self) -> bool {
        !lock(&self.listening).is_empty()
    }
}

/// A notification of subscription `id`.
fn stamped(method: &str, mut params: Value, id: &Value) -> Vec<u8> {
    params["_meta"] = json!({SUBSCRIPTION_ID_META: id});
    rewrite::notification(method, Some(params))
}
