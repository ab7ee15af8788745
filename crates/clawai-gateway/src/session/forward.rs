//! Calls on their way to a server, through the session's guard for it, and answers on
//! their way back. The guard sees the server's own names and the server's ids; the
//! client sees the gateway's names and its own ids.

use clawai_protocol::methods;
use std::sync::Arc;

use clawai_protocol::reply;
use clawai_proxy::Verdict;
use clawai_proxy::guard::{Deliveries, Side};
use serde_json::{Value, json};

use super::{Asked, Session, lock};
use crate::lists::ListKind;
use crate::names;
use crate::pair::Pair;
use crate::rewrite::{self, id_key};
use crate::upstream::{CallFrom, Pending, Upstream};

use clawai_protocol::codes::RESOURCE_NOT_FOUND;

impl Session {
    pub(super) async fn call_tool(self: &Arc<Self>, id: Value, message: Value) {
        let Some(name) = message.pointer("/params/name").and_then(Value::as_str).map(str::to_owned) else {
            return self.send(rewrite::error(&id, reply::INVALID_PARAMS, "tools/call needs a `name`"));
        };
        let view = self.view();
        let allowed = self.core.allowed_tools();
        let Some(item) = view.find(ListKind::Tools, &name, allowed.as_deref()) else {
            self.record_unknown(methods::TOOLS_CALL, &id, &name);
            return self.send(self.unknown(&id, "tool", &name));
        };
        let (upstream, original) = (Arc::clone(item.upstream), item.listed.original.clone());
        drop(view);
        let mut message = message;
        message["params"]["name"] = json!(original);
        self.forward(&upstream, id, message).await;
    }

    pub(super) async fn get_prompt(self: &Arc<Self>, id: Value, message: Value) {
        let Some(name) = message.pointer("/params/name").and_then(Value::as_str).map(str::to_owned) else {
            return self.send(rewrite::error(&id, reply::INVALID_PARAMS, "prompts/get needs a `name`"));
        };
        let view = self.view();
        let Some(item) = view.find(ListKind::Prompts, &name, None) else {
            self.record_unknown(methods::PROMPTS_GET, &id, &name);
            return self.send(self.unknown(&id, "prompt", &name));
        };
        let (upstream, original) = (Arc::clone(item.upstream), item.listed.original.clone());
        drop(view);
        let mut message = message;
        message["params"]["name"] = json!(original);
        self.forward(&upstream, id, message).await;
    }

    pub(super) async fn resource_request(self: &Arc<Self>, method: &str, id: Value, message: Value, modern: bool) {
        let Some(uri) = message.pointer("/params/uri").and_then(Value::as_str).map(str::to_owned) else {
            return self.send(rewrite::error(&id, reply::INVALID_PARAMS, &format!("{method} needs a `uri`")));
        };
        let Some(upstream) = self.resource_server(&uri) else {
            self.record_unknown(method, &id, &uri);
            return self.send(rewrite::error(
                &id,
                RESOURCE_NOT_FOUND,
                &format!("Resource not found: {uri} (the gateway lists resources as clawai://SERVER/URI)"),
            ));
        };
        let (_, original) = names::split_resource_uri(&uri).expect("checked by resource_server");
        let original = original.to_owned();
        match method {
            methods::RESOURCES_SUBSCRIBE => {
                let mut message = message;
                message["params"]["uri"] = json!(original);
                // Subscribed only once the guard let the subscription through.
                if self.forward(&upstream, id, message).await {
                    lock(&self.state).subscriptions.insert(uri);
                }
                return;
            }
            methods::RESOURCES_UNSUBSCRIBE => {
                lock(&self.state).subscriptions.remove(&uri);
                // A shared server's session stays subscribed while any client is, by
                // `resources/subscribe` or on a subscription (a per-client server's
                // instance is this session's alone).
                if !upstream.is_per_client() && self.peers.all().iter().any(|s| s.wants_resource(&uri)) {
                    return self.answer(&id, json!({}), modern);
                }
            }
            _ => {}
        }
        let mut message = message;
        message["params"]["uri"] = json!(original);
        self.forward(&upstream, id, message).await;
    }

