//! The starter policy `clawai scan --policy-out` writes from the tools the servers
//! listed: reads allowed; writes, tools marked destructive and whatever the name does
//! not tell asked about; deletions, commands and tools with poisoning findings denied. Operations are read from tool names by the policy engine's own detector, so
//! the policy's `operation` rules and this file agree.

use std::collections::HashSet;
use std::fmt::Write as _;

use clawai_policy::operation::{Operation, detect};
use serde_json::Value;

/// One server's tools, and which of them had findings at or above `--fail-on`.
pub(crate) struct ServerTools<'a> {
    pub(crate) name: &'a str,
    pub(crate) tools: &'a [Value],
    pub(crate) flagged: HashSet<&'a str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Deny,
    Prompt,
    Allow,
}

/// What the starter policy does with one tool.
fn verdict(tool: &Value, flagged: bool) -> Verdict {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
    let hint = |key: &str| tool.pointer(&format!("/annotations/{key}")).and_then(Value::as_bool);
    let operation = detect(name).operation;
    if flagged || matches!(operation, Operation::Delete | Operation::Execute) {
        return Verdict::Deny;
    }
    // A tool the server marks destructive (a write that overwrites) is asked about, even
    // when its name reads.
    let reads = matches!(operation, Operation::Read | Operation::List)
        || (operation == Operation::Unknown && hint("readOnlyHint") == Some(true));
    if reads && hint("destructiveHint") != Some(true) { Verdict::Allow } else { Verdict::Prompt }
}

/// A TOML basic string.
fn quoted(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A name the policy would read as a glob is left out (such a name is a finding of its
/// own, and the default denies it).
fn literal(name: &str) -> bool {
    !name.is_empty() && !name.contains(['*', '?', '[', ']', '{', '}', '\\'])
}

const HEADER: &str = r#"# Starter policy written by `clawai scan` from the tools the servers listed.
# Reads are allowed; writes and tools the server marks destructive ask a person;
# deletions, commands and tools with poisoning findings are denied; a tool not listed
# here (added later) is denied by default. Review it, then `clawai policy check` it.

[defaults]
action = "deny"

"#;

/// What follows the credential rules (the starter policy's own) after [`HEADER`].
const AFTER_CREDENTIALS: &str = r#"
[[rule]]
id = "read-resources-and-prompts"
action = "allow"
method = ["resources/read", "prompts/get"]
description = "Reading resources and getting prompts is a read"

[[rule]]
id = "audit-sampling"
action = "audit"
method = ["sampling/createMessage", "elicitation/create"]
description = "A server asked the client's model or the person; allowed and marked"
"#;

/// The policy's text.
pub(crate) fn starter_policy(servers: &[ServerTools<'_>]) -> String {
    let mut out = String::from(HEADER);
    out.push_str(clawai_policy::starter::CREDENTIAL_RULES);
    out.push_str(AFTER_CREDENTIALS);
    for server in servers {
        let mut groups: [(Verdict, &str, &str, Vec<&str>); 3] = [
            (Verdict::Deny, "deny", "Deletes, runs commands, or has poisoning findings", vec![]),
            (
                Verdict::Prompt,
                "prompt",
                "Writes, changes or may destroy something: a person approves each call",
                vec![],
            ),
            (Verdict::Allow, "allow", "Reads", vec![]),
        ];
        for tool in server.tools {
            let Some(name) = tool.get("name").and_then(Value::as_str).filter(|name| literal(name)) else { continue };
            let verdict = verdict(tool, server.flagged.contains(name));
            if let Some(group) = groups.iter_mut().find(|group| group.0 == verdict) {
                group.3.push(name);
            }
        }
        let _ = writeln!(out, "\n# --- {} ---", server.name.replace(['\n', '\r'], " "));
        for (_, action, description, tools) in &groups {
            if tools.is_empty() {
                continue;
            }
            let list: Vec<String> = tools.iter().map(|t| quoted(t)).collect();
            let _ = write!(
                out,
                "\n[[rule]]\nid = {}\naction = \"{action}\"\nserver = {}\ntools = [{}]\ndescription = {}\n",
                quoted(&format!("{}-{action}", server.name)),
                quoted(server.name),
                list.join(", "),
                quoted(description),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdicts_follow_operations_and_annotations() {
        let tool = |name: &str, annotations: Value| json!({"name": name, "annotations": annotations});
        assert_eq!(verdict(&tool("read_file", json!({})), false), Verdict::Allow);
        assert_eq!(verdict(&tool("list_directory", json!({})), false), Verdict::Allow);
        assert_eq!(verdict(&tool("write_file", json!({})), false), Verdict::Prompt);
        assert_eq!(verdict(&tool("delete_repo", json!({})), false), Verdict::Deny);
        assert_eq!(verdict(&tool("run_command", json!({})), false), Verdict::Deny);
        assert_eq!(verdict(&tool("echo", json!({})), false), Verdict::Prompt);
        assert_eq!(verdict(&tool("echo", json!({"readOnlyHint": true})), false), Verdict::Allow);
        assert_eq!(verdict(&tool("get_thing", json!({"destructiveHint": true})), false), Verdict::Prompt);
        assert_eq!(verdict(&tool("write_file", json!({"destructiveHint": true})), false), Verdict::Prompt);
        assert_eq!(verdict(&tool("read_file", json!({})), true), Verdict::Deny);
    }

    #[test]
    fn the_policy_loads() {
        let tools = [
            json!({"name": "read_file"}),
            json!({"name": "write\"file"}),
            json!({"name": "rm*"}),
            json!({"name": "exec"}),
        ];
        let text = starter_policy(&[ServerTools { name: "fs \"x\"", tools: &tools, flagged: HashSet::new() }]);
        let policy = clawai_policy::load_str(&text, clawai_policy::Format::Toml, "starter.toml").expect("loads");
        assert_eq!(policy.rules().len(), 4 + 3, "{text}");
        assert!(!text.contains("rm*"));
    }
}
