//! Converted policies decide exactly as their originals: each format's semantics are
//! written out here independently (a small interpreter per format, from the tools' own
//! code and documentation), random policies of each format are generated as text and as
//! a model, and a corpus of calls is decided both ways.

use clawai_policy::operation::mcpgov;
use clawai_policy::{Action, Call, Format, Policy, load_str};
use clawai_protocol::Json;
use proptest::prelude::*;
use serde_json::{Value, json};

#[path = "formats_models/agentshield_model.rs"]
mod agentshield_model;
#[path = "formats_models/mcpgov_model.rs"]
mod mcpgov_model;

use agentshield_model::Shield;
use mcpgov_model::Gov;

fn decide(policy: &Policy, method: &str, params: &Value, server: Option<&str>) -> Action {
    let params = Json::from(params);
    policy.decide(&Call::from_params(method, Some(&params)).with_server(server)).action
}

/// Plain calls (lower-case names, absolute paths, JSON numbers): where clawai's readings
/// and AgentShield's or mcp-gov's coincide. Evasions, where clawai is deliberately
/// stricter, are tested on their own below.
fn tool_corpus() -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let tools = [
        "read_file",
        "write_file",
        "list_directory",
        "execute_command",
        "run_shell",
        "git_push",
        "git_status",
        "send_tokens",
        "withdraw",
        "github_delete_repo",
        "github_list_repos",
        "slack_post_message",
        "echo",
    ];
    let args = [
        json!({}),
        json!({"path": "/home/u/notes.txt"}),
        json!({"path": "/home/u/.ssh/id_rsa"}),
        json!({"path": "/etc/passwd"}),
        json!({"path": "/home/u/.env.example"}),
        json!({"path": "/home/u/.env.prod"}),
        json!({"amount": 50}),
        json!({"amount": 1000}),
        json!({"amount": 1001}),
        json!({"amount": -5}),
        json!({"path": "/tmp/a.txt", "amount": 20000}),
        json!({"sql": "DROP TABLE users"}),
    ];
    for tool in tools {
        for a in &args {
            out.push((tool, a.clone()));
        }
    }
    out
}

const URIS: [&str; 5] = [
    "file:///home/u/.ssh/id_rsa",
    "file:///home/u/readme.md",
    "postgres://db/prod",
    "secret://vault/key",
    "https://example.com/x",
];

fn check_agentshield(shield: &Shield) -> Result<(), TestCaseError> {
    let text = shield.yaml();
    let policy = load_str(&text, Format::AgentShield, "random.yaml")
        .map_err(|e| TestCaseError::fail(format!("does not load: {e}\n{text}")))?;
    for (tool, args) in tool_corpus() {
        let got = decide(&policy, "tools/call", &json!({"name": tool, "arguments": args}), None);
        prop_assert_eq!(got, shield.decide_tool(tool, &args), "{} {}\n{}", tool, args, text);
    }
    for uri in URIS {
        let got = decide(&policy, "resources/read", &json!({"uri": uri}), None);
        prop_assert_eq!(got, shield.decide_resource(uri), "{}\n{}", uri, text);
    }
    for method in ["prompts/get", "sampling/createMessage", "initialize"] {
        prop_assert_eq!(decide(&policy, method, &json!({"name": "p"}), None), Action::Allow, "{}", method);
    }
    Ok(())
}

fn check_mcpgov(gov: &Gov) -> Result<(), TestCaseError> {
    let text = gov.json();
    let policy = load_str(&text, Format::McpGov, "rules.json")
        .map_err(|e| TestCaseError::fail(format!("does not load: {e}\n{text}")))?;
    let tools = [
        "github_list_repos",
        "github_delete_repo",
        "github_create_issue",
        "slack_post_message",
        "api_search_records",
        "salesforce_manage_users",
        "stripe_process_payment",
        "list_directory",
        "unknown_service_action",
        "echo",
        "fs_read_file",
        "db_drop_table",
    ];
    for tool in tools {
        for server in [None, Some("github"), Some("slack"), Some("fs")] {
            let got = decide(&policy, "tools/call", &json!({"name": tool, "arguments": {}}), server);
            prop_assert_eq!(got, gov.decide(tool, server), "{} on {:?}\n{}", tool, server, text);
        }
    }
    prop_assert_eq!(decide(&policy, "resources/read", &json!({"uri": "file:///x"}), None), Action::Allow);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_agentshield_policies_decide_as_agentshield(shield in agentshield_model::strategy()) {
        check_agentshield(&shield)?;
    }

    #[test]
    fn random_mcpgov_policies_decide_as_mcpgov(gov in mcpgov_model::strategy()) {
        check_mcpgov(&gov)?;
    }
}

