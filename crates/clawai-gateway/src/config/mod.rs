//! The gateway's configuration file: which MCP servers to put behind the gateway, how to
//! reach each, whether its tools are listed by default, and the most any session may see.
//!
//! The file is JSON. Servers are read from `tools.mcpServers` (or `tools.mcp_servers`) or
//! from a top-level `mcpServers` (or `mcp_servers`), so the configuration file of an MCP
//! client (Claude Desktop, Cursor, Claude Code's `.mcp.json`, …) serves as it is. camelCase
//! and snake_case spellings of a key are both accepted. In the gateway's own file an
//! unknown key is an error (a typo must never widen what is allowed); in an MCP client's
//! file, which has settings of its own, unknown keys are ignored.
//!
//! ```json
//! {
//!   "tools": {
//!     "mcpServers": {
//!       "github": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//!                   "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" } },
//!       "docs": { "url": "https://docs.example/mcp", "internalOnly": false },
//!       "claude-code": { "command": "claude", "args": ["mcp", "serve"], "session": "per-client" }
//!     }
//!   },
//!   "agent": { "allowedTools": ["github__*", "docs__search"] }
//! }
//! ```

mod error;
mod expand;
mod json;
mod sandbox;
mod server;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use clawai_sdk::McpServerConfig;
use clawai_sdk::SdkMcpServerImpl;

use jsonc_parser::ast::ObjectProp;

pub use error::{ConfigError, Location};
use json::{Doc, Fields, Key, prop_name};
pub use server::BUILTIN_NAME;

/// A loaded gateway configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GatewayConfig {
    /// The servers by name, disabled ones included (with `disabled: true`); entries
    /// skipped for having neither a command nor a URL are not here (see `warnings`).
    pub servers: BTreeMap<String, ServerEntry>,
    /// `agent.allowedTools`: globs over namespaced tool names (`server__tool`; `*` any run,
    /// `?` one character), the most any session may see. `None`: no limit.
    pub allowed_tools: Option<Vec<String>>,
    /// `search.embeddings`: the directory of a local sentence-embedding model for
    /// `search_tools` (relative to the configuration file's directory). `None`: lexical
    /// ranking only.
    pub embeddings: Option<PathBuf>,
    /// What was loaded but deserves a word to the user (a skipped server, no servers at
    /// all), each starting with `FILE:LINE:COLUMN`; the caller decides how to show them.
    pub warnings: Vec<String>,
}

/// One server of the configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerEntry {
    /// How to reach it, `${VAR}`s expanded (a disabled server's values are kept as
    /// written).
    pub transport: Transport,
    /// `cwd`: the directory a stdio server runs in, as written (a relative path is not
    /// resolved here).
    pub cwd: Option<PathBuf>,
    /// `internalOnly` (default `true`): its tools are listed only when a skill exposes
    /// them, and its prompts and resources not at all.
    pub internal_only: bool,
    /// `disabled` (default `false`): the server is configured but is not to be started.
    pub disabled: bool,
    /// `session` (default `"shared"`): whether every client session shares one upstream
    /// session of the server, or each gets its own.
    pub session: SessionMode,
    /// `sandbox` (default off): a stdio server runs in a sandbox the kernel enforces.
    pub sandbox: clawai_proxy::sandbox::Request,
}

/// Whether the client sessions of the gateway share a server's upstream session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SessionMode {
    /// `"shared"`: one upstream session (one process) serves every client session.
    #[default]
    Shared,
    /// `"per-client"`: each client session gets an upstream session of its own (over
    /// stdio, a process of its own), started on its first call and stopped when it
    /// leaves or sits idle; for a server that keeps state per session, such as Claude
    /// Code's `claude mcp serve`.
    PerClient,
}

