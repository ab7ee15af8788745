//! Policies imported from AgentShield and mcp-gov: their documented examples (the
//! fixtures in examples/fixtures/agentshield and examples/fixtures/mcpgov) decide as
//! those tools document, both in `clawai policy test` and through a live `clawai proxy`
//! running the TOML that `clawai policy import` wrote.

use crate::support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use support::{Setup, clawai};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixtures(dir: &Path) -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let name = p.file_stem().unwrap().to_string_lossy().into_owned();
            (name, serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap())
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// What the proxy did with a call: the decision its audit trail records, and whether
/// the server answered it (forwarded) or clawai did (refused).
fn through_proxy(toml: &str, server: Option<&str>, calls: &[(String, Value)]) -> BTreeMap<String, (String, bool)> {
    let mut setup = Setup::new(toml);
    if let Some(s) = server {
        setup = setup.arg("--server").arg(s);
    }
    let mut proxy = setup.start();
    proxy.initialize();
    let mut forwarded = BTreeMap::new();
    for (name, fixture) in calls {
        let reply = proxy
            .call(&json!({"jsonrpc": "2.0", "id": name, "method": fixture["method"], "params": fixture["params"]}));
        let text = reply["result"]["content"][0]["text"].as_str().unwrap_or_default();
        let message = reply["error"]["message"].as_str().unwrap_or_default();
        let refused_by_clawai = text.starts_with("clawai") || message.starts_with("clawai");
        forwarded.insert(name.clone(), !refused_by_clawai);
    }
    let events = proxy.audit();
    forwarded
        .into_iter()
        .map(|(name, went_on)| {
            let event = events
                .iter()
                .find(|e| e["id"] == name.as_str() && e["decision"].is_string())
                .unwrap_or_else(|| panic!("an audit event decides {name}"));
            (name, (event["decision"].as_str().unwrap().to_owned(), went_on))
        })
        .collect()
}

fn check(policy: &str, fixture_dir: &str) {
    let home = tempfile::tempdir().unwrap();
    let policy = repo().join(policy);
    let dir = repo().join(fixture_dir);
    let test = Command::new(clawai())
        .env("HOME", home.path())
        .args(["policy", "test", "--policy"])
        .arg(&policy)
        .arg("--fixture-dir")
        .arg(&dir)
        .output()
        .unwrap();
    let shown = String::from_utf8_lossy(&test.stdout);
    assert!(test.status.success() && shown.contains(" 0 failed"), "{shown}{}", String::from_utf8_lossy(&test.stderr));

    let import =
        Command::new(clawai()).env("HOME", home.path()).args(["policy", "import"]).arg(&policy).output().unwrap();
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    let toml = String::from_utf8(import.stdout).unwrap();

    let all = fixtures(&dir);
    let mut by_server: BTreeMap<Option<String>, Vec<(String, Value)>> = BTreeMap::new();
    for (name, f) in all {
        by_server.entry(f["server"].as_str().map(str::to_owned)).or_default().push((name, f));
    }
    for (server, calls) in by_server {
        let seen = through_proxy(&toml, server.as_deref(), &calls);
        for (name, fixture) in &calls {
            let expected = fixture["expected"].as_str().unwrap();
            let (decision, went_on) = &seen[name];
            assert_eq!(decision, expected, "{name} through the proxy");
            assert_eq!(*went_on, expected != "deny", "{name}: forwarded exactly when not denied");
        }
    }
}

#[test]
fn agentshield_red_team_cases_decide_alike_in_policy_test_and_the_proxy() {
    check("examples/policies/agentshield-default.yaml", "examples/fixtures/agentshield");
}

#[test]
fn mcpgov_documented_examples_decide_alike_in_policy_test_and_the_proxy() {
    check("examples/policies/mcpgov-rules.json", "examples/fixtures/mcpgov");
}

#[test]
fn import_check_and_the_proxy_name_every_entry_the_conversion_left_out() {
    let home = tempfile::tempdir().unwrap();
    let rules = home.path().join("rules.json");
    std::fs::write(
        &rules,
        r#"{"rules": [{"service": "github", "operations": ["delete"], "permission": "deny"},
                      {"service": "github", "operations": ["nuke"], "permission": "deny"},
                      {"service": "slack", "permission": "deny"}]}"#,
    )
    .unwrap();
    let run = |args: &[&str]| {
        Command::new(clawai()).env("HOME", home.path()).env_remove("CLAWAI_POLICY").args(args).output().unwrap()
    };
    let path = rules.to_str().unwrap();
    let import = run(&["policy", "import", path]);
    let (out, err) = (String::from_utf8_lossy(&import.stdout), String::from_utf8_lossy(&import.stderr));
    assert!(import.status.success(), "{err}");
    for at in ["rules[1].operations[0] skipped", "rules[2] skipped"] {
        assert!(err.contains(&format!("note: {at}")), "import names {at} on stderr: {err}");
        assert!(out.contains(&format!("# Note: {at}")), "the TOML says it too: {out}");
    }
    let check = run(&["policy", "check", path]);
    assert!(check.status.success());
    assert!(
        String::from_utf8_lossy(&check.stderr).contains("rules[2] skipped"),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // The proxy logs it when it starts (its input closed at once, it then stops).
    let audit = home.path().join("audit.jsonl");
    let proxy = Command::new(clawai())
        .env("HOME", home.path())
        .args(["proxy", "--policy", path, "--audit", audit.to_str().unwrap(), "--", "python3"])
        .arg(support::scripted_server())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&proxy.stderr).contains("rules[2] skipped"),
        "{}",
        String::from_utf8_lossy(&proxy.stderr)
    );
}
