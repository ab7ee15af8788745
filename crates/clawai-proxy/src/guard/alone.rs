//! The decision of one call from the call alone, as the decision path makes it before a
//! server or a person is involved: the self-protection stage (whatever the policy
//! says), the policy, and the arguments stage (a credential in the arguments of a call
//! the rules let through). `clawai policy explain` decides with it, so that it says
//! what the proxy does; the proxy's own path (`decide`) runs the same three functions
//! in the same order, with pinning between the policy and the arguments stage.

use clawai_policy::{Call, Decision, Policy, Session};

use crate::self_protection::SelfProtection;

/// What the stages decided, and which one did.
#[derive(Debug)]
pub struct Alone<'p> {
    /// The decision.
    pub decision: Decision<'p>,
    /// The self-protection stage refused the call (the policy was not asked).
    pub protected: bool,
    /// The arguments stage decided: the kind of credential the arguments carry.
    pub credential: Option<&'static str>,
}

impl Alone<'_> {
    /// The reason to show: the stage's own words when a stage other than the policy
    /// decided.
    pub fn reason(&self) -> String {
        match self.credential {
            Some(kind) => super::arguments::credential_reason(kind),
            None => self.decision.reason().to_owned(),
        }
    }
}

/// Decides `call` in `session` (without marking it: nothing is counted or tainted) as
/// the decision path does before pinning and before anyone is asked.
pub fn decide_alone<'p>(
    policy: &'p Policy,
    protection: Option<&'p SelfProtection>,
    call: &Call<'_>,
    session: &Session,
) -> Alone<'p> {
    if let Some(refused) = protection.and_then(|p| p.refuses(call)) {
        return Alone { decision: refused, protected: true, credential: None };
    }
    let (decision, labels_added) = policy.decide_looking(call, session);
    let decided = super::pipeline::Decided { decision, labels_added, credential: None };
    let decided = super::arguments::arguments_stage(policy, call, decided);
    Alone { decision: decided.decision, protected: false, credential: decided.credential }
}
