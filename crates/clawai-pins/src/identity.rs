//! Which server the pins are of: its name and what starts or reaches it.
//!
//! The name alone would let another server configured under the same name inherit the
//! pins (or lose them); the command alone would merge two servers configured with one
//! command under different names. Both together name one server, and the store file
//! is named after both.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::canonical::{canonical_json, sha256_hex};

/// What starts the server, or where it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// A local server: its command line, the program first.
    Command(Vec<String>),
    /// A remote server: its URL.
    Url(String),
}

/// A server as pins know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The name the server is configured under (`--server`, the gateway's key).
    pub server: String,
    /// What starts or reaches it.
    pub source: Source,
}

impl Identity {
    /// A server started by `argv`.
    pub fn command(server: impl Into<String>, argv: &[String]) -> Identity {
        Identity { server: server.into(), source: Source::Command(argv.to_vec()) }
    }

    /// A server reached at `url`.
    pub fn url(server: impl Into<String>, url: impl Into<String>) -> Identity {
        Identity { server: server.into(), source: Source::Url(url.into()) }
    }

    /// SHA-256 of the command line (as a canonical JSON array, so that `["a b"]` and
    /// `["a", "b"]` differ) or of the URL.
    pub fn source_hash(&self) -> String {
        match &self.source {
            Source::Command(argv) => sha256_hex(canonical_json(&json!(argv)).as_bytes()),
            Source::Url(url) => sha256_hex(url.as_bytes()),
        }
    }

    /// The store file's name without `.json`: the server's name in safe characters,
    /// then the first 16 hex digits of the hash of the name and the source together
    /// (distinct even when two names read alike once made safe).
    pub fn file_stem(&self) -> String {
        let safe: String = self
            .server
            .chars()
            .take(64)
            .map(|c| if c.is_ascii_alphanumeric() || "_.-".contains(c) { c } else { '_' })
            .collect();
        let safe = safe.trim_start_matches('.');
        let both = canonical_json(&json!([self.server, self.source_hash()]));
        format!("{}-{}", if safe.is_empty() { "server" } else { safe }, &sha256_hex(both.as_bytes())[..16])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| (*w).to_owned()).collect()
    }

    #[test]
    fn name_and_command_together_make_the_identity() {
        let a = Identity::command("files", &argv(&["npx", "server-filesystem", "/tmp"]));
        let same = Identity::command("files", &argv(&["npx", "server-filesystem", "/tmp"]));
        let other_dir = Identity::command("files", &argv(&["npx", "server-filesystem", "/home"]));
        let other_name = Identity::command("files2", &argv(&["npx", "server-filesystem", "/tmp"]));
        let split = Identity::command("files", &argv(&["npx server-filesystem", "/tmp"]));
        assert_eq!(a.file_stem(), same.file_stem());
        for other in [&other_dir, &other_name, &split] {
            assert_ne!(a.file_stem(), other.file_stem(), "{other:?}");
        }
        assert_ne!(
            Identity::url("r", "https://a.example/mcp").file_stem(),
            Identity::url("r", "https://b.example/mcp").file_stem()
        );
    }

    #[test]
    fn file_names_are_safe_whatever_the_name() {
        for name in ["../../etc/passwd", "", "名前", ".hidden", "a/b\\c d"] {
            let stem = Identity::command(name, &argv(&["x"])).file_stem();
            assert!(stem.chars().all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c)), "{stem}");
            assert!(!stem.starts_with('.'), "{stem}");
        }
        assert_ne!(
            Identity::command("a/b", &argv(&["x"])).file_stem(),
            Identity::command("a_b", &argv(&["x"])).file_stem()
        );
    }
}
