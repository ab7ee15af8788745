//! What the engine decides for whole policies, read from text.

use clawai_protocol::Json;
use serde_json::json;

use crate::starter::STARTER_POLICY;
use crate::{Call, Format, ToolAnnotations, load_str};

fn always_denied(policy: &str, server: &str, tool: &str, destructive: Option<bool>) -> Option<String> {
    let policy = load_str(policy, Format::Toml, "test").expect("a valid policy");
    let call = Call {
        method: "tools/call",
        name: Some(tool),
        arguments: None,
        server: Some(server),
        annotations: Some(ToolAnnotations { read_only_hint: None, destructive_hint: destructive }),
        follow_links: None,
    };
    policy.denies_whatever_the_arguments(&call).map(|d| d.rule_id().unwrap_or("default").to_owned())
}

#[test]
fn a_tool_is_always_denied_only_when_no_arguments_could_get_it_through() {
    let policy = r#"
[defaults]
action = "allow"

[[rule]]
id = "no-delete"
action = "deny"
server = "a"
tool = "delete_*"

[[rule]]
id = "shell-only-ls"
action = "allow"
tool = "shell"
args.command = "ls"

[[rule]]
id = "no-shell"
action = "deny"
tool = "shell"

[[rule]]
id = "no-ssh"
action = "deny"
any_arg = "**/.ssh/**"
tool = "read_file"

[[rule]]
id = "no-destructive"
action = "deny"
destructive = true
tool = "wipe*"
"#;
    assert_eq!(always_denied(policy, "a", "delete_all", None).as_deref(), Some("no-delete"));
    // The server is another: the rule does not apply.
    assert_eq!(always_denied(policy, "b", "delete_all", None), None);
    // An allow with argument conditions comes first: `ls` gets through.
    assert_eq!(always_denied(policy, "a", "shell", None), None);
    // A deny that reads arguments denies some calls only.
    assert_eq!(always_denied(policy, "a", "read_file", None), None);
    // Annotations count: a tool that says it is read-only is not destructive.
    assert_eq!(always_denied(policy, "a", "wipe", None).as_deref(), Some("no-destructive"));
    assert_eq!(always_denied(policy, "a", "wipe", Some(false)), None);
    // A default deny denies what no rule allows.
    let deny_by_default = "[defaults]\naction = \"deny\"\n[[rule]]\nid = \"ok\"\naction = \"allow\"\ntool = \"echo\"\n";
    assert_eq!(always_denied(deny_by_default, "a", "other", None).as_deref(), Some("default"));
    assert_eq!(always_denied(deny_by_default, "a", "echo", None), None);
}

#[test]
fn decide_and_explain_agree() {
    let p = load_str(STARTER_POLICY, Format::Toml, "starter").unwrap_or_else(|e| panic!("{e}"));
    let cases = [
        json!({"name": "read_file", "arguments": {"path": "/a/.ssh/x"}}),
        json!({"name": "delete_file", "arguments": {"path": "/a"}}),
        json!({"name": "read_text", "arguments": {"path": "/a"}}),
        json!({"name": 7}),
    ];
    for params in cases {
        let params_json = Json::from(&params);
        let call = Call::from_params("tools/call", Some(&params_json));
        let e = p.explain(&call);
        assert_eq!(e.decision.action, p.decide(&call).action);
        assert_eq!(e.decision.rule_id(), p.decide(&call).rule_id());
        assert!(!e.steps.is_empty());
    }
}
