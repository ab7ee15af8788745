//! One server behind the gateway: one persistent session shared by every client
//! session, started, listed, restarted when it dies, drained when it is removed (a
//! per-client server: one per client session, [`per_client`]).
//!
//! The gateway's own traffic with the server (`initialize`, the lists) goes through a
//! guard of its own, so the audit trail records it like any other; the clients' calls
//! go through the guard of their session with this server ([`crate::pair`]).

use clawai_protocol::methods;
pub(crate) mod connect;
pub(crate) mod events;
mod failure;
mod follow;
mod messages;
mod modern;
mod own;
pub(crate) mod per_client;
mod pins;
mod resources;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use clawai_proxy::Guard;
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::config::{ServerEntry, SessionMode};
use crate::lists::{ListKind, Lists};
use crate::lock;
use crate::registry::SessionKey;
use events::{Context, Event};
use per_client::Role;

/// How long the gateway waits for a server's answer to `initialize` (a server may take
/// long to start: `npx` downloading it).
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(120);
/// How long the gateway waits for a page of a list.
const LIST_TIMEOUT: Duration = Duration::from_secs(60);
/// At most this many pages of one list are read.
const MAX_PAGES: usize = 1000;
/// The first wait before a server that died is started again; doubled each time, up to
/// [`MAX_BACKOFF`], and back to this after it ran a minute.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(300);

/// Where a server is in its life.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Status {
    /// Being started (or listed for the first time).
    Starting,
    /// Answering.
    Up,
    /// Down, for this reason; started again after a wait.
    Down(String),
    /// Removed from the configuration: finishing the calls in flight.
    Draining,
    /// Stopped for good.
    Stopped,
}

/// Who waits for the answer to a request the gateway sent the server.
pub(crate) enum Pending {
    /// The gateway itself.
    Own(oneshot::Sender<Result<Value, Value>>),
    /// A client's request, under the client's id.
    Call(CallFrom),
    /// A request a session's guard made of its own (never sent by a client).
    Guard(SessionKey),
}

/// A client's request forwarded to the server.
pub(crate) struct CallFrom {
    /// The client's session.
    pub session: SessionKey,
    /// The id the client gave it.
    pub client_id: Value,
    /// The id the server knows it by (as JSON text).
    pub upstream_id: String,
    /// The progress token the server knows it by, when the client asked for progress.
    pub token: Option<String>,
}

/// A progress token the gateway gave the server in place of a client's.
pub(crate) struct Progress {
    /// The client's session.
    pub session: SessionKey,
    /// The client's own token.
    pub token: Value,
}

/// One server.
pub(crate) struct Upstream {
    /// Its name in the configuration.
    pub name: String,
    /// Its configuration.
    pub entry: ServerEntry,
    /// Unique in this process (a changed server's new instance has another).
    pub instance: u64,
    /// What it reads (policy, options) and where it reports.
    context: Arc<Context>,
    /// Decides and records the gateway's own traffic with the server.
    guard: Guard,
    sender: Mutex<Option<Writer>>,
    status: Mutex<Status>,
    /// What the server answered to `initialize`.
    initialized: RwLock<Option<Value>>,
    lists: RwLock<Arc<Lists>>,
    refreshing: [tokio::sync::Mutex<()>; 4],
    /// The server declared a list it does not serve (it answers Method not found): said
    /// once, at info, not at every start.
    unserved_noted: [std::sync::atomic::AtomicBool; 4],
    pending: Mutex<HashMap<String, Pending>>,
    progress: Mutex<HashMap<String, Progress>>,
    next_id: AtomicU64,
    stop: watch::Sender<bool>,
    /// Ends the server's current run (it did not initialize), to start it again.
    restart: tokio::sync::Notify,
    /// Counts the server's runs: a listing from an earlier run is not kept.
    run: AtomicU64,
    /// What a person approved of what the server lists (a per-client server's instances
    /// share their lister's).
    pins: Arc<pins::Pins>,
    /// Shared, a per-client server's lister, or a client session's own instance.
    role: Role,
    /// Its failures to start, told once.
    failures: failure::Failures,
    /// It speaks 2026-07-28 only: its requests carry the revision in `_meta`.
    modern: std::sync::atomic::AtomicBool,
    /// What the gateway's subscription to a 2026-07-28 server follows.
    following: follow::Following,
}

