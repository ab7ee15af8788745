//! The values inside an entry: their types, `${VAR}`, URLs, headers and `cwd`.

use super::*;

fn env(name: &str) -> Option<String> {
    match name {
        "TOKEN" => Some("s3cret".to_owned()),
        "HOME" => Some("/home/me".to_owned()),
        "MULTILINE" => Some("a\r\nX-Injected: 1".to_owned()),
        _ => None,
    }
}

fn with_env(text: &str) -> Result<GatewayConfig, ConfigError> {
    parse(text, Path::new("gw.json"), &env, false)
}

#[test]
fn variables_expand_in_env_and_headers_values_only() {
    let text = r#"{"mcpServers": {
  "local": {"command": "run-${TOKEN}", "args": ["${TOKEN}"], "env": {"API_KEY": "${TOKEN}", "DIR": "${HOME}/x", "PRICE": "$5 $HOME"}},
  "remote": {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
}}"#;
    let config = with_env(text).unwrap();
    let McpServerConfig::Stdio { command, args, env } = server(&config, "local").transport.into_mcp() else { panic!() };
    assert_eq!((command.as_str(), args), ("run-${TOKEN}", vec!["${TOKEN}".to_owned()]));
    assert_eq!(env["API_KEY"], "s3cret");
    assert_eq!(env["DIR"], "/home/me/x");
    assert_eq!(env["PRICE"], "$5 $HOME", "a `$` without `{{` stays literal");
    let McpServerConfig::Http { headers, .. } = server(&config, "remote").transport.into_mcp() else { panic!() };
    assert_eq!(headers["Authorization"], "Bearer s3cret");
}

#[test]
fn an_unset_variable_is_named_with_its_server_and_key() {
    let text = "{\"mcpServers\": {\"gh\": {\"command\": \"x\",\n  \"env\": {\"GITHUB_TOKEN\": \"${GH_TOKEN}\"}}}}";
    let error = with_env(text).unwrap_err();
    let ConfigError::UnsetVariable { at, server, key, variable } = &error else { panic!("{error:?}") };
    assert_eq!((server.as_str(), key.as_str(), variable.as_str()), ("gh", "env.GITHUB_TOKEN", "GH_TOKEN"));
    assert_eq!((at.line, at.column), (2, 27));
    let message = error.to_string();
    assert!(message.starts_with("gw.json:2:27: `${GH_TOKEN}` in `env.GITHUB_TOKEN` of server `gh` is not set"));
    assert!(message.contains("set GH_TOKEN"), "{message}");

    let text = r#"{"mcpServers": {"r": {"url": "https://x.example", "headers": {"Authorization": "Bearer ${NOPE}"}}}}"#;
    let error = with_env(text).unwrap_err();
    assert!(
        matches!(&error, ConfigError::UnsetVariable { key, variable, .. }
        if key == "headers.Authorization" && variable == "NOPE"),
        "{error:?}"
    );
}

#[test]
fn an_unterminated_variable_is_refused() {
    let error = with_env(r#"{"mcpServers": {"s": {"command": "x", "env": {"A": "${TOKEN"}}}}"#).unwrap_err();
    assert!(error.to_string().contains("has a `${` with no `}` after it"), "{error}");
    let error = with_env(r#"{"mcpServers": {"s": {"command": "x", "env": {"A": "${TO KEN}"}}}}"#).unwrap_err();
    assert!(error.to_string().contains("`${TO KEN}` in `env.A` of server `s` is not a variable name"), "{error}");
}

#[test]
fn a_disabled_server_keeps_its_variables_unexpanded() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "disabled": true, "env": {"A": "${UNSET}"}}}}"#;
    let McpServerConfig::Stdio { env, .. } = server(&with_env(text).unwrap(), "s").transport.into_mcp() else {
        panic!()
    };
    assert_eq!(env["A"], "${UNSET}");
}

#[test]
fn a_variable_cannot_smuggle_a_second_header_line() {
    let text = r#"{"mcpServers": {"r": {"url": "https://x.example", "headers": {"X-Key": "${MULTILINE}"}}}}"#;
    let error = with_env(text).unwrap_err();
    assert!(error.to_string().contains("contains a line break or NUL character"), "{error}");
}

