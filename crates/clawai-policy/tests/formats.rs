//! Converted policies decide exactly as their originals: each format's semantics are
//! written out here independently (a small interpreter per format), and a corpus of
//! calls is decided both ways.

use clawai_policy::glob::Glob;
use clawai_policy::operation::{Operation, detect};
use clawai_policy::{Action, Call, Format, load_str};
use clawai_protocol::Json;
use serde_json::{Value, json};

const AGENTSHIELD: &str = r#"
defaults:
  decision: "AUDIT"
blocked_tools:
  - "execute_command"
  - "run_*"
rules:
  - id: allow-reads
    match:
      tool_name_any: ["read_file", "list_directory"]
    decision: "ALLOW"
  - id: block-ssh-access
    match:
      tool_name_any: ["read_file", "write_file"]
      argument_patterns:
        path: "**/.ssh/**"
    decision: "BLOCK"
    reason: "Access to SSH key directories is blocked."
  - id: audit-etc
    match:
      tool_name: "*_file"
      argument_patterns:
        path: "/etc/**"
    decision: "AUDIT"
  - id: block-git-push
    match:
      tool_name_regex: "^git_(push|force)"
    decision: "BLOCK"
"#;

/// AgentShield's semantics (seed 004): blocked list first, then the most restrictive
/// decision among all matching rules, else the default.
fn agentshield_reference(tool: &str, args: &Value) -> Action {
    let blocked = ["execute_command", "run_*"];
    if blocked.iter().any(|g| Glob::new(g).unwrap().is_match(tool)) {
        return Action::Deny;
    }
    let path = args.get("path").and_then(Value::as_str);
    let path_is = |g: &str| path.is_some_and(|p| Glob::new(g).unwrap().is_match(p));
    let mut matched = Vec::new();
    if ["read_file", "list_directory"].contains(&tool) {
        matched.push(Action::Allow);
    }
    if ["read_file", "write_file"].contains(&tool) && path_is("**/.ssh/**") {
        matched.push(Action::Deny);
    }
    if Glob::new("*_file").unwrap().is_match(tool) && path_is("/etc/**") {
        matched.push(Action::Audit);
    }
    if regex::Regex::new("^git_(push|force)").unwrap().is_match(tool) {
        matched.push(Action::Deny);
    }
    let rank = |a: &Action| match a {
        Action::Deny => 3,
        Action::Audit => 2,
        _ => 1,
    };
    matched.into_iter().max_by_key(rank).unwrap_or(Action::Audit)
}

const MCPGOV: &str = r#"{
  "github": {"read": "allow", "write": "allow", "delete": "deny", "execute": "allow", "admin": "deny"},
  "slack": {"read": "allow", "write": "deny", "delete": "deny"},
  "filesystem": {"delete": "deny", "execute": "deny"}
}"#;

/// mcp-gov's semantics (seed 003): service from the tool name, operation from the
/// detector; deny only when the rules say deny for that pair.
fn mcpgov_reference(tool: &str, server: Option<&str>) -> Action {
    let rules: Value = serde_json::from_str(MCPGOV).unwrap();
    let kind = detect(tool);
    let service = server.map(str::to_owned).or(kind.service);
    let family = |op: Operation| -> Vec<&'static str> {
        match op {
            Operation::List => vec!["list", "read"],
            Operation::Create => vec!["create", "write"],
            Operation::Update => vec!["update", "write"],
            other => vec![other.as_str()],
        }
    };
    let denied = service.is_some_and(|s| {
        family(kind.operation)
            .iter()
            .any(|op| rules.get(&s).and_then(|r| r.get(*op)).and_then(Value::as_str) == Some("deny"))
    });
    if denied { Action::Deny } else { Action::Allow }
}

