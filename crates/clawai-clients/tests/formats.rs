//! Every client format: wrap gives the expected text (insta snapshots), only the
//! wrapped entries change, and unwrap gives back the original bytes.

use std::path::{Path, PathBuf};

use clawai_clients::known::{self, Client, Dirs, KnownFile};
use clawai_clients::{Options, Selection, ops};

struct Fixture {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
    state: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let project = dir.path().join("project");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&project).unwrap();
    Fixture { _dir: dir, home, project, state }
}

impl Fixture {
    fn dirs(&self) -> Dirs {
        Dirs { home: self.home.clone(), config: self.home.join(".config"), project: self.project.clone() }
    }
    fn file(&self, client: Client, scope_project: bool) -> KnownFile {
        known::files(&self.dirs())
            .into_iter()
            .find(|f| f.client == client && (f.scope == clawai_clients::Scope::Project) == scope_project)
            .unwrap()
    }
    fn options(&self) -> Options {
        Options {
            clawai: PathBuf::from("/opt/clawai/bin/clawai"),
            policy: None,
            proxy_flags: Vec::new(),
            dry_run: false,
            state_dir: self.state.clone(),
        }
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Wraps, snapshots, checks idempotence, unwraps, checks byte identity.
fn round_trip(client: Client, project: bool, original: &str) -> String {
    let fx = fixture();
    let file = fx.file(client, project);
    write(&file.path, original);
    let report = ops::wrap(&file, &Selection::All, &fx.options()).unwrap();
    assert!(!report.changed.is_empty(), "{client:?}: something was wrapped");
    let wrapped = std::fs::read_to_string(&file.path).unwrap();
    let again = ops::wrap(&file, &Selection::All, &fx.options()).unwrap();
    assert!(again.changed.is_empty(), "wrapping twice is a no-op");
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), wrapped);
    ops::unwrap(&file, &Selection::All, &fx.options()).unwrap();
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), original, "{client:?}: unwrap restores the exact bytes");
    wrapped
}

const STANDARD: &str = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "/home/user/Desktop"
      ],
      "env": { "DEBUG": "1" },
      "disabled": false,
      "x-vendor": {"keep": [1, 2]}
    },
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
    "no-args": {"command": "/usr/local/bin/my-server"},
    "remote": {"url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"}}
  }
}
"#;

#[test]
fn claude_desktop() {
    insta::assert_snapshot!(round_trip(Client::ClaudeDesktop, false, STANDARD));
}

#[test]
fn cursor_user_and_project() {
    insta::assert_snapshot!(round_trip(Client::Cursor, false, STANDARD));
    round_trip(Client::Cursor, true, STANDARD);
}

#[test]
fn windsurf_gemini_cline_roo_lmstudio_kiro() {
    for client in [Client::Windsurf, Client::GeminiCli, Client::Cline, Client::RooCode, Client::LmStudio, Client::Kiro]
    {
        round_trip(client, false, STANDARD);
    }
    let windsurf = "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"r\": {\"serverUrl\": \"https://r/mcp\"}}}";
    let gemini = "{\"theme\": \"dark\", \"mcpServers\": {\"a\": {\"command\": \"x\", \"cwd\": \"/w\", \"trust\": false}, \"h\": {\"httpUrl\": \"https://h/mcp\"}}}";
    round_trip(Client::Windsurf, false, windsurf);
    round_trip(Client::GeminiCli, false, gemini);
}

#[test]
fn claude_code_user_projects_and_mcp_json() {
    let claude = r#"{"numStartups":12,"mcpServers":{"top":{"type":"stdio","command":"node","args":["a.js"],"env":{}}},"projects":{"/home/u/p":{"allowedTools":[],"mcpServers":{"local":{"type":"stdio","command":"python","args":["-m","srv"]}}},"/home/u/q":{"mcpServers":{}}},"tipsHistory":{"x":1}}"#;
    insta::assert_snapshot!(round_trip(Client::ClaudeCode, false, claude));
    round_trip(Client::ClaudeCode, true, STANDARD);
}