/// AgentShield's own red-team policy (its built-in default) and the documented cases
/// that run against it, with AgentShield's expected decisions.
#[test]
fn agentshield_red_team_cases_decide_as_agentshield_expects() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/policies/agentshield-default.yaml"
    ))
    .unwrap();
    let policy = load_str(&text, Format::AgentShield, "agentshield-default.yaml").unwrap();
    let cases = [
        ("execute_command", json!({"command": "ls -la"}), Action::Deny),
        ("read_file", json!({"path": "/home/user/.ssh/id_rsa"}), Action::Deny),
        ("cat_file", json!({"path": "/Users/alice/.ssh/id_ed25519"}), Action::Deny),
        ("create_file", json!({"path": "/etc/cron.d/backdoor", "content": "* * * * * x"}), Action::Deny),
        ("read_file", json!({"path": "/home/user/project/src/main.py"}), Action::Audit),
        ("get_weather", json!({"location": "New York"}), Action::Audit),
        ("read_file", json!({"path": "/tmp/../../home/user/.ssh/id_rsa"}), Action::Deny),
        ("", json!({}), Action::Audit),
        ("destroy_everything", json!({"target": "all"}), Action::Audit),
        ("write_file", json!({"path": "/home/user/project/etc/config.yaml"}), Action::Audit),
        ("create_file", json!({"path": "/etc/systemd/system/backdoor.service"}), Action::Deny),
        ("read_file", json!({"path": "/home/user/project/../../user/.ssh/id_ed25519"}), Action::Deny),
        ("cat_file", json!({"path": "/home/user/.aws/credentials/"}), Action::Deny),
        ("read_file", json!({"path": "/home/user/ssh-tunnel-project/README.md"}), Action::Audit),
    ];
    for (tool, args, expected) in cases {
        assert_eq!(
            decide(&policy, "tools/call", &json!({"name": tool, "arguments": args}), None),
            expected,
            "{tool} {args}"
        );
    }
}

/// The examples of AgentShield's documentation for value limits and precedence.
#[test]
fn agentshield_documented_semantics() {
    let text = r#"
defaults:
  decision: "AUDIT"
rules:
  - id: allow-weather
    match: { tool_name: "get_weather" }
    decision: "ALLOW"
  - id: placeholder
    match: {}
    decision: "BLOCK"
value_limits:
  - id: block-large-crypto-transfer
    tool_name_regex: "send_.*|transfer_.*"
    argument: "amount"
    max: 1000
    decision: "BLOCK"
  - id: block-negative-withdraw
    tool_pattern: "withdraw"
    argument: "amount"
    min: 0
    decision: "BLOCK"
  - id: audit-payments
    tool_pattern: "payment_process"
    argument: "amount"
    max: 10
    decision: "AUDIT"
"#;
    let converted = clawai_policy::convert(text, Format::AgentShield, "p.yaml").unwrap();
    let policy = load_str(text, Format::AgentShield, "p.yaml").unwrap();
    let call = |tool: &str, args: Value| decide(&policy, "tools/call", &json!({"name": tool, "arguments": args}), None);
    assert_eq!(call("get_weather", json!({})), Action::Audit, "an ALLOW rule never lowers an AUDIT default");
    assert_eq!(call("send_tokens", json!({"amount": 52000000})), Action::Deny);
    assert_eq!(call("send_tokens", json!({"amount": 1000})), Action::Audit, "at the maximum is within it");
    assert_eq!(call("withdraw", json!({"amount": -100})), Action::Deny);
    assert_eq!(call("payment_process", json!({"amount": 50})), Action::Audit, "an AUDIT limit only annotates");
    assert_eq!(call("anything", json!({})), Action::Audit, "the empty match is not a deny-everything rule");
    for expected in ["allow-weather", "placeholder", "audit-payments"] {
        assert!(converted.notes.iter().any(|n| n.contains(expected)), "a note names {expected}: {:?}", converted.notes);
        assert!(converted.toml.contains("# Note: "), "notes are in the TOML too");
    }
}

