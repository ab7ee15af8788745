//! The broker's state: pending approvals, their answers, and the grants an approval
//! leaves when it came after the proxy stopped waiting.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clawai_approvals::{AlwaysEntry, Answer, Ask, AskedVia, By, Covered, Outcome, PendingItem, Scope, State};
use tokio::sync::{oneshot, watch};

/// The default window: how long after a timeout an approval still grants the retry,
/// and how long that grant then lasts.
pub const GRANT_WINDOW: Duration = Duration::from_secs(120);

/// A person's decision on a pending approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Approved with this scope.
    Approve(Scope),
    /// Refused.
    Deny,
}

/// What an ask got at once.
#[derive(Debug)]
pub(crate) enum Asked {
    /// A grant for the same call existed and is now used up.
    Granted(Answer),
    /// Listed under `id`; the person's answer arrives on `answer`.
    Queued {
        /// The approval's id.
        id: String,
        /// Resolves with the answer; closed when the entry goes away unanswered.
        answer: oneshot::Receiver<Answer>,
    },
}

struct Entry {
    item: PendingItem,
    key: String,
    /// Taken when answered; `None` once the proxy stopped waiting.
    reply: Option<oneshot::Sender<Answer>>,
    /// When the proxy stopped waiting.
    expired_at: Option<Instant>,
}

struct Grant {
    id: String,
    key: String,
    until: Instant,
}

#[derive(Default)]
struct Inner {
    entries: Vec<Entry>,
    grants: Vec<Grant>,
}

/// Pending approvals shared by the socket and the web page.
pub(crate) struct Broker {
    inner: Mutex<Inner>,
    changed: watch::Sender<u64>,
    window: Duration,
    /// Where "always" answers are written.
    always: std::sync::Arc<dyn clawai_approvals::AlwaysWriter>,
}

impl Broker {
    /// A broker whose "always" answers go to `approvals`, with grants lasting `window`.
    pub(crate) fn new(approvals: PathBuf, window: Duration) -> Broker {
        Broker::writing_to(std::sync::Arc::new(clawai_approvals::AlwaysFile(approvals)), window)
    }

    /// A broker whose "always" answers `always` writes (the approvals replicas share, in
    /// cluster mode).
    pub(crate) fn writing_to(always: std::sync::Arc<dyn clawai_approvals::AlwaysWriter>, window: Duration) -> Broker {
        Broker { inner: Mutex::new(Inner::default()), changed: watch::channel(0).0, window, always }
    }

