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
    let file = |client, path: PathBuf, scope, syntax, servers_at| KnownFile { client, path, scope, syntax, servers_at };
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

/// A file given with `--config FILE`: the layout of `client`, or of the client its name
/// suggests (`*.toml` Codex, `.vscode/mcp.json` VS Code, `zed/settings.json` Zed,
/// `.claude.json` Claude Code); any other file is read with the common `mcpServers`
/// layout (Claude Desktop's).
pub fn explicit(path: &Path, client: Option<Client>) -> KnownFile {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parent = path.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("");
    let client = client.unwrap_or(match (name, parent) {
        (n, _) if n.ends_with(".toml") => Client::Codex,
        ("mcp.json", ".vscode") => Client::VsCode,
        ("settings.json", "zed" | ".zed") => Client::Zed,
        (".claude.json", _) => Client::ClaudeCode,
        _ => Client::ClaudeDesktop,
    });
    let (syntax, servers_at) = match client {
        Client::Codex => (Syntax::Toml, CODEX),
        Client::VsCode => (Syntax::Jsonc, VSCODE),
        Client::Zed => (Syntax::Jsonc, ZED),
        Client::ClaudeCode if name == ".claude.json" => (Syntax::Json, CLAUDE_JSON),
        _ => (Syntax::Json, MCP_SERVERS),
    };
    KnownFile { client, path: path.to_owned(), scope: Scope::User, syntax, servers_at }
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
    }
}