#[test]
fn vscode_jsonc_with_comments_and_trailing_commas() {
    let vscode = r#"{
  // Servers for this workspace
  "inputs": [
    { "type": "promptString", "id": "token", "description": "API token", "password": true },
  ],
  "servers": {
    /* the git server */
    "git": {
      "type": "stdio",
      "command": "uvx", // launcher
      "args": ["mcp-server-git", "--repository", "${workspaceFolder}"],
      "env": { "TOKEN": "${input:token}" },
    },
    "http": { "type": "http", "url": "https://api.example.com/mcp" },
  },
}
"#;
    insta::assert_snapshot!(round_trip(Client::VsCode, true, vscode));
    round_trip(Client::VsCode, false, vscode);
}

#[test]
fn zed_flat_and_nested_layouts() {
    let zed = r#"// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "flat": { "command": "npx", "args": ["-y", "server-a"], "env": {} },
    "nested": { "command": { "path": "node", "args": ["b.js"], "env": {} }, "settings": {} },
  },
}
"#;
    insta::assert_snapshot!(round_trip(Client::Zed, false, zed));
}

#[test]
fn codex_toml_with_comments() {
    let codex = r#"# Codex configuration
model = "o3"
mcp_servers.inline = { command = "x", env = { A = "1" } }

[mcp_servers.fetch]
command = "uvx" # the launcher
args = ["mcp-server-fetch"]
env = { "API_KEY" = "k" }

[mcp_servers.bare]
command = 'my-server'

[other]
keep = true
"#;
    insta::assert_snapshot!(round_trip(Client::Codex, false, codex));
}

