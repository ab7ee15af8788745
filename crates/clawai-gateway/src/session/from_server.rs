//! What a server sends a client on its own: progress of a call, a request of its own
//! (sampling, elicitation, roots) during a call, the cancellation of such a request,
//! and updates of resources the client subscribed to.

use clawai_protocol::methods;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use clawai_proxy::Verdict;
use clawai_proxy::guard::Side;
use serde_json::{Value, json};

use super::{Asked, Session, lock};
use crate::pair::Pair;
use crate::rewrite::{self, id_key};
use crate::upstream::Upstream;

impl Session {
    /// Progress of a call of this session's, under the client's own token.
    pub(crate) async fn progress(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        token: Value,
        mut message: Value,
        bytes: Vec<u8>,
    ) {
        let pair = self.pair(upstream);
        if matches!(pair.guard.from_server(&bytes), Verdict::Forward) {
            message["params"]["progressToken"] = token;
            self.send(rewrite::encode(&message));
        }
    }

    /// A request of the server's, which the gateway found is for this session. `Err`
    /// says why it cannot go to the client (the server is answered with it at once).
    pub(crate) async fn take_server_request(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        method: &str,
        id: &Value,
        message: &Value,
        bytes: &[u8],
    ) -> Result<(), String> {
        // A 2026-07-28 client declares its capabilities with each request: those of the
        // call the server asks during (a legacy client's are those of its `initialize`).
        let of_the_call = self.capabilities_of_the_call(upstream);
        let modern = {
            let state = lock(&self.state);
            let capability = match method {
                methods::SAMPLING_CREATE_MESSAGE => Some("sampling"),
                methods::ELICITATION_CREATE => Some("elicitation"),
                methods::ROOTS_LIST => Some("roots"),
                _ => None,
            };
            let capabilities = of_the_call.as_ref().filter(|_| state.modern).unwrap_or(&state.capabilities);
            if let Some(capability) = capability
                && capabilities.get(capability).is_none_or(Value::is_null)
            {
                return Err(format!("clawai gateway: the client did not declare the `{capability}` capability"));
            }
            state.modern
        };
        if modern {
            return self.ask_in_result(upstream, method, id, message, bytes).await;
        }
        if method == methods::ROOTS_LIST {
            let mut askers = lock(&self.roots_askers);
            askers.retain(|asker| asker.strong_count() > 0);
            if !askers.iter().any(|asker| asker.upgrade().is_some_and(|asker| asker.instance == upstream.instance)) {
                askers.push(Arc::downgrade(upstream));
            }
        }
        let pair = self.pair(upstream);
        if !self.server_request_goes_on(&pair, bytes).await {
            return Ok(());
        }
        let ours = json!(format!("clawai-gw-{}", self.next_asked.fetch_add(1, Ordering::Relaxed)));
        lock(&self.asked).insert(id_key(&ours), Asked::Upstream { pair: Arc::clone(&pair), upstream_id: id.clone() });
        let mut message = message.clone();
        message["id"] = ours;
        self.send(rewrite::encode(&message));
        Ok(())
    }

    /// Has `pair`'s guard decide a server's request: `true` when it goes on to the client;
    /// otherwise what the guard gave instead (an answer to the server) is sent. The
    /// decision is on disk before anything leaves.
    pub(super) async fn server_request_goes_on(self: &Arc<Self>, pair: &Arc<Pair>, bytes: &[u8]) -> bool {
        let verdict = pair.guard.from_server(bytes);
        if let Verdict::Forward = verdict {
            return true;
        }
        self.deliver_from_pair(pair, verdict.deliveries(bytes, Side::Server)).await;
        false
    }

    /// Keeps the capabilities a 2026-07-28 request carries, for the server requests made
    /// during it (those of requests no longer in flight are let go).
    pub(super) fn remember_capabilities(&self, id: &Value, message: &Value) {
        let capabilities = message
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(crate::rewrite::CLIENT_CAPABILITIES_META))
            .cloned()
            .unwrap_or(Value::Null);
        let in_flight: std::collections::HashSet<String> = lock(&self.calls).keys().cloned().collect();
        let mut remembered = lock(&self.request_capabilities);
        remembered.retain(|key, _| in_flight.contains(key));
        remembered.insert(id_key(id), capabilities);
    }

    /// The capabilities the one call of this session in flight on `upstream` carried,
    /// when there is one such call.
    fn capabilities_of_the_call(self: &Arc<Self>, upstream: &Arc<Upstream>) -> Option<Value> {
        let calls = upstream.calls_of(self.key);
        let [(_, client_id)] = calls.as_slice() else { return None };
        lock(&self.request_capabilities).get(&id_key(client_id)).cloned()
    }

    /// The client's roots changed: each server that asked it for them is told.
    pub(super) async fn roots_changed(&self) {
        let askers: Vec<Arc<Upstream>> = lock(&self.roots_askers).iter().filter_map(Weak::upgrade).collect();
        for upstream in askers {
            if upstream.is_up() {
                upstream.notify(methods::ROOTS_LIST_CHANGED, None).await;
            }
        }
    }

    /// The server gave up a request it sent this session's client (if it did).
    pub(crate) async fn server_cancelled(&self, upstream: &Upstream, upstream_id: &str) {
        let ours = {
            let mut asked = lock(&self.asked);
            let found = asked.iter().find_map(|(ours, asked)| match asked {
                Asked::Upstream { pair, upstream_id: theirs }
                    if pair.upstream.instance == upstream.instance && id_key(theirs) == upstream_id =>
                {
                    Some(ours.clone())
                }
                _ => None,
            });
            if let Some(ours) = &found {
                asked.remove(ours);
            }
            found
        };
        if let Some(ours) = ours {
            let id: Value = serde_json::from_str(&ours).unwrap_or(Value::Null);
            self.send(rewrite::notification(methods::CANCELLED, Some(json!({"requestId": id}))));
        }
    }

    /// A resource of `upstream` changed: told to the client if it subscribed to it, on
    /// the subscription that asked for it (2026-07-28) or as older revisions are told.
    pub(crate) async fn resource_updated(&self, upstream: &Upstream, listed: &str, message: &Value) {
        let told = self.tell_resource_subscriptions(upstream, listed, message);
        if !told && lock(&self.state).subscriptions.contains(listed) {
            let mut message = message.clone();
            message["params"]["uri"] = json!(listed);
            self.send(rewrite::encode(&message));
        }
    }
}
