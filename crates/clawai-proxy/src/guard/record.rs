//! The audit stage of a decided request: one event says what the stages decided, with
//! the rule, the reason and what a person was asked or answered. It is recorded here,
//! and on disk before anything of the verdict leaves (`Guard::on_disk`, the stdio
//! relay's `Outbox`).

use std::borrow::Cow;

use clawai_protocol::methods;

use super::Guard;
use super::approvals::Asked;
use super::pipeline::{Decided, Deciding};
use crate::audit::{Channel, Event, EventKind, Step};
use crate::redact::Redacted;

impl Guard {
    /// Records the event of a request (or notification) the stages decided.
    pub(super) fn audit_stage(
        &self,
        deciding: &Deciding<'_>,
        decided: &Decided<'_>,
        reason: &str,
        asked: Option<&Asked>,
    ) {
        let Deciding { direction, method, id, call, arrived, .. } = *deciding;
        let kind = if id.is_some() { EventKind::Request } else { EventKind::Notification };
        let mut event = self.event_at(arrived.at.wall, direction, kind);
        let shown = id.map(|id| self.shown_id(id.get()));
        event.method = Some(method);
        event.id = shown.as_deref();
        match method {
            methods::TOOLS_CALL => event.tool = call.name,
            methods::RESOURCES_READ => event.resource = call.name,
            methods::PROMPTS_GET => event.prompt = call.name,
            _ => {}
        }
        let listed_as = self.listed_as(method, call.name);
        event.listed_as = listed_as.as_deref();
        event.arguments = call.arguments.map(Redacted);
        event.annotations = call.annotations;
        event.decision = Some(decided.decision.action.into());
        event.rule = decided.decision.rule_id();
        event.reason = Some(Cow::Borrowed(reason));
        event.size = Some(arrived.size);
        event.tainted = Some(decided.labels_added.as_slice()).filter(|added| !added.is_empty());
        if let Some(asked) = asked {
            note_asked(&mut event, asked, reason);
        }
        self.audit.record_decision(&event);
    }
}

/// What the approvals stage did, in the event's words: the step, the channel, who
/// answered and how.
fn note_asked<'e>(event: &mut Event<'e>, asked: &'e Asked, reason: &str) {
    match asked {
        Asked::Allowed { channel, scope, by, .. } => {
            event.step =
                Some(if *channel == Channel::ClientRetry { Step::Answered } else { Step::AllowedWithoutAsking });
            event.channel = Some(*channel);
            event.scope = Some(*scope);
            event.by = Some(by);
            event.approved = Some(true);
        }
        Asked::Held { channel, approval, .. } => {
            event.step = Some(Step::Asked);
            event.channel = Some(*channel);
            event.approval = approval.as_deref().map(|a| a.trim_matches('"'));
        }
        Asked::Declined { channel } => {
            event.step = Some(Step::Answered);
            event.channel = Some(*channel);
            event.approved = Some(false);
            event.by = Some("client");
        }
        Asked::Refused(e) => {
            event.step = Some(Step::Refused);
            event.channel = Some(Channel::ClientRetry);
            event.approved = Some(false);
            event.by = Some("clawai");
            event.reason = Some(Cow::Owned(format!("{reason}; {e}")));
        }
        Asked::Duplicate => {
            event.step = Some(Step::Refused);
            event.approved = Some(false);
            event.reason = Some(Cow::Borrowed("a call with this id already waits for a person"));
        }
        Asked::Nobody => {
            event.step = Some(Step::NotAsked);
            event.channel = Some(Channel::None);
            event.approved = Some(false);
        }
    }
}
