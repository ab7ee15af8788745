//! The operation detector: what a tool does, read from its name (seed 003).
//!
//! `github_delete_repo` → service `github`, operation `delete`. Names are split on `_`,
//! `-`, `.`, `/`, spaces and camelCase boundaries; the service is the first word when it
//! is not a verb. When a name holds several verbs the most dangerous one wins, so
//! `list_then_drop_table` is a delete, not a read.

use std::fmt;
use std::str::FromStr;

pub mod mcpgov;

/// What a tool does, as far as its name tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
    /// Reads data (get, read, fetch, search, view…).
    Read,
    /// Lists things (list, ls, enumerate); also a read.
    List,
    /// Creates something new (create, add, new, insert…); also a write.
    Create,
    /// Changes something that exists (update, edit, patch, rename, move…); also a write.
    Update,
    /// Writes data (write, save, upload, send, push…).
    Write,
    /// Deletes (delete, remove, rm, drop, destroy, purge…).
    Delete,
    /// Runs code or commands (execute, exec, run, shell, eval…).
    Execute,
    /// Changes permissions or settings (admin, grant, chmod, configure…).
    Admin,
    /// The name says nothing the detector knows.
    Unknown,
}

impl Operation {
    /// Every operation a policy may name, in the order shown in messages.
    pub const ALL: [Operation; 9] = [
        Operation::Read,
        Operation::List,
        Operation::Create,
        Operation::Update,
        Operation::Write,
        Operation::Delete,
        Operation::Execute,
        Operation::Admin,
        Operation::Unknown,
    ];

    /// The lower-case name used in policies.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Read => "read",
            Operation::List => "list",
            Operation::Create => "create",
            Operation::Update => "update",
            Operation::Write => "write",
            Operation::Delete => "delete",
            Operation::Execute => "execute",
            Operation::Admin => "admin",
            Operation::Unknown => "unknown",
        }
    }

    /// True when a rule naming `self` covers a tool detected as `detected`: `read`
    /// includes `list`; `write` includes `create` and `update` (but not `delete`).
    pub fn includes(self, detected: Operation) -> bool {
        self == detected
            || (self == Operation::Read && detected == Operation::List)
            || (self == Operation::Write && matches!(detected, Operation::Create | Operation::Update))
    }

    /// How dangerous the operation is; the detector keeps the highest.
    fn severity(self) -> u8 {
        match self {
            Operation::Unknown => 0,
            Operation::List => 1,
            Operation::Read => 2,
            Operation::Create => 3,
            Operation::Update => 4,
            Operation::Write => 5,
            Operation::Admin => 6,
            Operation::Execute => 7,
            Operation::Delete => 8,
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Operation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Operation::ALL.into_iter().find(|op| op.as_str() == s).ok_or_else(|| {
            let names: Vec<&str> = Operation::ALL.iter().map(|o| o.as_str()).collect();
            format!("unknown operation `{s}`; expected one of {}", names.join(", "))
        })
    }
}

/// A tool name read as service and operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolKind {
    /// The service prefix (`github` in `github_delete_repo`), if the name starts with one.
    pub service: Option<String>,
    /// The most dangerous operation named.
    pub operation: Operation,
}

