//! Asking out of band: when the client cannot show a form and an approval broker runs
//! (`clawai ui`), the held call is queued there under an id a person answers in the
//! page or with `clawai approve ID`. A thread of the session waits for the answer (with
//! `notifications/progress` every few seconds when the call carried a progress token)
//! up to the ask time-out, then answers the call: forwarded when allowed, denied when
//! not, and when nobody answered in time, an error saying the approval is pending under
//! its id, so that the identical call retried after the approval passes once.

use clawai_protocol::methods;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clawai_approvals::{Error as BrokerError, Outcome};
use clawai_protocol::Json;
use clawai_protocol::reply;
use serde_json::{Value, json};

use super::approvals::Later;
use super::approvals::{Ask, Asked, Waiting, not_approved};
use super::{Guard, Outgoing, Verdict};
use crate::audit::{Channel, Scope, Step};
use crate::redact::Redacted;

/// How often a waiting call with a progress token hears that it still waits.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

impl Guard {
    /// Queues the call at the broker and waits for it on a thread. `None` when no broker
    /// runs, or the transport cannot answer later (no outlet): nobody can be asked.
    pub(super) fn ask_broker(&self, ask: &Ask, key: String) -> Option<Asked> {
        let outlet = self.asking.outlet.get()?.clone();
        let arguments = ask.call.arguments.map_or(Value::Null, |args| {
            let mut out = Vec::new();
            Redacted(args).write_json(&mut out);
            serde_json::from_slice(&out).unwrap_or(Value::Null)
        });
        let timeout = self.asking.options.timeout;
        let request = clawai_approvals::Ask {
            session: self.session.clone(),
            server: self.server.clone(),
            method: ask.method.to_owned(),
            name: ask.call.name.map(str::to_owned),
            arguments,
            rule: ask.rule.clone(),
            description: ask.description.map(str::to_owned),
            reason: format!("a rule asks a person about {}", ask.call.name.unwrap_or(ask.method)),
            key: key.clone(),
            timeout_ms: timeout.as_millis() as u64,
            id: None,
        };
        let mut pending = match self.asking.options.held.hold(&request) {
            Ok(pending) => pending,
            Err(BrokerError::NoBroker(_)) => return None,
            Err(e) => {
                tracing::warn!("the approval broker did not take the question: {e}");
                return None;
            }
        };
        let approval = pending.id().to_owned();
        let canceller = pending.withdrawer().ok()?;
        let waiting = Waiting::new(ask, key);
        // By the broker's id: two held calls may carry the same JSON-RPC id.
        lock(&self.asking.brokered).insert(approval.clone(), (waiting, canceller));
        let progress = ask.params.and_then(|p| p.get("_meta")).and_then(|m| m.get("progressToken")).map(Json::to_value);
        let outlet = Arc::downgrade(&outlet);
        let id = approval.clone();
        let spawned = std::thread::Builder::new().name("ask-broker".into()).spawn(move || {
            let deadline = Instant::now() + timeout;
            let mut tick = 0u64;
            loop {
                let left = deadline.saturating_duration_since(Instant::now());
                // Short time-outs hear about the wait too: a third of it at most.
                let slice = if progress.is_some() { left.min(PROGRESS_EVERY.min(timeout / 3)) } else { left };
                let answer = pending.wait(slice);
                let Some(outlet) = outlet.upgrade() else { return };
                match answer {
                    Ok(Some(answer)) => {
                        let by = format!("{:?}", answer.by).to_lowercase();
                        return outlet.later(Later::BrokerAnswered { approval: id, outcome: answer.outcome, by });
                    }
                    Ok(None) if Instant::now() < deadline => {
                        tick += 1;
                        if let Some(token) = &progress {
                            let message = format!(
                                "waiting for a person's approval under {id} (clawai ui, or clawai approve {id})"
                            );
                            let note = reply::notification(
                                methods::PROGRESS,
                                &json!({"progressToken": token, "progress": tick, "message": message}),
                            );
                            outlet.later(Later::ToClient(note));
                        }
                    }
                    Ok(None) => {
                        let _ = pending.timed_out();
                        return outlet.later(Later::BrokerTimedOut { approval: id });
                    }
                    // Withdrawn (the client cancelled the call, the server is gone: then
                    // nothing waits any more), or the broker went away: the call is denied.
                    Err(_) => return outlet.later(Later::BrokerGone { approval: id }),
                }
            }
        });
        if let Err(e) = spawned {
            tracing::warn!("cannot wait for the approval broker ({e})");
            lock(&self.asking.brokered).remove(&approval);
            return None;
        }
        Some(Asked::Held { verdict: Verdict::Dispatch(Vec::new()), channel: Channel::Broker, approval: Some(approval) })
    }

