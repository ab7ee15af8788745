//! Resource subscriptions the gateway makes of a server for its sessions'
//! `subscriptions/listen` (a 2026-07-28 client has no `resources/subscribe` of its own):
//! through the gateway's guard for the server, so each is decided and recorded like the
//! gateway's other traffic with it. A server that does not declare
//! `resources.subscribe` is not asked.

use std::sync::Arc;

use clawai_protocol::methods;
use serde_json::{Value, json};

use super::{LIST_TIMEOUT, Upstream};

impl Upstream {
    /// Subscribes to the server's resource `uri` (its own URI). False when the server
    /// cannot subscribe (it does not declare it, speaks only 2026-07-28, or refused).
    pub(crate) async fn subscribe_resource(self: &Arc<Self>, uri: &str) -> bool {
        // A 2026-07-28 server takes them on the gateway's subscription to it.
        if self.speaks_modern() {
            return self.follow_resource(uri, true).await;
        }
        if self.capability("resources/subscribe") != Some(Value::Bool(true)) {
            return false;
        }
        match self.request(methods::RESOURCES_SUBSCRIBE, Some(json!({"uri": uri})), LIST_TIMEOUT).await {
            Ok(_) => true,
            Err(why) => {
                tracing::debug!("server `{}`: subscribing to {uri}: {why}", self.name);
                false
            }
        }
    }

    /// Ends the subscription to the server's resource `uri`, when nobody needs it any more.
    pub(crate) async fn unsubscribe_resource(self: &Arc<Self>, uri: &str) {
        if self.speaks_modern() {
            self.follow_resource(uri, false).await;
            return;
        }
        if !self.is_up() {
            return; // a server that went down forgot its subscriptions
        }
        if let Err(why) = self.request(methods::RESOURCES_UNSUBSCRIBE, Some(json!({"uri": uri})), LIST_TIMEOUT).await {
            tracing::debug!("server `{}`: unsubscribing from {uri}: {why}", self.name);
        }
    }

    /// The server (re)started: the resources sessions' subscriptions follow are subscribed
    /// again (a server forgets its subscriptions when it stops). A 2026-07-28 server's are
    /// on the gateway's subscription to it, opened anew for each run.
    pub(super) async fn resubscribe_resources(self: &Arc<Self>) {
        if self.speaks_modern() {
            return;
        }
        let uris: std::collections::BTreeSet<String> =
            self.context.reports.resources_followed(self).into_iter().collect();
        for uri in uris {
            self.subscribe_resource(&uri).await;
        }
    }

    /// A client's `resources/subscribe` or `resources/unsubscribe` (decided by its
    /// session's guard) to a 2026-07-28 server, which has neither: the gateway follows the
    /// resource on its subscription to the server, and answers for the server through the
    /// path of the server's answers, so that the client's guard takes the answer as it
    /// would the server's. False (nothing done) for any other message or server.
    pub(crate) async fn subscribe_for_client(self: &Arc<Self>, bytes: &[u8]) -> bool {
        if !self.speaks_modern() || memchr::memmem::find(bytes, b"\"resources/").is_none() {
            return false;
        }
        let Ok(message) = serde_json::from_slice::<Value>(bytes) else { return false };
        let on = match message.get("method").and_then(Value::as_str) {
            Some(methods::RESOURCES_SUBSCRIBE) => true,
            Some(methods::RESOURCES_UNSUBSCRIBE) => false,
            _ => return false,
        };
        let (Some(id), Some(uri)) = (message.get("id"), message.pointer("/params/uri").and_then(Value::as_str)) else {
            return false;
        };
        let answer = if self.follow_resource(uri, on).await {
            crate::rewrite::result(id, json!({}))
        } else {
            let why = format!("server `{}` does not take resource subscriptions", self.name);
            crate::rewrite::error(id, crate::rewrite::METHOD_NOT_FOUND, &why)
        };
        // Boxed: the answer's way to the client leads back here (a recursion in type).
        Box::pin(self.on_message(answer)).await;
        true
    }
}
