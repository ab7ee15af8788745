//! The decision path's stages, in the order each direction runs them.
//!
//! Every transport hands each message to the guard ([`super::Guard::from_client`],
//! [`super::Guard::from_server`]); the guard runs the stages below in this order, each
//! a module of `guard/`, and the first that does not pass decides what happens to the
//! message. The lists are what the code runs: `decide::decide` (requests the policy
//! decides) drives one function per stage in this order (`params_stage`,
//! `listing_stage`, `policy_stage` (self-protection, then the policy), `pinning_stage`,
//! `arguments_stage`, `approvals_stage`, `audit_stage`), and `response` (results) does
//! the same for its stages. A stage that can stop a message returns an [`Outcome`]; the
//! policy and arguments stages return their decision (a deny goes on to the audit stage,
//! which records it with its rule). The tests of
//! `pinning.rs` (`a_stage_refuses_before_the_stages_after_it`) check that a message more
//! than one stage would refuse is refused by the first of them in the list.
//!
//! What the stages read of a message is here too (`Arrived`, `Deciding`, `Decided`), so
//! that the stages and the `decide` module that drives them name this module, not each
//! other.

use clawai_policy::Call;
use clawai_protocol::Json;
use serde_json::value::RawValue;

use crate::audit::{Decision, Direction, Stamp};

/// A stage of the decision path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// A message over the size limit is refused before it is read (`refuse`,
    /// `oversize_from_client`).
    Limits,
    /// One valid JSON-RPC message, read strictly: no duplicate or case-variant member,
    /// no look-alike of a decided method (`refuse`, the protocol crate's envelope).
    Parse,
    /// The params of a decided method, read strictly, in the shape the policy needs
    /// (`decide`: `check_params`).
    Params,
    /// A call whose decision depends on the server's tool list waits for it (`listing`).
    Listing,
    /// clawai's own files and its trail are no tool's target, whatever the policy
    /// (`self_protection`, run by `decide::policy_stage` before the policy).
    SelfProtection,
    /// The first rule that matches, with the session's memory (`decide::policy_stage`,
    /// the policy crate's engine).
    Policy,
    /// What changed since a person approved it is refused (`pinning`).
    Pinning,
    /// A credential in the arguments of a call the rules let through (`arguments`).
    Arguments,
    /// A call a rule asks about waits for a person (`approvals`, `broker`).
    Approvals,
    /// The event is recorded (`record`), and on disk before anything leaves
    /// (`Guard::on_disk`, the stdio relay's `Outbox`).
    Audit,
    /// A result: secrets redacted, poisoning scanned, size limited (`results`).
    Results,
    /// What the session may not see is left out of a list (`hiding`).
    Hiding,
}

/// The stages of a request from the client that the policy decides (`tools/call`,
/// `resources/read`, `prompts/get`, any method a rule names), in order.
pub const CLIENT_REQUEST: [Stage; 10] = [
    Stage::Limits,
    Stage::Parse,
    Stage::Params,
    Stage::Listing,
    Stage::SelfProtection,
    Stage::Policy,
    Stage::Pinning,
    Stage::Arguments,
    Stage::Approvals,
    Stage::Audit,
];

/// The stages of a request from the server that the policy decides
/// (`sampling/createMessage`, `elicitation/create`): nobody is asked about them, and
/// they call no tool a pin holds.
pub const SERVER_REQUEST: [Stage; 5] = [Stage::Limits, Stage::Parse, Stage::Params, Stage::Policy, Stage::Audit];

/// The stages of a response from the server, in order.
pub const SERVER_RESPONSE: [Stage; 6] =
    [Stage::Limits, Stage::Parse, Stage::Pinning, Stage::Results, Stage::Hiding, Stage::Audit];

