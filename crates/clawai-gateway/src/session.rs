//! One client session of the gateway: what the client sends, answered by the gateway
//! (`initialize`, lists) or routed to the server that has what it names, through the
//! session's guard for that server ([`crate::pair`]).
//!
//! * `lists`: `initialize`, `server/discover`, and the merged, paginated lists.
//! * `forward`: calls on their way to a server and answers on their way back.
//! * `from_server`: what a server sends the client on its own (its requests, progress,
//!   cancellations, resource updates).

use clawai_protocol::methods;
mod forward;
mod from_server;
mod input_required;
mod lists;
mod partial_search;
mod search;
mod skills;
mod subscriptions;
mod tasks;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};

use clawai_http::link::{FromServer, Link};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::core::Core;
use crate::lists::ListKind;
use crate::lock;

/// The fact the active skill is kept under in the session store (cluster mode: a
/// replica taking the session over finds it active).
const SKILL_FACT: &str = "skill";
use crate::pair::{Pair, Settled};
use crate::registry::{Registry, SessionKey};
use crate::rewrite::{self, id_key};
use crate::upstream::{CallFrom, Upstream};
use crate::view::View;

/// The revisions negotiated with `initialize`, oldest first.
pub(crate) const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The stateless revision.
pub(crate) const MODERN_VERSION: &str = "2026-07-28";

/// One client session.
pub(crate) struct Session {
    core: Arc<Core>,
    /// The id the audit trail shows for this session.
    pub id: String,
    /// What the servers' calls in flight name this session by.
    pub key: SessionKey,
    /// Every open session, this one included (a shared server stays subscribed to a
    /// resource while any of them wants it).
    peers: Arc<Registry<Session>>,
    outbox: mpsc::UnboundedSender<Vec<u8>>,
    state: Mutex<State>,
    /// This session's guard for each server it used, by server instance.
    pairs: Mutex<HashMap<u64, Arc<Pair>>>,
    /// The client's requests in flight: the client's id (as JSON text) → the server and
    /// the id the server knows it by.
    calls: Mutex<HashMap<String, (Weak<Upstream>, String)>>,
    /// Requests sent to the client, by the id it was given: where its answer goes.
    asked: Mutex<HashMap<String, Asked>>,
    next_asked: AtomicU64,
    /// Calls of a 2026-07-28 client waiting for it to retry with input, by state.
    suspended: Mutex<HashMap<String, input_required::Suspended>>,
    /// The lists this session's client is paging through, as their first pages were.
    snapshots: Mutex<crate::snapshots::Snapshots<View>>,
    /// Servers that were not up when this session searched (`partial_search`).
    searched_without: Mutex<Vec<String>>,
    /// The server instances that asked this session's client for its roots: told when
    /// the client's roots change.
    roots_askers: Mutex<Vec<Weak<Upstream>>>,
    /// The capabilities each 2026-07-28 request in flight carried, by its id (as JSON
    /// text): a server's request during a call is decided with that call's, never those
    /// another request declared.
    request_capabilities: Mutex<HashMap<String, Value>>,
    /// The tasks this session created, by their gateway names (`tasks`).
    tasks: Mutex<HashMap<String, tasks::Task>>,
    /// The client's open `subscriptions/listen` requests.
    listening: Mutex<Vec<subscriptions::Listening>>,
    /// The `subscriptions/listen` requests being set up (their ids, as JSON text): one the
    /// client cancels meanwhile is not opened.
    opening: Mutex<HashSet<String>>,
    /// What the policy's `rate`, `taint` and `tainted` remember of this client session,
    /// shared by its guards of every server: data one server's tool read taints calls
    /// to the others.
    pub(crate) remembered: Arc<clawai_policy::Session>,
}

#[derive(Default)]
struct State {
    initialized: bool,
    /// The client speaks the stateless revision.
    modern: bool,
    /// What the client declared it can do.
    capabilities: Value,
    /// The params of the client's `initialize`, told to each guard.
    initialize: Option<Value>,
    view: Option<Arc<View>>,
    /// The digests of the lists the client was last shown or told of.
    announced: Option<[u64; 4]>,
    /// Resources the client subscribed to, as listed.
    subscriptions: HashSet<String>,
    /// The active skill's name.
    skill: Option<String>,
}

/// Where the answer to a request sent to the client goes.
enum Asked {
    /// To the server that asked, under its id.
    Upstream { pair: Arc<Pair>, upstream_id: Value },
    /// To the guard that asked (a question about a held call).
    Guard { pair: Arc<Pair> },
}