#[test]
fn only_named_servers_change() {
    let fx = fixture();
    let file = fx.file(Client::ClaudeDesktop, false);
    write(&file.path, STANDARD);
    let report = ops::wrap(&file, &Selection::Names(vec!["memory".into()]), &fx.options()).unwrap();
    assert_eq!(report.changed, ["memory"]);
    let text = std::fs::read_to_string(&file.path).unwrap();
    assert!(
        text.contains(
            r#""command": "npx",
      "args": [
        "-y","#
        ),
        "filesystem untouched"
    );
    assert!(text.contains(r#""memory": {"command": "/opt/clawai/bin/clawai""#));
}

#[test]
fn wrap_writes_the_proxy_flags_before_the_original_command_and_unwrap_restores_it() {
    let fx = fixture();
    let file = fx.file(Client::ClaudeDesktop, false);
    write(&file.path, STANDARD);
    let options = Options { proxy_flags: vec!["--sandbox".into(), "auto".into()], ..fx.options() };
    ops::wrap(&file, &Selection::Names(vec!["memory".into()]), &options).unwrap();
    let args = servers(&file.path, "mcpServers")["memory"]["args"].clone();
    let args: Vec<&str> = args.as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
    let split = args.iter().position(|a| *a == "--").unwrap();
    assert_eq!(args[..split], ["proxy", "--server", "memory", "--sandbox", "auto"], "{args:?}");
    assert_eq!(args[split + 1], "npx");
    ops::unwrap(&file, &Selection::All, &fx.options()).unwrap();
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), STANDARD);
}

/// The servers of a JSON(C) file as values.
fn servers(path: &Path, key: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(path).unwrap();
    let value: serde_json::Value = jsonc_parser::parse_to_serde_value(&text, &Default::default()).unwrap();
    value[key].clone()
}

#[test]
fn remote_entries_become_clawai_proxy_upstream_and_come_back_exactly() {
    let fx = fixture();
    let file = fx.file(Client::VsCode, true);
    // Headers first, in the middle and absent; a comment and an unknown key that stay.
    let original = r#"{
  "servers": {
    // the team's tracker
    "tracker": {
      "type": "http",
      "url": "https://tracker.example.com/mcp",
      "headers": { "Authorization": "Bearer ${input:tracker-token}", "X-Team": "core" },
      "dev": { "watch": "src/**" }
    },
    "first": { "headers": { "X-Key": "${env:KEY}" }, "type": "sse", "url": "https://sse.example.com/sse" },
    "bare": { "url": "https://bare.example.com/mcp" },
    "local": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
  },
}
"#;
    write(&file.path, original);
    let clawai_path = fx.home.join("bin/clawai");
    write(&clawai_path, "#!/bin/sh\n");
    let options = Options { clawai: clawai_path.clone(), ..fx.options() };
    let report = ops::wrap(&file, &Selection::All, &options).unwrap();
    assert_eq!(report.changed.len(), 4, "{report:?}");
    let wrapped = std::fs::read_to_string(&file.path).unwrap();
    assert!(wrapped.contains("// the team's tracker"), "comments stay:\n{wrapped}");
    let s = servers(&file.path, "servers");
    let clawai = clawai_path.display().to_string();
    assert_eq!(s["tracker"]["type"], "stdio");
    assert_eq!(s["tracker"]["command"], clawai);
    assert_eq!(
        s["tracker"]["args"],
        serde_json::json!([
            "proxy",
            "--server",
            "tracker",
            "--upstream",
            "https://tracker.example.com/mcp",
            "--header",
            "Authorization: Bearer ${input:tracker-token}",
            "--header",
            "X-Team: core"
        ])
    );
    assert!(s["tracker"].get("url").is_none() && s["tracker"].get("headers").is_none(), "{}", s["tracker"]);
    assert_eq!(s["tracker"]["dev"]["watch"], "src/**", "other members stay");
    assert_eq!(
        s["first"]["args"],
        serde_json::json!([
            "proxy",
            "--server",
            "first",
            "--upstream",
            "https://sse.example.com/sse",
            "--header",
            "X-Key: ${env:KEY}"
        ])
    );
    assert_eq!(s["first"]["type"], "stdio");
    assert_eq!(
        s["bare"]["args"],
        serde_json::json!(["proxy", "--server", "bare", "--upstream", "https://bare.example.com/mcp"])
    );
    assert!(s["bare"].get("type").is_none(), "no type is added where there was none");
    let (statuses, _) = ops::status(&file).unwrap();
    let tracker = statuses.iter().find(|s| s.name == "tracker").unwrap();
    assert_eq!(
        (tracker.state.as_str(), tracker.command.as_deref()),
        ("wrapped", Some("https://tracker.example.com/mcp"))
    );

    let again = ops::wrap(&file, &Selection::All, &options).unwrap();
    assert!(again.changed.is_empty(), "wrapping twice is a no-op");
    ops::unwrap(&file, &Selection::All, &options).unwrap();
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), original, "unwrap restores the exact bytes");

    // Without clawai's memory of the original, the URL and headers still come back.
    ops::wrap(&file, &Selection::All, &options).unwrap();
    std::fs::remove_file(fx.state.join("wraps.json")).unwrap();
    ops::unwrap(&file, &Selection::All, &options).unwrap();
    let s = servers(&file.path, "servers");
    assert_eq!(s["tracker"]["url"], "https://tracker.example.com/mcp");
    assert_eq!(s["tracker"]["type"], "http");
    assert_eq!(s["tracker"]["headers"]["X-Team"], "core");
    assert_eq!(s["tracker"]["headers"]["Authorization"], "Bearer ${input:tracker-token}");
    assert!(s["tracker"].get("command").is_none() && s["tracker"].get("args").is_none(), "{}", s["tracker"]);
    assert_eq!(s["bare"], serde_json::json!({"url": "https://bare.example.com/mcp"}));
}

