//! `clawai wrap`, `unwrap`, `status`, `watch`, `run` against a temporary HOME.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

struct Home {
    dir: tempfile::TempDir,
}

const POLICY: &str = "[[rule]]\naction = \"allow\"\nmethod = \"**\"\n";

impl Home {
    /// A home with a valid policy where clawai looks by default.
    fn new() -> Home {
        let home = Home::without_policy();
        home.write(".config/clawai/policy.toml", POLICY);
        home
    }
    /// A home as before `clawai policy init`.
    fn without_policy() -> Home {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("project")).unwrap();
        Home { dir }
    }
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join("home").join(rel)
    }
    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }
    fn clawai(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_clawai"));
        c.env("HOME", self.dir.path().join("home"))
            .env("XDG_STATE_HOME", self.dir.path().join("state"))
            .env("XDG_CONFIG_HOME", self.dir.path().join("home/.config"))
            .env_remove("CLAWAI_POLICY")
            .current_dir(self.dir.path().join("project"));
        c
    }
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let out = self.clawai().args(args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }
}

const CURSOR: &str = r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"] },
    "web": { "url": "https://mcp.example.com/mcp" }
  }
}
"#;

#[test]
fn status_wrap_status_unwrap_as_a_new_user_would() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let (code, out, _) = home.run(&["status"]);
    assert_eq!(code, 0);
    assert!(out.contains("Cursor") && out.contains("fs: not wrapped (npx)") && out.contains("web: remote"), "{out}");
    let (code, out, _) = home.run(&["wrap", "--all", "--dry-run"]);
    assert_eq!(code, 0);
    assert!(out.contains("+    \"fs\": { \"command\": ") && out.contains("Dry run"), "{out}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR);
    let (code, out, _) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("wrapped fs, web") && out.contains("Restart"), "{out}");
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    let command = wrapped["mcpServers"]["fs"]["command"].as_str().unwrap();
    assert!(Path::new(command).is_absolute() && command.ends_with("clawai"), "{command}");
    assert_eq!(
        wrapped["mcpServers"]["fs"]["args"],
        json!(["proxy", "--server", "fs", "--", "npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"])
    );
    // The remote server now runs through `clawai proxy --upstream`.
    assert_eq!(wrapped["mcpServers"]["web"]["command"], command);
    assert_eq!(
        wrapped["mcpServers"]["web"]["args"],
        json!(["proxy", "--server", "web", "--upstream", "https://mcp.example.com/mcp"])
    );
    assert!(wrapped["mcpServers"]["web"].get("url").is_none());
    let (_, out, _) = home.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    let servers = &status[0]["servers"];
    assert_eq!(servers[0]["state"], "wrapped");
    assert_eq!(servers[0]["policy"], "default");
    assert_eq!(servers[1]["state"], "wrapped");
    assert_eq!(servers[1]["command"], "https://mcp.example.com/mcp");
    let (code, out, _) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 0);
    assert!(out.contains("Nothing to wrap"), "{out}");
    let (code, out, _) = home.run(&["unwrap", "--all"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR, "byte-identical after unwrap");
}

#[test]
fn wrap_needs_names_or_all_and_pins_a_policy_on_request() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let (code, _, err) = home.run(&["wrap"]);
    assert_eq!(code, 2);
    assert!(err.contains("--all"), "{err}");
    let policy = home.write("p.toml", "[[rule]]\naction = \"allow\"\nmethod = \"**\"\n");
    let (code, _, _) = home.run(&["wrap", "fs", "--policy", policy.to_str().unwrap()]);
    assert_eq!(code, 0);
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert_eq!(wrapped["mcpServers"]["fs"]["args"][3], "--policy");
    let (_, out, _) = home.run(&["status"]);
    assert!(out.contains("(policy: ~/p.toml) -> npx"), "{out}");
}

#[test]
fn broken_and_read_only_files_fail_clearly_and_stay_untouched() {
    let home = Home::new();
    let broken = "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" },,\n  }\n}\n";
    let path = home.write(".cursor/mcp.json", broken);
    let (code, _, err) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 1);
    assert!(err.contains("mcp.json:3:"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), broken);

    let home = Home::new();
    let path = home.write(".cursor/mcp.json", CURSOR);
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    let (code, _, err) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 1);
    assert!(err.contains("read-only"), "{err}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), CURSOR);
}

