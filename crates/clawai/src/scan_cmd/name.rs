//! The name `clawai scan` gives a server when `--server` does not: the one a client
//! configuration would give it, so that the starter policy's `server = "…"` matches once
//! the server is wrapped under that name. That is the package's short name
//! (`@modelcontextprotocol/server-filesystem` → `filesystem`, `mcp-server-fetch` →
//! `fetch`), else the `serverInfo.name` the server gave, else the program's name.

use std::path::Path;

use serde_json::Value;

/// Where a server's name came from, as the report says it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NamedBy {
    /// `--server NAME`.
    Flag,
    /// The server's key in `--config FILE`.
    Config,
    /// The short name of this package in the command line.
    Package(String),
    /// The server's `serverInfo.name`.
    ServerInfo,
    /// The program's file name, or the URL's host: nothing better was known.
    Program,
}

impl NamedBy {
    /// What the report says of the name.
    pub(crate) fn describe(&self) -> String {
        match self {
            NamedBy::Flag => "given with --server".to_owned(),
            NamedBy::Config => "its key in the configuration file".to_owned(),
            NamedBy::Package(package) => format!("the short name of the package {package}"),
            NamedBy::ServerInfo => "the name the server gives itself (serverInfo.name)".to_owned(),
            NamedBy::Program => "the program's name: the server gave no better one".to_owned(),
        }
    }

    /// The word of the JSON report.
    pub(crate) fn as_str(&self) -> &'static str {
        match self {
            NamedBy::Flag => "flag",
            NamedBy::Config => "config",
            NamedBy::Package(_) => "package",
            NamedBy::ServerInfo => "server_info",
            NamedBy::Program => "program",
        }
    }
}

/// Programs that start a package named by their first argument that is not an option.
const LAUNCHERS: &[&str] = &["npx", "bunx", "pnpx", "uvx", "pipx", "dlx"];

/// The package a command line starts, as written (`@scope/name@1.2`), if it names one:
/// the first argument of a launcher (`npx -y PKG`, `uvx PKG`, `pnpm dlx PKG`), the
/// module of `python -m MODULE`, or the package folder of a script under `node_modules`.
pub(crate) fn package_of(command: &[String]) -> Option<String> {
    let program = Path::new(command.first()?).file_name()?.to_str()?;
    let rest = &command[1..];
    let first_plain = |args: &[String]| args.iter().find(|a| !a.starts_with('-')).cloned();
    if LAUNCHERS.contains(&program) {
        // `uvx --from PKG cmd` and `pipx run PKG`.
        if let Some(at) = rest.iter().position(|a| a == "--from") {
            return rest.get(at + 1).cloned();
        }
        let rest = if program == "pipx" { rest.get(1..).unwrap_or_default() } else { rest };
        return first_plain(rest);
    }
    if matches!(program, "pnpm" | "bun" | "yarn") && rest.first().is_some_and(|a| a == "dlx" || a == "x") {
        return first_plain(&rest[1..]);
    }
    if program.starts_with("python") {
        let at = rest.iter().position(|a| a == "-m")?;
        return rest.get(at + 1).map(|module| module.replace('_', "-"));
    }
    rest.iter().find_map(|arg| {
        let (_, after) = arg.split_once("node_modules/")?;
        let mut parts = after.split('/');
        let first = parts.next()?;
        if first.starts_with('@') { Some(format!("{first}/{}", parts.next()?)) } else { Some(first.to_owned()) }
    })
}

