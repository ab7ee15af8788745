//! Self-protection: no tool call writes, moves or deletes clawai's own files (the policy,
//! approvals, pins, the audit trail) or the MCP clients' configuration files, whatever
//! the policy says. An agent that could edit `~/.cursor/mcp.json` or the policy could
//! switch clawai off; reads of those files follow the policy as any read does.
//!
//! A call is a *read* when its tool's name says it reads or lists (`read_file`,
//! `list_directory`, `get_config`) or the server marks the tool read-only; every other
//! call is checked. Its arguments are matched the way the policy matches `any_arg` (every
//! string at any depth, `..`, `~`, `file://`, percent-encoding, relative paths in the
//! working directory, and symbolic links when the guard follows them), and also each
//! word of a string that reads as a command line (`sh -c "echo x > ~/.cursor/mcp.json"`).
//! A call that deletes or moves (by its name) is also refused on a directory that holds
//! a protected file (`rm -r ~/.config`). A command line built at run time (variables,
//! `$(…)`) cannot be seen through: the starter policy asks a person before any command.

use clawai_protocol::methods;
use std::path::{Path, PathBuf};

use clawai_policy::operation::{Operation, detect};
use clawai_policy::{Call, Decision, Format, Policy, load_str};
use clawai_protocol::Json;
use serde_json::Value;

/// The id refusals carry in the audit trail and in the message the model reads.
pub const RULE_ID: &str = "self-protection";

/// One protected path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// An absolute path.
    pub path: PathBuf,
    /// A directory: everything under it is protected too.
    pub tree: bool,
}

impl Protected {
    /// A file (and, for the audit trail, the rotated files beside it are named apart).
    pub fn file(path: impl Into<PathBuf>) -> Protected {
        Protected { path: path.into(), tree: false }
    }

    /// A directory and everything under it.
    pub fn tree(path: impl Into<PathBuf>) -> Protected {
        Protected { path: path.into(), tree: true }
    }
}

/// The self-protection stage: the protected paths as two fixed deny rules, decided
/// before the policy.
pub struct SelfProtection {
    /// Denies a call with an argument that is, or leads to, a protected path.
    files: Policy,
    /// Denies a call with an argument that is a directory holding a protected path.
    holders: Policy,
    protected: Vec<Protected>,
}

impl std::fmt::Debug for SelfProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SelfProtection").field("protected", &self.protected).finish_non_exhaustive()
    }
}

impl SelfProtection {
    /// Protects `protected` (relative paths are ignored: every path clawai uses is
    /// resolved before it gets here).
    pub fn new(protected: Vec<Protected>) -> SelfProtection {
        let protected: Vec<Protected> = protected.into_iter().filter(|p| p.path.is_absolute()).collect();
        let mut files = Vec::new();
        let mut holders = Vec::new();
        for item in &protected {
            let path = glob_text(&item.path);
            if item.tree {
                files.push(format!("{}/**", path.trim_end_matches('/')));
            } else {
                files.push(path);
            }
            for ancestor in item.path.ancestors().skip(1) {
                if ancestor.parent().is_some() {
                    holders.push(glob_text(ancestor));
                }
            }
        }
        holders.sort();
        holders.dedup();
        SelfProtection {
            files: deny_policy(
                &files,
                "clawai's own files and the MCP clients' configurations are never written, moved or deleted by a tool call",
            ),
            holders: deny_policy(
                &holders,
                "a directory holding clawai's own files or an MCP client's configuration is never deleted or moved by a tool call",
            ),
            protected,
        }
    }

    /// The protected paths.
    pub fn protected(&self) -> &[Protected] {
        &self.protected
    }

