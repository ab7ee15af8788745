//! The arguments stage: a call whose arguments carry a credential (a private key, a
//! cloud or API token, also base64-encoded) is decided as the policy's `[guards]
//! secrets_in_arguments` says (`prompt` by default), when the rules would let it
//! through: an agent must not quietly send your keys to a server. A stricter decision
//! of the rules stands.

use clawai_protocol::methods;
use std::sync::LazyLock;

use clawai_policy::{Action, Call, Decision, Format, Policy, load_str};

use crate::guard::credentials::credential_in;
use crate::guard::pipeline::Decided;

/// The id the stage's decisions carry (the audit trail, the question to a person).
pub const RULE_ID: &str = "secrets-in-arguments";

/// One policy per action the stage can take, each a single rule with the stage's id:
/// the decision it gives carries a rule like any other.
static STAGE: LazyLock<[Policy; 3]> = LazyLock::new(|| {
    [Action::Deny, Action::Prompt, Action::Audit].map(|action| {
        let text = format!(
            "[[rule]]\nid = \"{RULE_ID}\"\naction = \"{}\"\nmethod = \"**\"\n\
             description = \"The arguments carry a credential (a private key, a cloud or API token)\"\n",
            action.as_str()
        );
        load_str(&text, Format::Toml, "clawai arguments guard").expect("the stage's rule loads")
    })
});

/// The reason a call the arguments stage decided gets: what it carries, and the key
/// that decides it.
pub(super) fn credential_reason(kind: &str) -> String {
    format!(
        "rule `{RULE_ID}`: the arguments carry {kind}; a call that sends it to the server needs a person's approval \
         unless `[guards] secrets_in_arguments` says otherwise"
    )
}

/// The arguments stage: a call the rules let through whose arguments carry a credential
/// is decided as `[guards] secrets_in_arguments` says, and `credential` names what it
/// carries.
pub(super) fn arguments_stage<'p>(policy: &Policy, call: &Call<'_>, decided: Decided<'p>) -> Decided<'p> {
    if !applies(policy, call, &decided.decision) {
        return decided;
    }
    match call.arguments.and_then(credential_in) {
        Some(kind) => Decided { decision: stage_decision(policy, call), credential: Some(kind), ..decided },
        None => decided,
    }
}

/// The decision of a call known to carry a credential: the rules' `decision`, or what
/// `[guards] secrets_in_arguments` says when that is stricter. `clawai policy replay`
/// decides with it a recorded call the stage decided (the trail holds the credential
/// redacted, so it cannot be found again).
pub fn decided_with_credential<'p>(policy: &Policy, call: &Call<'_>, decision: Decision<'p>) -> Decision<'p> {
    if applies(policy, call, &decision) { stage_decision(policy, call) } else { decision }
}

/// Whether the stage can change `decision`: a call of a method with arguments, and a
/// `secrets_in_arguments` stricter than what the rules decided.
fn applies(policy: &Policy, call: &Call<'_>, decision: &Decision<'_>) -> bool {
    let stricter = |action: Action| match action {
        Action::Deny => 3,
        Action::Prompt => 2,
        Action::Audit => 1,
        Action::Allow => 0,
    };
    matches!(call.method, methods::TOOLS_CALL | methods::PROMPTS_GET)
        && stricter(policy.guards().secrets_in_arguments) > stricter(decision.action)
}

fn stage_decision<'p>(policy: &Policy, call: &Call<'_>) -> Decision<'p> {
    let stage = &STAGE[match policy.guards().secrets_in_arguments {
        Action::Deny => 0,
        Action::Prompt => 1,
        _ => 2,
    }];
    stage.decide(call)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawai_protocol::Json;
    use serde_json::json;

    fn decide(policy_text: &str, arguments: serde_json::Value) -> (Action, Option<String>, Option<&'static str>) {
        let policy = load_str(policy_text, Format::Toml, "test").unwrap();
        let params = json!({"name": "send", "arguments": arguments});
        let params = Json::from(&params);
        let call = Call::from_params("tools/call", Some(&params));
        let decided = Decided { decision: policy.decide(&call), labels_added: Vec::new(), credential: None };
        let decided = arguments_stage(&policy, &call, decided);
        (decided.decision.action, decided.decision.rule_id().map(str::to_owned), decided.credential)
    }

    const ALLOW: &str = "[defaults]\naction = \"allow\"\n";

    #[test]
    fn a_credential_is_asked_about_by_default() {
        let key = json!({"body": "aws key AKIAIOSFODNN7EXAMPLE"});
        assert_eq!(decide(ALLOW, key), (Action::Prompt, Some(RULE_ID.into()), Some("an AWS access key")));
        assert_eq!(decide(ALLOW, json!({"body": "hello"})), (Action::Allow, None, None));
    }

    #[test]
    fn the_policy_chooses_the_action_and_a_stricter_rule_stands() {
        let key = json!({"body": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"});
        let deny = "[defaults]\naction = \"allow\"\n[guards]\nsecrets_in_arguments = \"deny\"\n";
        assert_eq!(decide(deny, key.clone()).0, Action::Deny);
        let off = "[defaults]\naction = \"allow\"\n[guards]\nsecrets_in_arguments = \"allow\"\n";
        assert_eq!(decide(off, key.clone()), (Action::Allow, None, None));
        let denied = "[[rule]]\nid = \"no-send\"\naction = \"deny\"\ntool = \"send\"\n";
        assert_eq!(decide(denied, key), (Action::Deny, Some("no-send".into()), None));
    }
}
