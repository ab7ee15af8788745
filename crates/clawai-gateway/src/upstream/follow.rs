//! What a server that speaks only 2026-07-28 says unasked (its lists changed, a resource
//! changed, a task's state) it says only on a `subscriptions/listen` stream: there is no
//! other channel for it. The gateway opens one subscription of its own per server (for
//! the lists the server says change, the resources its sessions' subscriptions asked for
//! and the tasks they follow), and what comes on it is taken as an older server's
//! notifications are (a list read again and the sessions told, an update or a task's state
//! to the session that asked). When what is wanted changes, a new subscription is opened
//! with all of it, then the old one is cancelled, so that nothing falls between the two; a
//! subscription the server ends (or whose stream breaks) is opened again, the lists read
//! again first: what changed meanwhile was told to nobody.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clawai_protocol::methods;
use serde_json::{Map, Value, json};

use super::own::answer_of;
use super::{Upstream, lock};
use crate::lists::ListKind;
use crate::rewrite::{METHOD_NOT_FOUND, id_key};

/// The method that opens a subscription.
pub(crate) const LISTEN: &str = "subscriptions/listen";
/// The first message of a subscription, saying what it tells.
pub(crate) const ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// The first wait before a subscription the server ended is opened again; doubled each
/// time, up to [`LAST_RELISTEN`], and back to the first after one that lasted longer.
const FIRST_RELISTEN: Duration = Duration::from_secs(1);
const LAST_RELISTEN: Duration = Duration::from_secs(60);

/// How long a session's subscription waits for the server to acknowledge what it asked
/// for, before it is acknowledged to the client anyway.
const ACKNOWLEDGED_WITHIN: Duration = Duration::from_secs(10);

/// What the gateway's subscription to one server follows.
pub(crate) struct Following {
    /// The resources (the server's URIs) and tasks (its ids) sessions want to be told of.
    wanted: std::sync::Mutex<Wanted>,
    /// Wakes the subscription to open again with what is wanted now.
    changed: tokio::sync::Notify,
    /// The run (+ 1) whose subscription is kept; 0 while none is. Left set for a run
    /// whose server does not serve subscriptions.
    kept_for: AtomicU64,
    /// Bumped at each change of what is wanted.
    generation: AtomicU64,
    /// The subscriptions opened (by their ids, as JSON text) and the generation each asks for.
    opened: std::sync::Mutex<std::collections::HashMap<String, u64>>,
    /// The newest generation the server acknowledged a subscription of.
    acknowledged: tokio::sync::watch::Sender<u64>,
}

impl Default for Following {
    fn default() -> Following {
        Following {
            wanted: Default::default(),
            changed: Default::default(),
            kept_for: Default::default(),
            generation: Default::default(),
            opened: Default::default(),
            acknowledged: tokio::sync::watch::channel(0).0,
        }
    }
}

#[derive(Default)]
struct Wanted {
    resources: BTreeSet<String>,
    tasks: BTreeSet<String>,
}

impl Upstream {
    /// Keeps a subscription open to this 2026-07-28 server while there is something to
    /// follow, from now until its run ends.
    pub(super) fn follow(self: &Arc<Self>) {
        if !self.speaks_modern() || !self.is_up() {
            return;
        }
        let run = self.run.load(Ordering::SeqCst) + 1;
        if self.following.kept_for.compare_exchange(0, run, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            tokio::spawn(Arc::clone(self).keep_following(run));
        } else if self.following.kept_for.load(Ordering::SeqCst) != run {
            // The subscription of an ended run is finishing: woken, it ends, and hands over.
            self.following.changed.notify_one();
        }
    }

    /// Sessions want to be told when the server's resource `uri` changes, from when the
    /// server acknowledged it (or a while passed); or no more. False when the server
    /// cannot subscribe to resources.
    pub(super) async fn follow_resource(self: &Arc<Self>, uri: &str, on: bool) -> bool {
        if on && self.capability("resources/subscribe") != Some(Value::Bool(true)) {
            return false;
        }
        let changed = {
            let mut wanted = lock(&self.following.wanted);
            if on { wanted.resources.insert(uri.to_owned()) } else { wanted.resources.remove(uri) }
        };
        let generation = self.wanted_changed(changed);
        if on {
            self.until_acknowledged(generation).await;
        }
        true
    }

    /// A session wants to be told of the server's task `task` (its own id), from when the
    /// server acknowledged it (or a while passed); or no more.
    pub(crate) async fn follow_task(self: &Arc<Self>, task: &str, on: bool) {
        let changed = {
            let mut wanted = lock(&self.following.wanted);
            if on { wanted.tasks.insert(task.to_owned()) } else { wanted.tasks.remove(task) }
        };
        let generation = self.wanted_changed(changed);
        if on {
            self.until_acknowledged(generation).await;
        }
    }