    /// The running server a listed resource URI belongs to, when this session may read it.
    pub(super) fn resource_server(&self, uri: &str) -> Option<Arc<Upstream>> {
        let (server, _) = names::split_resource_uri(uri)?;
        self.core.upstream(server).filter(|upstream| crate::view::resources_shown(upstream.entry.internal_only))
    }

    pub(super) async fn complete(self: &Arc<Self>, id: Value, message: Value) {
        let reference = message.pointer("/params/ref").cloned().unwrap_or(Value::Null);
        let target = match reference.get("type").and_then(Value::as_str) {
            Some("ref/prompt") => {
                let name = reference.get("name").and_then(Value::as_str).unwrap_or_default();
                let view = self.view();
                view.find(ListKind::Prompts, name, None)
                    .map(|item| (Arc::clone(item.upstream), "name", item.listed.original.clone()))
            }
            Some("ref/resource") => {
                let uri = reference.get("uri").and_then(Value::as_str).unwrap_or_default();
                self.resource_server(uri).and_then(|upstream| {
                    let original = names::split_resource_uri(uri)?.1.to_owned();
                    Some((upstream, "uri", original))
                })
            }
            _ => None,
        };
        let Some((upstream, key, original)) = target else {
            let name =
                reference.get("name").or_else(|| reference.get("uri")).and_then(Value::as_str).unwrap_or_default();
            self.record_unknown(methods::COMPLETION_COMPLETE, &id, name);
            return self.send(rewrite::error(
                &id,
                reply::INVALID_PARAMS,
                "clawai gateway: completion for an unknown prompt or resource",
            ));
        };
        let mut message = message;
        message["params"]["ref"][key] = json!(original);
        self.forward(&upstream, id, message).await;
    }

    /// The error for a name this session cannot use: the same whether it does not exist
    /// or is hidden, so hiding tells nothing. A server removed from the configuration is
    /// named as such (it was visible before).
    fn unknown(&self, id: &Value, what: &str, name: &str) -> Vec<u8> {
        if let Some((server, _)) = name.split_once(names::SEPARATOR)
            && self.core.was_removed(server)
            && self.core.upstream(server).is_none()
        {
            return rewrite::error(
                id,
                reply::INVALID_PARAMS,
                &format!("clawai gateway: server `{server}` was removed from the gateway's configuration"),
            );
        }
        if let Some(why) = self.held_by_pinning(what, name) {
            return rewrite::error(id, reply::DENIED, &why);
        }
        if let Some(why) = self.not_up(what, name) {
            return rewrite::error(id, reply::SERVER_UNAVAILABLE, &why);
        }
        let capitalised = if what == "tool" { "Unknown tool" } else { "Unknown prompt" };
        rewrite::error(id, reply::INVALID_PARAMS, &format!("{capitalised}: {name}"))
    }

    /// Why a name this session would see is not listed yet: its server is starting,
    /// restarting or stopped (its tools leave the lists meanwhile). `None` when the server
    /// is up, or the session could not see the name anyway (hiding still tells nothing).
    fn not_up(&self, what: &str, name: &str) -> Option<String> {
        let (server, _) = name.split_once(names::SEPARATOR)?;
        let upstream = self.core.upstream(server)?;
        let state = match upstream.status() {
            crate::upstream::Status::Up => return None,
            crate::upstream::Status::Starting => "is starting".to_owned(),
            crate::upstream::Status::Down(why) => format!("is restarting (it stopped: {why})"),
            crate::upstream::Status::Draining => "is being removed".to_owned(),
            crate::upstream::Status::Stopped => "has stopped".to_owned(),
        };
        let kind = if what == "tool" { ListKind::Tools } else { ListKind::Prompts };
        let allowed = self.core.allowed_tools();
        if !self.view().would_show(kind, name, upstream.entry.internal_only, allowed.as_deref()) {
            return None;
        }
        Some(format!("clawai gateway: server `{server}` {state}; its {what}s are listed again once it is up"))
    }