impl Session {
    /// Opens a session: the front sends the client's messages into the link and reads
    /// the gateway's from it.
    pub(crate) fn open(core: &Arc<Core>, peers: &Arc<Registry<Session>>, shared: Option<&str>) -> Link {
        let (link, mut from_client, to_client) = Link::pair();
        let (session, mut queued) = Session::new(core, peers, shared);
        // Servers never wait for a slow client: its messages queue here.
        tokio::spawn(async move {
            while let Some(message) = queued.recv().await {
                if to_client.send(FromServer::Message(message)).await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(message) = from_client.recv().await {
                session.from_client(crate::raw_ids::carry(message)).await;
            }
            session.closed().await;
        });
        link
    }

    /// A session driven by its caller, which hands it each client message
    /// ([`Session::from_client`]) and sends the client what comes out of the receiver:
    /// messages for the client queue there, so that servers never wait for a slow client.
    /// `shared`: the id the session's memory is kept under (the HTTP front's session id),
    /// else its own; an active skill kept there is active again.
    /// It joins `peers`.
    pub(crate) fn new(
        core: &Arc<Core>,
        peers: &Arc<Registry<Session>>,
        shared: Option<&str>,
    ) -> (Arc<Session>, mpsc::UnboundedReceiver<Vec<u8>>) {
        let (outbox, queued) = mpsc::unbounded_channel::<Vec<u8>>();
        let id = uuid::Uuid::new_v4().to_string();
        let memory = core.options.ask.stores.sessions.open(shared.unwrap_or(&id));
        let state = State { skill: memory.fact(SKILL_FACT), ..State::default() };
        let session = Arc::new(Session {
            core: Arc::clone(core),
            id,
            key: SessionKey::new(),
            peers: Arc::clone(peers),
            outbox,
            state: Mutex::new(state),
            pairs: Mutex::default(),
            calls: Mutex::default(),
            asked: Mutex::default(),
            next_asked: AtomicU64::new(1),
            suspended: Mutex::default(),
            snapshots: Mutex::default(),
            searched_without: Mutex::default(),
            roots_askers: Mutex::default(),
            request_capabilities: Mutex::default(),
            tasks: Mutex::default(),
            listening: Mutex::default(),
            opening: Mutex::default(),
            remembered: Arc::new(clawai_policy::Session::in_memory(memory)),
        });
        peers.add(session.key, &session);
        (session, queued)
    }

    /// Queues a message for the client.
    pub(crate) fn send(&self, message: Vec<u8>) {
        let _ = self.outbox.send(crate::raw_ids::restored(message));
    }

    /// This session's guard for `upstream`.
    pub(crate) fn pair(self: &Arc<Self>, upstream: &Arc<Upstream>) -> Arc<Pair> {
        let mut pairs = lock(&self.pairs);
        let pair = pairs.entry(upstream.instance).or_insert_with(|| {
            let pair = Pair::new(&self.core, &self.id, &self.remembered, Arc::clone(upstream), self.settled());
            if let Some(initialize) = &lock(&self.state).initialize {
                pair.guard.client_initialized(initialize);
            }
            pair
        });
        Arc::clone(pair)
    }

    /// Where the guard of a pair of this session's delivers what it decides later (an
    /// approval, a time-out): to this session, while it is open.
    fn settled(self: &Arc<Self>) -> Settled {
        let session = Arc::downgrade(self);
        let runtime = tokio::runtime::Handle::current();
        Arc::new(move |pair: Arc<Pair>, later| {
            let Some(session) = session.upgrade() else { return };
            runtime.spawn(async move {
                let out = pair.guard.settle(later);
                session.deliver_from_pair(&pair, clawai_proxy::guard::dispatched(out)).await;
            });
        })
    }

    /// What this session sees now.
    pub(crate) fn view(&self) -> Arc<View> {
        let catalog = self.core.catalog();
        let policy = self.core.policy.current();
        let skills = self.core.skills();
        let active = {
            let state = lock(&self.state);
            if let Some(view) = &state.view
                && view.catalog.generation == catalog.generation
                && Arc::ptr_eq(&view.policy, &policy)
                && Arc::ptr_eq(&view.skills, &skills)
                && view.skill == state.skill
            {
                return Arc::clone(view);
            }
            state.skill.clone()
        };
        let (policy, always_denied) = self.core.always_denied(&catalog);
        let allowed_tools = self.core.allowed_tools();
        let scope = crate::view::Scope {
            allowed_tools: allowed_tools.as_deref(),
            skill: active.as_deref().and_then(|name| skills.get(name)),
        };
        let view = Arc::new(View::compute(catalog, &scope, policy, &always_denied, Arc::clone(&skills)));
        let mut state = lock(&self.state);
        state.view = Some(Arc::clone(&view));
        view
    }

    /// The catalog changed: the client is told of each list it sees that changed.
    pub(crate) fn view_may_have_changed(&self) {
        let mut view = self.view();
        let mut state = lock(&self.state);
        // Computed while something else changed what the session sees (another thread
        // activated a skill): compute again rather than announce a stale view.
        let mut tries = 0;
        while tries < 3 && (view.skill != state.skill || view.catalog.generation != self.core.catalog().generation) {
            tries += 1;
            drop(state);
            view = self.view();
            state = lock(&self.state);
        }
        let Some(announced) = state.announced else { return };
        let changed = |kind: ListKind| announced[kind.index()] != view.digests[kind.index()];
        if state.modern {
            // A 2026-07-28 client is told on the subscriptions it opened, if any.
            if self.is_listening() {
                state.announced = Some(view.digests);
                drop(state);
                self.tell_subscriptions(changed);
            }
            return;
        }
        if !state.initialized {
            return;
        }
        state.announced = Some(view.digests);
        drop(state);
        // A search missed servers that were starting: now that they are up, searching
        // again finds their tools, which is news even when the list shows none of them.
        if changed(ListKind::Tools) | self.missed_servers_came_up() {
            self.send(rewrite::notification(methods::TOOLS_LIST_CHANGED, None));
        }
        if changed(ListKind::Prompts) {
            self.send(rewrite::notification(methods::PROMPTS_LIST_CHANGED, None));
        }
        if changed(ListKind::Resources) || changed(ListKind::Templates) {
            self.send(rewrite::notification(methods::RESOURCES_LIST_CHANGED, None));
        }
    }

    /// One message from the client (the front checked it is one valid JSON-RPC message,
    /// its ids carried: [`crate::raw_ids::carry`]).
    pub(crate) async fn from_client(self: &Arc<Self>, bytes: Vec<u8>) {
        let Ok(message) = serde_json::from_slice::<Value>(&bytes) else {
            self.send(rewrite::error(&Value::Null, clawai_protocol::reply::PARSE_ERROR, "not JSON"));
            return;
        };
        let method = message.get("method").and_then(Value::as_str).map(str::to_owned);
        let id = message.get("id").filter(|id| !id.is_null()).cloned();
        match (method, id) {
            (Some(method), Some(id)) => self.request(&method, id, message).await,
            (Some(method), None) => self.notification(&method, message).await,
            (None, Some(id)) => self.client_answered(&id, message, bytes).await,
            (None, None) => {}
        }
    }

    async fn request(self: &Arc<Self>, method: &str, id: Value, message: Value) {
        let modern = message
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(rewrite::PROTOCOL_VERSION_META))
            .and_then(Value::as_str)
            == Some(MODERN_VERSION);
        if modern {
            self.remember_capabilities(&id, &message);
            let mut state = lock(&self.state);
            state.modern = true;
            if let Some(capabilities) =
                message.pointer("/params/_meta").and_then(|meta| meta.get(rewrite::CLIENT_CAPABILITIES_META))
            {
                state.capabilities = capabilities.clone();
            }
        }
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        if let Some(state) = params.get("requestState").and_then(Value::as_str)
            && state.starts_with(input_required::STATE_PREFIX)
        {
            return self.resume(id, &message, state).await;
        }
        if matches!(
            method,
            methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ | methods::COMPLETION_COMPLETE
        ) || ListKind::of_method(method).is_some()
        {
            self.core.settle().await;
        }
        if matches!(method, methods::TOOLS_CALL | methods::PROMPTS_GET)
            && self.skill_request(method, &id, &message, modern).is_some()
        {
            return;
        }
        if method == methods::TOOLS_CALL
            && message.pointer("/params/name").and_then(Value::as_str) == Some(crate::tool_search::SEARCH_TOOL)
        {
            return self.search_tools(&id, &message, modern);
        }
        match method {
            methods::INITIALIZE => {
                // A client that starts with the gateway sees the servers that come up
                // quickly, and what they can do, from its first answer.
                self.core.settle().await;
                self.initialize(&id, &params)
            }
            methods::SERVER_DISCOVER => self.discover(&id),
            "ping" => self.answer(&id, json!({}), modern),
            methods::TOOLS_CALL => self.call_tool(id, message).await,
            methods::PROMPTS_GET => self.get_prompt(id, message).await,
            methods::RESOURCES_READ | methods::RESOURCES_SUBSCRIBE | methods::RESOURCES_UNSUBSCRIBE => {
                self.resource_request(method, id, message, modern).await
            }
            methods::COMPLETION_COMPLETE => self.complete(id, message).await,
            methods::LOGGING_SET_LEVEL => self.set_log_level(&id, &params, modern),
            "subscriptions/listen" => {
                // Subscribing servers may take a while: the client's other messages do not wait.
                self.opening_subscription(&id);
                let this = Arc::clone(self);
                tokio::spawn(async move { this.listen(id, &params).await });
            }
            methods::TASKS_GET
            | methods::TASKS_RESULT
            | methods::TASKS_CANCEL
            | methods::TASKS_LIST
            | tasks::UPDATE => self.task_request(method, id, message, modern).await,
            _ => match ListKind::of_method(method) {
                Some(kind) => self.list(kind, &id, &params, modern),
                None => self.send(rewrite::error(
                    &id,
                    rewrite::METHOD_NOT_FOUND,
                    &format!("clawai gateway: `{method}` is not supported through the gateway"),
                )),
            },
        }
    }

