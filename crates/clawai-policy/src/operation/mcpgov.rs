//! mcp-gov's reading of a tool name, for policies imported from mcp-gov (`detector =
//! "mcp-gov"` on a rule): the operation is the first kind, in the order admin, delete,
//! execute, write, read, that has a keyword *anywhere* in the lower-cased name (a
//! substring test, so `api_search_records` is a write because of `record`), and `write`
//! when none has; the service is the server's name, else the name's first `_`-separated
//! part when there are several, else `unknown`.
//!
//! This is deliberately not clawai's own detector ([`super::detect`]), which reads whole
//! words: an imported policy must decide every call as mcp-gov decided it.

use super::Operation;

/// mcp-gov's operations, in the order its detector tries them, with their keywords.
const KEYWORDS: [(Operation, &[&str]); 5] = [
    (
        Operation::Admin,
        &[
            "admin", "superuser", "root", "sudo", "elevate", "privilege", "grant", "revoke", "permission", "role",
            "access", "policy", "configure", "config", "setting", "preference", "setup", "initialize", "init",
            "bootstrap", "install", "uninstall", "enable", "disable", "activate", "deactivate", "toggle", "migrate",
            "migration", "backup", "restore", "export", "import", "deploy", "deployment", "provision", "manage",
            "management",
        ],
    ),
    (
        Operation::Delete,
        &[
            "delete", "remove", "destroy", "erase", "clear", "purge", "drop", "truncate", "unlink", "discard",
            "revoke", "cancel", "terminate", "kill", "stop", "abort", "close", "shutdown", "deactivate", "disable",
            "detach", "disconnect", "unpublish", "archive", "trash", "clean", "wipe", "reset", "revert",
        ],
    ),
    (
        Operation::Execute,
        &[
            "execute", "run", "invoke", "call", "trigger", "fire", "launch", "start", "begin", "process", "perform",
            "apply", "send", "submit", "post", "publish", "deploy", "release", "build", "compile", "generate",
            "compute", "calculate", "merge", "rebase", "commit", "push", "pull", "sync", "approve", "reject",
            "accept", "decline", "confirm", "schedule", "queue", "enqueue", "dispatch", "broadcast", "notify",
            "alert", "activate", "deactivate", "lock", "unlock", "freeze", "unfreeze", "suspend", "resume",
        ],
    ),
    (
        Operation::Write,
        &[
            "create", "add", "insert", "new", "make", "build", "write", "save", "store", "persist", "record",
            "update", "modify", "edit", "change", "alter", "set", "put", "patch", "replace", "overwrite", "append",
            "upload", "push", "commit", "submit", "publish", "move", "rename", "copy", "duplicate", "clone",
            "attach", "link", "associate", "bind", "connect", "assign", "allocate", "register", "enroll",
            "subscribe", "comment", "reply", "respond", "post", "share", "transfer", "migrate", "convert",
            "transform", "fork", "branch", "tag", "label", "mark", "star", "favorite", "like", "follow", "watch",
            "open", "reopen", "draft", "issue", "pr", "pull_request",
        ],
    ),
    (
        Operation::Read,
        &[
            "get", "list", "fetch", "retrieve", "query", "find", "search", "lookup", "check", "verify", "validate",
            "read", "view", "show", "display", "print", "render", "describe", "info", "detail", "summary", "status",
            "count", "total", "aggregate", "stats", "statistics", "download", "export", "extract", "parse",
            "decode", "inspect", "audit", "log", "trace", "monitor", "compare", "diff", "match", "filter", "sort",
            "scan", "analyze", "review", "preview", "browse", "watch", "observe", "listen", "subscribe", "poll",
            "test", "ping", "health", "heartbeat",
        ],
    ),
];

/// The operations mcp-gov knows; a rule naming another one never matches there.
pub const MCPGOV_OPERATIONS: [Operation; 5] =
    [Operation::Read, Operation::Write, Operation::Delete, Operation::Execute, Operation::Admin];

/// The operation mcp-gov's detector reads in a tool name.
pub fn operation(name: &str) -> Operation {
    let lower = name.to_lowercase();
    KEYWORDS
        .iter()
        .find(|(_, words)| words.iter().any(|w| lower.contains(w)))
        .map_or(Operation::Write, |(op, _)| *op)
}

/// The service mcp-gov reads for a call: the server's name (mcp-gov's `--service`, which
/// its wrapper sets to the server's name), else the tool name's first `_`-separated part
/// as written, else `unknown`.
pub fn service<'a>(server: Option<&'a str>, name: &'a str) -> &'a str {
    match server {
        Some(s) => s,
        None => match name.split_once('_') {
            Some((first, _)) => first,
            None => "unknown",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every example mcp-gov's README and docs give, with the operation its detector
    /// really returns for it.
    #[test]
    fn documented_examples_read_as_mcp_gov_reads_them() {
        let cases = [
            ("github_list_repos", Operation::Read),
            ("github_delete_repo", Operation::Delete),
            ("github_create_issue", Operation::Write),
            ("github_update_issue", Operation::Write),
            ("github_get_user", Operation::Read),
            ("api_search_records", Operation::Write),
            ("api_patch_resource", Operation::Write),
            ("api_get_user", Operation::Read),
            ("todoist_list_tasks", Operation::Read),
            ("gmail_send_email", Operation::Execute),
            ("notion_delete_page", Operation::Delete),
            ("salesforce_manage_users", Operation::Admin),
            ("stripe_process_payment", Operation::Execute),
            ("slack_post_message", Operation::Execute),
            ("db_drop_table", Operation::Delete),
            ("aws_provision_server", Operation::Admin),
            ("jenkins_trigger_build", Operation::Execute),
            ("lambda_invoke_function", Operation::Execute),
            ("cache_clear_all", Operation::Delete),
            ("github_manage_settings", Operation::Admin),
            ("salesforce_grant_permission", Operation::Admin),
            ("admin_create_user", Operation::Admin),
            ("github_fork_and_clone", Operation::Write),
            ("todoist_uncomplete_task", Operation::Write),
            ("forget_password", Operation::Read),
            ("list_directory", Operation::Read),
            ("unknown_service_action", Operation::Write),
            ("echo", Operation::Write),
            ("exec_cmd", Operation::Write),
            ("get_definition", Operation::Admin),
        ];
        for (name, op) in cases {
            assert_eq!(operation(name), op, "{name}");
        }
    }

    #[test]
    fn the_service_is_the_server_else_the_first_part() {
        assert_eq!(service(Some("filesystem"), "list_directory"), "filesystem");
        assert_eq!(service(None, "list_directory"), "list");
        assert_eq!(service(None, "GitHub_list"), "GitHub");
        assert_eq!(service(None, "github-delete-repo"), "unknown");
    }
}