impl SessionMode {
    /// The values `session` takes in the file, with their modes.
    pub const NAMES: [(&'static str, SessionMode); 2] =
        [("shared", SessionMode::Shared), ("per-client", SessionMode::PerClient)];
}

/// How a server is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// As an MCP client reaches it: the `type` of its entry (`stdio`, `sse`, `http`), or,
    /// without one, `stdio` when it has a `command` and `http` when it has a `url`.
    Mcp(McpServerConfig),
    /// clawai's built-in tools (`"type": "builtin"`), served in the gateway's process.
    Builtin,
    /// A server written with `clawai-sdk` that lives in the same process: a Rust program
    /// building its own gateway puts it here (never read from a file).
    InProcess(InProcessServer),
}

/// An SDK server in the gateway's process. Two are the same when they are the same
/// object (a reload keeps it running).
#[derive(Clone)]
pub struct InProcessServer(pub Arc<SdkMcpServerImpl>);

impl PartialEq for InProcessServer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for InProcessServer {}

impl std::fmt::Debug for InProcessServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("InProcessServer").field(&self.0.name).finish()
    }
}

impl Transport {
    /// True for a server on another machine (reached over HTTP): its paths are not this
    /// machine's, so the policy matches them as spelled, without following links.
    pub fn is_remote(&self) -> bool {
        matches!(self, Transport::Mcp(McpServerConfig::Sse { .. } | McpServerConfig::Http { .. }))
    }
}

impl ServerEntry {
    /// An entry for an in-process SDK server, listed like a server with
    /// `internalOnly: internal_only`.
    pub fn in_process(server: Arc<SdkMcpServerImpl>, internal_only: bool) -> ServerEntry {
        ServerEntry {
            transport: Transport::InProcess(InProcessServer(server)),
            cwd: None,
            internal_only,
            disabled: false,
            session: SessionMode::Shared,
            sandbox: Default::default(),
        }
    }

    /// clawai's built-in tools, listed unless `internal_only`.
    pub fn builtin(internal_only: bool) -> ServerEntry {
        ServerEntry {
            transport: Transport::Builtin,
            cwd: None,
            internal_only,
            disabled: false,
            session: SessionMode::Shared,
            sandbox: Default::default(),
        }
    }

    /// The same entry with its `session` set.
    pub fn with_session(self, session: SessionMode) -> ServerEntry {
        ServerEntry { session, ..self }
    }
}

const TOP_KEYS: [Key; 4] =
    [Key::two("mcpServers", "mcp_servers"), Key::one("tools"), Key::one("agent"), Key::one("search")];
const SEARCH_KEYS: [Key; 1] = [Key::one("embeddings")];
const TOOLS_KEYS: [Key; 1] = [Key::two("mcpServers", "mcp_servers")];
const AGENT_KEYS: [Key; 1] = [Key::two("allowedTools", "allowed_tools")];
const TOP_HINTS: &[(&str, &str)] = &[("servers", "mcpServers"), ("mcp", "mcpServers")];
const AGENT_HINTS: &[(&str, &str)] = &[("tools", "allowedTools"), ("allowed", "allowedTools")];

/// Reads and checks the configuration file at `path`. `env` looks up the variables that
/// `${VAR}` in `env` and `headers` values name (normally the gateway's own environment).
/// `lenient`: the file is a known MCP client's configuration, whose keys the gateway does
/// not know are ignored instead of refused.
pub fn load(path: &Path, env: &dyn Fn(&str) -> Option<String>, lenient: bool) -> Result<GatewayConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read { path: path.to_owned(), source })?;
    parse(&text, path, env, lenient)
}