fn verb(word: &str) -> Option<Operation> {
    use Operation::*;
    Some(match word {
        "delete" | "del" | "remove" | "rm" | "rmdir" | "drop" | "destroy" | "purge" | "erase" | "unlink"
        | "truncate" | "wipe" | "trash" | "clear" | "kill" | "terminate" | "revoke" | "prune" | "uninstall"
        | "unset" | "shred" | "nuke" | "reset" | "shutdown" | "stop" | "halt" | "abort" | "cancel" => Delete,
        "execute" | "exec" | "run" | "shell" | "bash" | "sh" | "eval" | "evaluate" | "invoke" | "spawn" | "cmd"
        | "command" | "terminal" | "script" | "launch" | "start" | "trigger" | "process" | "dispatch" => Execute,
        "admin" | "grant" | "chmod" | "chown" | "permission" | "permissions" | "configure" | "config" | "sudo"
        | "role" | "roles" | "invite" | "ban" | "manage" | "provision" => Admin,
        "write" | "save" | "put" | "upload" | "send" | "post" | "push" | "publish" | "store" | "append" | "commit"
        | "merge" | "deploy" | "set" | "replace" | "overwrite" | "import" | "sync" | "restore" | "train" => Write,
        "update" | "edit" | "patch" | "modify" | "change" | "rename" | "move" | "mv" | "upsert" | "close"
        | "archive" | "assign" | "transfer" => Update,
        "create" | "add" | "new" | "insert" | "make" | "mkdir" | "touch" | "fork" | "copy" | "cp" | "init"
        | "generate" | "register" => Create,
        "list" | "ls" | "enumerate" | "browse" | "tree" | "directory" => List,
        "get" | "read" | "open" | "fetch" | "search" | "find" | "query" | "view" | "show" | "describe" | "cat"
        | "head" | "tail" | "download" | "lookup" | "inspect" | "check" | "stat" | "info" | "count" | "export"
        | "retrieve" | "load" | "select" | "grep" | "scan" | "watch" | "status" | "diff" | "log" | "logs" | "glob"
        | "health" | "stats" | "metrics" | "summary" | "history" | "progress" | "analyze" | "predict" => Read,
        _ => return None,
    })
}

/// Splits a tool name into lower-case words: snake, kebab, dotted and camel case.
pub fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let chars: Vec<char> = name.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                out.push(std::mem::take(&mut current));
            }
            continue;
        }
        let boundary = c.is_uppercase()
            && i > 0
            && (chars[i - 1].is_lowercase()
                || chars[i - 1].is_ascii_digit()
                || (chars[i - 1].is_uppercase() && chars.get(i + 1).is_some_and(|n| n.is_lowercase())));
        if boundary && !current.is_empty() {
            out.push(std::mem::take(&mut current));
        }
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

/// Reads a tool name into service and operation.
pub fn detect(name: &str) -> ToolKind {
    let words = words(name);
    let operation = words.iter().filter_map(|w| verb(w)).max_by_key(|op| op.severity()).unwrap_or(Operation::Unknown);
    let service = match words.first() {
        Some(first) if words.len() > 1 && verb(first).is_none() => Some(first.clone()),
        _ => None,
    };
    ToolKind { service, operation }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(name: &str) -> Operation {
        detect(name).operation
    }

    #[test]
    fn seed_examples() {
        assert_eq!(
            detect("github_delete_repo"),
            ToolKind { service: Some("github".into()), operation: Operation::Delete }
        );
        assert_eq!(detect("github_list_repos").operation, Operation::List);
        assert!(Operation::Read.includes(op("github_list_repos")));
    }

    #[test]
    fn cases_and_synonyms() {
        assert_eq!(op("deleteRepository"), Operation::Delete);
        assert_eq!(op("remove-file"), Operation::Delete);
        assert_eq!(op("dropTable"), Operation::Delete);
        assert_eq!(op("fs.rm"), Operation::Delete);
        assert_eq!(op("DestroyVM"), Operation::Delete);
        assert_eq!(op("read_file"), Operation::Read);
        assert_eq!(op("write_file"), Operation::Write);
        assert_eq!(op("create_directory"), Operation::Create);
        assert_eq!(op("move_file"), Operation::Update);
        assert_eq!(op("run_shell_command"), Operation::Execute);
        assert_eq!(op("HTTPGetRequest"), Operation::Read);
        assert_eq!(op("echo"), Operation::Unknown);
        assert_eq!(detect("delete_file").service, None);
        assert_eq!(detect("slackPostMessage").service.as_deref(), Some("slack"));
    }

    #[test]
    fn most_dangerous_verb_wins() {
        assert_eq!(op("list_then_drop_table"), Operation::Delete);
        assert_eq!(op("get_and_execute"), Operation::Execute);
    }

    #[test]
    fn families() {
        assert!(Operation::Write.includes(Operation::Create));
        assert!(Operation::Write.includes(Operation::Update));
        assert!(!Operation::Write.includes(Operation::Delete));
        assert!(!Operation::Read.includes(Operation::Write));
        assert!("delete".parse::<Operation>().is_ok());
        assert!("nuke".parse::<Operation>().is_err());
    }
}