    /// Why a name this session would see is not listed: what the server lists under it
    /// changed since a person approved it (`clawai pins diff`). `None` for a name the
    /// session could not see anyway, so that hiding still tells nothing.
    fn held_by_pinning(&self, what: &str, name: &str) -> Option<String> {
        let (server, original) = name.split_once(names::SEPARATOR)?;
        let upstream = self.core.upstream(server)?;
        let pins = upstream.pins()?;
        let (kind, pinned) = match what {
            "tool" => (ListKind::Tools, clawai_proxy::pins::Kind::Tool),
            _ => (ListKind::Prompts, clawai_proxy::pins::Kind::Prompt),
        };
        let allowed = self.core.allowed_tools();
        if !self.view().would_show(kind, name, upstream.entry.internal_only, allowed.as_deref()) {
            return None;
        }
        let refusal = pins.refusal(pinned, original)?;
        Some(pins.refusal_text(pinned, original, &refusal))
    }

    /// Sends a client's request (already under the server's own names) to `upstream`
    /// (for a per-client server, this session's own instance of it) through this
    /// session's guard for it, under an id and progress token of the gateway's.
    /// True when the guard let it go to the server.
    pub(super) async fn forward(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        client_id: Value,
        mut message: Value,
    ) -> bool {
        let upstream = match upstream.serving((self.key, &self.id)).await {
            Ok(upstream) => upstream,
            Err(why) => {
                tracing::warn!("session {}: {why}", self.id);
                self.send(rewrite::error(&client_id, reply::SERVER_UNAVAILABLE, &format!("clawai gateway: {why}")));
                return false;
            }
        };
        let upstream = &upstream;
        let pair = self.pair(upstream);
        pair.learn_tools();
        let upstream_id = upstream.next_id();
        let key = id_key(&upstream_id);
        let token = rewrite::progress_token(&message).cloned().map(|token| upstream.progress_token(self.key, token));
        if let Some(token) = &token {
            rewrite::set_progress_token(&mut message, json!(token));
        }
        message["id"] = upstream_id;
        lock(&self.calls).insert(id_key(&client_id), (Arc::downgrade(upstream), key.clone()));
        pair.guard.client_sent_id(&key, &crate::raw_ids::trail_text(&client_id));
        upstream.expect(key.clone(), Pending::Call(CallFrom { session: self.key, client_id, upstream_id: key, token }));
        let bytes = rewrite::encode(&message);
        let verdict = pair.guard.from_client(&bytes);
        let forwarded = matches!(verdict, Verdict::Forward);
        self.after_client_verdict(&pair, bytes, verdict).await;
        forwarded
    }

    /// Does what the guard said of a message on its way to the server.
    pub(super) async fn after_client_verdict(self: &Arc<Self>, pair: &Arc<Pair>, bytes: Vec<u8>, verdict: Verdict) {
        self.deliver_from_pair(pair, verdict.deliveries(bytes, Side::Client)).await;
    }

    async fn to_server(&self, pair: &Pair, bytes: Vec<u8>) {
        // A 2026-07-28 server has no `resources/subscribe`: the gateway subscribes for it.
        if pair.upstream.subscribe_for_client(&bytes).await {
            return;
        }
        // The guard saw the client's revision; the server gets the one it agreed on.
        let bytes = pair.upstream.outgoing(bytes);
        if !pair.upstream.send(bytes.clone()).await
            && let Ok(message) = serde_json::from_slice::<Value>(&bytes)
            && let Some(id) = message.get("id").filter(|_| message.get("method").is_some())
            && let Some(Pending::Call(call)) = pair.upstream.forget(&id_key(id))
        {
            self.fail_call(&call, &format!("clawai gateway: server `{}` is not running", pair.upstream.name));
        }
    }

    /// Sends what a guard gave, each message to its side.
    pub(crate) async fn deliver_from_pair(self: &Arc<Self>, pair: &Arc<Pair>, deliveries: Deliveries<'_>) {
        for delivery in deliveries {
            let bytes = delivery.bytes.into_owned();
            match delivery.to {
                Side::Server if delivery.from_guard => {
                    if let Ok(message) = serde_json::from_slice::<Value>(&bytes)
                        && message.get("method").is_some()
                        && let Some(id) = message.get("id")
                        && !pair.upstream.expects(&id_key(id))
                    {
                        // A request the guard makes of its own (its ids begin `clawai-`)
                        // is answered to the guard. Any other request nobody waits for
                        // any more (a call released after its server went away, or
                        // after the client cancelled it) is not sent.
                        if !id.as_str().is_some_and(|id| id.starts_with("clawai-")) {
                            continue;
                        }
                        pair.upstream.expect(id_key(id), Pending::Guard(self.key));
                    }
                    self.to_server(pair, bytes).await;
                }
                Side::Server => self.to_server(pair, bytes).await,
                Side::Client => self.answer_from_pair(pair, bytes),
            }
        }
    }