    /// The broker's answer: the call goes on, or is denied.
    pub(super) fn broker_answered(&self, approval: &str, outcome: Outcome, by: &str) -> Vec<Outgoing> {
        let Some((waiting, _)) = lock(&self.asking.brokered).remove(approval) else { return Vec::new() };
        let scope = match outcome {
            Outcome::AllowOnce => Some(Scope::Once),
            Outcome::AllowSession => Some(Scope::Session),
            Outcome::AllowAlways => Some(Scope::Always),
            Outcome::Deny => None,
        };
        self.record_step(&waiting, approval, Channel::Broker, Step::Answered, scope, scope.is_some(), by);
        if scope.is_none() {
            return vec![Outgoing::ToClient(self.declined(&waiting, "the person declined"))];
        }
        self.release(waiting, outcome == Outcome::AllowSession)
    }

    /// Nobody answered in time: the call gets an error that names the pending approval.
    pub(super) fn broker_timed_out(&self, approval: &str) -> Vec<Outgoing> {
        let Some((waiting, _)) = lock(&self.asking.brokered).remove(approval) else { return Vec::new() };
        self.record_step(&waiting, approval, Channel::Broker, Step::TimedOut, None, false, "clawai");
        let what =
            waiting.name.as_deref().map_or_else(|| waiting.method.clone(), |n| format!("{} {n}", waiting.method));
        let text = format!(
            "clawai: {what} waits for a person's approval under {approval}, and nobody answered within {} s. \
             Approve it in clawai ui or with `clawai approve {approval}`, then make the same call again within \
             2 minutes: it passes once",
            self.asking.options.timeout.as_secs_f64()
        );
        let data = json!({"approval": approval});
        let answer = not_approved(&waiting.method, Some(&waiting.call_id), &text, waiting.stateless, data);
        vec![Outgoing::ToClient(answer)]
    }

    /// The broker's connection broke while a call waited: the call is denied.
    pub(super) fn broker_gone(&self, approval: &str) -> Vec<Outgoing> {
        let Some((waiting, _)) = lock(&self.asking.brokered).remove(approval) else { return Vec::new() };
        self.record_step(&waiting, approval, Channel::Broker, Step::Cancelled, None, false, "clawai");
        vec![Outgoing::ToClient(self.declined(&waiting, "the approval broker went away before anyone answered"))]
    }

    /// The client cancelled a call that waits for the broker: the ask is withdrawn.
    pub(super) fn cancel_brokered(&self, request_id: &Value) -> Option<Verdict> {
        let mut brokered = lock(&self.asking.brokered);
        let approval = brokered
            .iter()
            .find(|(_, (w, _))| serde_json::from_str::<Value>(&w.call_id).ok().as_ref() == Some(request_id))?
            .0
            .clone();
        let (waiting, canceller) = brokered.remove(&approval)?;
        drop(brokered);
        let _ = canceller.withdraw();
        self.record_step(&waiting, &approval, Channel::Broker, Step::Cancelled, None, false, "client");
        Some(Verdict::Drop)
    }

    /// The server is gone: every ask at the broker is withdrawn. The ids of the calls
    /// that waited, as written.
    pub(super) fn withdraw_brokered(&self) -> Vec<String> {
        let drained: Vec<_> = lock(&self.asking.brokered).drain().collect();
        drained
            .into_iter()
            .map(|(approval, (waiting, canceller))| {
                let _ = canceller.withdraw();
                self.record_step(&waiting, &approval, Channel::Broker, Step::Cancelled, None, false, "clawai");
                waiting.call_id
            })
            .collect()
    }
}

fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
