//! The configuration reader against the files people write: the gateway's own, and MCP
//! clients' files used as they are.

mod entries;
mod robustness;
mod sandbox;
mod values;

use std::collections::BTreeMap;
use std::path::Path;

use super::*;

pub(super) fn no_env(_: &str) -> Option<String> {
    None
}

pub(super) fn strict(text: &str) -> Result<GatewayConfig, ConfigError> {
    parse(text, Path::new("gw.json"), &no_env, false)
}

pub(super) fn lenient(text: &str) -> Result<GatewayConfig, ConfigError> {
    parse(text, Path::new("client.json"), &no_env, true)
}

/// The error for a text, with the line and column it names.
pub(super) fn refused(text: &str) -> (ConfigError, u32, u32) {
    let error = strict(text).expect_err("the configuration should be refused");
    let at = error.location().expect("an error inside the file has a location").clone();
    assert_eq!(at.path, Path::new("gw.json"));
    assert!(error.to_string().starts_with(&format!("gw.json:{}:{}: ", at.line, at.column)), "{error}");
    (error, at.line, at.column)
}

pub(super) fn stdio(command: &str, args: &[&str]) -> McpServerConfig {
    McpServerConfig::Stdio {
        command: command.to_owned(),
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        env: BTreeMap::new(),
    }
}

impl Transport {
    /// The configuration of a server reached as an MCP client reaches it.
    pub(super) fn into_mcp(self) -> McpServerConfig {
        match self {
            Transport::Mcp(config) => config,
            other => panic!("not an MCP client's transport: {other:?}"),
        }
    }
}

pub(super) fn server(config: &GatewayConfig, name: &str) -> ServerEntry {
    config.servers.get(name).unwrap_or_else(|| panic!("server `{name}` in {config:?}")).clone()
}

