//! What can be wrong with a gateway configuration file, each said with where and what to do.

use std::fmt;
use std::path::PathBuf;

/// A place in the configuration file: `FILE:LINE:COLUMN` (line and column count from 1,
/// the column in characters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as it was given.
    pub path: PathBuf,
    /// The line, from 1.
    pub line: u32,
    /// The column in characters, from 1.
    pub column: u32,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.path.display(), self.line, self.column)
    }
}

/// Why a gateway configuration was refused. Every message starts with where (the file, and
/// its line and column when the problem is inside it) and ends with what to do.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read (missing, unreadable, not UTF-8).
    #[error("{}: cannot read the gateway configuration ({source}); check the path given to --config", path.display())]
    Read {
        /// The file as it was given.
        path: PathBuf,
        /// The reason the system gave.
        #[source]
        source: std::io::Error,
    },
    /// The file is not JSON.
    #[error("{at}: not valid JSON: {message}; fix the syntax there")]
    Syntax {
        /// Where the parser stopped.
        at: Location,
        /// What the parser expected.
        message: String,
    },
    /// A key the gateway does not know, in a file that is not a known MCP client's.
    #[error(
        "{at}: unknown key `{key}` in {section}; {} (known keys: {known})",
        match suggestion { Some(s) => format!("rename it to `{s}`"), None => "rename or remove it".to_owned() }
    )]
    UnknownKey {
        /// Where the key is.
        at: Location,
        /// The key as written.
        key: String,
        /// Where in the file's structure it is (`the top level`, `server \`fs\``, …).
        section: String,
        /// The known key that looks like this one, if any.
        suggestion: Option<&'static str>,
        /// The keys this section knows, for the message.
        known: String,
    },
    /// One setting given twice in one object (the same key twice, or both its camelCase and
    /// its snake_case spelling).
    #[error("{at}: {section} gives `{key}` again (it already has `{earlier}`); keep one of them")]
    DuplicateKey {
        /// Where the second one is.
        at: Location,
        /// The second key as written.
        key: String,
        /// The first key as written.
        earlier: String,
        /// Where in the file's structure it is.
        section: String,
    },
    /// A value of the wrong JSON type.
    #[error("{at}: {what} must be {expected}, not {found}; change the value there")]
    WrongType {
        /// Where the value is.
        at: Location,
        /// What the value is (`` `args` of server `fs` ``).
        what: String,
        /// What it must be (`an array of strings`).
        expected: &'static str,
        /// What it is (`a string`).
        found: &'static str,
    },
    /// Servers given in more than one place of the file.
    #[error("{at}: servers are listed under both `{first}` and `{second}`; move them all under one of the two")]
    LayoutConflict {
        /// Where the second list is.
        at: Location,
        /// The first list's path (`tools.mcpServers`).
        first: String,
        /// The second list's path (`mcpServers`).
        second: String,
    },
    /// A server name the gateway cannot use as a tool-name prefix.
    #[error(
        "{at}: server name `{name}` {why}; rename the server (a name may contain only ASCII letters, \
         digits, `_` and `-`, must not contain `__` and must not end with `_`)"
    )]
    ServerName {
        /// Where the name is.
        at: Location,
        /// The name as written.
        name: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// `${VAR}` in a value, and `VAR` not set in the gateway's environment.
    #[error(
        "{at}: `${{{variable}}}` in `{key}` of server `{server}` is not set in the gateway's environment; \
         set {variable} before starting the gateway, or write the value in the file"
    )]
    UnsetVariable {
        /// Where the value is.
        at: Location,
        /// The server.
        server: String,
        /// The key whose value it is (`env.API_KEY`, `headers.Authorization`).
        key: String,
        /// The variable's name.
        variable: String,
    },
    /// Any other value the gateway cannot use; the message says which and what to do.
    #[error("{at}: {message}")]
    Invalid {
        /// Where the value is.
        at: Location,
        /// What is wrong and what to do.
        message: String,
    },
}

impl ConfigError {
    /// Where in the file the problem is; `None` when the file could not be read at all.
    pub fn location(&self) -> Option<&Location> {
        match self {
            ConfigError::Read { .. } => None,
            ConfigError::Syntax { at, .. }
            | ConfigError::UnknownKey { at, .. }
            | ConfigError::DuplicateKey { at, .. }
            | ConfigError::WrongType { at, .. }
            | ConfigError::LayoutConflict { at, .. }
            | ConfigError::ServerName { at, .. }
            | ConfigError::UnsetVariable { at, .. }
            | ConfigError::Invalid { at, .. } => Some(at),
        }
    }
}