    /// The refusal of `call` when it would write, move or delete a protected path;
    /// `None` for any other call (which the policy decides).
    pub fn refuses<'s>(&'s self, call: &Call<'_>) -> Option<Decision<'s>> {
        if call.method != methods::TOOLS_CALL {
            return None;
        }
        let operation = detect(call.name.unwrap_or_default()).operation;
        let read = matches!(operation, Operation::Read | Operation::List)
            || call.annotations.is_some_and(|annotations| annotations.is_read_only());
        if read {
            return None;
        }
        let arguments = call.arguments?;
        let deny = |policy: &'s Policy, arguments: &Json<'_>| {
            let decision = policy.decide(&Call { arguments: Some(arguments), ..*call });
            (decision.rule.is_some()).then_some(decision)
        };
        if let Some(refused) = deny(&self.files, arguments) {
            return Some(refused);
        }
        let words = command_words(arguments);
        if !words.is_empty() {
            let words = Value::Array(words.into_iter().map(Value::String).collect());
            if let Some(refused) = deny(&self.files, &Json::from(&words)) {
                return Some(refused);
            }
        }
        if matches!(operation, Operation::Delete | Operation::Update) {
            return deny(&self.holders, arguments);
        }
        None
    }
}

/// A policy of one deny rule over `globs`, links followed, everything else allowed.
fn deny_policy(globs: &[String], description: &str) -> Policy {
    let text = if globs.is_empty() {
        "[defaults]\naction = \"allow\"\n".to_owned()
    } else {
        let globs: Vec<String> = globs.iter().map(|g| serde_json::to_string(g).expect("a string encodes")).collect();
        format!(
            "[defaults]\naction = \"allow\"\nfollow_links = true\n\n[[rule]]\nid = \"{RULE_ID}\"\naction = \"deny\"\n\
             tool = \"**\"\nany_arg = [{}]\ndescription = {}\n",
            globs.join(", "),
            serde_json::to_string(description).expect("a string encodes"),
        )
    };
    load_str(&text, Format::Toml, "clawai self-protection").expect("the self-protection rules load")
}

/// A path as a glob that matches it: clawai's globs have no escapes, so `*` and `?` in
/// a name become `?` (a deny matching a little more than the one name).
fn glob_text(path: &Path) -> String {
    path.to_string_lossy().replace('*', "?")
}

/// The words of every string in `arguments` that reads as a command line (it has a
/// blank or a shell operator): `echo x > ~/.cursor/mcp.json` gives `~/.cursor/mcp.json`
/// among others; `--config=/x` gives `/x`.
fn command_words(arguments: &Json<'_>) -> Vec<String> {
    let mut words = Vec::new();
    collect_words(arguments, &mut words);
    words
}