#[test]
fn agentshield_later_format_keys_are_read() {
    let text = r#"
defaults: { decision: "ALLOW" }
name: "pack"
version: "1"
blocked_resources: ["file:///root/.ssh/**"]
resource_rules:
  - id: no-postgres
    match: { scheme: "postgres" }
    decision: "BLOCK"
    taxonomy: "secrets"
  - id: audit-ssh
    match: { uri_regex: "\\.ssh" }
    decision: "AUDIT"
rules:
  - id: env
    taxonomy: "x"
    tests: { tp: [], tn: [] }
    match:
      tool_name_any: ["read_file"]
      argument_patterns: { path: "**/.env.*" }
      exclude_argument_patterns: { path: ["**/.env.example"] }
    decision: "BLOCK"
structural_rules:
  - id: sensitive-write
    match:
      tool_name_any: ["WRITE_*"]
      args_match:
        path: { pattern_any: ["\\.aws/", "/\\.ssh/"] }
        size: { value_gt: 100 }
    decision: "BLOCK"
semantic_rules:
  - id: s
    match: { intent_any: ["file-delete"] }
    decision: "BLOCK"
"#;
    let converted = clawai_policy::convert(text, Format::AgentShield, "p.yaml").unwrap();
    assert!(converted.notes.iter().any(|n| n.contains("semantic rule")), "{:?}", converted.notes);
    let policy = load_str(text, Format::AgentShield, "p.yaml").unwrap();
    let res = |uri: &str| decide(&policy, "resources/read", &json!({"uri": uri}), None);
    assert_eq!(res("file:///root/.ssh/id_rsa"), Action::Deny);
    assert_eq!(res("postgres://db/prod"), Action::Deny);
    assert_eq!(res("file:///home/u/.ssh/config"), Action::Audit);
    assert_eq!(res("file:///home/u/readme"), Action::Allow);
    let call = |tool: &str, args: Value| decide(&policy, "tools/call", &json!({"name": tool, "arguments": args}), None);
    assert_eq!(call("read_file", json!({"path": "/app/.env.prod"})), Action::Deny);
    assert_eq!(call("read_file", json!({"path": "/app/.env.example"})), Action::Allow, "excluded");
    assert_eq!(call("write_file", json!({"path": "/home/u/.aws/credentials", "size": 500})), Action::Deny);
    assert_eq!(call("Write_File", json!({"path": "/home/u/.aws/credentials", "size": 500})), Action::Deny);
    assert_eq!(call("write_file", json!({"path": "/home/u/.aws/credentials", "size": 5})), Action::Allow);
    assert_eq!(call("write_file", json!({"path": "/home/u/notes", "size": 500})), Action::Allow);
}

#[test]
fn agentshield_mistakes_are_refused_with_what_to_do() {
    let refused = |text: &str| load_str(text, Format::AgentShield, "a.yaml").unwrap_err().to_string();
    let e = refused("defaults:\n  decision: MAYBE\n");
    assert!(e.contains("unknown decision `MAYBE`") && e.contains("write ALLOW, AUDIT or BLOCK"), "{e}");
    let e = refused("rules:\n  - match: {tool_name: x}\n    decision: block\n");
    assert!(e.contains("would ignore it") && e.contains("write BLOCK"), "{e}");
    let e = refused("rules:\n  - match: {tool_name: x}\n    decision: DENY\n");
    assert!(e.contains("has no DENY"), "{e}");
    let e = refused(
        "structural_rules:\n  - id: s\n    match:\n      args_match:\n        p: { pattern_all: [a, b] }\n    decision: BLOCK\n",
    );
    assert!(e.contains("rule `s`") && e.contains("by hand"), "{e}");
}

/// Keys AgentShield does not read are ignored as AgentShield ignores them, each named in
/// the notes; the rules they sit in are applied without them (the newest packs put
/// `tool_name_pattern` in structural matches).
#[test]
fn agentshield_keys_it_does_not_read_are_ignored_with_a_note() {
    let text = "structural_rules:\n  - id: no-rm\n    match:\n      tool_name_pattern: \"*shell*\"\n      args_match:\n        command: { pattern_any: [\"rm -rf*\"] }\n    decision: BLOCK\nrules:\n  - match: {tool_nme: x}\n    decision: BLOCK\n";
    let converted = clawai_policy::convert(text, Format::AgentShield, "pack.yaml").unwrap();
    assert!(
        converted.notes.iter().any(|n| n.contains("`tool_name_pattern` in structural_rules[0].match (`no-rm`)")),
        "{:#?}",
        converted.notes
    );
    assert!(converted.notes.iter().any(|n| n.contains("`tool_nme` in rules[0].match")), "{:#?}", converted.notes);
    let policy = load_str(text, Format::AgentShield, "pack.yaml").unwrap();
    let call = |tool: &str, args: Value| decide(&policy, "tools/call", &json!({"name": tool, "arguments": args}), None);
    // AgentShield applies the structural rule to every tool: its name key is not one it reads.
    assert_eq!(call("run_shell", json!({"command": "rm -rf /"})), Action::Deny);
    assert_eq!(call("anything", json!({"command": "rm -rf /"})), Action::Deny);
    assert_eq!(call("run_shell", json!({"command": "ls"})), Action::Audit);
    // The rule with only a misspelt key names nothing: it never matches, as in AgentShield.
    assert_eq!(call("x", json!({})), Action::Audit);
}