    async fn notification(self: &Arc<Self>, method: &str, message: Value) {
        match method {
            methods::CANCELLED => {
                if let Some(request) = message.pointer("/params/requestId") {
                    self.stop_listening(request);
                    self.cancel(request, &message).await;
                }
            }
            // The servers that asked this client for its roots are told (they ask again,
            // during a call of this client's); no other server is.
            methods::ROOTS_LIST_CHANGED => self.roots_changed().await,
            methods::INITIALIZED => {}
            _ => tracing::debug!("session {}: `{method}` from the client is not passed on", self.id),
        }
    }

    /// An answer for the client, marked for a 2026-07-28 client.
    fn answer(&self, id: &Value, mut result: Value, modern: bool) {
        if modern {
            rewrite::stamp_modern(&mut result, &server_info());
        }
        self.send(rewrite::result(id, result));
    }

    /// Fails a call with an error, once its server cannot answer it.
    pub(crate) fn fail_call(&self, call: &CallFrom, why: &str) {
        let error = rewrite::error(&call.client_id, clawai_protocol::reply::SERVER_UNAVAILABLE, why);
        if call.client_id.is_null() {
            // A 2026-07-28 client asked for input has not retried yet: its retry gets it.
            self.keep_answer(&call.upstream_id, error);
            return;
        }
        lock(&self.calls).remove(&id_key(&call.client_id));
        self.send(error);
    }