    /// Ticks whenever the pending list changes.
    pub(crate) fn subscribe(&self) -> watch::Receiver<u64> {
        self.changed.subscribe()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (every change is one
        // push or remove), so a poisoned lock is still usable.
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn tell(&self) {
        self.changed.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Lists the call, or answers it at once from a grant for the same key.
    pub(crate) fn ask(&self, ask: Ask) -> Asked {
        let mut inner = self.lock();
        self.prune(&mut inner);
        let now = Instant::now();
        if let Some(at) = inner.grants.iter().position(|g| g.key == ask.key && g.until > now) {
            let grant = inner.grants.remove(at);
            return Asked::Granted(Answer { id: grant.id, outcome: Outcome::AllowOnce, by: By::Grant });
        }
        let taken = |inner: &Inner, id: &str| {
            inner.entries.iter().any(|e| e.item.id == id) || inner.grants.iter().any(|g| g.id == id)
        };
        let given = ask.id.clone().filter(|id| !taken(&inner, id));
        let id = given.unwrap_or_else(|| {
            loop {
                let id = clawai_approvals::approval_id();
                if !taken(&inner, &id) {
                    break id;
                }
            }
        });
        let (reply, answer) = oneshot::channel();
        let key = ask.key.clone();
        let asked_at = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        let item = PendingItem::of(ask, id.clone(), asked_at, State::Waiting);
        inner.entries.push(Entry { item, key, reply: Some(reply), expired_at: None });
        drop(inner);
        self.tell();
        Asked::Queued { id, answer }
    }

    /// The proxy stopped waiting for `id`: keep it listed as expired, so that an
    /// approval within the window grants the retry.
    pub(crate) fn timed_out(&self, id: &str) {
        let mut inner = self.lock();
        if let Some(entry) = inner.entries.iter_mut().find(|e| e.item.id == id && e.expired_at.is_none()) {
            entry.reply = None;
            entry.expired_at = Some(Instant::now());
            entry.item.state = State::Expired;
            drop(inner);
            self.tell();
        }
    }

    /// The proxy no longer needs an answer for `id` (cancelled, or its connection
    /// closed): remove it unless it already expired.
    pub(crate) fn withdraw(&self, id: &str) {
        let mut inner = self.lock();
        let before = inner.entries.len();
        inner.entries.retain(|e| e.item.id != id || e.expired_at.is_some());
        let removed = inner.entries.len() != before;
        drop(inner);
        if removed {
            self.tell();
        }
    }

    /// The pending approvals, oldest first.
    pub(crate) fn list(&self) -> Vec<PendingItem> {
        let mut inner = self.lock();
        self.prune(&mut inner);
        inner.entries.iter().map(|e| e.item.clone()).collect()
    }

    /// Drops what aged out; tells subscribers when something did.
    pub(crate) fn sweep(&self) {
        let mut inner = self.lock();
        let before = inner.entries.len();
        self.prune(&mut inner);
        let changed = inner.entries.len() != before;
        drop(inner);
        if changed {
            self.tell();
        }
    }

    fn prune(&self, inner: &mut Inner) {
        let now = Instant::now();
        inner.entries.retain(|e| e.expired_at.is_none_or(|at| now.duration_since(at) < self.window));
        inner.grants.retain(|g| g.until > now);
    }

    /// A person's answer to `id`. A waiting call gets it at once; an expired one,
    /// approved, leaves a grant for the next identical ask. "Always" first writes the
    /// approvals file, and nothing is answered when that fails.
    pub(crate) fn answer(&self, id: &str, decision: Decision, by: By) -> Result<(), String> {
        let mut inner = self.lock();
        self.prune(&mut inner);
        let at = inner.entries.iter().position(|e| e.item.id == id).ok_or_else(|| {
            format!(
                "no pending approval {id}: it was answered, withdrawn or has expired (`clawai approvals` lists what is pending)"
            )
        })?;
        if let Decision::Approve(scope @ (Scope::Always | Scope::AlwaysAnyArguments)) = decision {
            let item = &inner.entries[at].item;
            let covered = if scope == Scope::Always { Covered::Shown } else { Covered::Any };
            let via = if by == By::Cli { AskedVia::Cli } else { AskedVia::Ui };
            let entry = AlwaysEntry::for_call(
                item.server.clone(),
                item.method.clone(),
                item.name.clone(),
                &item.arguments,
                via,
                covered,
            )
            .map_err(|e| e.to_string())?;
            self.always.append(&entry).map_err(|e| e.to_string())?;
        }
        let entry = inner.entries.remove(at);
        let outcome = match decision {
            Decision::Approve(scope) => scope.outcome(),
            Decision::Deny => Outcome::Deny,
        };
        match (entry.reply, entry.expired_at) {
            (Some(reply), _) => {
                // The proxy may have gone between the lookup and now; the entry is
                // answered either way.
                let _ = reply.send(Answer { id: id.to_owned(), outcome, by });
            }
            (None, Some(_)) if outcome != Outcome::Deny => {
                let until = Instant::now() + self.window;
                inner.grants.push(Grant { id: id.to_owned(), key: entry.key, until });
            }
            (None, _) => {}
        }
        drop(inner);
        self.tell();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(key: &str) -> Ask {
        Ask {
            session: "s1".into(),
            server: Some("fs".into()),
            method: "tools/call".into(),
            name: Some("write_file".into()),
            arguments: json!({"path": "/etc/passwd"}),
            rule: Some("ask-writes".into()),
            description: None,
            reason: "writes need approval".into(),
            key: key.into(),
            timeout_ms: 45_000,
            id: None,
        }
    }

    fn queued(asked: Asked) -> (String, oneshot::Receiver<Answer>) {
        match asked {
            Asked::Queued { id, answer } => (id, answer),
            Asked::Granted(answer) => panic!("granted at once: {answer:?}"),
        }
    }

    #[test]
    fn an_answer_reaches_the_waiting_call_and_clears_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Broker::new(dir.path().join("a.toml"), GRANT_WINDOW);
        let (id, mut answer) = queued(broker.ask(ask("k")));
        assert_eq!(broker.list()[0].state, State::Waiting);
        broker.answer(&id, Decision::Approve(Scope::Session), By::Cli).unwrap();
        let got = answer.try_recv().unwrap();
        assert_eq!((got.outcome, got.by), (Outcome::AllowSession, By::Cli));
        assert!(broker.list().is_empty());
        assert!(broker.answer(&id, Decision::Deny, By::Cli).unwrap_err().contains("no pending approval"));
    }

    #[test]
    fn a_withdrawn_ask_is_gone_but_an_expired_one_stays_until_the_window_passes() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Broker::new(dir.path().join("a.toml"), Duration::from_millis(50));
        let (gone, _) = queued(broker.ask(ask("k1")));
        broker.withdraw(&gone);
        let (kept, _) = queued(broker.ask(ask("k2")));
        broker.timed_out(&kept);
        broker.withdraw(&kept);
        let listed = broker.list();
        assert_eq!(listed.len(), 1);
        assert_eq!((listed[0].id.as_str(), listed[0].state), (kept.as_str(), State::Expired));
        std::thread::sleep(Duration::from_millis(80));
        assert!(broker.list().is_empty());
    }

    #[test]
    fn approving_after_the_timeout_grants_exactly_one_identical_ask() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Broker::new(dir.path().join("a.toml"), GRANT_WINDOW);
        let (id, _) = queued(broker.ask(ask("k")));
        broker.timed_out(&id);
        broker.answer(&id, Decision::Approve(Scope::Once), By::Ui).unwrap();
        // Another call does not use the grant.
        let _ = queued(broker.ask(ask("other")));
        match broker.ask(ask("k")) {
            Asked::Granted(answer) => {
                assert_eq!(answer, Answer { id: id.clone(), outcome: Outcome::AllowOnce, by: By::Grant })
            }
            Asked::Queued { .. } => panic!("the grant was not used"),
        }
        let _ = queued(broker.ask(ask("k")));
    }

    #[test]
    fn denying_after_the_timeout_grants_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let broker = Broker::new(dir.path().join("a.toml"), GRANT_WINDOW);
        let (id, _) = queued(broker.ask(ask("k")));
        broker.timed_out(&id);
        broker.answer(&id, Decision::Deny, By::Ui).unwrap();
        let _ = queued(broker.ask(ask("k")));
    }

    #[test]
    fn always_answers_nothing_when_the_file_cannot_take_the_entry() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.toml");
        let broker = Broker::new(file.clone(), GRANT_WINDOW);
        let mut glob = ask("k");
        glob.name = Some("write*".into());
        let (id, mut answer) = queued(broker.ask(glob));
        let error = broker.answer(&id, Decision::Approve(Scope::Always), By::Ui).unwrap_err();
        assert!(error.contains("by hand"), "{error}");
        assert!(answer.try_recv().is_err());
        assert_eq!(broker.list().len(), 1);
        assert!(!file.exists());
    }
}