#[test]
fn servers_are_read_under_tools_mcp_servers() {
    let config = strict(r#"{"tools": {"mcpServers": {"fs": {"command": "npx", "args": ["-y", "fs"]}}}}"#).unwrap();
    assert_eq!(
        server(&config, "fs"),
        ServerEntry {
            transport: Transport::Mcp(stdio("npx", &["-y", "fs"])),
            cwd: None,
            internal_only: true,
            disabled: false,
            session: SessionMode::Shared,
            sandbox: Default::default(),
        }
    );
    assert_eq!(config.allowed_tools, None);
    assert!(config.warnings.is_empty(), "{:?}", config.warnings);
}

#[test]
fn servers_are_read_under_tools_mcp_servers_in_snake_case() {
    let config = strict(r#"{"tools": {"mcp_servers": {"fs": {"command": "npx"}}}}"#).unwrap();
    assert_eq!(server(&config, "fs").transport.into_mcp(), stdio("npx", &[]));
}

#[test]
fn servers_are_read_under_a_top_level_mcp_servers() {
    let config =
        strict(r#"{"mcpServers": {"fs": {"command": "npx"}, "web": {"url": "https://x.example/mcp"}}}"#).unwrap();
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["fs", "web"]);
    let config = strict(r#"{"mcp_servers": {"fs": {"command": "npx"}}}"#).unwrap();
    assert_eq!(server(&config, "fs").transport.into_mcp(), stdio("npx", &[]));
}

#[test]
fn servers_in_two_places_are_refused_naming_both() {
    let text = "{\n  \"tools\": {\"mcpServers\": {\"a\": {\"command\": \"x\"}}},\n  \"mcpServers\": {}\n}";
    let (error, line, column) = refused(text);
    assert!(
        matches!(&error, ConfigError::LayoutConflict { first, second, .. }
        if first == "tools.mcpServers" && second == "mcpServers"),
        "{error:?}"
    );
    assert_eq!((line, column), (3, 3));
    // The order in the error is the order in the file.
    let text = r#"{"mcp_servers": {}, "tools": {"mcp_servers": {}}}"#;
    let error = strict(text).unwrap_err().to_string();
    assert!(error.contains("both `mcp_servers` and `tools.mcp_servers`"), "{error}");
    // The same place in both spellings is one setting given twice.
    let (error, _, _) = refused(r#"{"tools": {"mcpServers": {}, "mcp_servers": {}}}"#);
    assert!(error.to_string().contains("`mcp_servers`") && error.to_string().contains("`mcpServers`"), "{error}");
    assert!(matches!(error, ConfigError::DuplicateKey { .. }), "{error:?}");
}

#[test]
fn a_file_without_servers_loads_with_a_warning() {
    let config = strict(r#"{"agent": {"allowedTools": ["a__*"]}}"#).unwrap();
    assert!(config.servers.is_empty());
    assert_eq!(config.warnings.len(), 1);
    assert!(config.warnings[0].starts_with("gw.json:1:1: no MCP servers are configured"), "{:?}", config.warnings);
}

/// A Claude Desktop `claude_desktop_config.json` as the app writes it, settings of its own included.
const CLAUDE_DESKTOP: &str = r#"{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "filesystem": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"]
    },
    "github": {
      "command": "docker",
      "args": ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": { "GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_example" }
    }
  },
  "preferences": { "quickEntryShortcut": "off" }
}"#;

#[test]
fn a_claude_desktop_file_loads_as_it_is() {
    let config = lenient(CLAUDE_DESKTOP).unwrap();
    assert_eq!(config.servers.len(), 2);
    let github = server(&config, "github");
    assert!(!github.internal_only, "a client's file lists its servers' tools, as the client did");
    // The same servers in clawai's own file keep the default: internal.
    assert!(server(&strict(r#"{"mcpServers": {"github": {"command": "docker"}}}"#).unwrap(), "github").internal_only);
    let McpServerConfig::Stdio { command, args, env } = github.transport.clone().into_mcp() else {
        panic!("{github:?}")
    };
    assert_eq!(command, "docker");
    assert_eq!(args.len(), 6);
    assert_eq!(env.get("GITHUB_PERSONAL_ACCESS_TOKEN").map(String::as_str), Some("ghp_example"));
}

/// A Cursor `mcp.json` with keys the gateway does not use, at every level.
const CURSOR: &str = r#"{
  "mcpServers": {
    "linear": {
      "url": "https://mcp.linear.app/sse",
      "headers": { "Authorization": "Bearer lin_example" },
      "autoApprove": ["list_issues"]
    },
    "local": {
      "command": "node",
      "args": ["server.js"],
      "timeout": 60,
      "alwaysAllow": []
    }
  }
}"#;

#[test]
fn a_cursor_file_with_keys_of_its_own_loads_when_lenient() {
    let config = lenient(CURSOR).unwrap();
    let linear = server(&config, "linear");
    let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer lin_example".to_owned())]);
    assert_eq!(
        linear.transport.into_mcp(),
        McpServerConfig::Http { url: "https://mcp.linear.app/sse".to_owned(), headers }
    );
    assert_eq!(server(&config, "local").transport.into_mcp(), stdio("node", &["server.js"]));
}

#[test]
fn the_same_unknown_keys_are_refused_in_the_gateways_own_file() {
    let (error, line, column) = refused(CURSOR);
    let ConfigError::UnknownKey { key, section, known, .. } = &error else { panic!("{error:?}") };
    assert_eq!((key.as_str(), section.as_str()), ("autoApprove", "server `linear`"));
    assert!(known.contains("`internalOnly` or `internal_only`"), "{known}");
    assert_eq!((line, column), (6, 7));
    assert!(error.to_string().contains("rename or remove it"), "{error}");

    let (error, line, _) = refused(CLAUDE_DESKTOP);
    assert!(
        matches!(&error, ConfigError::UnknownKey { key, section, .. }
        if key == "globalShortcut" && section == "the top level"),
        "{error:?}"
    );
    assert_eq!(line, 2);
}

#[test]
fn unknown_keys_are_refused_under_tools_and_agent_too() {
    let (error, line, _) = refused("{\"tools\": {\n\"mcpServers\": {},\n\"exclude\": []}}");
    assert!(matches!(&error, ConfigError::UnknownKey { key, section, .. } if key == "exclude" && section == "`tools`"));
    assert_eq!(line, 3);
    let (error, _, _) = refused(r#"{"agent": {"allowedTool": ["x"]}}"#);
    assert!(
        matches!(&error, ConfigError::UnknownKey { key, section, .. } if key == "allowedTool" && section == "`agent`")
    );
    // Leniency ignores them.
    let config =
        lenient("{\"tools\": {\"exclude\": []}, \"agent\": {\"model\": \"x\", \"allowed_tools\": [\"a__b\"]}}")
            .unwrap();
    assert_eq!(config.allowed_tools, Some(vec!["a__b".to_owned()]));
}

#[test]
fn a_misspelt_key_is_pointed_at_the_right_one() {
    let (error, _, _) = refused(r#"{"mcpServers": {"a": {"command": "x", "InternalOnly": false}}}"#);
    assert!(error.to_string().contains("unknown key `InternalOnly`"), "{error}");
    assert!(error.to_string().contains("rename it to `internalOnly`"), "{error}");
    let (error, _, _) = refused(r#"{"mcpServers": {"a": {"serverUrl": "https://x.example"}}}"#);
    assert!(error.to_string().contains("rename it to `url`"), "{error}");
    let (error, _, _) = refused(r#"{"servers": {}}"#);
    assert!(error.to_string().contains("rename it to `mcpServers`"), "{error}");
}

/// Claude Code's `.mcp.json`: `type` on every entry, `${VAR}` in headers.
#[test]
fn a_claude_code_project_file_loads_as_it_is() {
    let text = r#"{
  "mcpServers": {
    "sentry": { "type": "http", "url": "https://mcp.sentry.dev/mcp", "headers": {"Authorization": "Bearer ${SENTRY}"} },
    "legacy": { "type": "sse", "url": "https://legacy.example/sse" },
    "db": { "type": "stdio", "command": "npx", "args": ["-y", "db-mcp"], "env": {} }
  }
}"#;
    let env = |name: &str| (name == "SENTRY").then(|| "tok".to_owned());
    for leniency in [false, true] {
        let config = parse(text, Path::new(".mcp.json"), &env, leniency).unwrap();
        let headers = BTreeMap::from([("Authorization".to_owned(), "Bearer tok".to_owned())]);
        assert_eq!(
            server(&config, "sentry").transport.into_mcp(),
            McpServerConfig::Http { url: "https://mcp.sentry.dev/mcp".to_owned(), headers }
        );
        assert_eq!(
            server(&config, "legacy").transport.into_mcp(),
            McpServerConfig::Sse { url: "https://legacy.example/sse".to_owned(), headers: BTreeMap::new() }
        );
        assert_eq!(server(&config, "db").transport.into_mcp(), stdio("npx", &["-y", "db-mcp"]));
    }
}

/// Windsurf writes a remote server's address as `serverUrl`, Gemini CLI as `httpUrl`.
#[test]
fn other_clients_url_keys_are_read_in_their_files() {
    let text = r#"{"mcpServers": {"w": {"serverUrl": "https://w.example/mcp"}, "g": {"httpUrl": "https://g.example/mcp", "trust": true}}}"#;
    let config = lenient(text).unwrap();
    for (name, url) in [("w", "https://w.example/mcp"), ("g", "https://g.example/mcp")] {
        assert_eq!(
            server(&config, name).transport.into_mcp(),
            McpServerConfig::Http { url: url.to_owned(), headers: BTreeMap::new() }
        );
    }
    let error = lenient(r#"{"mcpServers": {"w": {"url": "https://a.example", "serverUrl": "https://b.example"}}}"#)
        .unwrap_err();
    assert!(error.to_string().contains("has both `url` and `serverUrl`; keep one"), "{error}");
}

#[test]
fn a_file_that_cannot_be_read_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.json");
    let error = load(&path, &no_env, false).unwrap_err();
    assert!(matches!(error, ConfigError::Read { .. }), "{error:?}");
    assert!(error.location().is_none());
    let text = error.to_string();
    assert!(text.starts_with(&format!("{}: cannot read", path.display())), "{text}");
    assert!(text.contains("--config"), "{text}");
}

#[test]
fn a_file_on_disk_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gateway.json");
    std::fs::write(&path, r#"{"mcpServers": {"fs": {"command": "npx", "internalOnly": false}}}"#).unwrap();
    let config = load(&path, &no_env, false).unwrap();
    assert!(!server(&config, "fs").internal_only);
}

#[test]
fn syntax_errors_say_where() {
    let (error, line, column) = refused("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"},\n  }\n}");
    assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
    assert_eq!((line, column), (4, 3));
    assert!(error.to_string().contains("not valid JSON"), "{error}");
    // Comments are JSONC, not JSON.
    let (error, line, _) = refused("{\n// servers\n\"mcpServers\": {}}");
    assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
    assert_eq!(line, 2);
    let (error, line, column) = refused("");
    assert!(matches!(error, ConfigError::Syntax { .. }), "{error:?}");
    assert_eq!((line, column), (1, 1));
}

#[test]
fn the_content_must_be_an_object() {
    let (error, _, _) = refused(r#"[{"mcpServers": {}}]"#);
    assert!(error.to_string().contains("the file's content must be an object, not an array"), "{error}");
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let config = strict("\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}").unwrap();
    assert_eq!(config.servers.len(), 1);
}

#[test]
fn columns_count_characters_not_bytes() {
    let (_, line, column) = refused("{\"mcpServers\": {\"é\": {}}}");
    assert_eq!((line, column), (1, 17));
    let (_, line, column) = refused("{\"mcpServers\": {\"a\": {\"env\": {\"É\": \"é\"}, \"x\": 1}}}");
    assert_eq!((line, column), (1, 42));
}

#[test]
fn a_server_listed_twice_is_refused() {
    let (error, line, _) = refused("{\"mcpServers\": {\n\"a\": {\"command\": \"x\"},\n\"a\": {\"command\": \"y\"}}}");
    assert!(error.to_string().contains("server `a` is listed twice"), "{error}");
    assert_eq!(line, 3);
}

#[test]
fn agent_allowed_tools_is_read_in_both_spellings() {
    let camel = strict(r#"{"mcpServers": {}, "agent": {"allowedTools": ["gh__*", "fs__read_?"]}}"#).unwrap();
    assert_eq!(camel.allowed_tools, Some(vec!["gh__*".to_owned(), "fs__read_?".to_owned()]));
    let snake = strict(r#"{"mcpServers": {}, "agent": {"allowed_tools": ["gh__*", "fs__read_?"]}}"#).unwrap();
    assert_eq!(snake, camel);
    assert_eq!(strict(r#"{"mcpServers": {}, "agent": {}}"#).unwrap().allowed_tools, None);
    let (error, _, _) = refused(r#"{"agent": {"allowedTools": [], "allowed_tools": []}}"#);
    assert!(matches!(error, ConfigError::DuplicateKey { .. }), "{error:?}");
}

#[test]
fn agent_allowed_tools_must_be_non_empty_strings() {
    let (error, line, column) = refused("{\"agent\": {\"allowedTools\": [\"a__*\",\n  \"\"]}}");
    assert!(error.to_string().contains("has an empty pattern"), "{error}");
    assert_eq!((line, column), (2, 3));
    let (error, _, column) = refused(r#"{"agent": {"allowedTools": ["a__*", 7]}}"#);
    assert!(error.to_string().contains("item 2 of `agent.allowedTools` must be a string, not a number"), "{error}");
    assert_eq!(column, 37);
    let (error, _, _) = refused(r#"{"agent": {"allowedTools": "a__*"}}"#);
    assert!(matches!(&error, ConfigError::WrongType { expected: "an array of strings", .. }), "{error:?}");
    let (error, _, _) = refused(r#"{"agent": ["a__*"]}"#);
    assert!(matches!(&error, ConfigError::WrongType { expected: "an object", .. }), "{error:?}");
}

#[test]
fn an_empty_allow_list_limits_to_nothing_and_says_so() {
    let config = strict(r#"{"mcpServers": {}, "agent": {"allowedTools": []}}"#).unwrap();
    assert_eq!(config.allowed_tools, Some(vec![]));
    assert!(config.warnings.iter().any(|w| w.contains("is empty, so no server's tools will be visible")));
}