#[test]
fn header_names_must_be_tokens_and_unique() {
    let (error, _, _) = refused(r#"{"mcpServers": {"r": {"url": "https://x.example", "headers": {"Bad Name": "v"}}}}"#);
    assert!(error.to_string().contains("`Bad Name` in `headers` of server `r` is not a header name"), "{error}");
    let (error, _, _) =
        refused(r#"{"mcpServers": {"r": {"url": "https://x.example", "headers": {"Auth": "a", "auth": "b"}}}}"#);
    assert!(error.to_string().contains("header `auth` of server `r` is given twice"), "{error}");
}

#[test]
fn env_names_must_be_usable() {
    let (error, _, _) = refused(r#"{"mcpServers": {"s": {"command": "x", "env": {"A=B": "v"}}}}"#);
    assert!(error.to_string().contains("cannot be an environment variable's name"), "{error}");
    let (error, _, _) = refused(r#"{"mcpServers": {"s": {"command": "x", "env": {"A": "1", "A": "2"}}}}"#);
    assert!(matches!(error, ConfigError::DuplicateKey { .. }), "{error:?}");
}

#[test]
fn urls_must_be_http_or_https() {
    for (url, problem) in [
        ("ftp://x.example/mcp", "uses `ftp:`"),
        ("file:///tmp/sock", "uses `file:`"),
        ("x.example/mcp", "is not a URL"),
        ("${MCP_URL}", "is not a URL"),
        ("http://", "is not a URL"),
    ] {
        let text = format!(r#"{{"mcpServers": {{"r": {{"url": "{url}"}}}}}}"#);
        let (error, _, column) = refused(&text);
        let message = error.to_string();
        assert!(message.contains(&format!("`url` of server `r` {problem}")), "{url}: {message}");
        assert!(message.ends_with("write it as https://HOST/PATH or http://HOST:PORT/PATH"), "{message}");
        assert_eq!(column, 23, "{url}");
    }
}

#[test]
fn cwd_is_kept_as_written_and_must_not_be_empty() {
    let text = r#"{"mcpServers": {"s": {"command": "x", "cwd": "work/dir"}}}"#;
    assert_eq!(server(&strict(text).unwrap(), "s").cwd, Some(std::path::PathBuf::from("work/dir")));
    let (error, _, _) = refused(r#"{"mcpServers": {"s": {"command": "x", "cwd": ""}}}"#);
    assert!(error.to_string().contains("`cwd` of server `s` is empty"), "{error}");
}

#[test]
fn wrong_types_say_where_and_what_was_expected() {
    let cases: &[(&str, &str)] = &[
        (r#""args": "-y x""#, "`args` of server `s` must be an array of strings, not a string"),
        (r#""args": ["-y", 3]"#, "item 2 of `args` of server `s` must be a string, not a number"),
        (r#""internalOnly": "yes""#, "`internalOnly` of server `s` must be true or false, not a string"),
        (r#""internal_only": 0"#, "`internal_only` of server `s` must be true or false, not a number"),
        (r#""disabled": null"#, "`disabled` of server `s` must be true or false, not null"),
        (r#""env": {"PORT": 3000}"#, "`PORT` in `env` of server `s` must be a string, not a number"),
        (r#""env": ["A=1"]"#, "`env` of server `s` must be an object of strings, not an array"),
        (r#""cwd": ["/tmp"]"#, "`cwd` of server `s` must be a string, not an array"),
        (r#""command": ["npx"]"#, "`command` of server `s` must be a string, not an array"),
    ];
    for (member, message) in cases {
        let text = format!("{{\"mcpServers\": {{\n  \"s\": {{\"command\": \"x\",\n    {member}}}}}}}");
        let text = text.replacen("\"command\": \"x\",\n    \"command\"", "\n    \"command\"", 1);
        let (error, line, _) = refused(&text);
        assert!(matches!(error, ConfigError::WrongType { .. }), "{member}: {error:?}");
        assert!(error.to_string().contains(message), "{member}: {error}");
        assert_eq!(line, 3, "{member}");
    }
    let (error, line, column) = refused("{\"mcpServers\": {\n  \"s\": \"npx server\"}}");
    assert!(error.to_string().contains("server `s` must be an object, not a string"), "{error}");
    assert_eq!((line, column), (2, 8));
    let (error, _, _) = refused(r#"{"mcpServers": [{"command": "x"}]}"#);
    assert!(error.to_string().contains("`mcpServers` must be an object, not an array"), "{error}");
    let (error, _, _) = refused(r#"{"tools": true}"#);
    assert!(error.to_string().contains("`tools` must be an object, not a boolean"), "{error}");
    let (error, _, _) = refused(r#"{"mcpServers": {"r": {"url": "https://x.example", "headers": []}}}"#);
    assert!(error.to_string().contains("`headers` of server `r` must be an object of strings"), "{error}");
}

#[test]
fn wrong_types_of_known_keys_are_refused_even_when_lenient() {
    let error = lenient(r#"{"mcpServers": {"s": {"command": "x", "internalOnly": "no"}}}"#).unwrap_err();
    assert!(matches!(error, ConfigError::WrongType { .. }), "{error:?}");
}

#[test]
fn nul_characters_are_refused_in_what_reaches_the_system() {
    let (error, _, _) = refused(r#"{"mcpServers": {"s": {"command": "x", "args": ["a\u0000b"]}}}"#);
    assert!(error.to_string().contains("contains a NUL character"), "{error}");
}

#[test]
fn session_is_shared_unless_the_entry_says_per_client() {
    let text = r#"{"mcpServers": {
  "plain": {"command": "x"},
  "shared": {"command": "x", "session": "shared"},
  "claude-code": {"command": "claude", "args": ["mcp", "serve"], "session": "per-client"},
  "remote": {"url": "https://x.example/mcp", "session": "per-client"},
  "builtin": {"type": "builtin", "session": "per-client"}
}}"#;
    let config = strict(text).unwrap();
    let session = |name: &str| server(&config, name).session;
    assert_eq!(session("plain"), SessionMode::Shared, "the default");
    assert_eq!(session("shared"), SessionMode::Shared);
    assert_eq!(session("claude-code"), SessionMode::PerClient);
    assert_eq!(session("remote"), SessionMode::PerClient);
    assert_eq!(session("builtin"), SessionMode::PerClient);
    // In an MCP client's file too: the gateway uses the key.
    let config = lenient(r#"{"mcpServers": {"c": {"command": "x", "session": "per-client", "other": 1}}}"#).unwrap();
    assert_eq!(server(&config, "c").session, SessionMode::PerClient);
}

#[test]
fn another_session_value_stops_the_gateway_naming_the_file_the_server_and_the_values() {
    for (value, shown) in [(r#""per_client""#, "`per_client`"), (r#""Shared""#, "`Shared`"), (r#""""#, "``")] {
        let text = format!("{{\"mcpServers\": {{\n  \"cc\": {{\"command\": \"claude\", \"session\": {value}}}}}}}");
        let (error, line, column) = refused(&text);
        assert_eq!((line, column), (2, 42), "{value}");
        let message = error.to_string();
        assert!(message.starts_with("gw.json:2:42: `session` of server `cc` is "), "{message}");
        assert!(message.contains(shown), "{message}");
        assert!(message.contains("use `shared`") && message.contains("or `per-client`"), "{message}");
    }
    for (value, found) in [("true", "a boolean"), ("1", "a number"), (r#"["per-client"]"#, "an array")] {
        let text = format!(r#"{{"mcpServers": {{"cc": {{"command": "claude", "session": {value}}}}}}}"#);
        let message = strict(&text).unwrap_err().to_string();
        assert!(message.contains("`session` of server `cc`") && message.contains("a string"), "{value}: {message}");
        assert!(message.contains(found), "{value}: {message}");
    }
    // A client's file is read leniently, but a key the gateway uses is checked.
    let error = lenient(r#"{"mcpServers": {"cc": {"command": "claude", "session": "each"}}}"#).unwrap_err();
    assert!(error.to_string().contains("`session` of server `cc` is `each`"), "{error}");
}

#[test]
fn search_embeddings_names_a_directory_beside_the_file() {
    let config = parse(
        r#"{"mcpServers": {}, "search": {"embeddings": "models/minilm"}}"#,
        Path::new("/etc/clawai/gw.json"),
        &no_env,
        false,
    )
    .expect("loads");
    assert_eq!(config.embeddings.as_deref(), Some(Path::new("/etc/clawai/models/minilm")));
    let absolute = strict(r#"{"mcpServers": {}, "search": {"embeddings": "/opt/minilm"}}"#).expect("loads");
    assert_eq!(absolute.embeddings.as_deref(), Some(Path::new("/opt/minilm")));
    assert_eq!(strict(r#"{"mcpServers": {}}"#).expect("loads").embeddings, None);
}

#[test]
fn a_bad_search_section_is_refused() {
    let (error, _, _) = refused(r#"{"mcpServers": {}, "search": {"embeddings": ""}}"#);
    assert!(error.to_string().contains("`search.embeddings` is empty"), "{error}");
    let (error, _, _) = refused(r#"{"mcpServers": {}, "search": {"model": "x"}}"#);
    assert!(error.to_string().contains("embeddings"), "{error}");
    let (error, _, _) = refused(r#"{"mcpServers": {}, "search": {"embeddings": 3}}"#);
    assert!(error.to_string().contains("search.embeddings"), "{error}");
}