/// Where messages for the server go: a child's stdin, written by whoever sends (no task
/// or channel in between), or a remote session's link.
#[derive(Clone)]
pub(crate) enum Writer {
    /// A child's stdin.
    Pipe(Arc<tokio::sync::Mutex<tokio::process::ChildStdin>>),
    /// A remote server's link.
    Link(mpsc::Sender<Vec<u8>>),
}

static INSTANCES: AtomicU64 = AtomicU64::new(1);

impl Upstream {
    /// Starts server `name` and returns at once: it comes up in the background.
    pub(crate) fn start(context: &Arc<Context>, name: String, entry: ServerEntry) -> Arc<Upstream> {
        let options = &context.options;
        let pins = Arc::new(pins::Pins::open(
            options.pins_dir.as_deref(),
            options.ask.stores.pins.as_ref(),
            &name,
            &entry.transport,
        ));
        let per_client = entry.session == SessionMode::PerClient && !options.one_client;
        let role = if per_client { Role::Lister(Default::default()) } else { Role::Shared };
        let upstream = Upstream::new(context, name, entry, pins, role);
        tokio::spawn(Arc::clone(&upstream).run());
        if per_client {
            tokio::spawn(per_client::stop_idle_instances(Arc::downgrade(&upstream), options.per_client_idle));
        }
        upstream
    }

    /// An instance of server `name`, not started yet.
    fn new(
        context: &Arc<Context>,
        name: String,
        entry: ServerEntry,
        pins: Arc<pins::Pins>,
        role: Role,
    ) -> Arc<Upstream> {
        let remote = entry.transport.is_remote();
        let guard = Guard::new(context.policy.clone(), context.audit.clone(), Some(name.clone()))
            .with_session(format!("gateway-{}", uuid::Uuid::new_v4().simple()));
        let guard = if remote { guard.for_remote_server() } else { guard };
        let (stop, _) = watch::channel(false);
        Arc::new(Upstream {
            role,
            pins,
            name,
            entry,
            instance: INSTANCES.fetch_add(1, Ordering::Relaxed),
            context: Arc::clone(context),
            guard,
            sender: Mutex::new(None),
            status: Mutex::new(Status::Starting),
            initialized: RwLock::new(None),
            lists: RwLock::default(),
            refreshing: Default::default(),
            unserved_noted: Default::default(),
            pending: Mutex::default(),
            progress: Mutex::default(),
            next_id: AtomicU64::new(1),
            stop,
            restart: tokio::sync::Notify::new(),
            run: AtomicU64::new(0),
            failures: failure::Failures::default(),
            modern: Default::default(),
            following: Default::default(),
        })
    }

    /// Where the server is in its life.
    pub(crate) fn status(&self) -> Status {
        lock(&self.status).clone()
    }

    fn set_status(&self, status: Status) {
        *lock(&self.status) = status;
    }

    /// True when the server answers calls.
    pub(crate) fn is_up(&self) -> bool {
        matches!(*lock(&self.status), Status::Up)
    }

