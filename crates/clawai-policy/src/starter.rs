//! The policy `clawai policy init` writes: useful on day one, and a worked example of
//! the language.

/// The rules that keep credential files away from every tool and resource read, as the
/// starter policy writes them (`clawai scan --policy-out` writes the same).
macro_rules! credential_rules {
    () => {
        r#"[[rule]]
id = "no-credentials"
action = "deny"
tool = "**"
any_arg = [
  "**/.ssh/**", "**/.aws/**", "**/.gnupg/**", "**/.kube/config", "**/.docker/config.json",
  "**/.netrc", "**/.git-credentials", "**/.env", "**/.env.*",
  "**/*.pem", "**/*.key", "**/id_rsa*", "**/id_ed25519*", "**/id_ecdsa*",
]
description = "Never touch credential files (SSH, cloud, GPG, .env, private keys)"

[[rule]]
id = "no-credential-resources"
action = "deny"
resource = ["file:///**/.ssh/**", "file:///**/.aws/**", "file:///**/.gnupg/**", "file:///**/.env", "file:///**/*.pem", "file:///**/*.key"]
description = "Never read credential files as resources"
"#
    };
}

/// The credential rules alone (see [`STARTER_POLICY`]).
pub const CREDENTIAL_RULES: &str = credential_rules!();

