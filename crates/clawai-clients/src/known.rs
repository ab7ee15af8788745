//! The MCP clients clawai knows, and where each keeps its servers.

use std::path::{Path, PathBuf};

/// An MCP client application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Client {
    /// Claude Desktop.
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, `.mcp.json`).
    ClaudeCode,
    /// Cursor.
    Cursor,
    /// Visual Studio Code.
    VsCode,
    /// Windsurf.
    Windsurf,
    /// Gemini CLI.
    GeminiCli,
    /// OpenAI Codex CLI.
    Codex,
    /// Zed.
    Zed,
    /// Cline (VS Code extension).
    Cline,
    /// Roo Code (VS Code extension).
    RooCode,
    /// LM Studio.
    LmStudio,
    /// Kiro.
    Kiro,
}

impl Client {
    /// Every known client.
    pub const ALL: [Client; 12] = [
        Client::ClaudeDesktop,
        Client::ClaudeCode,
        Client::Cursor,
        Client::VsCode,
        Client::Windsurf,
        Client::GeminiCli,
        Client::Codex,
        Client::Zed,
        Client::Cline,
        Client::RooCode,
        Client::LmStudio,
        Client::Kiro,
    ];

    /// The short name used on the command line (`--client`).
    pub fn id(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::VsCode => "vscode",
            Client::Windsurf => "windsurf",
            Client::GeminiCli => "gemini",
            Client::Codex => "codex",
            Client::Zed => "zed",
            Client::Cline => "cline",
            Client::RooCode => "roo",
            Client::LmStudio => "lmstudio",
            Client::Kiro => "kiro",
        }
    }

    /// The name people know.
    pub fn display(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "Claude Desktop",
            Client::ClaudeCode => "Claude Code",
            Client::Cursor => "Cursor",
            Client::VsCode => "VS Code",
            Client::Windsurf => "Windsurf",
            Client::GeminiCli => "Gemini CLI",
            Client::Codex => "Codex",
            Client::Zed => "Zed",
            Client::Cline => "Cline",
            Client::RooCode => "Roo Code",
            Client::LmStudio => "LM Studio",
            Client::Kiro => "Kiro",
        }
    }

    /// Parses `--client`.
    pub fn from_id(id: &str) -> Option<Client> {
        Client::ALL.into_iter().find(|c| c.id() == id)
    }
}

/// Whose servers a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    /// The person's, for every project.
    User,
    /// One project's.
    Project,
}

/// How a file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// Strict JSON: no comments, no trailing commas.
    Json,
    /// JSON with comments and trailing commas (VS Code, Zed).
    Jsonc,
    /// TOML (Codex).
    Toml,
}

/// Where the servers are inside a file: a path of keys, where `*` stands for every key
/// of an object (Claude Code's `projects.*.mcpServers`).
pub type ServersPath = &'static [&'static str];

/// One configuration file of one client.
#[derive(Debug, Clone)]
pub struct KnownFile {
    /// The client.
    pub client: Client,
    /// Where the file is (it may not exist).
    pub path: PathBuf,
    /// User or project.
    pub scope: Scope,
    /// Its syntax.
    pub syntax: Syntax,
    /// Where servers are inside it.
    pub servers_at: &'static [ServersPath],
    /// A file given by path that is no known client's (its layout guessed from its
    /// content): shown as a custom configuration, not as a client's.
    pub custom: bool,
}

impl KnownFile {
    /// What the file is, for people: the client's name, or "custom config".
    pub fn label(&self) -> &'static str {
        if self.custom { "custom config" } else { self.client.display() }
    }
}

/// Where `name`'s server map sits for each layout.
const MCP_SERVERS: &[ServersPath] = &[&["mcpServers"]];
const CLAUDE_JSON: &[ServersPath] = &[&["mcpServers"], &["projects", "*", "mcpServers"]];
const VSCODE: &[ServersPath] = &[&["servers"]];
const ZED: &[ServersPath] = &[&["context_servers"]];
const CODEX: &[ServersPath] = &[&["mcp_servers"]];

/// The platform directories a client uses.
#[derive(Debug, Clone)]
pub struct Dirs {
    /// The home directory.
    pub home: PathBuf,
    /// The OS configuration directory (`~/.config` on Linux, `~/Library/Application
    /// Support` on macOS, `%APPDATA%` on Windows).
    pub config: PathBuf,
    /// The project directory (the current directory).
    pub project: PathBuf,
}