#[test]
fn remote_entries_that_cannot_be_carried_over_are_listed_with_the_reason() {
    let fx = fixture();
    let file = fx.file(Client::Cursor, false);
    let original = r#"{"mcpServers": {"odd": {"url": "https://x.example.com/mcp", "headers": {"N": 1}}}}"#;
    write(&file.path, original);
    let report = ops::wrap(&file, &Selection::All, &fx.options()).unwrap();
    let (_, why) = report.skipped.iter().find(|(n, _)| n == "odd").unwrap();
    assert!(why.contains("header `N` is not a string") && why.contains("--upstream"), "{why}");
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), original, "nothing changed");

    let codex = fx.file(Client::Codex, false);
    let toml = "[mcp_servers.remote]\nurl = \"https://x.example.com/mcp\"\n";
    write(&codex.path, toml);
    let report = ops::wrap(&codex, &Selection::All, &fx.options()).unwrap();
    let (_, why) = report.skipped.iter().find(|(n, _)| n == "remote").unwrap();
    assert!(why.contains("JSON files only"), "{why}");
    assert_eq!(std::fs::read_to_string(&codex.path).unwrap(), toml);
}

#[test]
fn entries_wrapped_by_any_clawai_are_recognised_and_stale_ones_reported() {
    let fx = fixture();
    let file = fx.file(Client::Cursor, false);
    let text = r#"{"mcpServers": {"a": {"command": "/gone/bin/clawai", "args": ["proxy", "--server", "a", "--", "npx", "x"]}}}"#;
    write(&file.path, text);
    let report = ops::wrap(&file, &Selection::All, &fx.options()).unwrap();
    assert!(report.changed.is_empty(), "never double-wrapped");
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), text);
    let (statuses, _) = ops::status(&file).unwrap();
    assert_eq!(statuses[0].state, "stale");
    assert_eq!(statuses[0].command.as_deref(), Some("npx"));
    ops::unwrap(&file, &Selection::All, &fx.options()).unwrap();
    let restored: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&file.path).unwrap()).unwrap();
    assert_eq!(restored["mcpServers"]["a"]["command"], "npx");
    assert_eq!(restored["mcpServers"]["a"]["args"], serde_json::json!(["x"]));
}

#[test]
fn bad_files_are_reported_with_position_and_left_untouched() {
    let fx = fixture();
    let file = fx.file(Client::Cursor, false);
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}\n";
    write(&file.path, broken);
    let err = ops::wrap(&file, &Selection::All, &fx.options()).unwrap_err().to_string();
    assert!(err.contains("mcp.json:3:"), "{err}");
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), broken);
}

#[test]
fn dry_run_changes_nothing_and_shows_the_diff() {
    let fx = fixture();
    let file = fx.file(Client::ClaudeDesktop, false);
    write(&file.path, STANDARD);
    let mut options = fx.options();
    options.dry_run = true;
    let report = ops::wrap(&file, &Selection::All, &options).unwrap();
    let diff = report.diff.unwrap();
    assert!(
        diff.contains("-    \"memory\": {\"command\": \"npx\"")
            && diff.contains("+    \"memory\": {\"command\": \"/opt/clawai/bin/clawai\""),
        "{diff}"
    );
    assert_eq!(std::fs::read_to_string(&file.path).unwrap(), STANDARD);
    assert!(!fx.state.exists(), "not even a backup");
}

#[test]
fn a_backup_of_the_original_is_kept_before_the_first_change() {
    let fx = fixture();
    let file = fx.file(Client::ClaudeDesktop, false);
    write(&file.path, STANDARD);
    let report = ops::wrap(&file, &Selection::Names(vec!["memory".into()]), &fx.options()).unwrap();
    let backup = report.backup.unwrap();
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), STANDARD);
    let second = ops::wrap(&file, &Selection::All, &fx.options()).unwrap();
    assert!(second.backup.is_none(), "the first original is kept, not overwritten");
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), STANDARD);
}