/// The short name of a package: without its version, its scope and the words that say
/// only "MCP server" (`server-`, `mcp-server-`, `-mcp`); the scope when nothing else is
/// left (`@playwright/mcp` → `playwright`, `@claude-flow/cli` → `claude-flow`).
pub(crate) fn short_name(package: &str) -> Option<String> {
    let (scope, name) = match package.strip_prefix('@') {
        Some(scoped) => {
            let (scope, name) = scoped.split_once('/')?;
            (Some(scope), name)
        }
        None => (None, package),
    };
    // `name@1.2.3`, `name==1.2` (a Python requirement).
    let name = name.split(['@', '=', '>', '<', '[']).next()?;
    let mut short = name.to_ascii_lowercase();
    for prefix in ["mcp-server-", "server-", "mcp-"] {
        if let Some(rest) = short.strip_prefix(prefix) {
            short = rest.to_owned();
        }
    }
    for suffix in ["-mcp-server", "-server-mcp", "-mcp", "-server"] {
        if let Some(rest) = short.strip_suffix(suffix) {
            short = rest.to_owned();
        }
    }
    let generic = matches!(short.as_str(), "" | "mcp" | "cli" | "server" | "mcp-server");
    let chosen = if generic { scope?.trim_end_matches("hq").to_owned() } else { short };
    let safe: String =
        chosen.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
    let safe = safe.trim_matches('-');
    (!safe.is_empty()).then(|| safe.to_owned())
}

/// The default name of a server started by `command` (empty for a remote one, with
/// `host` its URL's host) that said `server_info` of itself.
pub(crate) fn default_name(command: &[String], host: Option<&str>, server_info: Option<&Value>) -> (String, NamedBy) {
    if let Some(package) = package_of(command)
        && let Some(short) = short_name(&package)
    {
        return (short, NamedBy::Package(package));
    }
    let info = server_info.and_then(|info| info.get("name")).and_then(Value::as_str).map(str::trim);
    if let Some(info) = info.filter(|name| !name.is_empty()) {
        let safe: String =
            info.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '-' }).collect();
        let safe = safe.trim_matches('-');
        if !safe.is_empty() {
            return (safe.to_owned(), NamedBy::ServerInfo);
        }
    }
    let program = command.first().and_then(|p| Path::new(p).file_name()).map(|n| n.to_string_lossy().into_owned());
    (program.or(host.map(str::to_owned)).unwrap_or_else(|| "server".to_owned()), NamedBy::Program)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn packages_are_named_as_client_configurations_name_them() {
        for (command, name) in [
            (&["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"][..], "filesystem"),
            (&["npx", "@modelcontextprotocol/server-everything@2026.8.31"], "everything"),
            (&["uvx", "mcp-server-fetch"], "fetch"),
            (&["uvx", "--from", "mcp-server-git==0.6", "mcp-server-git"], "git"),
            (&["python3", "-m", "mcp_server_time"], "time"),
            (&["npx", "-y", "@playwright/mcp@latest"], "playwright"),
            (&["npx", "-y", "@upstash/context7-mcp"], "context7"),
            (&["npx", "-y", "chrome-devtools-mcp@latest"], "chrome-devtools"),
            (&["npx", "-y", "@notionhq/notion-mcp-server"], "notion"),
            (&["npx", "-y", "@claude-flow/cli@latest", "mcp", "start"], "claude-flow"),
            (&["pnpm", "dlx", "@sentry/mcp-server"], "sentry"),
            (&["node", "/srv/app/node_modules/@modelcontextprotocol/server-memory/dist/index.js"], "memory"),
        ] {
            let (got, by) = default_name(&line(command), None, None);
            assert_eq!(got, name, "{command:?}");
            assert!(matches!(by, NamedBy::Package(_)), "{command:?}");
        }
    }

    #[test]
    fn without_a_package_the_server_s_own_name_then_the_program() {
        let info = json!({"name": "claude/tengu", "version": "2.1"});
        assert_eq!(
            default_name(&line(&["claude", "mcp", "serve"]), None, Some(&info)),
            ("claude-tengu".to_owned(), NamedBy::ServerInfo)
        );
        assert_eq!(default_name(&line(&["./my-server"]), None, None), ("my-server".to_owned(), NamedBy::Program));
        assert_eq!(default_name(&[], Some("mcp.example.com"), None), ("mcp.example.com".to_owned(), NamedBy::Program));
        assert_eq!(
            default_name(&line(&["python3", "server.py"]), None, Some(&json!({"name": " "}))).1,
            NamedBy::Program
        );
    }
}
