//! Server requests for a 2026-07-28 client, which takes no requests from a server: the
//! client's call is answered with `resultType: "input_required"`, the server's request
//! as its input request, and a state of the gateway's; the client retries the call with
//! its answer and that state, the answer goes to the server under the server's id, and
//! the call the server is still working on answers the retry.
//!
//! The state is 128 random bits the session keeps, used once: it cannot be guessed,
//! replayed, or used from another session.

use std::sync::Arc;

use clawai_protocol::reply;
use serde_json::{Value, json};

use super::{Session, lock};
use crate::pair::Pair;
use crate::rewrite::{self, id_key};
use crate::upstream::Upstream;

/// How the gateway's request states begin.
pub(super) const STATE_PREFIX: &str = "clawai-gw.";

/// A call waiting for its client to retry with the input its server asked for.
pub(super) struct Suspended {
    pair: Arc<Pair>,
    /// The id the server knows the call by.
    call: String,
    /// The input request's key, and the id of the server's request it stands for.
    asked: (String, Value),
    /// The server's answer to the call, if it came before the retry.
    answer: Option<Vec<u8>>,
}

impl Session {
    /// A server request during a call of this 2026-07-28 client's: the call is answered
    /// with it as an input request.
    pub(super) async fn ask_in_result(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        method: &str,
        id: &Value,
        message: &Value,
        bytes: &[u8],
    ) -> Result<(), String> {
        let calls = upstream.calls_of(self.key);
        let [(call, client_id)] = calls.as_slice() else {
            return Err(format!(
                "clawai gateway: the client has {} calls in flight on server `{}`; `{method}` cannot be told which one it is for",
                calls.len(),
                upstream.name
            ));
        };
        let pair = self.pair(upstream);
        if !self.server_request_goes_on(&pair, bytes).await {
            return Ok(());
        }
        upstream.reattach(call, Value::Null);
        lock(&self.calls).remove(&id_key(client_id));
        let token = format!("{STATE_PREFIX}{}", uuid::Uuid::new_v4().simple());
        let key = method.replace('/', ".");
        lock(&self.suspended).insert(
            token.clone(),
            Suspended { pair, call: call.clone(), asked: (key.clone(), id.clone()), answer: None },
        );
        let params = message.get("params").cloned().unwrap_or(json!({}));
        let result = json!({
            "resultType": "input_required",
            "inputRequests": {key: {"method": method, "params": params}},
            "requestState": token,
        });
        self.answer(client_id, result, true);
        Ok(())
    }

    /// The server answered a call while its client had not retried yet: kept for the retry.
    pub(super) fn keep_answer(&self, call: &str, answer: Vec<u8>) {
        if let Some(suspended) = lock(&self.suspended).values_mut().find(|s| s.call == call) {
            suspended.answer = Some(answer);
        }
    }

    /// The retry of a call with the input its server asked for.
    pub(super) async fn resume(self: &Arc<Self>, id: Value, message: &Value, state: &str) {
        // The call answers the retry from now on. It is attached before the state is
        // taken: an answer of the server's that comes meanwhile either finds the new id
        // or is kept with the state, and is sent below.
        let waiting = lock(&self.suspended).get(state).map(|s| (Arc::clone(&s.pair.upstream), s.call.clone()));
        let Some((upstream, call)) = waiting else {
            return self.send(rewrite::error(
                &id,
                reply::INVALID_PARAMS,
                "clawai gateway: this requestState is unknown, used already, or another session's; call again without it",
            ));
        };
        lock(&self.calls).insert(id_key(&id), (Arc::downgrade(&upstream), call.clone()));
        upstream.reattach(&call, id.clone());
        let Some(Suspended { pair, asked: (key, asked_id), answer, .. }) = lock(&self.suspended).remove(state) else {
            return; // another retry with the same state took it
        };
        if let Some(answer) = answer {
            self.send_parsed_answer(&upstream, &id, &answer);
        }
        let reply = match message.pointer("/params/inputResponses").and_then(|responses| responses.get(&key)) {
            Some(response) => rewrite::result(&asked_id, response.clone()),
            None => rewrite::error(&asked_id, reply::INVALID_PARAMS, "the client gave no answer to this request"),
        };
        let verdict = pair.guard.from_client(&reply);
        self.after_client_verdict(&pair, reply, verdict).await;
    }
}
