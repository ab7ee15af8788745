//! One guarded session of the HTTP front: a [`Guard`], the server it talks to, and
//! where each message from the server goes (the POST that waits for it, the GET
//! stream, or a short backlog until one opens).

use clawai_protocol::methods;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clawai_proxy::guard::{Deliveries, Side, dispatched};
use clawai_proxy::{Guard, Later, Outlet, Verdict};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::child::ChildServer;
use crate::link::{FromServer, Link};
use crate::route::Route;

/// Server messages kept for a GET stream that is not open yet.
const BACKLOG: usize = 256;
/// Messages queued towards one HTTP stream before the session waits for it.
pub(crate) const STREAM_DEPTH: usize = 64;

/// Where a session's server messages go.
#[derive(Default)]
struct Routes {
    /// Requests waiting for their response, oldest first: (id as written, stream).
    waiting: Vec<(String, mpsc::Sender<Vec<u8>>)>,
    /// Progress token → the request that carried it.
    progress: HashMap<String, String>,
    /// The GET stream, when one is open.
    standalone: Option<mpsc::Sender<Vec<u8>>>,
    backlog: VecDeque<Vec<u8>>,
}

/// A stateless client's own id and progress token, replaced on the way in.
pub(crate) struct Originals {
    id: Value,
    progress_token: Option<Value>,
}

impl Originals {
    /// The message with the client's own id (a response) or progress token (progress)
    /// put back.
    pub(crate) fn restore(&self, message: Vec<u8>) -> Vec<u8> {
        let Ok(mut value) = serde_json::from_slice::<Value>(&message) else { return message };
        let route = Route::of(&message);
        // A subscription's messages name it by its request's id, in `_meta`.
        let subscription = format!("/_meta/{}", crate::route::SUBSCRIPTION_ID_META.replace('/', "~1"));
        if route.is_response() {
            value["id"] = self.id.clone();
            if let Some(slot) = value.get_mut("result").and_then(|result| result.pointer_mut(&subscription)) {
                *slot = self.id.clone();
            }
        } else if let Some(slot) = value.get_mut("params").and_then(|params| params.pointer_mut(&subscription)) {
            *slot = self.id.clone();
        } else if let (Some(token), Some(slot)) = (&self.progress_token, value.pointer_mut("/params/progressToken")) {
            *slot = token.clone();
        } else {
            return message;
        }
        serde_json::to_vec(&value).expect("a JSON value encodes")
    }
}

/// One client's session.
pub(crate) struct Session {
    pub(crate) guard: Guard,
    to_server: Mutex<Option<mpsc::Sender<Vec<u8>>>>,
    routes: Mutex<Routes>,
    last_used: Mutex<Instant>,
    child: Mutex<Option<ChildServer>>,
    /// The shared session of stateless (2026-07-28) requests from many clients: ids are
    /// replaced by unique ones on the way in and restored on the way out.
    pub(crate) remaps_ids: bool,
    next_id: AtomicU64,
    max_message: usize,
    /// The server is gone (exited, or its link closed).
    gone: AtomicBool,
    /// The client ended the session: the server going away is what was asked for.
    closing: AtomicBool,
    /// For a remote upstream: the client's `Authorization`, forwarded to that upstream.
    pub(crate) client_authorization: Option<Arc<Mutex<Option<axum::http::HeaderValue>>>>,
}

/// Takes what the session's guard decides later (a question's time-out, the approval
/// broker's answer) to the server or the client's streams.
struct SessionOutlet {
    session: std::sync::Weak<Session>,
    runtime: tokio::runtime::Handle,
}

impl Outlet for SessionOutlet {
    fn later(&self, later: Later) {
        let Some(session) = self.session.upgrade() else { return };
        self.runtime.spawn(async move {
            let messages = session.guard.settle(later);
            let _ = session.send_each(dispatched(messages)).await;
        });
    }
}

