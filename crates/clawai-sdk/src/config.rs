//! [`McpServerConfig`]: how a host reaches an MCP server, as MCP clients' configuration
//! files write it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How to reach an MCP server: a program speaking MCP on its stdin and stdout, or an
/// endpoint over HTTP. Tagged by `type`, as in MCP clients' configuration files:
///
/// ```
/// use clawai_sdk::McpServerConfig;
///
/// let config: McpServerConfig =
///     serde_json::from_str(r#"{"type": "stdio", "command": "npx", "args": ["-y", "server-memory"]}"#).unwrap();
/// assert!(matches!(config, McpServerConfig::Stdio { ref command, .. } if command == "npx"));
/// let remote: McpServerConfig = serde_json::from_str(r#"{"type": "http", "url": "https://x.example/mcp"}"#).unwrap();
/// assert_eq!(serde_json::to_value(&remote).unwrap()["type"], "http");
/// ```
///
/// `clawai gateway` reads its configuration file into this type (with positions in its
/// error messages, and `type` inferred from `command` or `url` when absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
pub enum McpServerConfig {
    /// A program the host starts, speaking MCP on its stdin and stdout.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Variables added to its environment.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// A server speaking the legacy HTTP+SSE transport.
    Sse {
        /// Its SSE endpoint (http or https).
        url: String,
        /// Headers sent with every request.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
    /// A server speaking Streamable HTTP.
    Http {
        /// Its MCP endpoint (http or https).
        url: String,
        /// Headers sent with every request.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_reads_and_writes_under_its_type() {
        let stdio = McpServerConfig::Stdio {
            command: "node".into(),
            args: vec!["server.js".into()],
            env: BTreeMap::from([("TOKEN".into(), "t".into())]),
        };
        let written = serde_json::to_value(&stdio).unwrap();
        assert_eq!(written, json!({"type": "stdio", "command": "node", "args": ["server.js"], "env": {"TOKEN": "t"}}));
        assert_eq!(serde_json::from_value::<McpServerConfig>(written).unwrap(), stdio);
        let sse: McpServerConfig = serde_json::from_value(json!({"type": "sse", "url": "https://x/sse"})).unwrap();
        assert_eq!(sse, McpServerConfig::Sse { url: "https://x/sse".into(), headers: BTreeMap::new() });
    }

    #[test]
    fn an_unknown_type_or_key_is_refused() {
        assert!(serde_json::from_value::<McpServerConfig>(json!({"type": "ftp", "url": "x"})).is_err());
        assert!(
            serde_json::from_value::<McpServerConfig>(json!({"type": "stdio", "command": "x", "cmd": "y"})).is_err()
        );
        assert!(serde_json::from_value::<McpServerConfig>(json!({"command": "x"})).is_err(), "the type is required");
    }
}
