//! Server entries: names, the transport table, and what each transport may carry.

use super::*;

fn one(entry: &str) -> Result<GatewayConfig, ConfigError> {
    strict(&format!(r#"{{"mcpServers": {{"s": {entry}}}}}"#))
}

fn transport(entry: &str) -> McpServerConfig {
    server(&one(entry).unwrap(), "s").transport.into_mcp()
}

fn refused_entry(entry: &str) -> String {
    one(entry).expect_err("the entry should be refused").to_string()
}

fn http(url: &str) -> McpServerConfig {
    McpServerConfig::Http { url: url.to_owned(), headers: BTreeMap::new() }
}

#[test]
fn names_that_cannot_prefix_tool_names_are_refused() {
    for (name, why) in [
        ("a__b", "contains `__`"),
        ("a b", "has a character other than ASCII letters"),
        ("é", "has a character other than ASCII letters"),
        ("a.b", "has a character other than ASCII letters"),
        ("", "is empty"),
        ("a_", "ends with `_`"),
    ] {
        let text = format!("{{\"mcpServers\": {{\n  \"{name}\": {{\"command\": \"x\"}}}}}}");
        let (error, line, column) = refused(&text);
        let ConfigError::ServerName { name: named, .. } = &error else { panic!("{name}: {error:?}") };
        assert_eq!(named, name);
        assert_eq!((line, column), (2, 3), "{name}");
        let message = error.to_string();
        assert!(message.contains(why), "{name}: {message}");
        assert!(message.contains("rename the server (a name may contain only ASCII letters, digits"), "{message}");
    }
}

#[test]
fn names_of_letters_digits_underscores_and_dashes_are_accepted() {
    let text = r#"{"mcpServers": {"gh": {"command": "x"}, "my-server_2": {"command": "x"}, "_x": {"command": "x"}, "A-": {"command": "x"}}}"#;
    assert_eq!(strict(text).unwrap().servers.keys().collect::<Vec<_>>(), ["A-", "_x", "gh", "my-server_2"]);
}

#[test]
fn a_bad_name_is_refused_even_on_a_disabled_server() {
    let (error, _, _) = refused(r#"{"mcpServers": {"a__b": {"command": "x", "disabled": true}}}"#);
    assert!(matches!(error, ConfigError::ServerName { .. }), "{error:?}");
}

#[test]
fn without_type_a_command_means_stdio() {
    assert_eq!(transport(r#"{"command": "npx", "args": ["-y", "x"]}"#), stdio("npx", &["-y", "x"]));
    assert_eq!(transport(r#"{"command": "npx", "url": ""}"#), stdio("npx", &[]));
}

#[test]
fn without_type_a_url_means_streamable_http() {
    assert_eq!(transport(r#"{"url": "https://x.example/mcp"}"#), http("https://x.example/mcp"));
    assert_eq!(transport(r#"{"command": "", "url": "http://127.0.0.1:8080/mcp"}"#), http("http://127.0.0.1:8080/mcp"));
}

#[test]
fn without_command_or_url_the_server_is_skipped_with_a_warning() {
    for entry in [r#"{}"#, r#"{"command": "", "url": ""}"#, r#"{"args": ["x"], "internalOnly": false}"#] {
        let text = format!("{{\"mcpServers\": {{\n  \"empty\": {entry},\n  \"ok\": {{\"command\": \"x\"}}}}}}");
        let config = strict(&text).unwrap();
        assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["ok"], "{entry}");
        assert_eq!(config.warnings.len(), 1, "{entry}");
        assert!(
            config.warnings[0].starts_with("gw.json:2:3: server `empty` has neither a `command` nor a `url`"),
            "{:?}",
            config.warnings
        );
    }
}

#[test]
fn without_type_both_command_and_url_is_refused() {
    let message = refused_entry(r#"{"command": "npx", "url": "https://x.example"}"#);
    assert!(message.contains("server `s` has both `command` and `url`; remove the one it should not use"), "{message}");
}

#[test]
fn type_chooses_the_transport() {
    assert_eq!(transport(r#"{"type": "stdio", "command": "x"}"#), stdio("x", &[]));
    assert_eq!(
        transport(r#"{"type": "sse", "url": "https://x.example/sse"}"#),
        McpServerConfig::Sse { url: "https://x.example/sse".to_owned(), headers: BTreeMap::new() }
    );
    for kind in ["http", "streamable-http", "streamableHttp", "streamable_http"] {
        let entry = format!(r#"{{"type": "{kind}", "url": "https://x.example/mcp"}}"#);
        assert_eq!(transport(&entry), http("https://x.example/mcp"), "{kind}");
    }
}

#[test]
fn the_builtin_tools_are_the_server_named_builtin_and_listed_by_default() {
    let config = strict(r#"{"mcpServers": {"builtin": {"type": "builtin"}}}"#).unwrap();
    assert_eq!(server(&config, "builtin"), ServerEntry::builtin(false));
    let config = strict(r#"{"mcpServers": {"builtin": {"type": "builtin", "internalOnly": true}}}"#).unwrap();
    assert_eq!(server(&config, "builtin"), ServerEntry::builtin(true));
    let message = refused_entry(r#"{"type": "builtin"}"#);
    assert!(message.contains("rename `s` to `builtin`"), "{message}");
    let message =
        strict(r#"{"mcpServers": {"builtin": {"type": "builtin", "command": "x"}}}"#).unwrap_err().to_string();
    assert!(message.contains("`command` has no use for server `builtin`"), "{message}");
    let message = strict(r#"{"mcpServers": {"builtin": {"command": "x"}}}"#).unwrap_err().to_string();
    assert!(message.contains("reserved"), "another server cannot take the name: {message}");
}

#[test]
fn an_unknown_type_is_refused_with_the_known_ones() {
    let message = refused_entry(r#"{"type": "websocket", "url": "wss://x.example"}"#);
    assert!(message.contains("`type` of server `s` is `websocket`; use `stdio`, `sse` or `http`"), "{message}");
    let (error, _, _) = refused(r#"{"mcpServers": {"s": {"type": 1}}}"#);
    assert!(matches!(error, ConfigError::WrongType { .. }), "{error:?}");
}

#[test]
fn a_remote_type_with_a_command_says_to_remove_it() {
    let text =
        "{\"mcpServers\": {\"s\": {\"type\": \"http\", \"url\": \"https://x.example\",\n  \"command\": \"npx\"}}}";
    let (error, line, column) = refused(text);
    assert!(error.to_string().contains("`command` has no use for server `s`"), "{error}");
    assert!(error.to_string().ends_with("remove `command`"), "{error}");
    assert_eq!((line, column), (2, 3));
    for key in [r#""args": ["x"]"#, r#""env": {"A": "1"}"#, r#""cwd": "/tmp""#] {
        let message = refused_entry(&format!(r#"{{"type": "sse", "url": "https://x.example", {key}}}"#));
        let name = key.split('"').nth(1).unwrap();
        assert!(message.ends_with(&format!("remove `{name}`")), "{message}");
    }
}

#[test]
fn stdio_with_a_url_says_to_remove_it() {
    let message = refused_entry(r#"{"type": "stdio", "command": "npx", "url": "https://x.example"}"#);
    assert!(message.contains("`url` has no use for server `s`, which runs a command over stdio; remove `url`"));
    let message = refused_entry(r#"{"command": "npx", "headers": {"A": "b"}}"#);
    assert!(message.ends_with("remove `headers`"), "{message}");
}

#[test]
fn a_type_without_what_it_needs_is_refused() {
    let message = refused_entry(r#"{"type": "stdio", "args": ["x"]}"#);
    assert!(message.contains("is a stdio server but has no `command`"), "{message}");
    let message = refused_entry(r#"{"type": "http", "url": ""}"#);
    assert!(message.contains("has no `url`; add its address"), "{message}");
}

#[test]
fn internal_only_defaults_to_true_and_reads_both_spellings() {
    let default = server(&one(r#"{"command": "x"}"#).unwrap(), "s");
    assert!(default.internal_only && !default.disabled);
    let camel = server(&one(r#"{"command": "x", "internalOnly": false}"#).unwrap(), "s");
    let snake = server(&one(r#"{"command": "x", "internal_only": false}"#).unwrap(), "s");
    assert!(!camel.internal_only);
    assert_eq!(camel, snake, "the spelling does not make a server differ on reload");
    let (error, line, column) =
        refused("{\"mcpServers\": {\"s\": {\"command\": \"x\", \"internalOnly\": false,\n\"internal_only\": true}}}");
    let ConfigError::DuplicateKey { key, earlier, .. } = &error else { panic!("{error:?}") };
    assert_eq!((key.as_str(), earlier.as_str()), ("internal_only", "internalOnly"));
    assert_eq!((line, column), (2, 1));
}

#[test]
fn a_key_given_twice_is_refused_even_when_lenient() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "internalOnly": true, "internalOnly": false}}}"#;
    let error = lenient(text).unwrap_err();
    assert!(matches!(error, ConfigError::DuplicateKey { .. }), "{error:?}");
}

#[test]
fn a_disabled_server_stays_in_the_list() {
    let config =
        strict(r#"{"mcpServers": {"off": {"command": "x", "disabled": true}, "on": {"command": "y"}}}"#).unwrap();
    assert!(server(&config, "off").disabled);
    assert!(!server(&config, "on").disabled);
}

/// `clawai wrap` leaves client entries running `clawai proxy … -- REAL` or `clawai proxy
/// --upstream URL`; the gateway loads them as any other stdio server.
#[test]
fn entries_wrapped_by_clawai_load_as_they_are() {
    let text = r#"{"mcpServers": {
  "fs": {"command": "/usr/local/bin/clawai", "args": ["proxy", "--server", "fs", "--", "npx", "-y", "fs"]},
  "web": {"type": "stdio", "command": "/usr/local/bin/clawai", "args": ["proxy", "--upstream", "https://x.example/mcp"]}
}}"#;
    let config = lenient(text).unwrap();
    assert_eq!(
        server(&config, "fs").transport.into_mcp(),
        stdio("/usr/local/bin/clawai", &["proxy", "--server", "fs", "--", "npx", "-y", "fs"])
    );
    assert_eq!(
        server(&config, "web").transport.into_mcp(),
        stdio("/usr/local/bin/clawai", &["proxy", "--upstream", "https://x.example/mcp"])
    );
}