impl Dirs {
    /// The directories of this machine, for the current directory.
    pub fn from_env() -> Dirs {
        let home = std::env::var_os("HOME")
            .or_else(|| std::env::var_os("USERPROFILE"))
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        let config = if cfg!(target_os = "macos") {
            home.join("Library/Application Support")
        } else if cfg!(windows) {
            std::env::var_os("APPDATA").map(PathBuf::from).unwrap_or_else(|| home.join("AppData/Roaming"))
        } else {
            match std::env::var_os("XDG_CONFIG_HOME") {
                Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
                _ => home.join(".config"),
            }
        };
        let project = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Dirs { home, config, project }
    }
}

/// Every file clawai looks at, existing or not, in a stable order.
pub fn files(dirs: &Dirs) -> Vec<KnownFile> {
    let file = |client, path: PathBuf, scope, syntax, servers_at| KnownFile {
        client,
        path,
        scope,
        syntax,
        servers_at,
        custom: false,
    };
    let (home, config, project) = (&dirs.home, &dirs.config, &dirs.project);
    let code_user = config.join("Code").join("User");
    vec![
        file(
            Client::ClaudeDesktop,
            config.join("Claude/claude_desktop_config.json"),
            Scope::User,
            Syntax::Json,
            MCP_SERVERS,
        ),
        file(Client::ClaudeCode, home.join(".claude.json"), Scope::User, Syntax::Json, CLAUDE_JSON),
        file(Client::ClaudeCode, project.join(".mcp.json"), Scope::Project, Syntax::Json, MCP_SERVERS),
        file(Client::Cursor, home.join(".cursor/mcp.json"), Scope::User, Syntax::Json, MCP_SERVERS),
        file(Client::Cursor, project.join(".cursor/mcp.json"), Scope::Project, Syntax::Json, MCP_SERVERS),
        file(Client::VsCode, code_user.join("mcp.json"), Scope::User, Syntax::Jsonc, VSCODE),
        file(Client::VsCode, project.join(".vscode/mcp.json"), Scope::Project, Syntax::Jsonc, VSCODE),
        file(Client::Windsurf, home.join(".codeium/windsurf/mcp_config.json"), Scope::User, Syntax::Json, MCP_SERVERS),
        file(Client::GeminiCli, home.join(".gemini/settings.json"), Scope::User, Syntax::Json, MCP_SERVERS),
        file(Client::GeminiCli, project.join(".gemini/settings.json"), Scope::Project, Syntax::Json, MCP_SERVERS),
        file(Client::Codex, home.join(".codex/config.toml"), Scope::User, Syntax::Toml, CODEX),
        file(Client::Zed, config.join("zed/settings.json"), Scope::User, Syntax::Jsonc, ZED),
        file(Client::Zed, project.join(".zed/settings.json"), Scope::Project, Syntax::Jsonc, ZED),
        file(
            Client::Cline,
            code_user.join("globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"),
            Scope::User,
            Syntax::Json,
            MCP_SERVERS,
        ),
        file(
            Client::RooCode,
            code_user.join("globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json"),
            Scope::User,
            Syntax::Json,
            MCP_SERVERS,
        ),
        file(Client::RooCode, project.join(".roo/mcp.json"), Scope::Project, Syntax::Json, MCP_SERVERS),
        file(Client::LmStudio, home.join(".lmstudio/mcp.json"), Scope::User, Syntax::Json, MCP_SERVERS),
        file(Client::Kiro, home.join(".kiro/settings/mcp.json"), Scope::User, Syntax::Json, MCP_SERVERS),
        file(Client::Kiro, project.join(".kiro/settings/mcp.json"), Scope::Project, Syntax::Json, MCP_SERVERS),
    ]
}

/// A file given with `--config FILE`. With `client`, that client's layout. Else the
/// file is recognised by where it is, as one of the files [`files`] lists
/// (`.cursor/mcp.json` is Cursor's, `.mcp.json` Claude Code's, wherever the directory);
/// else by its content: `mcp_servers` in TOML is Codex's layout, `servers` VS Code's,
/// `context_servers` Zed's, `projects` Claude Code's `.claude.json`, anything else the
/// common `mcpServers` layout. A file recognised by content only is a custom one.
pub fn explicit(path: &Path, client: Option<Client>) -> KnownFile {
    if let Some(client) = client {
        let (syntax, servers_at) = layout_of(client, path);
        return KnownFile { client, path: path.to_owned(), scope: Scope::User, syntax, servers_at, custom: false };
    }
    // Every known file, with the directories left out: what a path must end with.
    let relative = Dirs { home: PathBuf::new(), config: PathBuf::new(), project: PathBuf::new() };
    if let Some(known) = files(&relative).into_iter().find(|f| path.ends_with(&f.path)) {
        return KnownFile { path: path.to_owned(), ..known };
    }
    let (client, syntax, servers_at) = layout_from_content(path);
    KnownFile { client, path: path.to_owned(), scope: Scope::User, syntax, servers_at, custom: true }
}

