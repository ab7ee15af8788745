//! What a server sends: answers (to the gateway or to a client's call), its own
//! requests (sampling, elicitation, roots: to the session whose call caused them), and
//! notifications (lists changed, progress, logs, resource updates).

use clawai_protocol::methods;
use std::sync::Arc;

use serde_json::{Value, json};

use clawai_proxy::Verdict;
use clawai_proxy::guard::Side;

use super::events::{Delivery, Event, ServerRequest};
use super::{Pending, Upstream, lock};
use crate::lists::ListKind;
use crate::rewrite::{self, id_key};

impl Upstream {
    /// One message from the server.
    pub(super) async fn on_message(self: &Arc<Self>, bytes: Vec<u8>) {
        self.touch();
        // An answer to a client's call, the common case, is skimmed, not parsed: where its
        // id is is all the gateway needs to give it the client's.
        if let Some(skimmed) = clawai_protocol::skim::skim(&bytes)
            && skimmed.method.is_none()
            && skimmed.result.is_some() != skimmed.error.is_some()
            && let Some(id) = skimmed.id
            && let Ok(id_value) = serde_json::from_slice::<Value>(id)
        {
            let start = id.as_ptr() as usize - bytes.as_ptr() as usize;
            let id_at = start..start + id.len();
            let key = id_key(&id_value);
            if let Some(call) = self.take_call(&key) {
                if let Some(token) = &call.token {
                    self.forget_progress(token);
                }
                let answered = Delivery::CallAnswered { call, bytes, id_at: Some(id_at) };
                self.context.reports.deliver(self, answered).await;
                return;
            }
        }
        let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
            tracing::warn!("server `{}` wrote a line that is not JSON; dropped", self.name);
            return;
        };
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.server_request(&method, id, message, bytes).await,
            (Some(method), None) => self.server_notification(&method, message, bytes).await,
            (None, Some(id)) => self.answer(&id_key(&id), message, bytes).await,
            (None, None) => tracing::warn!("server `{}` wrote a message without method or id; dropped", self.name),
        }
    }

    /// A message over `--max-message-size`: dropped; a call it answered gets an error.
    pub(super) async fn oversize(self: &Arc<Self>, prefix: &[u8], length: usize) {
        tracing::warn!("server `{}` sent a message of {length} bytes, over the limit; dropped", self.name);
        let id = clawai_protocol::skim::leading_id(prefix).and_then(|id| std::str::from_utf8(id).ok());
        let Some(key) = id.and_then(|id| serde_json::from_str::<Value>(id).ok()).map(|id| id_key(&id)) else {
            return;
        };
        if let Some(Pending::Call(call)) = self.forget(&key) {
            let limit = self.context.options.max_message;
            self.context.reports.tell(self, Event::CallTooLarge { call, prefix, length, limit });
        }
    }

    async fn answer(self: &Arc<Self>, key: &str, message: Value, bytes: Vec<u8>) {
        let pending = self.forget(key);
        match pending {
            Some(Pending::Own(answer)) => {
                // The answer to the gateway's own request is decided like any response;
                // what the guard lets through (or puts instead) is what the gateway reads.
                let message = match self.guard.from_server(&bytes) {
                    Verdict::Forward => Some(message),
                    Verdict::Replace(instead) => serde_json::from_slice(&instead).ok(),
                    _ => None,
                };
                let outcome = match message {
                    Some(message) => match message.get("result") {
                        Some(result) => Ok(result.clone()),
                        None => Err(message.get("error").cloned().unwrap_or(Value::Null)),
                    },
                    None => Err(Value::String("clawai's guard refused the server's answer".into())),
                };
                let _ = answer.send(outcome);
            }
            Some(Pending::Call(call)) => {
                if let Some(token) = &call.token {
                    self.forget_progress(token);
                }
                self.context.reports.deliver(self, Delivery::CallAnswered { call, bytes, id_at: None }).await;
            }
            Some(Pending::Guard(session)) => {
                self.context.reports.deliver(self, Delivery::GuardAnswered { session, bytes }).await;
            }
            None => tracing::debug!("server `{}` answered {key}, which nobody waits for", self.name),
        }
    }

    async fn server_notification(self: &Arc<Self>, method: &str, message: Value, bytes: Vec<u8>) {
        let reports = &self.context.reports;
        match method {
            methods::TOOLS_LIST_CHANGED => self.refresh_later(&[ListKind::Tools]),
            methods::PROMPTS_LIST_CHANGED => self.refresh_later(&[ListKind::Prompts]),
            methods::RESOURCES_LIST_CHANGED => self.refresh_later(&[ListKind::Resources, ListKind::Templates]),
            // The gateway's own subscription (`modern`) is acknowledged: recorded, and
            // nobody else's business.
            super::follow::ACKNOWLEDGED => {
                if matches!(self.guard.from_server(&bytes), Verdict::Forward) {
                    self.acknowledged(&message);
                }
            }
            methods::PROGRESS => {
                let token = message.pointer("/params/progressToken").and_then(Value::as_str).unwrap_or_default();
                let progress = lock(&self.progress).get(token).map(|p| (p.session, p.token.clone()));
                if let Some((session, token)) = progress {
                    reports.deliver(self, Delivery::Progress { session, token, message, bytes }).await;
                }
            }
            methods::CANCELLED => {
                // The server gave up a request it sent a client.
                if !matches!(self.guard.from_server(&bytes), Verdict::Forward) {
                    return;
                }
                if let Some(id) = message.pointer("/params/requestId") {
                    reports.deliver(self, Delivery::Cancelled { upstream_id: id_key(id) }).await;
                }
            }
            // A task's state, of 2025-11-25 tasks or of the 2026-07-28 extension.
            "notifications/tasks/status" | rewrite::TASKS_NOTIFIED => {
                // To the session whose task it is, only.
                if !matches!(self.guard.from_server(&bytes), Verdict::Forward) {
                    return;
                }
                reports.tell(self, Event::TaskStatus { audience: self.audience(), message: &message });
            }
            methods::RESOURCES_UPDATED => {
                if !matches!(self.guard.from_server(&bytes), Verdict::Forward) {
                    return;
                }
                if let Some(uri) = message.pointer("/params/uri").and_then(Value::as_str) {
                    let listed = crate::names::resource_uri(&self.name, uri);
                    let updated = Delivery::ResourceUpdated { audience: self.audience(), listed, message: &message };
                    reports.deliver(self, updated).await;
                }
            }
            _ => {
                // Logs and anything else: decided, recorded, and told to every session
                // (a client session's own instance: to that session).
                let message = match self.guard.from_server(&bytes) {
                    Verdict::Forward => bytes,
                    Verdict::Replace(instead) => instead,
                    _ => return,
                };
                reports.tell(self, Event::Notification { audience: self.audience(), message });
            }
        }
    }

    fn refresh_later(self: &Arc<Self>, kinds: &[ListKind]) {
        for &kind in kinds {
            let this = Arc::clone(self);
            tokio::spawn(async move { this.refresh(kind).await });
        }
    }

    async fn server_request(self: &Arc<Self>, method: &str, id: Value, message: Value, bytes: Vec<u8>) {
        if method == "ping" {
            self.send_later(rewrite::result(&id, json!({})));
            return;
        }
        // The request goes to the session whose call caused it: the only one with a
        // call in flight on this server (on a client session's own instance, that
        // session, call or no call).
        let candidates = match self.owner() {
            Some(owner) => vec![owner],
            None => self.sessions_with_calls(),
        };
        let request = ServerRequest { method, id: &id, message: &message, bytes: &bytes };
        if let Err(why) = self.context.reports.server_request(self, candidates, request).await {
            self.refuse_server_request(&id, &bytes, &why).await;
        }
    }

    /// Answers a request of the server's with an error at once, and records both.
    pub(crate) async fn refuse_server_request(self: &Arc<Self>, id: &Value, bytes: &[u8], why: &str) {
        // Recorded in the trail; servers that ask for roots as they start make this
        // common, and nothing is wrong: not worth a line in the log.
        tracing::debug!("server `{}`: {why}", self.name);
        // The guard records the request (and may answer it itself, more exactly: a rule
        // that denies it); otherwise it gets the gateway's error, which the guard records
        // on its way back like any answer.
        let answer = match self.guard.from_server(bytes) {
            Verdict::Reply(denied) => denied,
            _ => rewrite::error(id, rewrite::METHOD_NOT_FOUND, why),
        };
        let verdict = self.guard.from_client(&answer);
        for delivery in verdict.deliveries(answer, Side::Client) {
            if delivery.to == Side::Server {
                self.send_later(delivery.bytes.into_owned());
            }
        }
    }
}
