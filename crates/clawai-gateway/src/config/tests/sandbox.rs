//! A server's `"sandbox"`: the forms it takes, and the values that stop the gateway.

use std::path::PathBuf;

use clawai_proxy::sandbox::{Mode, NetworkGrant, Request};

use super::*;

#[test]
fn sandbox_is_off_unless_the_entry_asks_and_takes_a_mode_or_an_object() {
    let text = r#"{"mcpServers": {
  "plain": {"command": "x"},
  "auto": {"command": "x", "sandbox": "auto"},
  "strict": {"command": "x", "sandbox": "require"},
  "granted": {"command": "x", "sandbox": {"profile": "auto", "read": ["/data"], "write": ["/work"],
              "network": ["loopback", "api.github.com:443"]}},
  "required": {"command": "x", "sandbox": {"require": true, "network": "none"}}
}}"#;
    let config = strict(text).unwrap();
    let sandbox = |name: &str| server(&config, name).sandbox;
    assert_eq!(sandbox("plain"), Request::default());
    assert_eq!(sandbox("auto").mode, Mode::Auto);
    assert_eq!(sandbox("strict").mode, Mode::Require);
    assert_eq!(
        sandbox("granted"),
        Request {
            mode: Mode::Auto,
            read: vec![PathBuf::from("/data")],
            write: vec![PathBuf::from("/work")],
            network: vec![NetworkGrant::Loopback, NetworkGrant::Endpoint { host: "api.github.com".into(), port: 443 }],
        }
    );
    assert_eq!(sandbox("required").mode, Mode::Require);
    assert_eq!(sandbox("required").network, vec![NetworkGrant::None]);
}

#[test]
fn a_bad_sandbox_value_stops_the_gateway_naming_the_file_line_and_what_to_write() {
    let cases = [
        (r#""yes""#, "`sandbox` of server `s` is `yes`; use \"auto\", \"require\", \"off\""),
        ("true", "`sandbox` of server `s` must be a string or an object"),
        (r#"{"profile": "strict"}"#, "the one profile is \"auto\""),
        (r#"{"network": "internet"}"#, "`internet` is not a network grant"),
        (r#"{"network": ["none", "any"]}"#, "`none` cannot be combined with `any`"),
        (r#"{"writes": ["/x"]}"#, "unknown key `writes` in `sandbox` of server `s`"),
        (r#"{"read": "/x"}"#, "`read` in `sandbox` of server `s` must be an array of strings"),
    ];
    for (value, expected) in cases {
        let text = format!("{{\"mcpServers\": {{\n  \"s\": {{\"command\": \"x\", \"sandbox\": {value}}}}}}}");
        let (error, line, _) = refused(&text);
        assert_eq!(line, 2, "{value}");
        let message = error.to_string();
        assert!(message.starts_with("gw.json:2:"), "{message}");
        assert!(message.contains(expected), "{value}: {message}");
    }
}

#[test]
fn a_sandbox_on_a_server_clawai_does_not_start_is_refused() {
    for entry in [r#"{"url": "https://x.example/mcp", "sandbox": "auto"}"#, r#"{"type": "builtin", "sandbox": "auto"}"#]
    {
        let name = if entry.contains("builtin") { "builtin" } else { "r" };
        let text = format!(r#"{{"mcpServers": {{"{name}": {entry}}}}}"#);
        let message = strict(&text).unwrap_err().to_string();
        assert!(message.contains("`sandbox` has no use for server"), "{message}");
    }
}
