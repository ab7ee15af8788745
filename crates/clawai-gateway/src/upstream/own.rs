//! The gateway's own traffic with a server (`initialize`, the lists, its subscriptions):
//! through the gateway's guard for the server, so the audit trail records it like any
//! other message.

use std::time::Duration;

use clawai_proxy::Verdict;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::{Pending, Upstream};
use crate::rewrite::{encode, id_key};

/// The answer to a request of the gateway's own, once it comes.
pub(super) type Answer = oneshot::Receiver<Result<Value, Value>>;

impl Upstream {
    /// A request of the gateway's own, through the gateway's guard for this server.
    pub(super) async fn request(&self, method: &str, params: Option<Value>, wait: Duration) -> Result<Value, String> {
        let (id, answered) = self.start_request(method, params).await?;
        let key = id_key(&id);
        match tokio::time::timeout(wait, answered).await {
            Ok(answer) => answer_of(method, answer),
            Err(_) => {
                self.forget(&key);
                Err(format!("no answer to `{method}` in {}s", wait.as_secs()))
            }
        }
    }

    /// Sends a request of the gateway's own and returns at once: its id, and where its
    /// answer comes (read it with [`answer_of`]). For a request that stays open (a
    /// subscription), whose id the gateway needs to cancel it.
    pub(super) async fn start_request(&self, method: &str, params: Option<Value>) -> Result<(Value, Answer), String> {
        self.start_request_as(self.next_id(), method, params).await
    }

    /// [`Upstream::start_request`] under `id` (from [`Upstream::next_id`]), for a caller
    /// that must know the id before the answer can come.
    pub(super) async fn start_request_as(
        &self,
        id: Value,
        method: &str,
        params: Option<Value>,
    ) -> Result<(Value, Answer), String> {
        let key = id_key(&id);
        let (answer, answered) = oneshot::channel();
        self.expect(key.clone(), Pending::Own(answer));
        let mut message = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            message["params"] = params;
        }
        let bytes = encode(&message);
        if !matches!(self.guard.from_client(&bytes), Verdict::Forward) {
            self.forget(&key);
            return Err(format!("the policy refused the gateway's own `{method}`"));
        }
        if !self.send(bytes).await {
            self.forget(&key);
            return Err("the server is not running".into());
        }
        Ok((id, answered))
    }

    /// A notification of the gateway's own.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) {
        let bytes = crate::rewrite::notification(method, params);
        if matches!(self.guard.from_client(&bytes), Verdict::Forward) {
            self.send(bytes).await;
        }
    }
}

/// What the answer to the gateway's own `method` says: its result, or why not.
pub(super) fn answer_of(
    method: &str,
    answer: Result<Result<Value, Value>, oneshot::error::RecvError>,
) -> Result<Value, String> {
    match answer {
        Ok(Ok(result)) => Ok(result),
        Ok(Err(error)) => Err(format!(
            "`{method}` failed ({}): {}",
            error.get("code").and_then(Value::as_i64).unwrap_or_default(),
            error.get("message").and_then(Value::as_str).unwrap_or("an error without a message")
        )),
        Err(_) => Err(format!("the server went away before answering `{method}`")),
    }
}