/// Checks configuration text as [`load`] does; `path` is only named in messages.
pub fn parse(
    text: &str,
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
    lenient: bool,
) -> Result<GatewayConfig, ConfigError> {
    // Editors on Windows may start a UTF-8 file with a byte order mark; JSON parsers refuse it.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let doc = Doc::new(text, path);
    let root = doc.parse()?;
    let root = doc.object(&root, "the file's content")?;
    let top = Fields::read(&doc, root, "the top level", &TOP_KEYS, TOP_HINTS, lenient)?;

    // Every place servers may be listed, in the order they appear in the file.
    let mut lists: Vec<(String, &ObjectProp)> = Vec::new();
    if let Some(tools) = top.get("tools") {
        let object = doc.object(&tools.value, "`tools`")?;
        let fields = Fields::read(&doc, object, "`tools`", &TOOLS_KEYS, TOP_HINTS, lenient)?;
        if let Some(servers) = fields.get("mcpServers") {
            lists.push((format!("tools.{}", prop_name(servers)), servers));
        }
    }
    if let Some(servers) = top.get("mcpServers") {
        lists.push((prop_name(servers).to_owned(), servers));
    }
    lists.sort_by_key(|(_, prop)| prop.range.start);
    let mut warnings = Vec::new();
    let servers = match lists.as_slice() {
        [] => {
            warnings.push(format!(
                "{}: no MCP servers are configured; list them under `mcpServers` or `tools.mcpServers`",
                doc.at(0)
            ));
            BTreeMap::new()
        }
        [(_, list)] => read_servers(&doc, list, env, lenient, &mut warnings)?,
        [(first, _), (second, list), ..] => {
            return Err(ConfigError::LayoutConflict {
                at: doc.at(list.range.start),
                first: first.clone(),
                second: second.clone(),
            });
        }
    };
    let allowed_tools = match top.get("agent") {
        None => None,
        Some(agent) => {
            let object = doc.object(&agent.value, "`agent`")?;
            let fields = Fields::read(&doc, object, "`agent`", &AGENT_KEYS, AGENT_HINTS, lenient)?;
            fields.get("allowedTools").map(|globs| read_globs(&doc, globs, &mut warnings)).transpose()?
        }
    };
    let embeddings = match top.get("search") {
        None => None,
        Some(search) => {
            let object = doc.object(&search.value, "`search`")?;
            let fields = Fields::read(&doc, object, "`search`", &SEARCH_KEYS, &[("model", "embeddings")], lenient)?;
            fields.get("embeddings").map(|dir| read_model_dir(&doc, dir, path)).transpose()?
        }
    };
    Ok(GatewayConfig { servers, allowed_tools, embeddings, warnings })
}

/// `search.embeddings`: a non-empty path, relative to the configuration file's directory.
/// Whether it holds a model is checked where the model is loaded.
fn read_model_dir(doc: &Doc, prop: &ObjectProp, config: &Path) -> Result<PathBuf, ConfigError> {
    let dir = doc.string(&prop.value, "`search.embeddings`")?;
    if dir.trim().is_empty() {
        return Err(doc.invalid(
            prop.range.start,
            "`search.embeddings` is empty; name a sentence-transformers model directory, or remove the key".to_owned(),
        ));
    }
    Ok(config.parent().unwrap_or(Path::new("")).join(dir))
}

fn read_servers(
    doc: &Doc,
    list: &ObjectProp,
    env: &dyn Fn(&str) -> Option<String>,
    lenient: bool,
    warnings: &mut Vec<String>,
) -> Result<BTreeMap<String, ServerEntry>, ConfigError> {
    let what = format!("`{}`", prop_name(list));
    let object = doc.object(&list.value, &what)?;
    let mut servers = BTreeMap::new();
    let mut names: Vec<&str> = Vec::with_capacity(object.properties.len());
    for prop in &object.properties {
        let name = prop_name(prop);
        // Checked before the entry: a server given twice is refused even when the first
        // of the two was skipped for having neither a command nor a URL.
        if names.contains(&name) {
            return Err(doc.invalid(
                prop.range.start,
                format!("server `{name}` is listed twice; rename or remove one of the two"),
            ));
        }
        names.push(name);
        if let Some((name, entry)) = server::read(doc, prop, env, lenient, warnings)? {
            servers.insert(name, entry);
        }
    }
    Ok(servers)
}

/// `agent.allowedTools`: an array of non-empty glob strings.
fn read_globs(doc: &Doc, prop: &ObjectProp, warnings: &mut Vec<String>) -> Result<Vec<String>, ConfigError> {
    let what = format!("`agent.{}`", prop_name(prop));
    let globs = doc.strings(&prop.value, &what)?;
    if globs.is_empty() {
        warnings.push(format!(
            "{}: {what} is empty, so no server's tools will be visible to any session",
            doc.at(prop.range.start)
        ));
    }
    globs
        .into_iter()
        .map(|(glob, at)| {
            if glob.trim().is_empty() {
                Err(doc.invalid(
                    at,
                    format!("{what} has an empty pattern; remove it, or write the tool names to allow (`server__*`)"),
                ))
            } else {
                Ok(glob)
            }
        })
        .collect()
}