    /// What the server listed.
    pub(crate) fn lists(&self) -> Arc<Lists> {
        Arc::clone(&self.lists.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// What the server answered to `initialize`, once it did.
    pub(crate) fn initialized(&self) -> Option<Value> {
        self.initialized.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// A capability the server declared (`tools`, `logging`, …).
    pub(crate) fn capability(&self, name: &str) -> Option<Value> {
        self.initialized().and_then(|init| init.pointer(&format!("/capabilities/{name}")).cloned())
    }

    /// A new id for a request to the server: a number, never reused by this instance.
    pub(crate) fn next_id(&self) -> Value {
        json!(self.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Remembers who waits for the answer to request `id` (as JSON text).
    pub(crate) fn expect(&self, id: String, pending: Pending) {
        lock(&self.pending).insert(id, pending);
    }

    /// The client's call waiting for the answer to request `id`, taken out; nothing is
    /// taken when someone else waits for it.
    pub(crate) fn take_call(&self, id: &str) -> Option<CallFrom> {
        let mut pending = lock(&self.pending);
        if !matches!(pending.get(id), Some(Pending::Call(_))) {
            return None;
        }
        match pending.remove(id) {
            Some(Pending::Call(call)) => Some(call),
            _ => None,
        }
    }

    /// True when someone waits for the answer to request `id`.
    pub(crate) fn expects(&self, id: &str) -> bool {
        lock(&self.pending).contains_key(id)
    }

    /// The client's own token for a progress token the gateway gave the server.
    pub(crate) fn progress_owner(&self, token: &str) -> Option<Value> {
        lock(&self.progress).get(token).map(|progress| progress.token.clone())
    }

    /// Sets the server's log level (`logging/setLevel` of a client: the session is shared).
    pub(crate) async fn set_log_level(&self, params: Value) {
        if let Err(why) = self.request(methods::LOGGING_SET_LEVEL, Some(params), LIST_TIMEOUT).await {
            tracing::debug!("server `{}`: {why}", self.name);
        }
    }

    /// Forgets who waited for request `id`.
    pub(crate) fn forget(&self, id: &str) -> Option<Pending> {
        lock(&self.pending).remove(id)
    }

    /// A progress token for the server, standing for a client's.
    pub(crate) fn progress_token(&self, session: SessionKey, token: Value) -> String {
        let ours = format!("clawai-{}-{}", self.instance, self.next_id.fetch_add(1, Ordering::Relaxed));
        lock(&self.progress).insert(ours.clone(), Progress { session, token });
        ours
    }

    /// Forgets a progress token once its request is answered.
    pub(crate) fn forget_progress(&self, token: &str) {
        lock(&self.progress).remove(token);
    }

    /// The sessions with calls in flight here.
    pub(crate) fn sessions_with_calls(&self) -> Vec<SessionKey> {
        let mut sessions: Vec<SessionKey> = Vec::new();
        for pending in lock(&self.pending).values() {
            if let Pending::Call(call) = pending
                && !sessions.contains(&call.session)
            {
                sessions.push(call.session);
            }
        }
        sessions
    }

    /// This session's calls in flight here that a client still waits for: (the id the
    /// server knows each by, the client's id).
    pub(crate) fn calls_of(&self, session: SessionKey) -> Vec<(String, Value)> {
        lock(&self.pending)
            .iter()
            .filter_map(|(key, pending)| match pending {
                Pending::Call(call) if !call.client_id.is_null() && call.session == session => {
                    Some((key.clone(), call.client_id.clone()))
                }
                _ => None,
            })
            .collect()
    }

    /// Gives a call in flight another client id (`null` while no client request waits
    /// for it: a 2026-07-28 client was asked for input and has not retried yet).
    pub(crate) fn reattach(&self, key: &str, client_id: Value) {
        if let Some(Pending::Call(call)) = lock(&self.pending).get_mut(key) {
            call.client_id = client_id;
        }
    }

    /// Client calls still waiting for the server.
    pub(crate) fn calls_in_flight(&self) -> usize {
        lock(&self.pending).values().filter(|p| matches!(p, Pending::Call(_))).count()
    }

    /// Sends one message to the server; false when it is not running.
    pub(crate) async fn send(&self, mut message: Vec<u8>) -> bool {
        if self.speaks_modern() {
            message = modern::stamp_request(message);
        }
        let writer = lock(&self.sender).clone();
        match writer {
            Some(Writer::Link(sender)) => sender.send(message).await.is_ok(),
            Some(Writer::Pipe(stdin)) => {
                use tokio::io::AsyncWriteExt;
                if !message.ends_with(b"\n") {
                    message.push(b'\n');
                }
                let mut stdin = stdin.lock().await;
                stdin.write_all(&message).await.is_ok() && stdin.flush().await.is_ok()
            }
            None => false,
        }
    }

    /// Sends a message from the task that reads the server (an answer to its ping, a
    /// refusal): on a task of its own, so that a server blocked writing to the gateway
    /// never waits for the gateway blocked writing to it.
    pub(crate) fn send_later(self: &Arc<Self>, message: Vec<u8>) {
        let this = Arc::clone(self);
        tokio::spawn(async move { this.send(message).await });
    }

    /// Where the summary of this server's sandbox is kept once it started.
    pub(crate) fn sandbox_cell(&self) -> clawai_proxy::guard::SandboxCell {
        self.guard.sandbox_cell()
    }

    /// Starts, serves, and restarts the server with backoff, until it is stopped.
    async fn run(self: Arc<Self>) {
        let mut stop = self.stop.subscribe();
        let mut backoff = FIRST_BACKOFF;
        loop {
            let stopped = *stop.borrow();
            if stopped {
                break;
            }
            self.set_status(Status::Starting);
            let started = Instant::now();
            let reason = match self.connect() {
                Err(error) => error.to_string(),
                Ok((writer, source, child)) => {
                    let reason = self.serve(writer, source, &mut stop).await;
                    lock(&self.sender).take();
                    if let Some(child) = child {
                        child.shut_down(self.context.options.grace).await;
                    }
                    reason
                }
            };
            self.went_down(&reason);
            let stopped = *stop.borrow();
            if stopped || matches!(self.status(), Status::Draining) {
                break;
            }
            if started.elapsed() > Duration::from_secs(60) {
                backoff = FIRST_BACKOFF;
            }
            self.tell_run_ended(&reason, backoff);
            tokio::select! {
                () = tokio::time::sleep(backoff) => {}
                _ = stop.wait_for(|stop| *stop) => break,
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.set_status(Status::Stopped);
        self.guard.flush_audit();
    }

    /// The server is down: its calls fail, its lists empty, the sessions are told.
    fn went_down(self: &Arc<Self>, reason: &str) {
        let draining = matches!(self.status(), Status::Draining);
        if !draining {
            self.set_status(Status::Down(reason.to_owned()));
        }
        *self.initialized.write().unwrap_or_else(|p| p.into_inner()) = None;
        self.run.fetch_add(1, Ordering::SeqCst);
        let pending: Vec<(String, Pending)> = lock(&self.pending).drain().collect();
        lock(&self.progress).clear();
        self.fail_calls(pending, &format!("server `{}` stopped ({reason})", self.name), false);
        let had_items = self.lists().items.iter().any(|items| !items.is_empty());
        {
            // The version goes on climbing: a guard that learnt the tools of the last run
            // must learn the next run's, even when its lists reach the same version.
            let mut lists = self.lists.write().unwrap_or_else(|p| p.into_inner());
            let version = lists.version + 1;
            *lists = Arc::new(Lists { version, ..Lists::default() });
        }
        if had_items {
            self.context.reports.tell(self, Event::ListsChanged);
        }
    }

    /// The calls in flight that will get no answer from the server: reported, for each
    /// session to answer them (see [`Event::CallsLost`]).
    fn fail_calls(self: &Arc<Self>, pending: Vec<(String, Pending)>, why: &str, for_good: bool) {
        let calls: HashMap<String, CallFrom> = pending
            .into_iter()
            .filter_map(|(key, pending)| match pending {
                Pending::Call(call) => Some((key, call)),
                _ => None,
            })
            .collect();
        self.context.reports.tell(self, Event::CallsLost { calls, why, for_good });
    }

    /// Asks the server to stop (drained or shut down) and waits until it has.
    pub(crate) async fn stop(&self) {
        self.stop.send_replace(true);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !matches!(self.status(), Status::Stopped) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Removed from the configuration: no new calls; the calls in flight get `drain` to
    /// finish, then are cancelled, and the server is stopped, with the instances of a
    /// per-client server.
    pub(crate) async fn drain(self: Arc<Self>, drain: Duration) {
        // Draining before the instances are taken: no session starts one after.
        self.set_status(Status::Draining);
        let instances: Vec<_> =
            self.take_instances().into_iter().map(|instance| tokio::spawn(instance.retire(drain))).collect();
        Arc::clone(&self).retire(drain).await;
        for instance in instances {
            let _ = instance.await;
        }
    }

    /// Drains this instance alone (see [`Upstream::drain`]).
    pub(crate) async fn retire(self: Arc<Self>, drain: Duration) {
        self.set_status(Status::Draining);
        let deadline = Instant::now() + drain;
        while self.calls_in_flight() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let left: Vec<(String, Pending)> = lock(&self.pending).drain().collect();
        for (id, pending) in &left {
            if let Pending::Call(_) = pending {
                let id: Value = serde_json::from_str(id).unwrap_or(Value::Null);
                let reason = "the server was removed from the gateway's configuration";
                self.notify(methods::CANCELLED, Some(json!({"requestId": id, "reason": reason}))).await;
            }
        }
        self.fail_calls(
            left,
            &format!(
                "server `{}` was removed from the gateway's configuration; the call was cancelled after {}s",
                self.name,
                drain.as_secs()
            ),
            true,
        );
        self.stop().await;
    }

    /// Lists the server's items of `kind` again (every page) and tells the sessions.
    pub(crate) async fn refresh(self: &Arc<Self>, kind: ListKind) {
        if self.is_own_instance() {
            return; // the catalog lists its lister's items
        }
        let _one_at_a_time = self.refreshing[kind.index()].lock().await;
        let run = self.run.load(Ordering::SeqCst);
        let declared = self.capability(kind.capability()).is_some();
        let items = if declared {
            match self.list_all(kind).await {
                Ok(mut items) => {
                    self.keep_approved(kind, &mut items);
                    crate::lists::render(kind, &self.name, items)
                }
                Err(why) if why.contains(&format!("({})", crate::rewrite::METHOD_NOT_FOUND)) => {
                    if !self.unserved_noted[kind.index()].swap(true, Ordering::SeqCst) {
                        tracing::info!(
                            "server `{}` declares {} but does not serve `{}` ({why}); it lists none",
                            self.name,
                            kind.member(),
                            kind.method()
                        );
                    }
                    return;
                }
                Err(why) => {
                    tracing::warn!("server `{}`: listing {} failed: {why}", self.name, kind.member());
                    return;
                }
            }
        } else {
            Vec::new()
        };
        {
            let mut lists = self.lists.write().unwrap_or_else(|p| p.into_inner());
            if self.run.load(Ordering::SeqCst) != run {
                return; // the server went down meanwhile: this list is of a run that ended
            }
            let mut next = Lists { items: lists.items.clone(), version: lists.version + 1 };
            next.items[kind.index()] = Arc::new(items);
            *lists = Arc::new(next);
        }
        self.context.reports.tell(self, Event::ListsChanged);
    }

    async fn list_all(&self, kind: ListKind) -> Result<Vec<Value>, String> {
        let (mut items, mut cursor) = (Vec::new(), None::<Value>);
        for _ in 0..MAX_PAGES {
            let params = cursor.take().map(|cursor| json!({"cursor": cursor}));
            let result = self.request(kind.method(), params, LIST_TIMEOUT).await?;
            let mut result = result;
            if let Some(Value::Array(listed)) = result.get_mut(kind.member()) {
                items.append(listed);
            }
            match result.get("nextCursor") {
                Some(next) if !next.is_null() && next.as_str() != Some("") => cursor = Some(next.clone()),
                _ => return Ok(items),
            }
        }
        Err(format!("more than {MAX_PAGES} pages"))
    }
}