#[test]
fn unknown_layouts_are_skipped_with_a_warning() {
    let home = Home::new();
    home.write(".cursor/mcp.json", r#"{"mcpServers": [{"command": "x"}]}"#);
    home.write(".codeium/windsurf/mcp_config.json", r#"{"mcpServers": {"a": {"command": "x"}}}"#);
    let (code, out, err) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 0);
    assert!(err.contains("warning") && err.contains("mcpServers"), "{err}");
    assert!(out.contains("wrapped a"), "{out}");
}

#[test]
fn concurrent_rewrites_by_the_client_are_never_lost() {
    let home = Home::new();
    let claude = home.write(
        ".claude.json",
        r#"{"numStartups": 1, "mcpServers": {"s": {"command": "node", "args": ["s.js"]}}, "projects": {}}"#,
    );
    let writer_path = claude.clone();
    // Claude Code's way: read, change, write a temporary file, rename over.
    let writer = std::thread::spawn(move || {
        for i in 0..600 {
            let text = std::fs::read_to_string(&writer_path).unwrap();
            let mut v: Value = serde_json::from_str(&text).unwrap();
            v[format!("key{i}")] = json!(i);
            if i % 50 == 0 {
                v["mcpServers"][format!("added{i}")] = json!({"command": "npx", "args": ["x"]});
            }
            let tmp = writer_path.with_extension(format!("tmp{i}"));
            std::fs::write(&tmp, serde_json::to_string_pretty(&v).unwrap()).unwrap();
            std::fs::rename(&tmp, &writer_path).unwrap();
            // Hundreds of rewrites a second: far faster than any real client. (A writer
            // that never pauses can still lose a change in the few microseconds between
            // clawai's last check and its swap; see clawai_clients::write.)
            std::thread::sleep(Duration::from_millis(2));
        }
    });
    let started = Instant::now();
    let mut runs = 0;
    while !writer.is_finished() && started.elapsed() < Duration::from_secs(60) {
        let (code, _, err) = home.run(&["wrap", "--all", "--client", "claude-code"]);
        assert!(code == 0, "{err}");
        runs += 1;
    }
    assert!(runs >= 3, "wrap ran while the client was writing ({runs} runs)");
    writer.join().unwrap();
    let (code, _, err) = home.run(&["wrap", "--all", "--client", "claude-code"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&claude).unwrap()).expect("always valid JSON");
    for i in 0..600 {
        assert_eq!(v[format!("key{i}")], json!(i), "key{i} was lost");
    }
    for (name, server) in v["mcpServers"].as_object().unwrap() {
        assert!(server["command"].as_str().unwrap().ends_with("clawai"), "{name} is wrapped at the end");
    }
}

#[test]
fn watch_wraps_servers_added_by_rename_and_stops_on_sigterm() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", r#"{"mcpServers": {}}"#);
    let mut watch = home.clawai().arg("watch").stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap();
    // Wait until it says it is watching.
    let stderr = watch.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(20)).expect("watch starts");
    assert!(first.contains("keeping"), "{first}");
    let tmp = cursor.with_extension("tmp");
    std::fs::write(&tmp, r#"{"mcpServers": {"new": {"command": "npx", "args": ["-y", "x"]}}}"#).unwrap();
    std::fs::rename(&tmp, &cursor).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
        if v["mcpServers"]["new"]["command"].as_str().is_some_and(|c| c.ends_with("clawai")) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "watch did not wrap the new server: {:?}",
            rx.try_iter().collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // It does not loop on its own writes: the file stays as it is.
    let settled = std::fs::read_to_string(&cursor).unwrap();
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), settled);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(watch.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = watch.wait().unwrap();
    assert!(status.success());
    let err: Vec<String> = rx.try_iter().collect();
    assert!(err.iter().any(|l| l.contains("wrapped new")), "{err:?}");
}

#[test]
fn run_wraps_then_execs_the_client_with_its_exit_code() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let out = home.clawai().args(["run", "--", "sh", "-c", "cat \"$HOME/.cursor/mcp.json\"; exit 7"]).output().unwrap();
    assert_eq!(out.status.code(), Some(7));
    let seen = String::from_utf8_lossy(&out.stdout);
    assert!(seen.contains("\"--server\", \"fs\""), "the client saw the wrapped config: {seen}");
    assert!(std::fs::read_to_string(&cursor).unwrap().contains("clawai"));
}