/// The starter policy's text.
pub const STARTER_POLICY: &str = concat!(
    r#"# clawai policy: the first rule that matches a message decides.
# Actions: allow | deny | prompt (ask the person) | audit (allow and mark for review).
# Check it with `clawai policy check`, try a call with `clawai policy explain`.

[defaults]
action = "deny"                     # when no rule matches
follow_links = true                 # rules also see where symbolic links lead

# --- Credentials never leave the machine -------------------------------------------
# any_arg is tried on every string in the arguments, at any depth, after paths are
# normalised (`..`, `//`, percent-encoding), so `/home/u/p/../../.ssh/id_rsa` is caught.
"#,
    credential_rules!(),
    r#"
# --- Ask before anything that deletes, runs or changes --------------------------------
# `operation` reads the tool name (delete_file, dropTable, github_delete_repo, Bash…).
# `destructive` and `read_only` read the MCP annotations a server declares in tools/list;
# `annotated = false` picks the tools whose server declares neither (many servers
# declare nothing: those are decided by what their names say).
[[rule]]
id = "ask-before-delete"
action = "prompt"
operation = ["delete", "execute"]
description = "Deleting or running commands needs a person's approval"

[[rule]]
id = "ask-before-destructive"
action = "prompt"
annotated = true
destructive = true
description = "The server's annotations say this tool may change or delete data"

[[rule]]
id = "ask-before-unannotated-write"
action = "prompt"
annotated = false
operation = ["write", "admin"]
description = "The server does not say whether this tool changes anything, and its name reads as a write"

# A tool whose server declares nothing and whose name does not tell (agent_pool,
# swarm_health: half of claude-flow's) is allowed and marked by `audit-the-rest` below:
# what a server says of its tools, name or annotation, is its own word either way. To be
# asked about those too, uncomment:
# [[rule]]
# id = "ask-before-unannotated-unknown"
# action = "prompt"
# annotated = false
# operation = "unknown"
# description = "The server does not say whether this tool changes anything, and its name does not tell"

# --- Servers asking the model or the person ----------------------------------------
[[rule]]
id = "audit-sampling"
action = "audit"
method = ["sampling/createMessage", "elicitation/create"]
description = "A server asked the client's model or the person; allowed and marked"

# --- Everything else: allowed, and marked in the audit trail -------------------------
[[rule]]
id = "audit-the-rest"
action = "audit"
method = ["tools/call", "resources/read", "prompts/get"]
description = "Allowed and marked for review"
"#
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Action, Call, Format, ToolAnnotations, load_str};
    use clawai_protocol::Json;
    use serde_json::json;

    #[test]
    fn starter_policy_loads_and_decides_as_documented() {
        let p = load_str(STARTER_POLICY, Format::Toml, "starter").unwrap();
        let decide = |name: &str, args: serde_json::Value, ann: Option<ToolAnnotations>| {
            let params = json!({"name": name, "arguments": args});
            p.decide(&Call::from_params("tools/call", Some(&Json::from(&params))).with_annotations(ann)).action
        };
        let ro = Some(ToolAnnotations { read_only_hint: Some(true), destructive_hint: None });
        assert_eq!(decide("read_file", json!({"path": "/home/u/.ssh/id_rsa"}), ro), Action::Deny);
        assert_eq!(decide("read_file", json!({"path": "/home/u/p/../../u/.aws/credentials"}), ro), Action::Deny);
        assert_eq!(decide("read_file", json!({"path": "/srv/app/.env"}), ro), Action::Deny);
        assert_eq!(decide("delete_file", json!({"path": "/tmp/x"}), ro), Action::Prompt);
        assert_eq!(
            decide("write_file", json!({"path": "/tmp/x"}), None),
            Action::Prompt,
            "unannotated, a write by its name"
        );
        // Tools whose server says nothing of them (Claude Code, claude-flow) are decided
        // by their names: reads pass, writes, deletes, runs and names that say nothing ask.
        assert_eq!(decide("memory_retrieve", json!({"key": "k"}), None), Action::Audit);
        assert_eq!(decide("Read", json!({"file_path": "/home/u/p/a.rs"}), None), Action::Audit);
        assert_eq!(decide("search_code", json!({"q": "x"}), None), Action::Audit);
        assert_eq!(decide("Bash", json!({"command": "ls"}), None), Action::Prompt);
        assert_eq!(decide("Edit", json!({"file_path": "/tmp/x"}), None), Action::Prompt);
        assert_eq!(decide("swarm_frobnicate", json!({}), None), Action::Audit, "the name does not tell: marked");
        assert_eq!(decide("swarm_shutdown", json!({}), None), Action::Prompt, "ending something asks");
        assert_eq!(decide("memory_stats", json!({}), None), Action::Audit, "a read by its name");
        let said = |read_only_hint, destructive_hint| Some(ToolAnnotations { read_only_hint, destructive_hint });
        assert_eq!(
            decide("sync", json!({}), said(Some(false), None)),
            Action::Prompt,
            "annotated, destructive by default"
        );
        assert_eq!(
            decide("update_note", json!({}), said(None, Some(false))),
            Action::Audit,
            "annotated, not destructive"
        );
        assert_eq!(decide("frobnicate", json!({}), said(Some(true), None)), Action::Audit, "annotated read-only");
        let why = |name: &str, ann: Option<ToolAnnotations>| {
            let params = json!({"name": name, "arguments": {}});
            p.decide(&Call::from_params("tools/call", Some(&Json::from(&params))).with_annotations(ann))
                .reason()
                .to_owned()
        };
        assert!(
            why("Write", None).contains("does not say whether this tool changes anything"),
            "{}",
            why("Write", None)
        );
        assert!(
            why("sync", said(Some(false), None)).contains("annotations say"),
            "{}",
            why("sync", said(Some(false), None))
        );
        assert_eq!(decide("read_file", json!({"path": "/home/u/notes.txt"}), ro), Action::Audit);
        let res = json!({"uri": "file:///home/u/.ssh/id_rsa"});
        assert_eq!(p.decide(&Call::from_params("resources/read", Some(&Json::from(&res)))).action, Action::Deny);
        let res = json!({"uri": "file:///home/u/readme.md"});
        assert_eq!(p.decide(&Call::from_params("resources/read", Some(&Json::from(&res)))).action, Action::Audit);
        assert_eq!(
            p.decide(&Call::from_params("sampling/createMessage", Some(&Json::from(&json!({}))))).action,
            Action::Audit
        );
        // The proxy never decides roots/list: it passes, whatever the default says.
        assert_eq!(p.decide(&Call::from_params("roots/list", None)).action, Action::Allow);
    }
}