/// mcp-gov's own tests and examples, with the decisions they expect.
#[test]
fn mcpgov_documented_examples_decide_as_mcpgov_documents() {
    // test/proxy.test.js
    let text = r#"{"services": {"github": {"operations": {"delete": "deny", "read": "allow"}},
                   "slack": {"operations": {"write": "deny"}}}}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    let call = |tool: &str, server: Option<&str>| decide(&policy, "tools/call", &json!({"name": tool}), server);
    assert_eq!(call("github_delete_repo", None), Action::Deny);
    assert_eq!(call("github_list_repos", None), Action::Allow);
    assert_eq!(call("unknown_service_action", None), Action::Allow);
    // test/service-param.test.js: the server's name is the service.
    let text = r#"{"_comment": "Test rules", "services": {"filesystem": {"operations": {"read": "deny", "write": "allow", "delete": "deny"}}}}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    let call = |tool: &str, server: Option<&str>| decide(&policy, "tools/call", &json!({"name": tool}), server);
    assert_eq!(call("list_directory", Some("filesystem")), Action::Deny);
    assert_eq!(call("list_directory", None), Action::Allow, "service `list` has no rule");
    // README: the wrapper's array layout with defaultPolicy deny.
    let text = r#"{"_comment": "Auto-generated", "_location": "/home/u/.mcp-gov/rules.json", "defaultPolicy": "deny",
        "rules": [{"service": "github", "operations": ["delete"], "permission": "deny", "reason": "safety"},
                  {"service": "github", "operations": ["read", "write"], "permission": "allow"}]}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    let call = |tool: &str, server: Option<&str>| decide(&policy, "tools/call", &json!({"name": tool}), server);
    assert_eq!(call("github_list_repos", None), Action::Allow);
    assert_eq!(call("github_create_issue", None), Action::Allow);
    assert_eq!(call("github_delete_repo", None), Action::Deny);
    assert_eq!(call("github_merge_pr", None), Action::Deny, "execute has no rule: the default denies");
    assert_eq!(call("api_get_user", None), Action::Deny, "unknown service: the default denies");
    // docs/operation-keywords.md with examples/github/rules.json.
    let text = r#"{"github": {"read": "allow", "write": "allow", "delete": "deny", "execute": "allow", "admin": "deny"},
                  "slack": {"_comment": "x", "execute": "deny"}, "stripe": {"execute": "deny"}, "aws": {"admin": "deny"},
                  "salesforce": {"admin": "deny"}, "jenkins": {"execute": "deny"}}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    let call = |tool: &str| decide(&policy, "tools/call", &json!({"name": tool}), None);
    for (tool, expected) in [
        ("github_list_repos", Action::Allow),
        ("github_delete_repo", Action::Deny),
        ("github_manage_settings", Action::Deny),
        ("slack_post_message", Action::Deny),
        ("stripe_process_payment", Action::Deny),
        ("aws_provision_server", Action::Deny),
        ("salesforce_manage_users", Action::Deny),
        ("jenkins_trigger_build", Action::Deny),
        ("gmail_send_email", Action::Allow),
    ] {
        assert_eq!(call(tool), expected, "{tool}");
    }
}

#[test]
fn mcpgov_malformed_entries_are_skipped_and_named() {
    let text = r#"{"rules": [null, {"service": "x"}, {"operations": ["read"]},
        {"service": "y", "operations": ["read"], "permission": "bogus"},
        {"service": "z", "operations": ["nuke", "delete"], "permission": "deny"}]}"#;
    let converted = clawai_policy::convert(text, Format::McpGov, "rules.json").unwrap();
    for at in ["rules[0]", "rules[1]", "rules[2]", "rules[3].operations[0]", "rules[4].operations[0]"] {
        assert!(converted.notes.iter().any(|n| n.starts_with(&format!("{at} skipped"))), "{at}: {:?}", converted.notes);
    }
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    assert_eq!(policy.notes(), converted.notes.as_slice());
    assert_eq!(
        decide(&policy, "tools/call", &json!({"name": "z_delete_all"}), None),
        Action::Deny,
        "the good part is kept"
    );
    let e = load_str("{ nope", Format::McpGov, "r.json").unwrap_err();
    assert!(e.to_string().contains("r.json:1:"), "{e}");
    let e = load_str("[1, 2]", Format::McpGov, "r.json").unwrap_err();
    assert!(e.to_string().contains("JSON object"), "{e}");
}

#[test]
fn mcpgov_duplicates_are_last_wins() {
    let text = r#"{"rules": [{"service": "github", "operations": ["delete"], "permission": "deny"},
                            {"service": "github", "operations": ["delete"], "permission": "allow"}]}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    assert_eq!(decide(&policy, "tools/call", &json!({"name": "github_delete_repo"}), None), Action::Allow);
    assert_eq!(mcpgov::operation("github_delete_repo"), clawai_policy::operation::Operation::Delete);
}
