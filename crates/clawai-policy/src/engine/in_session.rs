//! Deciding in a session: the policy's decisions that read and move a session's memory
//! (`taint`, `tainted`, `rate`), beside the decisions that read none (`engine`).

use std::collections::BTreeSet;
use std::time::Duration;

use clawai_store::{Count, Unavailable};

/// Why a call a rate rule counts is denied when its window could not be counted: nothing
/// a single replica would refuse is allowed while the shared store is away.
pub(crate) const RATE_UNAVAILABLE: &str = "clawai: a rate rule counts this call, and its window lives in the shared \
     store (Redis), which cannot be reached or no longer names this replica as the session's owner; denied until it \
     answers";

/// Why a call that taints the session is denied when the label could not be written: a
/// replica taking the session over must find every label.
pub(crate) const TAINT_UNAVAILABLE: &str = "clawai: this call marks the session (taint), and the mark could not be \
     written to the shared store (Redis), which cannot be reached or no longer names this replica as the session's \
     owner; denied until it answers";

use super::{Action, Decision, Explanation, Policy};
use crate::call::Call;
use crate::session::{Session, SessionView, rule_key, session_clock};

impl Policy {
    /// Decides a call in a session: rules with `tainted` see its labels, rules with
    /// `rate` its counts. Every `rate` rule whose other conditions match the call counts
    /// it, whatever decides the call; every `taint` rule that the call touches (its
    /// target and conditions read as a deny reads them: [`Rule::touches`]) adds its labels
    /// afterwards, whatever decides the call. A policy without such rules decides
    /// exactly as [`Policy::decide`], without touching the session.
    pub fn decide_in(&self, call: &Call, session: &Session) -> Decision<'_> {
        self.decide_at(call, session, session_clock())
    }

    /// [`Policy::decide_in`], with the labels the call added to the session (none it
    /// already carried): what the audit trail records of the call.
    pub fn decide_and_mark(&self, call: &Call, session: &Session) -> (Decision<'_>, Vec<String>) {
        self.decide_moving(call, session, session_clock(), Count::Record)
    }

    /// [`Policy::decide_in`] at a given moment of the session (time since its start):
    /// what `policy replay` uses to decide recorded calls at the times they were made.
    pub fn decide_at(&self, call: &Call, session: &Session, now: Duration) -> Decision<'_> {
        self.decide_moving(call, session, now, Count::Record).0
    }

    /// [`Policy::decide_and_mark`] for a call the session already counted, decided again
    /// (a 2026-07-28 client's retry carrying a person's answer, its sealed state checked):
    /// its own count is in the windows already and is not added again; labels it touches
    /// are added (again: no harm).
    pub fn decide_again(&self, call: &Call, session: &Session) -> (Decision<'_>, Vec<String>) {
        self.decide_moving(call, session, session_clock(), Count::AlreadyCounted)
    }

    /// Decides in the session and moves it on: counts (unless `effect` says the call was
    /// counted), then marks; returns the labels newly added.
    fn decide_moving(
        &self,
        call: &Call,
        session: &Session,
        now: Duration,
        effect: Count,
    ) -> (Decision<'_>, Vec<String>) {
        if !self.reads_session() {
            return (self.decide(call), Vec::new());
        }
        let labels = session.memory().labels();
        let (counts, uncounted) = self.count_rates(call, &labels, session, now, effect);
        let view = SessionView { labels: Some(&labels), counts };
        let decision = self.decide_with(call, &view);
        if uncounted.is_some() {
            return (Decision { action: Action::Deny, rule: None, reason: RATE_UNAVAILABLE }, Vec::new());
        }
        let added = self.labels_touched(call, &view);
        if !added.is_empty() && session.memory().add_labels(&added).is_err() {
            return (Decision { action: Action::Deny, rule: None, reason: TAINT_UNAVAILABLE }, Vec::new());
        }
        (decision, added)
    }

    /// [`Policy::decide_and_mark`] without moving the session on: what the call would get
    /// now, and the labels it would add. For a caller that decides the same call more
    /// than once (with other annotations, say) besides its one real decision.
    pub fn decide_looking(&self, call: &Call, session: &Session) -> (Decision<'_>, Vec<String>) {
        if !self.reads_session() {
            return (self.decide(call), Vec::new());
        }
        self.looking(call, session, |view| (self.decide_with(call, view), self.labels_touched(call, view)))
    }

    /// [`Policy::explain`] in a session, which it leaves as it was: the rate counts
    /// include this call as if it were made now. With the labels the call would add.
    pub fn explain_in(&self, call: &Call, session: &Session) -> (Explanation<'_>, Vec<String>) {
        self.looking(call, session, |view| (self.explain_with(call, view), self.labels_touched(call, view)))
    }

    /// Runs `then` on the session as this call would find it now, on a copy: the rate
    /// counts include the call, nothing is recorded.
    fn looking<R>(&self, call: &Call, session: &Session, then: impl FnOnce(&SessionView) -> R) -> R {
        let labels = session.memory().labels();
        let (counts, _) = self.count_rates(call, &labels, session, session_clock(), Count::Look);
        then(&SessionView { labels: Some(&labels), counts })
    }

    /// The labels of the `taint` rules the call touches in this session (their
    /// `tainted` and `rate` conditions hold too) that the session does not carry yet,
    /// sorted, each once.
    fn labels_touched(&self, call: &Call, view: &SessionView) -> Vec<String> {
        let mut added = Vec::new();
        for &index in self.taint_rules() {
            let rule = &self.rules()[index];
            let rate_ok = rule.rate.is_none_or(|rate| view.count(index) > rate.limit);
            if rule.tainted_holds(view.labels) && rate_ok && rule.touches(call) {
                added.extend(rule.taint.iter().filter(|l| view.labels.is_none_or(|held| !held.contains(*l))).cloned());
            }
        }
        added.sort();
        added.dedup();
        added
    }

    /// Counts the call in the window of every rate rule whose other conditions match it
    /// (in a session carrying `labels`). A window the store could not count is taken as
    /// over its limit, and why is returned beside the counts.
    fn count_rates(
        &self,
        call: &Call,
        labels: &BTreeSet<String>,
        session: &Session,
        now: Duration,
        effect: Count,
    ) -> (Vec<(usize, u32)>, Option<Unavailable>) {
        let mut counts = Vec::new();
        let mut uncounted = None;
        for &index in self.rate_rules() {
            let rule = &self.rules()[index];
            let Some(rate) = rule.rate else { continue };
            if !rule.tainted_holds(Some(labels)) || rule.check(call).is_err() {
                continue;
            }
            let key = rule_key(index, rule.id.as_deref());
            let counted = session.memory().count(&key, rate.window, rate.limit, now, effect).unwrap_or_else(|why| {
                uncounted = Some(why);
                rate.limit.saturating_add(1)
            });
            counts.push((index, counted));
        }
        (counts, uncounted)
    }
}