    /// What is wanted changed (or not): the generation that has it (bumped after the
    /// change, so that a subscription of that generation was cut with it).
    fn wanted_changed(self: &Arc<Self>, changed: bool) -> u64 {
        if !changed {
            return self.following.generation.load(Ordering::SeqCst);
        }
        let generation = self.following.generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.following.changed.notify_one();
        self.follow();
        generation
    }

    async fn until_acknowledged(&self, generation: u64) {
        let mut acknowledged = self.following.acknowledged.subscribe();
        let _ = tokio::time::timeout(ACKNOWLEDGED_WITHIN, acknowledged.wait_for(|done| *done >= generation)).await;
    }

    /// The server acknowledged a subscription (`message`): what it asked for is followed.
    pub(super) fn acknowledged(&self, message: &Value) {
        let id = message.pointer("/params/_meta").and_then(|meta| meta.get("io.modelcontextprotocol/subscriptionId"));
        let generation = id.and_then(|id| lock(&self.following.opened).get(&id_key(id)).copied());
        if let Some(generation) = generation {
            self.following.acknowledged.send_modify(|done| *done = (*done).max(generation));
        }
    }

    /// What a subscription asks for now: the lists that change, what is wanted.
    fn filter(&self) -> Map<String, Value> {
        let mut filter: Map<String, Value> = [ListKind::Tools, ListKind::Prompts, ListKind::Resources]
            .into_iter()
            .filter(|kind| self.capability(&format!("{}/listChanged", kind.capability())) == Some(json!(true)))
            .map(|kind| (format!("{}ListChanged", kind.capability()), json!(true)))
            .collect();
        let wanted = lock(&self.following.wanted);
        if !wanted.resources.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(wanted.resources));
        }
        if !wanted.tasks.is_empty() {
            filter.insert("taskIds".into(), json!(wanted.tasks));
        }
        filter
    }

    async fn keep_following(self: Arc<Self>, run: u64) {
        let mut wait = FIRST_RELISTEN;
        let mut stale: Option<Value> = None;
        loop {
            // Read before what is wanted: a subscription never counts for a change it lacks.
            let generation = self.following.generation.load(Ordering::SeqCst);
            let filter = self.filter();
            if self.run.load(Ordering::SeqCst) + 1 != run || !self.is_up() || filter.is_empty() {
                self.stop_following(stale.take(), run).await;
                // The server's next run, or something wanted meanwhile, gets one of its own.
                if !self.filter().is_empty() {
                    self.follow();
                }
                return;
            }
            // Known before it is sent: the acknowledgment may come at once.
            let id = self.next_id();
            lock(&self.following.opened).insert(id_key(&id), generation);
            let opened = self.start_request_as(id, LISTEN, Some(json!({"notifications": filter}))).await;
            if let Some(old) = stale.take() {
                self.end_subscription(old).await;
            }
            let Ok((id, answered)) = opened else { return self.stop_following(None, run).await };
            let opened_at = std::time::Instant::now();
            tokio::select! {
                answer = answered => {
                    lock(&self.following.opened).remove(&id_key(&id));
                    if self.run.load(Ordering::SeqCst) + 1 != run || !self.is_up() {
                        continue; // the run is over: ends at the top
                    }
                    match answer_of(LISTEN, answer) {
                        Err(why) if why.contains(&format!("({METHOD_NOT_FOUND})")) => {
                            // Left marked for this run: not asked again until it restarts.
                            tracing::info!("server `{}` does not serve `{LISTEN}` ({why}): what it says unasked is not followed", self.name);
                            return;
                        }
                        Err(why) => tracing::debug!("server `{}`: its subscription ended: {why}", self.name),
                        Ok(_) => tracing::debug!("server `{}` ended its subscription", self.name),
                    }
                    if opened_at.elapsed() > LAST_RELISTEN {
                        wait = FIRST_RELISTEN; // it lasted: not a server that keeps refusing
                    }
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(LAST_RELISTEN);
                    self.relist().await;
                }
                () = self.following.changed.notified() => stale = Some(id),
            }
        }
    }

    /// No subscription is kept for `run` any more (`stale`, if any, is cancelled).
    async fn stop_following(&self, stale: Option<Value>, run: u64) {
        if let Some(old) = stale {
            self.end_subscription(old).await;
        }
        // Every subscription of the run is over (its server forgot them, or they were cancelled).
        lock(&self.following.opened).clear();
        let _ = self.following.kept_for.compare_exchange(run, 0, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Cancels the subscription opened by request `id`.
    async fn end_subscription(&self, id: Value) {
        self.forget(&id_key(&id));
        lock(&self.following.opened).remove(&id_key(&id));
        let reason = "clawai gateway: replaced by a subscription to what is wanted now";
        self.notify(methods::CANCELLED, Some(json!({"requestId": id, "reason": reason}))).await;
    }

    /// Every list the server says changes, read again.
    async fn relist(self: &Arc<Self>) {
        for kind in ListKind::ALL {
            if self.capability(&format!("{}/listChanged", kind.capability())) == Some(json!(true)) {
                self.refresh(kind).await;
            }
        }
    }
}
