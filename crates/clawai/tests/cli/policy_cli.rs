//! `clawai policy …` as a person (or CI) runs it.

use std::path::Path;

use assert_cmd::Command;

fn clawai(home: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_clawai"));
    cmd.env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("CLAWAI_POLICY")
        .env_remove("XDG_STATE_HOME")
        .env_remove("CI")
        .env_remove("CLAWAI_APPROVALS");
    cmd
}

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn init_writes_the_starter_at_the_default_path_and_refuses_to_overwrite() {
    let home = tempfile::tempdir().unwrap();
    let out = clawai(home.path()).args(["policy", "init"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let path = home.path().join(".config/clawai/policy.toml");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("no-credentials"));
    assert!(stdout(&out).contains("Next:"));
    std::fs::write(&path, "# mine\n").unwrap();
    let out = clawai(home.path()).args(["policy", "init"]).output().unwrap();
    assert!(!out.status.success());
    assert!(stderr(&out).contains("already exists"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "# mine\n", "never overwritten");
    // XDG_CONFIG_HOME is honoured.
    let xdg = home.path().join("xdg");
    let out = clawai(home.path()).env("XDG_CONFIG_HOME", &xdg).args(["policy", "init"]).output().unwrap();
    assert!(out.status.success());
    assert!(xdg.join("clawai/policy.toml").exists());
    // And the starter checks clean with the default lookup.
    let out = clawai(home.path()).env("XDG_CONFIG_HOME", &xdg).args(["policy", "check"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("ok,"));
}

#[test]
fn check_reports_file_line_and_fails() {
    let home = tempfile::tempdir().unwrap();
    let bad = home.path().join("bad.toml");
    std::fs::write(&bad, "[[rule]]\naction = \"deny\"\ntool = \"x\"\n\n[[rule]]\naction = \"alow\"\ntool = \"y\"\n")
        .unwrap();
    let out = clawai(home.path()).args(["policy", "check"]).arg(&bad).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(err.contains("bad.toml:6:") && err.contains("unknown action `alow`"), "{err}");
    // CLAWAI_POLICY is the lookup when no file is given.
    let out = clawai(home.path()).env("CLAWAI_POLICY", &bad).args(["policy", "check"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let missing = clawai(home.path()).args(["policy", "check", "/nonexistent/p.toml"]).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    assert!(stderr(&missing).contains("clawai policy init"));
}

#[test]
fn test_runs_seed_fixtures_and_fails_on_mismatch() {
    let home = tempfile::tempdir().unwrap();
    let root = repo();
    for (policy, dir) in [
        ("examples/policies/seed000.toml", "examples/fixtures/seed000"),
        ("examples/policies/seed004.yaml", "examples/fixtures/seed004"),
    ] {
        let out = clawai(home.path())
            .args(["policy", "test", "--policy"])
            .arg(root.join(policy))
            .arg("--fixture-dir")
            .arg(root.join(dir))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}{}", stdout(&out), stderr(&out));
        assert!(stdout(&out).contains(" 0 failed"), "{}", stdout(&out));
    }
    // --expect overrides: the ssh read is not allowed, so this must fail.
    let out = clawai(home.path())
        .args(["policy", "test", "--policy"])
        .arg(root.join("examples/policies/seed000.toml"))
        .arg("--fixture")
        .arg(root.join("examples/fixtures/seed000/read-ssh-key.json"))
        .args(["--expect", "allow"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("FAIL") && stdout(&out).contains("expected allow"), "{}", stdout(&out));
    // JSON output for machines.
    let out = clawai(home.path())
        .args(["policy", "test", "--format", "json", "--policy"])
        .arg(root.join("examples/policies/seed000.toml"))
        .arg("--fixture-dir")
        .arg(root.join("examples/fixtures/seed000"))
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["failed"], 0);
    assert!(v["results"].as_array().unwrap().iter().all(|r| r["passed"] == true));
}

#[test]
fn test_fails_when_a_fixture_expects_otherwise() {
    let home = tempfile::tempdir().unwrap();
    let dir = home.path().join("fx");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(home.path().join("p.toml"), "[[rule]]\naction = \"allow\"\ntool = \"read_*\"\n").unwrap();
    std::fs::write(dir.join("a.json"), r#"{"method":"tools/call","params":{"name":"read_file"},"expected":"allow"}"#)
        .unwrap();
    std::fs::write(dir.join("b.json"), r#"{"method":"tools/call","params":{"name":"rm"},"expected":"allow"}"#).unwrap();
    let run = || {
        clawai(home.path())
            .args(["policy", "test", "--policy"])
            .arg(home.path().join("p.toml"))
            .arg("--fixture-dir")
            .arg(&dir)
            .output()
            .unwrap()
    };
    let out = run();
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("1 passed, 1 failed"), "{}", stdout(&out));
    std::fs::write(dir.join("c.json"), "{ broken").unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("c.json"), "{}", stderr(&out));
}

#[test]
fn explain_shows_every_rule_considered_and_the_decision() {
    let home = tempfile::tempdir().unwrap();
    let out = clawai(home.path())
        .args(["policy", "explain", "--policy"])
        .arg(repo().join("examples/policies/seed000.toml"))
        .args(["--tool", "filesystem_read", "--arg", "path=/home/user/projects/../.ssh/id_rsa"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.contains("#1 (line 3)") && text.contains("#3 (line 14)") && text.contains("args.path does not match"),
        "{text}"
    );
    assert!(text.contains("Decision: DENY") && text.contains("Default deny"), "{text}");
    let out = clawai(home.path())
        .args(["policy", "explain", "--policy"])
        .arg(repo().join("examples/policies/seed000.toml"))
        .args(["--tool", "filesystem_read", "--arg", "path=/home/user/projects/a.rs"])
        .output()
        .unwrap();
    assert!(stdout(&out).contains("Decision: ALLOW"), "{}", stdout(&out));
}

#[test]
fn import_prints_toml_that_loads() {
    let home = tempfile::tempdir().unwrap();
    let out = clawai(home.path())
        .args(["policy", "import"])
        .arg(repo().join("examples/policies/seed004.yaml"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let converted = home.path().join("converted.toml");
    std::fs::write(&converted, &out.stdout).unwrap();
    let out = clawai(home.path()).args(["policy", "check"]).arg(&converted).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let out = clawai(home.path())
        .args(["policy", "test", "--policy"])
        .arg(&converted)
        .arg("--fixture-dir")
        .arg(repo().join("examples/fixtures/seed004"))
        .output()
        .unwrap();
    assert!(out.status.success(), "the converted policy decides as the original: {}", stdout(&out));
}

#[test]
fn the_example_starter_policy_is_what_init_writes() {
    let home = tempfile::tempdir().unwrap();
    let path = home.path().join("p.toml");
    let out = clawai(home.path()).args(["policy", "init", "--path"]).arg(&path).output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        std::fs::read_to_string(repo().join("examples/policies/starter.toml")).unwrap(),
        "examples/policies/starter.toml is out of date: regenerate it with `clawai policy init --path examples/policies/starter.toml`"
    );
}

#[test]
fn a_fixture_without_expected_fails_when_required_and_by_default_in_ci() {
    let home = tempfile::tempdir().unwrap();
    let policy = home.path().join("p.toml");
    std::fs::write(&policy, "[[rule]]\naction = \"deny\"\ntool = \"rm\"\n").unwrap();
    let fixture = home.path().join("rm.json");
    std::fs::write(&fixture, r#"{"method":"tools/call","params":{"name":"rm"}}"#).unwrap();
    let run = |extra: &[&str], ci: Option<&str>| {
        let mut cmd = clawai(home.path());
        cmd.args(["policy", "test", "--policy"]).arg(&policy).arg("--fixture").arg(&fixture).args(extra);
        if let Some(ci) = ci {
            cmd.env("CI", ci);
        }
        cmd.output().unwrap()
    };
    let out = run(&[], None);
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    assert!(stdout(&out).contains("1 without an expected decision"), "{}", stdout(&out));
    for (extra, ci) in [(&["--require-expected"][..], None), (&[], Some("true")), (&[], Some("1"))] {
        let out = run(extra, ci);
        assert_eq!(out.status.code(), Some(1), "{extra:?} CI={ci:?}: {}", stdout(&out));
        let text = stdout(&out);
        assert!(text.contains("FAIL") && text.contains("no expected decision"), "{text}");
        assert!(text.contains("add \"expected\"") && text.contains("--expect"), "{text}");
    }
    assert!(stdout(&run(&[], Some("1"))).contains("because the CI variable is set"));
    // An empty CI is no CI; --require-expected=false and --expect settle it in CI.
    assert_eq!(run(&[], Some("")).status.code(), Some(0));
    assert_eq!(run(&["--require-expected=false"], Some("1")).status.code(), Some(0));
    let out = run(&["--expect", "deny"], Some("1"));
    assert_eq!(out.status.code(), Some(0), "{}", stdout(&out));
    let out = run(&["--format", "json", "--require-expected"], None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["failed"].as_u64(), v["results"][0]["missing_expected"].as_bool()), (Some(1), Some(true)));
}

#[test]
fn check_and_test_exit_alike_for_a_policy_that_does_not_load() {
    let home = tempfile::tempdir().unwrap();
    let bad = home.path().join("bad.toml");
    std::fs::write(&bad, "[[rule]]\naction = \"alow\"\ntool = \"y\"\n").unwrap();
    let fixture = home.path().join("f.json");
    std::fs::write(&fixture, r#"{"method":"tools/call","params":{"name":"y"},"expected":"deny"}"#).unwrap();
    let check = clawai(home.path()).args(["policy", "check"]).arg(&bad).output().unwrap();
    let test = clawai(home.path())
        .args(["policy", "test", "--policy"])
        .arg(&bad)
        .arg("--fixture")
        .arg(&fixture)
        .output()
        .unwrap();
    assert_eq!(check.status.code(), Some(1));
    assert_eq!(test.status.code(), check.status.code(), "{}", stderr(&test));
    assert!(stderr(&test).contains("unknown action `alow`") && stderr(&test).contains("clawai policy check"));
    for command in ["check", "test"] {
        let help = clawai(home.path()).args(["policy", command, "--help"]).output().unwrap();
        assert!(stdout(&help).contains("Exit status: 0"), "{}", stdout(&help));
    }
}

#[test]
fn a_missing_policy_is_answered_with_the_init_command_that_writes_it_there() {
    let home = tempfile::tempdir().unwrap();
    let run_in_home = |args: &[&str]| clawai(home.path()).current_dir(home.path()).args(args).output().unwrap();
    let out = run_in_home(&["proxy", "--policy", "missing.toml", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("`clawai policy init --path missing.toml`"), "{}", stderr(&out));
    let out = run_in_home(&["policy", "check", "my policies/p.toml"]);
    assert!(stderr(&out).contains("`clawai policy init --path 'my policies/p.toml'`"), "{}", stderr(&out));
    // The command suggested writes the file the proxy looks for.
    assert!(run_in_home(&["policy", "init", "--path", "missing.toml"]).status.success());
    assert!(home.path().join("missing.toml").exists());
    // At the default path, plain `clawai policy init` is the way.
    let out = run_in_home(&["proxy", "--", "true"]);
    let err = stderr(&out);
    assert!(err.contains("Create one with `clawai policy init`,"), "{err}");
}

#[test]
fn explain_shows_a_standing_approval_that_turns_a_prompt_into_allow_but_never_a_deny() {
    let home = tempfile::tempdir().unwrap();
    let policy = home.path().join("p.toml");
    std::fs::write(
        &policy,
        "[[rule]]\nid = \"no-keys\"\naction = \"deny\"\ntool = \"**\"\nany_arg = \"**/.ssh/**\"\n\n[[rule]]\nid = \"ask-writes\"\naction = \"prompt\"\ntool = \"write_file\"\n",
    )
    .unwrap();
    let config = home.path().join(".config/clawai");
    std::fs::create_dir_all(&config).unwrap();
    std::fs::write(
        config.join("approvals.toml"),
        "# mine\n[[allow]]\nid = \"notes\"\ntool = \"write_file\"\nargs.path = \"/home/me/notes/**\"\n",
    )
    .unwrap();
    let explain = |path: &str| {
        let out = clawai(home.path())
            .args(["policy", "explain", "--policy"])
            .arg(&policy)
            .args(["--tool", "write_file", "--arg", &format!("path={path}")])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let approved = explain("/home/me/notes/a.md");
    assert!(approved.contains("ALLOW without asking") && approved.contains("approval `notes` (line 2)"), "{approved}");
    let asked = explain("/home/me/other.md");
    assert!(asked.contains("Decision: PROMPT") && !asked.contains("without asking"), "{asked}");
    let denied = explain("/home/me/notes/.ssh/id_rsa");
    assert!(denied.contains("Decision: DENY"), "an approval never overrides a deny: {denied}");
}

#[test]
fn fixtures_and_explain_set_the_sessions_labels_and_prior_calls() {
    let home = tempfile::tempdir().unwrap();
    let policy = repo().join("examples/policies/taint.toml");
    let fixture = |name: &str, text: &str| {
        let path = home.path().join(name);
        std::fs::write(&path, text).unwrap();
        clawai(home.path())
            .args(["policy", "test", "--policy"])
            .arg(&policy)
            .arg("--fixture")
            .arg(path)
            .output()
            .unwrap()
    };
    let fetch = r#""method":"tools/call","params":{"name":"fetch","arguments":{"url":"https://x.example"}}"#;
    let out = fixture("clean.json", &format!(r#"{{{fetch},"expected":"allow"}}"#));
    assert!(out.status.success(), "a clean session fetches: {}", stdout(&out));
    let out =
        fixture("tainted.json", &format!(r#"{{{fetch},"session":{{"labels":["private"]}},"expected":"prompt"}}"#));
    assert!(out.status.success() && stdout(&out).contains("nothing-out-after-private"), "{}", stdout(&out));
    let out =
        fixture("flood.json", &format!(r#"{{{fetch},"session":{{"calls":{{"fetch-flood":30}}}},"expected":"deny"}}"#));
    assert!(out.status.success() && stdout(&out).contains("fetch-flood"), "{}", stdout(&out));
    let out =
        fixture("under.json", &format!(r#"{{{fetch},"session":{{"calls":{{"fetch-flood":29}}}},"expected":"allow"}}"#));
    assert!(out.status.success(), "the 30th call in the minute passes: {}", stdout(&out));
    let out =
        fixture("typo.json", &format!(r#"{{{fetch},"session":{{"calls":{{"fetch-flod":30}}}},"expected":"deny"}}"#));
    assert_eq!(out.status.code(), Some(2), "a count for no rate rule proves nothing");
    assert!(
        stderr(&out).contains("`fetch-flod` is not a rule with `rate`; its rate rules are fetch-flood"),
        "{}",
        stderr(&out)
    );

    let explain = |extra: &[&str]| {
        let out = clawai(home.path())
            .args(["policy", "explain", "--policy"])
            .arg(&policy)
            .args(["--tool", "fetch", "--arg", "url=https://x.example"])
            .args(extra)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let text = explain(&[]);
    assert!(text.contains("a new session") && text.contains("the session is not tainted \"private\""), "{text}");
    assert!(text.contains("Decision: ALLOW"), "{text}");
    assert!(explain(&["--tainted", "private"]).contains("Decision: PROMPT"));
    let text = explain(&["--prior-calls", "fetch-flood=30"]);
    assert!(text.contains("beyond rate 30/min -> MATCH") && text.contains("Decision: DENY"), "{text}");
    let text = clawai(home.path())
        .args(["policy", "explain", "--policy"])
        .arg(&policy)
        .args(["--tool", "read_file", "--arg", "path=~/private/plan.md"])
        .output()
        .unwrap();
    assert!(stdout(&text).contains("the session is then tainted \"private\""), "{}", stdout(&text));
}

/// `explain` decides as the proxy does, the guards beyond the rules included: a write to
/// clawai's own files is refused by self-protection whatever the rules say, and a
/// credential in the arguments of a call the rules let through asks a person.
#[test]
fn explain_shows_the_guards_the_proxy_runs_beyond_the_rules() {
    let home = tempfile::tempdir().unwrap();
    let policy = home.path().join("p.toml");
    std::fs::write(&policy, "[[rule]]\nid = \"all\"\naction = \"allow\"\ntool = \"**\"\n").unwrap();
    let own = home.path().join(".config/clawai/evil");
    let out = clawai(home.path())
        .args(["policy", "explain", "--policy"])
        .arg(&policy)
        .args(["--tool", "create_directory", "--arg"])
        .arg(format!("path={}", own.display()))
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("Decision: DENY (self-protection"), "{text}");
    let out = clawai(home.path())
        .args(["policy", "explain", "--policy"])
        .arg(&policy)
        .args(["--tool", "note", "--arg", "text=AKIAIOSFODNN7EXAMPLE"])
        .output()
        .unwrap();
    let text = stdout(&out);
    assert!(text.contains("Decision: PROMPT (rule `secrets-in-arguments`"), "{text}");
}