#[test]
fn wrap_watch_and_run_refuse_a_policy_the_servers_could_not_start_with() {
    let home = Home::without_policy();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let (code, _, err) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 2, "{err}");
    let default = home.path(".config/clawai/policy.toml");
    assert!(
        err.contains(&format!("no policy at {}", default.display()))
            && err.contains("`clawai policy init`")
            && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR, "nothing written");
    // A policy named in this shell's environment is not what the client's servers see.
    let out = home.clawai().args(["wrap", "--all"]).env("CLAWAI_POLICY", "/x/p.toml").output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CLAWAI_POLICY is set here") && err.contains("`--policy /x/p.toml`"), "{err}");
    // A pinned policy that does not load: its error, and how to see it again.
    let bad = home.write("bad.toml", "[[rule]]\naction = \"alow\"\ntool = \"x\"\n");
    let (code, _, err) = home.run(&["wrap", "--all", "--policy", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown action `alow`") && err.contains("clawai policy check"), "{err}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR);
    // A pinned policy that does not exist: init writes it where it was named.
    let missing = home.path("elsewhere/p.toml");
    let (code, _, err) = home.run(&["wrap", "fs", "--policy", missing.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(&format!("clawai policy init --path {}", missing.display())), "{err}");
    // run does not start the client, watch does not start watching.
    let started = home.path("started");
    let (code, _, err) = home.run(&["run", "--", "touch", started.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(!started.exists() && err.contains("no policy at"), "{err}");
    let (code, _, err) = home.run(&["watch"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no policy at"), "{err}");
    // A dry run shows the change and warns; --force wraps anyway.
    let (code, out, err) = home.run(&["wrap", "--all", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Dry run") && err.contains("warning: there is no policy"), "{out}{err}");
    let (code, out, err) = home.run(&["wrap", "--all", "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrapped fs, web") && err.contains("warning: there is no policy"), "{out}{err}");
    // Once the policy exists, wrap goes ahead without --force.
    let home = Home::new();
    home.write(".cursor/mcp.json", CURSOR);
    let (code, out, err) = home.run(&["wrap", "--all"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("wrapped fs, web") && !err.contains("warning"), "{out}{err}");
}

#[test]
fn unknown_server_names_fail_and_list_the_names_there_are() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let notes = r#"{"mcpServers": {"notes": {"command": "node", "args": ["n.js"]}}}"#;
    std::fs::write(home.dir.path().join("project/.mcp.json"), notes).unwrap();
    let (code, out, err) = home.run(&["wrap", "fs", "filesytem"]);
    assert_ne!(code, 0);
    assert!(
        err.contains("no server named `filesytem`") && err.contains("fs, notes, web") && !err.contains("`fs`"),
        "{err}"
    );
    assert!(!out.contains("Nothing to wrap"), "{out}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR, "nothing changed, not even fs");
    home.run(&["wrap", "--all"]);
    let wrapped = std::fs::read_to_string(&cursor).unwrap();
    let (code, _, err) = home.run(&["unwrap", "web", "nope"]);
    assert_ne!(code, 0);
    assert!(err.contains("no server named `nope`") && err.contains("fs, notes, web"), "{err}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), wrapped);
}

#[test]
fn status_names_each_file_for_what_it_is_and_the_policy_each_server_uses() {
    let home = Home::new();
    let project = home.dir.path().join("project");
    std::fs::write(project.join(".mcp.json"), CURSOR).unwrap();
    std::fs::create_dir_all(project.join(".cursor")).unwrap();
    std::fs::write(project.join(".cursor/mcp.json"), CURSOR).unwrap();
    let custom = home.write("mine/servers.json", CURSOR);
    for (file, label) in [(".mcp.json", "Claude Code"), (".cursor/mcp.json", "Cursor")] {
        let (code, out, _) = home.run(&["status", "--config", project.join(file).to_str().unwrap()]);
        assert_eq!(code, 0);
        assert!(out.starts_with(&format!("{label} — ")), "{file}: {out}");
    }
    let (_, out, _) = home.run(&["status", "--config", custom.to_str().unwrap()]);
    assert!(out.starts_with("custom config — "), "{out}");
    // Unwrapped servers: the hint to wrap them. All wrapped: no hint, the policy named.
    assert!(out.contains("clawai wrap --all --dry-run"), "{out}");
    let (code, _, err) = home.run(&["wrap", "--all", "--config", custom.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (_, out, _) = home.run(&["status", "--config", custom.to_str().unwrap()]);
    assert!(!out.contains("clawai wrap --all"), "{out}");
    assert!(out.contains("(policy: ~/.config/clawai/policy.toml) -> npx"), "{out}");
    home.write(".config/clawai/policy.toml", "[[rule]]\naction = \"alow\"\n");
    let (_, out, _) = home.run(&["status", "--config", custom.to_str().unwrap()]);
    assert!(out.contains("policy.toml, invalid: the server will not start; `clawai policy check"), "{out}");
    std::fs::remove_file(home.path(".config/clawai/policy.toml")).unwrap();
    let (_, out, _) = home.run(&["status", "--config", custom.to_str().unwrap()]);
    assert!(out.contains("policy.toml, missing: the server will not start; `clawai policy init` writes it"), "{out}");
    let (_, out, _) = home.run(&["status", "--json", "--config", custom.to_str().unwrap()]);
    let status: Value = serde_json::from_str(&out).unwrap();
    assert_eq!((&status[0]["client"], &status[0]["label"]), (&json!("custom"), &json!("custom config")));
    assert_eq!(status[0]["servers"][0]["policy_state"], "missing");
}

/// Quarantine says so: `clawai status` lists what pinning holds, why, and the command
/// that reviews it.
#[test]
fn status_shows_what_pinning_holds() {
    let home = Home::new();
    home.write(".cursor/mcp.json", CURSOR);
    let pins = home.dir.path().join("state/clawai/pins");
    std::fs::create_dir_all(&pins).unwrap();
    let version = |quarantined: bool| {
        json!({"hash": "ab", "value": {"name": "add"}, "seen": "2026-11-28T00:00:00Z", "quarantined": quarantined,
               "findings": [{"class": "instruction_tag", "severity": "warn", "field": "/description", "evidence": "<IMPORTANT>", "detail": "a tag"}]})
    };
    let file = json!({"format": 1, "server": "math", "source": {"command": ["npx", "math"]},
                      "tools": {"add": {"live": version(true), "held_on_sight": true}, "sub": {"pinned": version(false)}},
                      "prompts": {}, "resource_templates": {}, "listed": ["tool"]});
    std::fs::write(pins.join("math-0123456789abcdef.json"), file.to_string()).unwrap();
    let (code, out, err) = home.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Held by pinning"), "{out}");
    assert!(
        out.contains("  math tool add: quarantined: instruction_tag (warn); review: clawai pins diff math add"),
        "{out}"
    );
    assert!(!out.contains("math tool sub"), "a pinned tool is not listed: {out}");
}

#[test]
fn wrap_sandbox_writes_it_into_the_entry_and_status_says_what_this_system_enforces() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let (code, out, err) = home.run(&["wrap", "fs", "--sandbox", "auto", "--sandbox-network", "loopback"]);
    assert_eq!(code, 0, "{out}{err}");
    let wrapped: Value = serde_json::from_str(&std::fs::read_to_string(&cursor).unwrap()).unwrap();
    assert_eq!(
        wrapped["mcpServers"]["fs"]["args"],
        json!([
            "proxy",
            "--server",
            "fs",
            "--sandbox",
            "auto",
            "--sandbox-network",
            "loopback",
            "--",
            "npx",
            "-y",
            "@modelcontextprotocol/server-filesystem",
            "/tmp"
        ])
    );
    let (_, out, _) = home.run(&["status"]);
    // This machine has Landlock and user namespaces; loopback is never confined to it.
    assert!(out.contains("    sandbox (auto): landlock-files,landlock-scopes,user-ns,pid-ns,no-new-privs"), "{out}");
    assert!(out.contains("NOT enforced: network `loopback` is not confined to this machine"), "{out}");
    let (_, out, _) = home.run(&["status", "--json"]);
    let status: Value = serde_json::from_str(&out).unwrap();
    assert!(status[0]["servers"][0]["sandbox"].as_str().unwrap().starts_with("sandbox (auto): landlock-files"));
    assert!(status[0]["servers"][1].get("sandbox").is_none(), "the remote entry has none");
    let (code, _, _) = home.run(&["unwrap", "--all"]);
    assert_eq!(code, 0);
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR, "byte-identical after unwrap");
}

#[test]
fn sandbox_grants_without_sandbox_are_refused_by_wrap() {
    let home = Home::new();
    let cursor = home.write(".cursor/mcp.json", CURSOR);
    let (code, _, err) = home.run(&["wrap", "fs", "--sandbox-read", "/data"]);
    assert_eq!(code, 2);
    assert!(err.contains("add `--sandbox auto`"), "{err}");
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), CURSOR);
}