/// Why a stage refused a message: the error code the sender gets, the reason (in the
/// answer and the trail) and the word the trail records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The stage that refused.
    pub stage: Stage,
    /// The JSON-RPC error code (`clawai_protocol::codes`).
    pub code: i64,
    /// Why, in words.
    pub reason: String,
    /// What the trail records (`refused` for a message not valid, `deny` for a call a
    /// stage denies).
    pub decision: Decision,
}

impl Refusal {
    /// A refusal by `stage` of a message that is not valid as it is.
    pub fn invalid(stage: Stage, code: i64, reason: impl Into<String>) -> Refusal {
        Refusal { stage, code, reason: reason.into(), decision: Decision::Refused }
    }
}

/// What a stage says of a message.
#[must_use = "a stage's outcome decides what happens to the message"]
#[derive(Debug)]
pub enum Outcome<T> {
    /// On to the next stage, with what this one found.
    Pass(T),
    /// Refused: the sender gets an error, nothing is forwarded.
    Refuse(Refusal),
    /// The message waits (for the server's list, for a person); meanwhile the transport
    /// does what this verdict says.
    Hold(super::Verdict),
}

/// A decided message as it arrived, for a decision that may have to wait for the
/// server's tool list (see `listing`).
#[derive(Clone, Copy)]
pub(super) struct Arrived<'l> {
    /// The whole message; `None` when it cannot wait (it is decided now either way).
    pub(super) line: Option<&'l [u8]>,
    /// The whole message from the client, which may wait for a person's answer.
    pub(super) message: Option<&'l [u8]>,
    pub(super) size: usize,
    pub(super) at: Stamp,
}

impl Arrived<'_> {
    /// Whether the call may wait for a person (it carries its whole message for that).
    pub(super) fn asking(&self) -> super::Asking {
        if self.message.is_some() { super::Asking::MayAsk } else { super::Asking::InBatch }
    }
}

/// A decided message on its way through the stages, as each of them reads it.
pub(super) struct Deciding<'d> {
    pub(super) direction: Direction,
    pub(super) method: &'d str,
    pub(super) id: Option<&'d RawValue>,
    pub(super) params: Option<&'d Json<'d>>,
    pub(super) call: &'d Call<'d>,
    pub(super) arrived: Arrived<'d>,
}

/// What the self-protection, policy and arguments stages decided of a call. A deny is a
/// decision like any other here: the audit stage records it with its rule, and the
/// sender is answered after.
pub(super) struct Decided<'p> {
    pub(super) decision: clawai_policy::Decision<'p>,
    /// The taint labels the policy added to the session.
    pub(super) labels_added: Vec<String>,
    /// The credential the arguments stage found, when that stage decided the call.
    pub(super) credential: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(list: &[Stage], stage: Stage) -> usize {
        list.iter().position(|s| *s == stage).unwrap_or_else(|| panic!("{stage:?} is not in {list:?}"))
    }

    #[test]
    fn the_guards_every_message_runs_first_and_the_audit_last() {
        for list in [&CLIENT_REQUEST[..], &SERVER_REQUEST[..], &SERVER_RESPONSE[..]] {
            assert_eq!(list[0], Stage::Limits);
            assert_eq!(list[1], Stage::Parse);
            assert_eq!(*list.last().unwrap(), Stage::Audit, "the trail records what the stages decided");
        }
        // Self-protection holds whatever the policy says; a pin holds whatever a person
        // would answer; nobody is asked about a call a later check would refuse anyway.
        assert!(position(&CLIENT_REQUEST, Stage::SelfProtection) < position(&CLIENT_REQUEST, Stage::Policy));
        assert!(position(&CLIENT_REQUEST, Stage::Pinning) < position(&CLIENT_REQUEST, Stage::Approvals));
        assert!(position(&CLIENT_REQUEST, Stage::Arguments) < position(&CLIENT_REQUEST, Stage::Approvals));
        assert!(position(&SERVER_RESPONSE, Stage::Pinning) < position(&SERVER_RESPONSE, Stage::Results));
    }
}
