//! What a server sends a client on its own: progress of a call, a request of its own
//! (sampling, elicitation, roots) during a call, the cancellation of such a request,
//! and updates of resources the client subscribed to.

use clawai_protocol::methods;
use std::sync::Arc;
use std::sync::atomic::Ordering;

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
            pair.guard.write_pending_decisions();
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
        let modern = {
            let state = lock(&self.state);
            let capability = match method {
                methods::SAMPLING_CREATE_MESSAGE => Some("sampling"),
                methods::ELICITATION_CREATE => Some("elicitation"),
                methods::ROOTS_LIST => Some("roots"),
                _ => None,
            };
            if let Some(capability) = capability
                && state.capabilities.get(capability).is_none_or(Value::is_null)
            {
                return Err(format!("clawai gateway: the client did not declare the `{capability}` capability"));
            }
            state.modern
        };
        if modern {
            return self.ask_in_result(upstream, method, id, message, bytes).await;
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
        pair.guard.write_pending_decisions();
        if let Verdict::Forward = verdict {
            return true;
        }
        self.deliver_from_pair(pair, verdict.deliveries(bytes, Side::Server)).await;
        false
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

    /// A resource changed: told to the client if it subscribed to it.
    pub(crate) async fn resource_updated(&self, listed: &str, message: &Value) {
        if lock(&self.state).subscriptions.contains(listed) {
            let mut message = message.clone();
            message["params"]["uri"] = json!(listed);
            self.send(rewrite::encode(&message));
        }
    }
}
