use super::*;

#[test]
fn candidates_come_out_in_order_without_duplicates_on_the_stack_or_spilled() {
    for count in [0, 1, 5, INLINE_CANDIDATES, INLINE_CANDIDATES + 1, 50] {
        let pushed: Vec<usize> = (0..count).map(|k| (k * 7919) % 23).collect();
        let mut candidates = Candidates::new();
        pushed.iter().for_each(|&i| candidates.push(i));
        let mut expected = pushed.clone();
        expected.sort_unstable();
        expected.dedup();
        assert_eq!(candidates.in_order(), expected.as_slice(), "{count} pushed");
    }
}

fn always_denied(policy: &str, server: &str, tool: &str, destructive: Option<bool>) -> Option<String> {
    let policy = crate::load_str(policy, crate::Format::Toml, "test").expect("a valid policy");
    let call = Call {
        method: "tools/call",
        name: Some(tool),
        arguments: None,
        server: Some(server),
        annotations: Some(crate::ToolAnnotations { read_only_hint: None, destructive_hint: destructive }),
        follow_links: None,
    };
    policy.denies_whatever_the_arguments(&call).map(|d| d.rule_id().unwrap_or("default").to_owned())
}

#[test]
fn a_tool_is_always_denied_only_when_no_arguments_could_get_it_through() {
    let policy = r#"
[defaults]
action = "allow"

[[rule]]
id = "no-delete"
action = "deny"
server = "a"
tool = "delete_*"

[[rule]]
id = "shell-only-ls"
action = "allow"
tool = "shell"
args.command = "ls"

[[rule]]
id = "no-shell"
action = "deny"
tool = "shell"

[[rule]]
id = "no-ssh"
action = "deny"
any_arg = "**/.ssh/**"
tool = "read_file"

[[rule]]
id = "no-destructive"
action = "deny"
destructive = true
tool = "wipe*"
"#;
    assert_eq!(always_denied(policy, "a", "delete_all", None).as_deref(), Some("no-delete"));
    // The server is another: the rule does not apply.
    assert_eq!(always_denied(policy, "b", "delete_all", None), None);
    // An allow with argument conditions comes first: `ls` gets through.
    assert_eq!(always_denied(policy, "a", "shell", None), None);
    // A deny that reads arguments denies some calls only.
    assert_eq!(always_denied(policy, "a", "read_file", None), None);
    // Annotations count: a tool that says it is read-only is not destructive.
    assert_eq!(always_denied(policy, "a", "wipe", None).as_deref(), Some("no-destructive"));
    assert_eq!(always_denied(policy, "a", "wipe", Some(false)), None);
    // A default deny denies what no rule allows.
    let deny_by_default = "[defaults]\naction = \"deny\"\n[[rule]]\nid = \"ok\"\naction = \"allow\"\ntool = \"echo\"\n";
    assert_eq!(always_denied(deny_by_default, "a", "other", None).as_deref(), Some("default"));
    assert_eq!(always_denied(deny_by_default, "a", "echo", None), None);
}