/// The layout of a client's file at `path`.
fn layout_of(client: Client, path: &Path) -> (Syntax, &'static [ServersPath]) {
    match client {
        Client::Codex => (Syntax::Toml, CODEX),
        Client::VsCode => (Syntax::Jsonc, VSCODE),
        Client::Zed => (Syntax::Jsonc, ZED),
        Client::ClaudeCode if path.file_name().is_some_and(|n| n == ".claude.json") => (Syntax::Json, CLAUDE_JSON),
        _ => (Syntax::Json, MCP_SERVERS),
    }
}

/// The layout a file of no known client follows, from its extension and top-level keys,
/// and the client whose layout that is. A JSON file with comments is read as JSONC:
/// whatever reads it accepts them.
fn layout_from_content(path: &Path) -> (Client, Syntax, &'static [ServersPath]) {
    if path.extension().is_some_and(|e| e == "toml") {
        return (Client::Codex, Syntax::Toml, CODEX);
    }
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let value = jsonc_parser::parse_to_value(&text, &Default::default()).ok().flatten();
    let strict = serde_json::from_str::<serde::de::IgnoredAny>(&text).is_ok();
    let syntax = if value.is_some() && !strict { Syntax::Jsonc } else { Syntax::Json };
    let has = |key: &str| matches!(&value, Some(jsonc_parser::JsonValue::Object(o)) if o.get(key).is_some());
    let (client, servers_at) = match () {
        _ if has("mcpServers") && has("projects") => (Client::ClaudeCode, CLAUDE_JSON),
        _ if has("mcpServers") => (Client::ClaudeDesktop, MCP_SERVERS),
        _ if has("servers") => (Client::VsCode, VSCODE),
        _ if has("context_servers") => (Client::Zed, ZED),
        _ => (Client::ClaudeDesktop, MCP_SERVERS),
    };
    (client, syntax, servers_at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn explicit_files_take_the_layout_of_their_client() {
        let codex = explicit(Path::new("/x/config.toml"), None);
        assert_eq!((codex.client, codex.syntax), (Client::Codex, Syntax::Toml));
        let vscode = explicit(Path::new("/p/.vscode/mcp.json"), None);
        assert_eq!((vscode.client, vscode.syntax), (Client::VsCode, Syntax::Jsonc));
        let forced = explicit(Path::new("/x/anything.json"), Some(Client::VsCode));
        assert_eq!(forced.servers_at, VSCODE);
        let claude = explicit(Path::new("/h/.claude.json"), None);
        assert_eq!(claude.servers_at, CLAUDE_JSON);
        let generic = explicit(Path::new("/x/servers.json"), None);
        assert_eq!(generic.servers_at, MCP_SERVERS);
        assert_eq!(generic.label(), "custom config");
    }

    #[test]
    fn explicit_files_are_named_for_the_client_whose_file_they_are() {
        for (path, label) in [
            ("/elsewhere/.mcp.json", "Claude Code"),
            ("/p/.cursor/mcp.json", "Cursor"),
            ("/h/.codeium/windsurf/mcp_config.json", "Windsurf"),
            ("/h/.gemini/settings.json", "Gemini CLI"),
            ("/h/.codex/config.toml", "Codex"),
            ("/p/.roo/mcp.json", "Roo Code"),
            ("/h/.kiro/settings/mcp.json", "Kiro"),
            ("/c/Claude/claude_desktop_config.json", "Claude Desktop"),
            ("/c/Code/User/mcp.json", "VS Code"),
            ("/x/mcp.json", "custom config"),
            ("/x/other.toml", "custom config"),
        ] {
            assert_eq!(explicit(Path::new(path), None).label(), label, "{path}");
        }
    }

    #[test]
    fn a_custom_file_is_read_in_the_layout_its_content_has() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            explicit(&path, None)
        };
        let vscode_like = write("a.json", "{ // mine\n \"servers\": {} }");
        assert_eq!((vscode_like.servers_at, vscode_like.syntax), (VSCODE, Syntax::Jsonc));
        assert_eq!(write("b.json", r#"{"context_servers": {}}"#).servers_at, ZED);
        let plain = write("c.json", r#"{"mcpServers": {}}"#);
        assert_eq!((plain.servers_at, plain.syntax, plain.custom), (MCP_SERVERS, Syntax::Json, true));
    }
}