fn collect_words(value: &Json<'_>, words: &mut Vec<String>) {
    const SEPARATORS: &[char] = &[' ', '\t', '\n', '\r', ';', '|', '&', '<', '>', '(', ')', '\'', '"', '`', '='];
    match value {
        Json::String(text) if text.contains(SEPARATORS) => {
            words.extend(text.split(SEPARATORS).filter(|word| !word.is_empty()).map(str::to_owned));
        }
        Json::Array(items) => items.iter().for_each(|item| collect_words(item, words)),
        Json::Object(members) => members.iter().for_each(|(_, item)| collect_words(item, words)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawai_policy::ToolAnnotations;
    use serde_json::json;

    /// The test's home: `~` in arguments is read as `$HOME`.
    fn home() -> String {
        std::env::var("HOME").expect("a home directory")
    }

    fn protection() -> SelfProtection {
        let home = home();
        SelfProtection::new(vec![
            Protected::file(format!("{home}/.cursor/mcp.json")),
            Protected::tree(format!("{home}/.config/clawai")),
            Protected::file(format!("{home}/.local/state/clawai/audit.jsonl")),
            Protected::file("relative/ignored.json"),
        ])
    }

    /// `/home/u/…` in a test's text is the test's home.
    fn at_home(value: Value) -> Value {
        serde_json::from_str(&value.to_string().replace("/home/u", &home())).unwrap()
    }

    fn refused(protection: &SelfProtection, tool: &str, arguments: Value) -> bool {
        let params = json!({"name": tool, "arguments": at_home(arguments)});
        let params = Json::from(&params);
        let call = Call::from_params("tools/call", Some(&params));
        protection.refuses(&call).is_some_and(|d| d.rule_id() == Some(RULE_ID))
    }

    #[test]
    fn writes_moves_and_deletes_of_protected_files_are_refused() {
        let p = protection();
        assert!(refused(&p, "write_file", json!({"path": "/home/u/.cursor/mcp.json", "content": "{}"})));
        assert!(refused(&p, "edit_file", json!({"path": "/home/u/.config/clawai/policy.toml"})));
        assert!(refused(
            &p,
            "move_file",
            json!({"source": "/home/u/.local/state/clawai/audit.jsonl", "destination": "/tmp/x"})
        ));
        assert!(refused(&p, "delete_file", json!({"paths": ["/tmp/a", "/home/u/.config/clawai/approvals.toml"]})));
        // Spelled otherwise: `..`, percent-encoding, a file: URL.
        assert!(refused(&p, "write_file", json!({"path": "/home/u/project/../.cursor/mcp.json"})));
        assert!(refused(&p, "write_file", json!({"path": "/home/u/.config/clawai/%70olicy.toml"})));
        assert!(refused(&p, "upload", json!({"target": "file:///home/u/.cursor/mcp.json"})));
    }

    #[test]
    fn reads_follow_the_policy() {
        let p = protection();
        assert!(!refused(&p, "read_file", json!({"path": "/home/u/.config/clawai/policy.toml"})));
        assert!(!refused(&p, "list_directory", json!({"path": "/home/u/.config/clawai"})));
        let params = at_home(json!({"name": "mystery", "arguments": {"path": "/home/u/.cursor/mcp.json"}}));
        let params = Json::from(&params);
        let read_only = ToolAnnotations { read_only_hint: Some(true), destructive_hint: None };
        let call = Call::from_params("tools/call", Some(&params));
        assert!(protection().refuses(&call).is_some(), "an unknown tool is not taken for a read");
        assert!(protection().refuses(&call.with_annotations(Some(read_only))).is_none(), "a read-only tool reads");
    }

    #[test]
    fn command_lines_are_read_word_by_word() {
        let p = protection();
        assert!(refused(&p, "exec_shell", json!({"command": "echo '{}' > ~/.cursor/mcp.json", "shell": true})));
        assert!(refused(
            &p,
            "exec_shell",
            json!({"command": "rm", "args": ["-f", "/home/u/.local/state/clawai/audit.jsonl"]})
        ));
        assert!(refused(&p, "run", json!({"cmd": "cp x --target=/home/u/.config/clawai/policy.toml"})));
        assert!(!refused(&p, "exec_shell", json!({"command": "cat notes.txt > /tmp/copy"})));
    }

    #[test]
    fn a_directory_holding_protected_files_is_not_deleted_or_moved() {
        let p = protection();
        assert!(refused(&p, "delete_directory", json!({"path": "/home/u/.config"})));
        assert!(refused(&p, "move_file", json!({"source": "/home/u/.cursor", "destination": "/tmp/c"})));
        // Writing into such a directory (another file) is the policy's business.
        assert!(!refused(&p, "write_file", json!({"path": "/home/u/.config/other.toml"})));
        assert!(!refused(&p, "delete_file", json!({"path": "/home/u/.config/other.toml"})));
        assert!(!refused(&p, "delete_directory", json!({"path": "/"})), "the root is not a holder");
        assert!(refused(&p, "delete_directory", json!({"path": "~/.config"})));
    }

    #[test]
    fn other_methods_and_plain_files_pass() {
        let p = protection();
        assert!(!refused(&p, "write_file", json!({"path": "/home/u/project/notes.md"})));
        let params = at_home(json!({"uri": "file:///home/u/.cursor/mcp.json"}));
        let params = Json::from(&params);
        assert!(p.refuses(&Call::from_params("resources/read", Some(&params))).is_none());
        assert_eq!(p.protected().len(), 3, "relative paths are left out");
    }
}
