//! The gateway configuration (placeholder: the full reader lands on its own branch).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The gateway's configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GatewayConfig {
    /// The servers by name.
    pub servers: BTreeMap<String, ServerEntry>,
    /// `agent.allowedTools`.
    pub allowed_tools: Option<Vec<String>>,
    /// Warnings.
    pub warnings: Vec<String>,
}

/// One server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// How to reach it.
    pub transport: McpServerConfig,
    /// Working directory.
    pub cwd: Option<PathBuf>,
    /// Hidden until a skill shows it.
    pub internal_only: bool,
    /// Not started.
    pub disabled: bool,
}

/// How to reach a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpServerConfig {
    /// A child process.
    Stdio {
        /// The program.
        command: String,
        /// Its arguments.
        args: Vec<String>,
        /// Its environment.
        env: BTreeMap<String, String>,
    },
    /// Legacy SSE.
    Sse {
        /// The URL.
        url: String,
        /// Headers.
        headers: BTreeMap<String, String>,
    },
    /// Streamable HTTP.
    Http {
        /// The URL.
        url: String,
        /// Headers.
        headers: BTreeMap<String, String>,
    },
}

/// A configuration error.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(String);

/// Reads the configuration.
pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>, lenient: bool) -> Result<GatewayConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    parse(&text, path, env, lenient)
}

/// Parses the configuration.
pub fn parse(
    text: &str,
    path: &Path,
    _env: &dyn Fn(&str) -> Option<String>,
    _lenient: bool,
) -> Result<GatewayConfig, ConfigError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| ConfigError(format!("{}: {e}", path.display())))?;
    let servers = value
        .pointer("/tools/mcpServers")
        .or_else(|| value.get("mcpServers"))
        .and_then(serde_json::Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut config = GatewayConfig::default();
    for (name, entry) in servers {
        let s = |k: &str| entry.get(k).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned();
        let map = |k: &str| {
            entry
                .get(k)
                .and_then(serde_json::Value::as_object)
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned())).collect())
                .unwrap_or_default()
        };
        let transport = if !s("command").is_empty() {
            McpServerConfig::Stdio {
                command: s("command"),
                args: entry
                    .get("args")
                    .and_then(serde_json::Value::as_array)
                    .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect())
                    .unwrap_or_default(),
                env: map("env"),
            }
        } else {
            McpServerConfig::Http { url: s("url"), headers: map("headers") }
        };
        config.servers.insert(
            name,
            ServerEntry {
                transport,
                cwd: entry.get("cwd").and_then(serde_json::Value::as_str).map(PathBuf::from),
                internal_only: entry.get("internalOnly").and_then(serde_json::Value::as_bool).unwrap_or(true),
                disabled: entry.get("disabled").and_then(serde_json::Value::as_bool).unwrap_or(false),
            },
        );
    }
    config.allowed_tools = value
        .pointer("/agent/allowedTools")
        .and_then(serde_json::Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
    Ok(config)
}