    /// A message a guard sends the client: an answer to a call (under the server's id),
    /// a question of its own, or progress while a call waits.
    fn answer_from_pair(self: &Arc<Self>, pair: &Pair, bytes: Vec<u8>) {
        let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else { return };
        let has_method = message.get("method").is_some();
        match message.get("id").filter(|id| !id.is_null()).cloned() {
            Some(id) if !has_method => {
                if let Some(Pending::Call(call)) = pair.upstream.forget(&id_key(&id)) {
                    if let Some(token) = &call.token {
                        pair.upstream.forget_progress(token);
                    }
                    pair.guard.forget_client_id(&call.upstream_id);
                    self.send_answer(&pair.upstream, &call.client_id, message);
                }
            }
            Some(id) => {
                lock(&self.asked).insert(id_key(&id), Asked::Guard { pair: self.pair(&pair.upstream) });
                self.send(bytes);
            }
            None => {
                if let Some(token) = message.pointer("/params/progressToken").and_then(Value::as_str) {
                    if let Some(original) = pair.upstream.progress_owner(token) {
                        message["params"]["progressToken"] = original;
                        self.send(rewrite::encode(&message));
                    }
                } else {
                    // The guard's own (the cancellation of a question it asked).
                    if message.get("method").and_then(Value::as_str) == Some(methods::CANCELLED)
                        && let Some(asked) = message.pointer("/params/requestId")
                    {
                        lock(&self.asked).remove(&id_key(asked));
                    }
                    self.send(bytes);
                }
            }
        }
    }

    /// An answer for the client under its own id, with resource URIs under the gateway's
    /// names.
    pub(crate) fn send_answer(&self, upstream: &Upstream, client_id: &Value, mut message: Value) {
        lock(&self.calls).remove(&id_key(client_id));
        message["id"] = client_id.clone();
        let modern = lock(&self.state).modern;
        if let Some(result) = message.get_mut("result") {
            rewrite::list_resource_uris(result, &upstream.name);
            self.tasks_answered(upstream, result);
            if modern {
                rewrite::stamp_modern(result, &super::server_info());
            }
        }
        self.send(rewrite::encode(&message));
    }

    /// The server answered a client's call (`id_at`: where the server's id is in
    /// `bytes`, when it was found without a parse).
    pub(crate) async fn call_answered(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        call: CallFrom,
        bytes: Vec<u8>,
        id_at: Option<std::ops::Range<usize>>,
    ) {
        let pair = self.pair(upstream);
        let verdict = pair.guard.from_server(&bytes);
        pair.guard.forget_client_id(&call.upstream_id);
        if call.client_id.is_null() {
            // Its client was asked for input and has not retried yet.
            if let Verdict::Forward = verdict {
                self.keep_answer(&call.upstream_id, bytes);
            } else if let Verdict::Replace(instead) = verdict {
                self.keep_answer(&call.upstream_id, instead);
            }
            return;
        }
        if let Verdict::Forward = verdict {
            return self.forward_answer(upstream, &call.client_id, bytes, id_at);
        }
        for delivery in verdict.deliveries(bytes, Side::Server) {
            match delivery.to {
                Side::Client => self.send_parsed_answer(upstream, &call.client_id, &delivery.bytes),
                Side::Server => self.to_server(&pair, delivery.bytes.into_owned()).await,
            }
        }
    }

    /// The server's answer to a call was over the size limit: the client gets an error.
    pub(crate) fn call_too_large(
        self: &Arc<Self>,
        upstream: &Arc<Upstream>,
        call: CallFrom,
        prefix: &[u8],
        length: usize,
        limit: usize,
    ) {
        let pair = self.pair(upstream);
        let verdict = pair.guard.oversize_from_server(prefix, length, limit);
        match verdict {
            Verdict::Replace(error) if !call.client_id.is_null() => {
                self.send_parsed_answer(upstream, &call.client_id, &error)
            }
            _ => self.fail_call(
                &call,
                &format!("clawai gateway: the server's answer of {length} bytes is over the {limit}-byte limit"),
            ),
        }
        pair.guard.forget_client_id(&call.upstream_id);
    }