    /// A call the server will never answer, answered by this session's guard for it
    /// (`answer`, under the server's id).
    pub(crate) fn answer_lost_call(&self, upstream: &Upstream, call: &CallFrom, answer: Value) {
        if call.client_id.is_null() {
            self.keep_answer(&call.upstream_id, rewrite::encode(&answer));
            return;
        }
        self.send_answer(upstream, &call.client_id, answer);
    }

    /// The server instance `instance` is gone: this session's guard for it answers what
    /// it holds (calls waiting for a person or for the tool list, requests in flight),
    /// records that, and forgets them, so nothing held is sent to a later run.
    /// `for_good`: the instance was removed from the configuration (not restarting), so
    /// the guard itself is dropped too.
    pub(crate) fn server_gone(&self, instance: u64, why: &str, for_good: bool) -> Vec<Vec<u8>> {
        let pair =
            if for_good { lock(&self.pairs).remove(&instance) } else { lock(&self.pairs).get(&instance).cloned() };
        pair.map(|pair| {
            let answers = pair.guard.server_gone(why);
            pair.guard.flush_audit();
            answers
        })
        .unwrap_or_default()
    }

    /// The client went away: what it still waits for is cancelled at the servers.
    pub(crate) async fn closed(self: &Arc<Self>) {
        self.stop_all_listening();
        let calls: Vec<(Weak<Upstream>, String)> = lock(&self.calls).drain().map(|(_, call)| call).collect();
        for (upstream, key) in calls {
            if let Some(upstream) = upstream.upgrade() {
                if let Some(crate::upstream::Pending::Call(call)) = upstream.forget(&key)
                    && let Some(token) = &call.token
                {
                    upstream.forget_progress(token);
                }
                let id: Value = serde_json::from_str(&key).unwrap_or(Value::Null);
                upstream
                    .notify(methods::CANCELLED, Some(json!({"requestId": id, "reason": "the client went away"})))
                    .await;
            }
        }
        for pair in lock(&self.pairs).values() {
            pair.guard.flush_audit();
        }
        // This session's own instances of per-client servers stop, with all they started.
        let ending: Vec<_> = self
            .core
            .upstreams()
            .into_iter()
            .filter(|upstream| upstream.is_per_client())
            .map(|lister| {
                let session = self.id.clone();
                tokio::spawn(async move { lister.end_instance_of(&session).await })
            })
            .collect();
        for ended in ending {
            let _ = ended.await;
        }
    }
}

/// The gateway's `serverInfo`.
pub(crate) fn server_info() -> Value {
    json!({"name": "clawai-gateway", "version": env!("CARGO_PKG_VERSION")})
}