fn corpus() -> Vec<(&'static str, Value)> {
    vec![
        ("execute_command", json!({"command": "ls"})),
        ("run_shell", json!({})),
        ("read_file", json!({"path": "/home/u/notes.txt"})),
        ("read_file", json!({"path": "/home/u/.ssh/id_rsa"})),
        ("write_file", json!({"path": "/root/.ssh/authorized_keys"})),
        ("write_file", json!({"path": "/etc/hosts"})),
        ("read_file", json!({"path": "/etc/passwd"})),
        ("list_directory", json!({"path": "/"})),
        ("git_push", json!({})),
        ("git_status", json!({})),
        ("edit_file", json!({"path": "/etc/x"})),
        ("edit_file", json!({"path": "/tmp/x"})),
        ("github_delete_repo", json!({"repo": "x"})),
        ("github_list_repos", json!({})),
        ("github_create_issue", json!({})),
        ("github_set_permissions", json!({})),
        ("slack_post_message", json!({})),
        ("slackReadChannel", json!({})),
        ("slack-remove-user", json!({})),
        ("filesystem_rm", json!({})),
        ("filesystem_read", json!({})),
        ("jira_delete_ticket", json!({})),
        ("echo", json!({})),
    ]
}

#[test]
fn agentshield_conversion_decides_as_agentshield() {
    let policy = load_str(AGENTSHIELD, Format::AgentShield, "agentshield.yaml").unwrap();
    for (tool, args) in corpus() {
        let params = json!({"name": tool, "arguments": args});
        let got = policy.decide(&Call::from_params("tools/call", Some(&Json::from(&params)))).action;
        assert_eq!(got, agentshield_reference(tool, &args), "{tool} {args}");
    }
    // AgentShield does not examine other methods; neither does the conversion.
    let read = json!({"uri": "file:///home/u/.ssh/id_rsa"});
    assert_eq!(policy.decide(&Call::from_params("resources/read", Some(&Json::from(&read)))).action, Action::Allow);
}

#[test]
fn mcpgov_conversion_decides_as_mcpgov() {
    let policy = load_str(MCPGOV, Format::McpGov, "rules.json").unwrap();
    for (tool, _) in corpus() {
        let params = json!({"name": tool, "arguments": {}});
        let params_json = Json::from(&params);
        let call = Call::from_params("tools/call", Some(&params_json));
        assert_eq!(policy.decide(&call).action, mcpgov_reference(tool, None), "{tool}");
        for server in ["github", "slack", "filesystem"] {
            let got = policy.decide(&call.with_server(Some(server))).action;
            let expected = mcpgov_reference(tool, Some(server));
            // clawai reads the service from the server name *and* the tool prefix, so it
            // may only ever be stricter than mcp-gov, never looser.
            assert!(
                got == expected || (got == Action::Deny && mcpgov_reference(tool, None) == Action::Deny),
                "{tool} on {server}: {got} vs {expected}"
            );
        }
    }
}

#[test]
fn mcpgov_rules_list_layout_is_read_too() {
    let text = r#"{"rules": [{"service": "filesystem", "operations": ["delete", "write"], "permission": "deny"}]}"#;
    let policy = load_str(text, Format::McpGov, "rules.json").unwrap();
    let params = json!({"name": "delete_file"});
    let params_json = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params_json));
    assert_eq!(policy.decide(&call.with_server(Some("filesystem"))).action, Action::Deny);
    assert_eq!(policy.decide(&call.with_server(Some("other"))).action, Action::Allow);
}

#[test]
fn bad_foreign_policies_are_refused_with_reasons() {
    let e = load_str("defaults:\n  decision: MAYBE\n", Format::AgentShield, "a.yaml").unwrap_err();
    assert!(e.to_string().contains("unknown decision"), "{e}");
    let e =
        load_str("rules:\n  - match: {tool_nme: x}\n    decision: BLOCK\n", Format::AgentShield, "a.yaml").unwrap_err();
    assert!(e.to_string().contains("tool_nme"), "{e}");
    let e = load_str("{\"github\": {\"nuke\": \"deny\"}}", Format::McpGov, "r.json").unwrap_err();
    assert!(e.to_string().contains("unknown operation"), "{e}");
    let e = load_str("{\"github\": {\"read\": \"maybe\"}}", Format::McpGov, "r.json").unwrap_err();
    assert!(e.to_string().contains("allow"), "{e}");
    let e = load_str("{ nope", Format::McpGov, "r.json").unwrap_err();
    assert!(e.to_string().contains("r.json:1:"), "{e}");
}