/// A JSONC entry whose `args` span several lines with comments (and a trailing comma)
/// inside them, plus a comment between members, for every JSONC file kind: wrap keeps
/// each comment, unwrap gives back the exact bytes.
#[test]
fn jsonc_comments_inside_entries_survive_wrap_and_unwrap_is_byte_exact() {
    let args = r#"[
        // the package, pinned
        "-y",
        "@modelcontextprotocol/server-filesystem@1.2.3", /* version */
        // where it may read
        "/home/user/projects",
      ]"#;
    let vscode = format!(
        "{{\n  \"servers\": {{\n    \"fs\": {{\n      \"type\": \"stdio\",\n      \"command\": \"npx\", // launcher\n      \"args\": {args},\n      /* keep */ \"env\": {{}},\n    }},\n    \"empty\": {{ \"command\": \"x\", \"args\": [ /* none yet */ ] }},\n  }},\n}}\n"
    );
    let zed_flat = format!(
        "// Zed\n{{\n  \"context_servers\": {{\n    \"fs\": {{\n      \"command\": \"npx\",\n      \"args\": {args},\n    }},\n  }},\n}}\n"
    );
    let zed_nested = format!(
        "{{\n  \"context_servers\": {{\n    \"fs\": {{ \"command\": {{ \"path\": \"npx\", // old layout\n      \"args\": {args} }}, \"settings\": {{}} }},\n  }},\n}}\n"
    );
    let comments = ["// the package, pinned", "/* version */", "// where it may read", "// launcher", "/* keep */"];
    for (client, project, text) in [
        (Client::VsCode, true, &vscode),
        (Client::VsCode, false, &vscode),
        (Client::Zed, false, &zed_flat),
        (Client::Zed, true, &zed_flat),
        (Client::Zed, false, &zed_nested),
    ] {
        let wrapped = round_trip(client, project, text);
        for comment in comments.iter().filter(|c| text.contains(*c)) {
            assert!(wrapped.contains(comment), "{client:?}: {comment} kept by wrap:\n{wrapped}");
        }
        let value: serde_json::Value = jsonc_parser::parse_to_serde_value(&wrapped, &Default::default()).unwrap();
        let key = if client == Client::VsCode { "servers" } else { "context_servers" };
        let fs = &value[key]["fs"];
        let args = if fs["command"].is_object() { &fs["command"]["args"] } else { &fs["args"] };
        assert_eq!(
            args,
            &serde_json::json!([
                "proxy",
                "--server",
                "fs",
                "--",
                "npx",
                "-y",
                "@modelcontextprotocol/server-filesystem@1.2.3",
                "/home/user/projects"
            ]),
            "{client:?}:\n{wrapped}"
        );
    }
}

/// The same through Codex's TOML: comments inside a multi-line `args` stay.
#[test]
fn toml_comments_inside_args_survive_wrap() {
    let codex =
        "[mcp_servers.fs]\ncommand = \"npx\"\nargs = [\n  # the package\n  \"-y\",\n  \"server\", # pinned\n]\n";
    let wrapped = round_trip(Client::Codex, false, codex);
    assert!(wrapped.contains("# the package") && wrapped.contains("# pinned"), "{wrapped}");
}

/// Comments written between the members of a remote entry stay through wrap, wherever
/// its `headers` (which become `--header` arguments) were.
#[test]
fn comments_around_a_remote_entrys_headers_survive_wrap() {
    let vscode = r#"{
  "servers": {
    "middle": {
      "type": "http",
      "url": "https://a.example.com/mcp", // the team's tracker
      "headers": { "X-Team": "core" },
      "dev": {}
    },
    "last": {
      "url": "https://b.example.com/mcp", /* read-only token */
      "headers": { "X-Key": "k" },
    },
  },
}
"#;
    let wrapped = round_trip(Client::VsCode, true, vscode);
    assert!(wrapped.contains("// the team's tracker") && wrapped.contains("/* read-only token */"), "{wrapped}");
    let value: serde_json::Value = jsonc_parser::parse_to_serde_value(&wrapped, &Default::default()).unwrap();
    assert_eq!(value["servers"]["last"]["args"][6], "X-Key: k", "{wrapped}");
    assert!(value["servers"]["middle"].get("headers").is_none() && value["servers"]["middle"]["dev"].is_object());
}