    /// The server's answer as the client gets it: the client's id put where the server's
    /// was, and nothing else touched, unless the answer names resources (their URIs get
    /// the gateway's names) or the client speaks 2026-07-28 (the result gets its marks):
    /// then it is parsed and encoded again.
    fn forward_answer(
        &self,
        upstream: &Upstream,
        client_id: &Value,
        bytes: Vec<u8>,
        id_at: Option<std::ops::Range<usize>>,
    ) {
        // Resource URIs and task ids get the gateway's names.
        let names_resources =
            memchr::memmem::find(&bytes, b"\"uri\"").is_some() || memchr::memmem::find(&bytes, b"\"taskId\"").is_some();
        match id_at {
            Some(id_at) if !names_resources && !lock(&self.state).modern => {
                lock(&self.calls).remove(&id_key(client_id));
                let client_id = client_id.to_string();
                let mut answer = Vec::with_capacity(bytes.len() + client_id.len() + 1);
                answer.extend_from_slice(&bytes[..id_at.start]);
                answer.extend_from_slice(client_id.as_bytes());
                answer.extend_from_slice(&bytes[id_at.end..]);
                if !answer.ends_with(b"\n") {
                    answer.push(b'\n');
                }
                self.send(answer);
            }
            _ => self.send_parsed_answer(upstream, client_id, &bytes),
        }
    }

    pub(super) fn send_parsed_answer(&self, upstream: &Upstream, client_id: &Value, bytes: &[u8]) {
        if let Ok(message) = serde_json::from_slice::<Value>(bytes) {
            self.send_answer(upstream, client_id, message);
        }
    }

    /// The server answered a request a guard made of its own.
    pub(crate) async fn guard_answered(self: &Arc<Self>, upstream: &Arc<Upstream>, bytes: Vec<u8>) {
        let pair = self.pair(upstream);
        // The guard takes its own answer (a listing it asked for) and says what follows
        // from it; nothing of it is the client's.
        let verdict = pair.guard.from_server(&bytes);
        if !matches!(verdict, Verdict::Forward | Verdict::Replace(_)) {
            self.deliver_from_pair(&pair, verdict.deliveries(bytes, Side::Server)).await;
        }
    }

    /// The client cancelled a request: the cancellation goes to the one server that
    /// holds it, under that server's id.
    pub(super) async fn cancel(self: &Arc<Self>, request: &Value, message: &Value) {
        let Some((upstream, key)) = lock(&self.calls).remove(&id_key(request)) else { return };
        let Some(upstream) = upstream.upgrade() else { return };
        let pair = self.pair(&upstream);
        if let Some(Pending::Call(call)) = upstream.forget(&key) {
            if let Some(token) = &call.token {
                upstream.forget_progress(token);
            }
            pair.guard.forget_client_id(&call.upstream_id);
        }
        let mut message = message.clone();
        message["params"]["requestId"] = serde_json::from_str(&key).unwrap_or(Value::Null);
        let bytes = rewrite::encode(&message);
        let verdict = pair.guard.from_client(&bytes);
        self.after_client_verdict(&pair, bytes, verdict).await;
    }

    /// The client answered a request the gateway sent it.
    pub(super) async fn client_answered(self: &Arc<Self>, id: &Value, message: Value, bytes: Vec<u8>) {
        let asked = lock(&self.asked).remove(&id_key(id));
        match asked {
            Some(Asked::Upstream { pair, upstream_id }) => {
                let mut message = message;
                message["id"] = upstream_id;
                let bytes = rewrite::encode(&message);
                let verdict = pair.guard.from_client(&bytes);
                self.after_client_verdict(&pair, bytes, verdict).await;
            }
            Some(Asked::Guard { pair }) => {
                let verdict = pair.guard.from_client(&bytes);
                self.after_client_verdict(&pair, bytes, verdict).await;
            }
            None => tracing::debug!("session {}: an answer to {id}, which nobody asked", self.id),
        }
    }
}
