//! Cancelling a 2026-07-28 request over HTTP: there, a request is cancelled by closing its
//! response stream (a `notifications/cancelled` POSTed beside it may be ignored: a
//! server that streams until its client goes away keeps the stream, a subscription,
//! open). So the POST of each stateless request is kept by its id, and a cancellation
//! naming it ends that POST (its connection closes) as well as being sent.

use std::collections::HashMap;

use clawai_protocol::methods;
use tokio::task::AbortHandle;

use crate::route::{Route, contains};

/// Whether request `message` is of the stateless revision (it carries it in `_meta`).
pub(super) fn is_stateless(message: &[u8]) -> bool {
    contains(message, b"\"io.modelcontextprotocol/protocolVersion\"")
}

/// The POSTs of stateless requests in flight, by their ids as written.
#[derive(Default)]
pub(super) struct OpenRequests(HashMap<String, AbortHandle>);

impl OpenRequests {
    /// Keeps the POST of the stateless request `id` (as written).
    pub(super) fn track(&mut self, id: String, post: AbortHandle) {
        self.0.retain(|_, post| !post.is_finished());
        self.0.insert(id, post);
    }

    /// `message` is a cancellation: the stateless request it names, if any, is ended.
    pub(super) fn cancel(&mut self, route: &Route, message: &[u8]) {
        if route.method.as_deref() != Some(methods::CANCELLED) {
            return;
        }
        let named = clawai_protocol::skim::skim(message)
            .and_then(|skimmed| skimmed.params)
            .and_then(|params| clawai_protocol::skim::member(params, b"requestId"))
            .map(|id| String::from_utf8_lossy(id).into_owned());
        if let Some(post) = named.and_then(|id| self.0.remove(&id)) {
            post.abort();
        }
    }
}
