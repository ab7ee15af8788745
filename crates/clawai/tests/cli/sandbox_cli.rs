//! `clawai sandbox explain`, and the `--sandbox` options of `clawai proxy` that stop it
//! before anything starts.

use std::process::Command;

fn clawai(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_clawai")).args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn explain_lists_each_grant_with_why_and_what_this_system_enforces() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let (code, out, err) = clawai(&[
        "sandbox",
        "explain",
        "--sandbox-read",
        "/etc/hostname",
        "--",
        "node",
        "server.js",
        project.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let line = |start: &str| {
        out.lines().find(|l| l.starts_with(start)).unwrap_or_else(|| panic!("no `{start}` in\n{out}")).to_owned()
    };
    assert!(line("read   /usr ").ends_with("programs, libraries and the runtimes' own files"), "{out}");
    let granted = line(&format!("write  {}", project.display()));
    assert!(granted.ends_with(&format!("given to the server as an argument ({})", project.display())), "{granted}");
    assert!(line("read   /etc/hostname").ends_with("granted by --sandbox-read"), "{out}");
    assert_eq!(line("network"), "network  none  (the default: no network unless granted)");
    assert!(!out.contains(&format!("{}\n", dir.path().display())), "nothing above the project is granted:\n{out}");
    assert!(out.contains("On this system: sandbox (auto): landlock-files,landlock-tcp,landlock-scopes,user-ns,pid-ns,net-ns,no-new-privs"), "{out}");
}

#[test]
fn explain_says_what_a_kernel_without_a_feature_would_not_enforce() {
    let out = Command::new(env!("CARGO_BIN_EXE_clawai"))
        .args(["sandbox", "explain", "--", "node"])
        .env("CLAWAI_SANDBOX_TEST_WITHOUT", "landlock")
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    assert!(out.contains("NOT enforced: files (no Landlock in this kernel"), "{out}");
    assert!(out.contains("TCP ports (Landlock ABI 0 has no network rules"), "{out}");
}

#[test]
fn grants_without_a_sandbox_and_a_sandbox_for_a_remote_server_are_refused() {
    let (code, _, err) = clawai(&["proxy", "--sandbox-write", "/tmp", "--", "true"]);
    assert_eq!(code, 2);
    assert!(err.contains("add `--sandbox auto`"), "{err}");
    let (code, _, err) = clawai(&["proxy", "--sandbox", "auto", "--upstream", "https://mcp.example.com/mcp"]);
    assert_eq!(code, 2);
    assert!(err.contains("--sandbox applies to a stdio server clawai starts itself"), "{err}");
    assert!(err.contains("not to a remote server (--upstream)"), "{err}");
    let (code, _, err) = clawai(&["proxy", "--sandbox", "maybe", "--", "true"]);
    assert_eq!(code, 2);
    assert!(err.contains("`maybe` is not a sandbox mode; use auto, require or off"), "{err}");
    let (code, _, err) =
        clawai(&["proxy", "--sandbox", "auto", "--sandbox-network", "none", "--sandbox-network", "any", "--", "true"]);
    assert_eq!(code, 2);
    assert!(err.contains("`none` cannot be combined with `any`"), "{err}");
}

#[test]
fn a_server_that_cannot_start_in_its_sandbox_is_named_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, "[[rule]]\nid = \"all\"\naction = \"allow\"\nmethod = \"**\"\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_clawai"))
        .args(["proxy", "--policy", policy.to_str().unwrap(), "--audit", dir.path().join("a.jsonl").to_str().unwrap()])
        .args(["--sandbox", "auto", "--", "/no/such/server"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start `/no/such/server` in its sandbox: No such file or directory"), "{err}");
}