/// For clawai's own question to the client about a held call: the held call's id, as
/// written (its stream is where the question goes).
fn question_for(message: &[u8]) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(message).ok()?;
    let id = value.get("id")?.as_str()?;
    if !id.starts_with("clawai-ask-") || value.get("method")?.as_str()? != methods::ELICITATION_CREATE {
        return None;
    }
    Some(value.get("params")?.get("_meta")?.get("clawai/for")?.to_string())
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Session {
    /// A session over `link`, pumping the server's messages until it closes.
    pub(crate) fn start(
        guard: Guard,
        link: Link,
        child: Option<ChildServer>,
        remaps_ids: bool,
        max_message: usize,
        client_authorization: Option<Arc<Mutex<Option<axum::http::HeaderValue>>>>,
    ) -> Arc<Session> {
        let session = Arc::new(Session {
            guard,
            to_server: Mutex::new(Some(link.to_server)),
            routes: Mutex::default(),
            last_used: Mutex::new(Instant::now()),
            child: Mutex::new(child),
            remaps_ids,
            next_id: AtomicU64::new(1),
            max_message,
            gone: AtomicBool::new(false),
            closing: AtomicBool::new(false),
            client_authorization,
        });
        tokio::spawn(Arc::clone(&session).pump(link.from_server));
        session.guard.set_outlet(Arc::new(SessionOutlet {
            session: Arc::downgrade(&session),
            runtime: tokio::runtime::Handle::current(),
        }));
        session
    }

    /// The server of this session is gone: the client should start a new session.
    pub(crate) fn is_gone(&self) -> bool {
        self.gone.load(Ordering::SeqCst)
    }

    pub(crate) fn touch(&self) {
        *lock(&self.last_used) = Instant::now();
    }

    /// Idle for longer than `limit`, with no request waiting.
    pub(crate) fn idle_for(&self, limit: Duration) -> bool {
        lock(&self.last_used).elapsed() >= limit && lock(&self.routes).waiting.is_empty()
    }

    /// Sends a message the guard let through to the server (the guard wrote the event that
    /// decided it before it returned the verdict).
    pub(crate) async fn send_to_server(&self, message: Vec<u8>) -> Result<(), ()> {
        let sender = lock(&self.to_server).clone().ok_or(())?;
        sender.send(message).await.map_err(|_| ())
    }

    /// Runs a client message through the guard and on to the server. The reply, when the
    /// guard answers instead of forwarding.
    pub(crate) async fn relay_from_client(&self, message: Vec<u8>) -> Result<Option<Vec<u8>>, ()> {
        match self.guard.from_client(&message) {
            // The guard's answer to this request is the answer to its POST.
            Verdict::Reply(reply) => Ok(Some(reply)),
            verdict => self.send_each(verdict.deliveries(message, Side::Client)).await.map(|()| None),
        }
    }

    /// Sends each message to its side: the server, or the stream its id belongs to.
    async fn send_each(&self, deliveries: Deliveries<'_>) -> Result<(), ()> {
        for delivery in deliveries {
            match delivery.to {
                Side::Server => self.send_to_server(delivery.bytes.into_owned()).await?,
                Side::Client => self.deliver(delivery.bytes.into_owned()).await,
            }
        }
        Ok(())
    }

    /// Registers a request before it is forwarded, so that its response finds its way
    /// back. Returns the stream its messages arrive on.
    pub(crate) fn register(&self, route: &Route) -> mpsc::Receiver<Vec<u8>> {
        let (sender, receiver) = mpsc::channel(STREAM_DEPTH);
        let id = route.id.clone().unwrap_or_default();
        let mut routes = lock(&self.routes);
        if let Some(token) = &route.progress_token {
            routes.progress.insert(token.clone(), id.clone());
        }
        routes.waiting.push((id, sender));
        receiver
    }

    /// Registers the requests of a batch, every one on the same stream (their answers
    /// come back as one array).
    pub(crate) fn register_all(&self, ids: &[String]) -> mpsc::Receiver<Vec<u8>> {
        let (sender, receiver) = mpsc::channel(STREAM_DEPTH);
        let mut routes = lock(&self.routes);
        routes.waiting.extend(ids.iter().map(|id| (id.clone(), sender.clone())));
        receiver
    }

    pub(crate) fn unregister(&self, id: &str) {
        let mut routes = lock(&self.routes);
        routes.waiting.retain(|(waiting, _)| waiting != id);
        routes.progress.retain(|_, request| request != id);
    }

    /// Opens the GET stream: server messages with no request to go with now go here,
    /// starting with those that waited.
    pub(crate) fn open_standalone(&self) -> mpsc::Receiver<Vec<u8>> {
        let (sender, receiver) = mpsc::channel(BACKLOG + STREAM_DEPTH);
        let mut routes = lock(&self.routes);
        for message in routes.backlog.drain(..) {
            let _ = sender.try_send(message);
        }
        routes.standalone = Some(sender);
        receiver
    }

    /// A fresh id (and progress token) for a request of the shared stateless session,
    /// so that clients cannot collide or read each other's messages; the originals are
    /// restored on the way back ([`Originals::restore`]).
    pub(crate) fn remap_id(&self, message: &mut Value) -> Option<Originals> {
        let id = message.get_mut("id")?.take();
        let unique = json!(format!("clawai-{}", self.next_id.fetch_add(1, Ordering::Relaxed)));
        message["id"] = unique.clone();
        let progress_token =
            message.pointer_mut("/params/_meta/progressToken").map(|token| std::mem::replace(token, unique));
        Some(Originals { id, progress_token })
    }

    /// Sends a server message where it belongs.
    async fn deliver(&self, message: Vec<u8>) {
        let route = Route::of_message_or_batch(&message);
        let target = {
            let mut routes = lock(&self.routes);
            if route.is_response() {
                let id = route.id.as_deref().unwrap_or_default();
                let position = routes.waiting.iter().position(|(waiting, _)| waiting == id);
                routes.progress.retain(|_, request| request != id);
                position.map(|index| routes.waiting.remove(index).1)
            } else if let Some(held) = (route.method.as_deref() == Some(methods::ELICITATION_CREATE))
                .then(|| question_for(&message))
                .flatten()
                .and_then(|held| routes.waiting.iter().find(|(id, _)| *id == held).map(|(_, s)| s.clone()))
            {
                // clawai's question about a held call goes on that call's stream.
                Some(held)
            } else if let Some(listening) = route
                .subscription
                .as_deref()
                .and_then(|subscription| routes.waiting.iter().find(|(id, _)| id == subscription))
                .map(|(_, stream)| stream.clone())
            {
                // A subscription's notification goes on its `subscriptions/listen` stream.
                Some(listening)
            } else {
                let by_token = (route.method.as_deref() == Some(methods::PROGRESS))
                    .then(|| Route::reported_progress_token(&message))
                    .flatten()
                    .and_then(|token| routes.progress.get(&token).cloned())
                    .and_then(|request| routes.waiting.iter().find(|(id, _)| *id == request).map(|(_, s)| s.clone()));
                // Requests and notifications from the server go on the stream of the
                // request they most likely belong to (the newest one waiting), else on
                // the GET stream, else wait for one. Not in the shared stateless session:
                // there the newest request may be another client's.
                if self.remaps_ids && by_token.is_none() {
                    tracing::warn!("a server message outside any request of the stateless session was dropped");
                    return;
                }
                let target = by_token
                    .or_else(|| routes.waiting.last().map(|(_, sender)| sender.clone()))
                    .or_else(|| routes.standalone.clone());
                if target.is_none() {
                    if routes.backlog.len() == BACKLOG {
                        routes.backlog.pop_front();
                        tracing::warn!("a server message with no stream to go to was dropped (backlog full)");
                    }
                    routes.backlog.push_back(message.clone());
                }
                target
            }
        };
        if let Some(stream) = target
            && stream.send(message).await.is_err()
        {
            // The client went away; a closed GET stream is forgotten.
            let mut routes = lock(&self.routes);
            if routes.standalone.as_ref().is_some_and(mpsc::Sender::is_closed) {
                routes.standalone = None;
            }
        }
    }

    async fn pump(self: Arc<Self>, mut from_server: mpsc::Receiver<FromServer>) {
        let reason = loop {
            match from_server.recv().await {
                Some(FromServer::Message(message)) => {
                    let verdict = self.guard.from_server(&message);
                    // A server gone meanwhile is told to the client when its end is read.
                    let _ = self.send_each(verdict.deliveries(message, Side::Server)).await;
                }
                Some(FromServer::Oversize { prefix, length }) => {
                    let verdict = self.guard.oversize_from_server(&prefix, length, self.max_message);
                    let _ = self.send_each(verdict.deliveries(Vec::new(), Side::Server)).await;
                }
                Some(FromServer::Closed(reason)) => break reason,
                None => break "the server is gone".to_string(),
            }
        };
        if self.closing.load(Ordering::SeqCst) {
            tracing::debug!("session {}: closed by the client ({reason})", self.guard.session());
        } else {
            tracing::info!("session {}: {reason}", self.guard.session());
        }
        self.gone.store(true, Ordering::SeqCst);
        for error in self.guard.server_gone(&reason) {
            self.deliver(error).await;
        }
        let mut routes = lock(&self.routes);
        routes.waiting.clear();
        routes.standalone = None;
    }

    /// Ends the session: the server's input is closed, a child is shut down after
    /// `grace` (SIGTERM, then SIGKILL, to its process group).
    pub(crate) async fn close(&self, grace: Duration) {
        self.closing.store(true, Ordering::SeqCst);
        lock(&self.to_server).take();
        let child = lock(&self.child).take();
        if let Some(child) = child {
            child.shut_down(grace).await;
        }
        self.guard.flush_audit();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscriptions_messages_get_the_clients_own_id_back() {
        let originals = Originals { id: json!(7), progress_token: None };
        let told = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"clawai-3"}}}"#;
        let told: Value = serde_json::from_slice(&originals.restore(told.to_vec())).unwrap();
        assert_eq!(told["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], json!(7));
        let closed = br#"{"jsonrpc":"2.0","id":"clawai-3","result":{"_meta":{"io.modelcontextprotocol/subscriptionId":"clawai-3"}}}"#;
        let closed: Value = serde_json::from_slice(&originals.restore(closed.to_vec())).unwrap();
        assert_eq!(
            (&closed["id"], &closed["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"]),
            (&json!(7), &json!(7))
        );
        let other = br#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#.to_vec();
        assert_eq!(originals.restore(other.clone()), other);
    }
}
