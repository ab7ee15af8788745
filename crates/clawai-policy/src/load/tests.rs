use clawai_protocol::Json;
use serde_json::{Value, json};

use crate::{Action, Call, Format, Policy, PolicyError, ToolAnnotations, load_str};

fn policy(text: &str) -> Policy {
    load_str(text, Format::Toml, "test.toml").unwrap_or_else(|e| panic!("policy should load: {e}"))
}

fn error(text: &str) -> PolicyError {
    match load_str(text, Format::Toml, "test.toml") {
        Ok(_) => panic!("policy should be refused:\n{text}"),
        Err(e) => e,
    }
}

fn tool(p: &Policy, name: &str, args: Value) -> Action {
    let params = json!({"name": name, "arguments": args});
    p.decide(&Call::from_params("tools/call", Some(&Json::from(&params)))).action
}

fn tool_id(p: &Policy, name: &str, args: Value) -> Option<String> {
    let params = json!({"name": name, "arguments": args});
    p.decide(&Call::from_params("tools/call", Some(&Json::from(&params)))).rule_id().map(str::to_owned)
}

#[test]
fn first_match_wins_and_default_is_deny() {
    let p = policy(
        r#"
        [[rule]]
        id = "a"
        action = "deny"
        tool = "read_file"
        [[rule]]
        id = "b"
        action = "allow"
        tool = "read_*"
    "#,
    );
    assert_eq!(tool_id(&p, "read_file", json!({})).as_deref(), Some("a"));
    assert_eq!(tool_id(&p, "read_text", json!({})).as_deref(), Some("b"));
    assert_eq!(tool(&p, "write_file", json!({})), Action::Deny);
    assert_eq!(p.default_action(), Action::Deny);
    let d = p.decide(&Call::from_params("tools/call", Some(&Json::from(&json!({"name": "write_file"})))));
    assert!(d.rule.is_none());
    assert!(d.reason().contains("default"));
}

#[test]
fn defaults_action_applies_when_nothing_matches() {
    let p = policy("[defaults]\naction = \"audit\"\n[[rule]]\naction = \"deny\"\ntool = \"rm\"\n");
    assert_eq!(tool(&p, "ls", json!({})), Action::Audit);
    assert_eq!(tool(&p, "rm", json!({})), Action::Deny);
    let empty = policy("");
    assert_eq!(tool(&empty, "anything", json!({})), Action::Deny);
}

#[test]
fn every_action_parses() {
    for a in ["allow", "deny", "prompt", "audit"] {
        let p = policy(&format!("[[rule]]\naction = \"{a}\"\ntool = \"t\"\n"));
        assert_eq!(tool(&p, "t", json!({})).as_str(), a);
    }
}

#[test]
fn tools_list_and_regex_targets() {
    let p = policy(
        r#"
        [[rule]]
        action = "deny"
        tools = ["run_*", "exec"]
        [[rule]]
        action = "prompt"
        tool_regex = "^(?i)github_(delete|remove)_.*$"
        [[rule]]
        action = "allow"
        tool = "**"
    "#,
    );
    assert_eq!(tool(&p, "run_shell", json!({})), Action::Deny);
    assert_eq!(tool(&p, "exec", json!({})), Action::Deny);
    assert_eq!(tool(&p, "executor", json!({})), Action::Allow);
    assert_eq!(tool(&p, "GitHub_Delete_repo", json!({})), Action::Prompt);
    assert_eq!(tool(&p, "github_list_repos", json!({})), Action::Allow);
}

#[test]
fn each_target_only_matches_its_method() {
    let p = policy(
        r#"
        [[rule]]
        id = "t"
        action = "allow"
        tool = "**"
        [[rule]]
        id = "r"
        action = "allow"
        resource = "file:///srv/**"
        [[rule]]
        id = "p"
        action = "allow"
        prompt = "summar*"
        [[rule]]
        id = "m"
        action = "audit"
        method = "sampling/createMessage"
    "#,
    );
    let decide = |method: &str, params: Value| {
        p.decide(&Call::from_params(method, Some(&Json::from(&params)))).rule_id().map(str::to_owned)
    };
    assert_eq!(decide("tools/call", json!({"name": "x"})).as_deref(), Some("t"));
    assert_eq!(decide("resources/read", json!({"uri": "file:///srv/a.txt"})).as_deref(), Some("r"));
    assert_eq!(decide("resources/read", json!({"uri": "file:///etc/passwd"})), None);
    assert_eq!(decide("prompts/get", json!({"name": "summarize"})).as_deref(), Some("p"));
    assert_eq!(decide("prompts/get", json!({"name": "other"})), None);
    assert_eq!(decide("sampling/createMessage", json!({})).as_deref(), Some("m"));
    assert_eq!(decide("elicitation/create", json!({})), None);
    // A tool named like a resource or prompt is still only a tool.
    assert_eq!(decide("resources/read", json!({"uri": "x", "name": "x"})), None);
}

#[test]
fn resource_uris_are_normalised() {
    let p = policy(
        r#"
        [[rule]]
        action = "deny"
        resource = "file:///etc/**"
        [[rule]]
        action = "allow"
        resource = "file:///srv/**"
    "#,
    );
    let read =
        |uri: &str| p.decide(&Call::from_params("resources/read", Some(&Json::from(&json!({"uri": uri}))))).action;
    assert_eq!(read("file:///srv/../etc/shadow"), Action::Deny);
    assert_eq!(read("file:///srv/%2e%2e/etc/shadow"), Action::Deny);
    assert_eq!(read("file:///srv/%252e%252e/etc/shadow"), Action::Deny);
    assert_eq!(read("file:////etc//passwd"), Action::Deny);
    assert_eq!(read("file:///srv/site/index.html"), Action::Allow);
    // Spellings a URL parser reads as file:///etc/shadow.
    for uri in [
        "file://localhost/etc/shadow",
        "file:/etc/shadow",
        " file:///etc/shadow",
        "fi\tle:///etc/shadow",
        "File://LocalHost/etc/shadow",
        "file:\\\\\\etc\\shadow",
    ] {
        assert_eq!(read(uri), Action::Deny, "{uri:?}");
    }
    // The allow still needs the URI as spelled to match: other spellings fall to the
    // default (deny), never widen it.
    assert_eq!(read("file://localhost/srv/site/index.html"), Action::Deny);
    // Every reading of this one is under /srv.
    assert_eq!(read("file:///srv/site/index.html\n"), Action::Allow);
}

#[test]
fn server_condition_uses_the_server_name() {
    let p = policy(
        r#"
        [[rule]]
        action = "allow"
        tool = "**"
        server = "github*"
    "#,
    );
    let params = json!({"name": "x"});
    let params_json = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params_json));
    assert_eq!(p.decide(&call.with_server(Some("github-enterprise"))).action, Action::Allow);
    assert_eq!(p.decide(&call.with_server(Some("gitlab"))).action, Action::Deny);
    assert_eq!(p.decide(&call).action, Action::Deny, "an unknown server never matches a server condition");
}

#[test]
fn args_paths_are_normalised_before_matching() {
    let p = policy(
        r#"
        [[rule]]
        id = "ssh"
        action = "deny"
        tool = "**"
        args.path = "**/.ssh/**"
        [[rule]]
        id = "projects"
        action = "allow"
        tool = "read_file"
        args.path = "/home/u/projects/**"
    "#,
    );
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/a.rs"})), Action::Allow);
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/../../.ssh/id_rsa"})), Action::Deny);
    assert_eq!(tool_id(&p, "read_file", json!({"path": "/home/u/projects/../.ssh/id_rsa"})).as_deref(), Some("ssh"));
    // Escapes the allowed tree without naming .ssh: the allow must not hold.
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/../../../etc/shadow"})), Action::Deny);
    assert_eq!(tool_id(&p, "read_file", json!({"path": "/home/u/projects/../../../etc/shadow"})), None);
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/%2e%2e/%2e%2e/.ssh/id_rsa"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/%252e%252e/secret"})), Action::Deny);
    assert_eq!(
        tool(&p, "read_file", json!({"path": "/home/u//projects/ok.txt"})),
        Action::Deny,
        "the spelled reading must match an allow too"
    );
    assert_eq!(tool(&p, "read_file", json!({"path": "~/.ssh/id_rsa"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": ".ssh/id_rsa"})), Action::Deny);
}

#[test]
fn deny_like_conditions_ignore_case_and_allows_do_not() {
    let p = policy(
        r#"
        [[rule]]
        id = "ssh"
        action = "deny"
        tool = "**"
        any_arg = "**/.ssh/**"
        [[rule]]
        id = "secrets"
        action = "prompt"
        tool = "read_file"
        args.path = "/Users/Me/Secrets/**"
        [[rule]]
        id = "projects"
        action = "allow"
        tool = "read_file"
        args.path = "/home/u/projects/**"
    "#,
    );
    // On macOS and Windows each of these opens the key itself.
    for path in [
        "/Users/u/.SSH/id_rsa",
        "/home/u/.Ssh/id_rsa",
        "/home/u/projects/../.SSH/id_rsa",
        "/home/u/.%53sh/id_rsa",
        "/home/u/.%2553SH/id_rsa",
        "/home/u/.\u{17f}sh/id_rsa",
    ] {
        assert_eq!(tool_id(&p, "read_file", json!({"path": path})).as_deref(), Some("ssh"), "{path}");
    }
    // A deny-like glob with capitals matches text in any case.
    assert_eq!(tool_id(&p, "read_file", json!({"path": "/users/me/secrets/a"})).as_deref(), Some("secrets"));
    assert_eq!(tool_id(&p, "read_file", json!({"path": "/USERS/ME/SECRETS/a"})).as_deref(), Some("secrets"));
    // An allow matches exact case only: `/home/u/PROJECTS` may be another directory.
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/projects/a.rs"})), Action::Allow);
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/PROJECTS/a.rs"})), Action::Deny);
}

#[test]
fn deny_like_argument_conditions_also_look_under_loosely_spelled_keys() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-ssh"
        action = "deny"
        tool = "*"
        args.path = "**/.ssh/**"
        [[rule]]
        id = "no-force"
        action = "prompt"
        tool = "push"
        args.options.force = true
        [[rule]]
        id = "home"
        action = "allow"
        tool = "*"
        args.path = "/home/u/**"
    "#,
    );
    for args in [
        json!({"Path": "/home/u/.ssh/id_rsa"}),
        json!({"PATH": "/home/u/.ssh/id_rsa"}),
        json!({" path\t": "/home/u/.ssh/id_rsa"}),
        json!({"path": "/home/u/a", "paTh": "/home/u/.ssh/id_rsa"}),
    ] {
        assert_eq!(tool_id(&p, "read", args.clone()).as_deref(), Some("no-ssh"), "{args}");
    }
    assert_eq!(tool_id(&p, "push", json!({"Options": {"FORCE": true}})).as_deref(), Some("no-force"));
    // An allow needs the key as written: `PATH` may be another parameter.
    assert_eq!(tool_id(&p, "read", json!({"path": "/home/u/a"})).as_deref(), Some("home"));
    assert_eq!(tool_id(&p, "read", json!({"PATH": "/home/u/a"})), None);
    // Only the blanks around a key: inside it, it is another key.
    assert_eq!(tool_id(&p, "read", json!({"pa th": "/home/u/.ssh/id_rsa"})), None);
}

#[test]
fn deny_like_name_rules_also_match_names_read_loosely() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-delete"
        action = "deny"
        tool = "delete_*"
        [[rule]]
        id = "ask-push"
        action = "prompt"
        tool = "Git_Push"
        [[rule]]
        id = "read"
        action = "allow"
        tool = "read_*"
        [[rule]]
        id = "no-shell"
        action = "deny"
        prompt = "shell"
        [defaults]
        action = "allow"
    "#,
    );
    // A server that trims names or looks them up ignoring case would run these as
    // `delete_repo`.
    for name in [
        "delete_repo",
        "Delete_repo",
        "DELETE_REPO",
        " delete_repo",
        "delete_repo\n",
        "\u{feff}delete_repo\u{200b}",
        "\tDELETE_repo\u{0}",
    ] {
        assert_eq!(tool_id(&p, name, json!({})).as_deref(), Some("no-delete"), "{name:?}");
    }
    // The rule's own capitals fold too.
    for name in ["Git_Push", "git_push", "GIT_PUSH ", " git_push"] {
        assert_eq!(tool_id(&p, name, json!({})).as_deref(), Some("ask-push"), "{name:?}");
    }
    // Only around the name: inside it, a character makes another name.
    assert_eq!(tool_id(&p, "delete repo", json!({})), None);
    assert_eq!(tool_id(&p, "de lete_repo", json!({})), None);
    // An allow keeps the exact name: `READ_FILE` falls through to the default.
    assert_eq!(tool_id(&p, "read_file", json!({})).as_deref(), Some("read"));
    assert_eq!(tool_id(&p, "READ_FILE", json!({})), None);
    assert_eq!(tool_id(&p, " read_file", json!({})), None);
    // Prompt names the same way.
    for name in ["shell", "SHELL", "shell\r\n"] {
        let params = json!({"name": name});
        let d = p.decide(&Call::from_params("prompts/get", Some(&Json::from(&params)))).rule_id().map(str::to_owned);
        assert_eq!(d.as_deref(), Some("no-shell"), "{name:?}");
    }
}

#[test]
fn relative_and_tilde_paths_never_match_an_absolute_allow() {
    let p = policy("[[rule]]\naction = \"allow\"\ntool = \"read_file\"\nargs.path = \"/home/u/**\"\n");
    assert_eq!(tool(&p, "read_file", json!({"path": "/home/u/a"})), Action::Allow);
    assert_eq!(tool(&p, "read_file", json!({"path": "~/a"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": "a/b"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": "../home/u/a"})), Action::Deny);
}

#[test]
fn deny_like_conditions_see_the_names_a_server_opens() {
    let home = std::env::var("HOME").ok().filter(|h| h.starts_with('/') && !h.contains(['*', '?']));
    let p = policy(&format!(
        r#"
        [[rule]]
        id = "keys"
        action = "deny"
        tool = "read_file"
        args.path = ["/root/.ssh/**", "{}/.ssh/**"]
        [[rule]]
        id = "etc"
        action = "deny"
        resource = "file:///etc/**"
        [[rule]]
        action = "allow"
        tool = "read_file"
        [[rule]]
        action = "allow"
        resource = "**"
    "#,
        home.as_deref().unwrap_or("/nowhere")
    ));
    let read_file = |path: &str| tool_id(&p, "read_file", json!({"path": path}));
    let read = |uri: &str| {
        let params = json!({"uri": uri});
        p.decide(&Call::from_params("resources/read", Some(&Json::from(&params)))).rule_id().map(str::to_owned)
    };
    let keys = Some("keys".to_owned());
    let etc = Some("etc".to_owned());
    // A file URL where a path goes, and a path where a URI goes.
    assert_eq!(read_file("file:///root/.ssh/id_rsa"), keys);
    assert_eq!(read_file("file://localhost/root/.ssh/../.ssh/id_rsa"), keys);
    assert_eq!(read("/etc/shadow"), etc);
    assert_eq!(read("/tmp/../etc/shadow"), etc);
    // A file URL whose host a server ignores.
    for uri in ["file://127.0.0.1/etc/shadow", "file://[::1]/etc/passwd", "file://user@localhost/etc/shadow"] {
        assert_eq!(read(uri), etc, "{uri}");
    }
    // `~` as the server expands it.
    if home.is_some() {
        assert_eq!(read_file("~/.ssh/id_rsa"), keys);
        assert_eq!(read_file("~/projects/../.ssh/id_rsa"), keys);
        assert_eq!(read_file("~/.SSH/id_rsa"), keys);
    }
    // What none of those name stays allowed.
    for path in ["~/notes.txt", "file:///tmp/x", "/tmp/x", "~root/.ssh/id_rsa", "~"] {
        assert_eq!(tool(&p, "read_file", json!({"path": path})), Action::Allow, "{path}");
    }
    assert_eq!(read("/srv/x"), None);
    assert_eq!(read("file://127.0.0.1/srv/x"), None);
}

/// A stand-in for the proxy's link resolver: `/srv/site/docs` is a link to `/keys`,
/// `/srv/site/out` one to `/etc`.
fn docs_is_a_link_to_keys(path: &str) -> Option<String> {
    let to = |link: &str, target: &str| path.strip_prefix(link).map(|rest| format!("{target}{rest}"));
    to("/srv/site/docs", "/keys").or_else(|| to("/srv/site/out", "/etc"))
}

#[test]
fn with_links_followed_deny_like_conditions_see_where_a_path_leads() {
    let p = policy(
        r#"
        [defaults]
        follow_links = true
        [[rule]]
        id = "keys"
        action = "deny"
        tool = "read_file"
        args.path = "/keys/**"
        [[rule]]
        id = "keys-as-resources"
        action = "deny"
        resource = "file:///keys/**"
        [[rule]]
        action = "allow"
        tool = "read_file"
        args.path = "/srv/**"
        [[rule]]
        action = "allow"
        resource = "file:///srv/**"
    "#,
    );
    assert!(p.follows_links());
    assert_eq!(p.default_action(), Action::Deny, "[defaults] without `action` still denies");
    let decide = |method: &str, params: Value, follow: bool| {
        let params = Json::from(&params);
        let call = Call::from_params(method, Some(&params))
            .with_links_followed(follow.then_some(docs_is_a_link_to_keys as crate::FollowLinks));
        p.decide(&call).rule_id().map(str::to_owned)
    };
    let read_file =
        |path: &str, follow| decide("tools/call", json!({"name": "read_file", "arguments": {"path": path}}), follow);
    let read = |uri: &str, follow| decide("resources/read", json!({"uri": uri}), follow);
    for path in ["/srv/site/docs/id_rsa", "/srv/site/x/../docs/id_rsa", "file:///srv/site/docs/id_rsa"] {
        assert_eq!(read_file(path, true).as_deref(), Some("keys"), "{path}");
    }
    assert_eq!(read("file:///srv/site/docs/id_rsa", true).as_deref(), Some("keys-as-resources"));
    assert_eq!(read("/srv/site/docs/id_rsa", true).as_deref(), Some("keys-as-resources"));
    // Without a resolver (CI, `policy test`, a remote server) paths are matched as spelled.
    assert_eq!(read_file("/srv/site/docs/id_rsa", false), None);
    assert_eq!(read("file:///srv/site/docs/id_rsa", false), None);
    // A path no link is on stays allowed; one that a link leads out of the allowed
    // directory is not (the default denies it), unless links are not followed.
    let allowed = |method: &str, params: Value, follow: bool| {
        let params = Json::from(&params);
        let call = Call::from_params(method, Some(&params))
            .with_links_followed(follow.then_some(docs_is_a_link_to_keys as crate::FollowLinks));
        p.decide(&call).action == Action::Allow
    };
    let allowed_file =
        |path: &str, follow| allowed("tools/call", json!({"name": "read_file", "arguments": {"path": path}}), follow);
    assert!(allowed_file("/srv/site/index.html", true));
    assert!(!allowed_file("/srv/site/out/passwd", true));
    assert!(!allowed_file("/srv/site/x/../out/passwd", true));
    assert!(allowed_file("/srv/site/out/passwd", false));
    assert!(!allowed("resources/read", json!({"uri": "file:///srv/site/out/passwd"}), true));
    assert!(allowed("resources/read", json!({"uri": "file:///srv/site/index.html"}), true));
    assert!(allowed("resources/read", json!({"uri": "file:///srv/site/out/passwd"}), false));
    assert!(!policy("[[rule]]\naction = \"allow\"\ntool = \"x\"\n").follows_links());
    assert!(error("[defaults]\nfollow_links = \"yes\"\n").to_string().contains("expected a boolean"));
}

#[test]
fn a_nul_in_a_path_is_read_as_a_c_server_reads_it() {
    let p = policy(
        "[[rule]]\nid = \"keys\"\naction = \"deny\"\ntool = \"**\"\nany_arg = \"**/*.pem\"\n[[rule]]\naction = \"allow\"\ntool = \"read_file\"\nargs.path = \"/srv/**\"\n",
    );
    assert_eq!(tool_id(&p, "read_file", json!({"path": "/srv/key.pem\u{0}.txt"})).as_deref(), Some("keys"));
    assert_eq!(tool(&p, "read_file", json!({"path": "/srv/x\u{0}/../../etc/passwd"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": "/srv/notes.txt"})), Action::Allow);
}

#[test]
fn deny_conditions_see_relative_paths_where_the_server_opens_them() {
    // The tests run in the crate's directory; the server would too.
    let cwd = std::env::current_dir().unwrap().to_str().unwrap().to_owned();
    let depth = cwd.matches('/').count();
    let to_root = "../".repeat(depth);
    let p = policy(&format!(
        "[[rule]]\nid = \"no-etc\"\naction = \"deny\"\ntool = \"**\"\nargs.path = \"/etc/**\"\n\
         [[rule]]\nid = \"here\"\naction = \"allow\"\ntool = \"read_file\"\nargs.path = \"{cwd}/**\"\n"
    ));
    let path = format!("{to_root}etc/passwd");
    assert_eq!(tool_id(&p, "read_file", json!({"path": path})).as_deref(), Some("no-etc"), "{path}");
    assert_eq!(tool_id(&p, "read_file", json!({"path": format!("./{path}")})).as_deref(), Some("no-etc"));
    // An allow matches only what is written: a relative path is not under an absolute glob.
    assert_eq!(tool(&p, "read_file", json!({"path": "src/lib.rs"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": format!("{cwd}/src/lib.rs")})), Action::Allow);
}

#[test]
fn deny_conditions_see_a_path_without_the_blanks_a_server_trims() {
    let p = policy(
        "[[rule]]\nid = \"no-etc\"\naction = \"deny\"\ntool = \"**\"\nargs.path = \"/etc/**\"\n\
         [[rule]]\naction = \"allow\"\ntool = \"read_file\"\nargs.path = \"/srv/**\"\n",
    );
    for path in
        [" /etc/passwd", "\t/etc/passwd", "\u{a0}/etc/passwd", "\u{feff}/etc/passwd\r\n", " /tmp/../etc/passwd "]
    {
        assert_eq!(tool_id(&p, "read_file", json!({"path": path})).as_deref(), Some("no-etc"), "{path:?}");
    }
    assert_eq!(tool(&p, "read_file", json!({"path": "/srv/a"})), Action::Allow);
    // An allow needs the text as written to match too.
    assert_eq!(tool(&p, "read_file", json!({"path": " /srv/a"})), Action::Deny);
}

#[test]
fn deny_conditions_on_a_number_see_its_value_however_it_is_written() {
    let p = policy(
        "[[rule]]\nid = \"no-ssh-port\"\naction = \"deny\"\ntool = \"connect\"\nargs.port = \"22\"\n\
         [[rule]]\naction = \"allow\"\ntool = \"connect\"\nargs.port = \"8080\"\n\
         [[rule]]\naction = \"allow\"\ntool = \"open\"\n",
    );
    // A server reads each of these as 22.
    for port in [json!(22), json!(22.0), json!(2.2e1), json!(220e-1), json!("22"), json!([80, 22.0])] {
        assert_eq!(tool_id(&p, "connect", json!({"port": port})).as_deref(), Some("no-ssh-port"), "{port}");
    }
    assert_eq!(tool(&p, "connect", json!({"port": 8080})), Action::Allow);
    // An allow matches the text as written: 8080.0 is not "8080".
    assert_eq!(tool(&p, "connect", json!({"port": 8080.0})), Action::Deny);
    assert_eq!(tool(&p, "connect", json!({"port": 22.5})), Action::Deny, "no rule: the default");
    assert_eq!(tool(&p, "open", json!({"port": 22.5})), Action::Allow);
}

#[test]
fn allow_conditions_never_match_on_another_name() {
    let home = std::env::var("HOME").unwrap_or_default();
    let p = policy(&format!(
        "[[rule]]\naction = \"allow\"\ntool = \"read_file\"\nargs.path = [\"/srv/**\", \"{home}/**\"]\n\
         [[rule]]\naction = \"allow\"\nresource = \"file:///srv/**\"\n"
    ));
    assert_eq!(tool(&p, "read_file", json!({"path": "/srv/a"})), Action::Allow);
    assert_eq!(tool(&p, "read_file", json!({"path": "file:///srv/a"})), Action::Deny);
    assert_eq!(tool(&p, "read_file", json!({"path": "~/a"})), Action::Deny);
    let read = |uri: &str| {
        let params = json!({"uri": uri});
        p.decide(&Call::from_params("resources/read", Some(&Json::from(&params)))).action
    };
    assert_eq!(read("file:///srv/a"), Action::Allow);
    assert_eq!(read("/srv/a"), Action::Deny);
    assert_eq!(read("file://127.0.0.1/srv/a"), Action::Deny);
}

#[test]
fn arrays_any_for_deny_every_for_allow() {
    let p = policy(
        r#"
        [[rule]]
        id = "deny-etc"
        action = "deny"
        tool = "read_multiple_files"
        args.paths = "/etc/**"
        [[rule]]
        id = "allow-home"
        action = "allow"
        tool = "read_multiple_files"
        args.paths = "/home/**"
    "#,
    );
    let call = |paths: Value| tool_id(&p, "read_multiple_files", json!({"paths": paths}));
    assert_eq!(call(json!(["/home/a", "/etc/passwd"])).as_deref(), Some("deny-etc"));
    assert_eq!(call(json!(["/home/a", "/home/b"])).as_deref(), Some("allow-home"));
    assert_eq!(call(json!(["/home/a", "/tmp/b"])), None, "allow needs every element");
    assert_eq!(call(json!([["/home/a"], ["/home/b", "/tmp/x"]])), None, "nested arrays too");
    assert_eq!(call(json!([["/home/a"], ["/etc/x"]])).as_deref(), Some("deny-etc"));
    assert_eq!(call(json!([])), None, "an empty array matches nothing");
}

#[test]
fn dotted_args_reach_into_nested_objects() {
    let p = policy(
        r#"
        [[rule]]
        action = "deny"
        tool = "**"
        args.options.target.host = "*.internal"
        [[rule]]
        action = "deny"
        tool = "**"
        args."files.path" = "/etc/**"
        [[rule]]
        action = "allow"
        tool = "**"
    "#,
    );
    assert_eq!(tool(&p, "fetch", json!({"options": {"target": {"host": "db.internal"}}})), Action::Deny);
    assert_eq!(tool(&p, "fetch", json!({"options": {"target": {"host": "example.com"}}})), Action::Allow);
    assert_eq!(tool(&p, "fetch", json!({"files": [{"path": "/etc/x"}, {"path": "/tmp"}]})), Action::Deny);
    assert_eq!(tool(&p, "fetch", json!({"files": [{"path": "/tmp"}]})), Action::Allow);
}

#[test]
fn numbers_and_booleans_match_as_json_text_and_missing_never_matches() {
    let p = policy(
        r#"
        [[rule]]
        id = "force"
        action = "deny"
        tool = "git_push"
        args.force = true
        [[rule]]
        id = "port"
        action = "deny"
        tool = "connect"
        args.port = "22"
        [[rule]]
        id = "big"
        action = "prompt"
        tool = "pay"
        args.amount = "1??????"
        [[rule]]
        action = "allow"
        tool = "**"
    "#,
    );
    assert_eq!(tool_id(&p, "git_push", json!({"force": true})).as_deref(), Some("force"));
    assert_eq!(tool_id(&p, "git_push", json!({"force": false})), None);
    assert_eq!(tool_id(&p, "git_push", json!({})), None, "missing argument: rule does not match");
    assert_eq!(tool_id(&p, "connect", json!({"port": 22})).as_deref(), Some("port"));
    assert_eq!(tool_id(&p, "connect", json!({"port": "22"})).as_deref(), Some("port"));
    assert_eq!(tool_id(&p, "connect", json!({"port": 2222})), None);
    assert_eq!(tool_id(&p, "pay", json!({"amount": 1000000})).as_deref(), Some("big"));
}

#[test]
fn any_arg_sees_every_string_at_any_depth() {
    let p = policy(
        r#"
        [[rule]]
        id = "aws"
        action = "deny"
        tool = "**"
        any_arg = "**/.aws/**"
        [[rule]]
        action = "allow"
        tool = "**"
    "#,
    );
    assert_eq!(tool_id(&p, "x", json!({"a": {"b": [1, {"c": "/root/.aws/credentials"}]}})).as_deref(), Some("aws"));
    assert_eq!(
        tool_id(&p, "x", json!({"cmd": "cat /root/x/../.aws/config"})).as_deref(),
        Some("aws"),
        "`**` spans the command prefix"
    );
    assert_eq!(
        tool_id(&p, "x", json!({"cmd": "/root/.aws-notes.txt"})),
        None,
        "a glob is anchored: the whole string must match"
    );
    assert_eq!(
        tool_id(&p, "x", json!(["/root/.aws/credentials"])).as_deref(),
        Some("aws"),
        "non-object arguments are searched too"
    );
    assert_eq!(tool_id(&p, "x", json!({"p": "/root/p/../.aws/credentials"})).as_deref(), Some("aws"));
    assert_eq!(tool_id(&p, "x", json!({"p": "/root/ok"})), None);
}

#[test]
fn any_arg_in_an_allow_rule_needs_every_string() {
    let p = policy("[[rule]]\naction = \"allow\"\ntool = \"**\"\nany_arg = \"/work/**\"\n");
    assert_eq!(tool(&p, "x", json!({"a": "/work/a", "b": ["/work/b"]})), Action::Allow);
    assert_eq!(tool(&p, "x", json!({"a": "/work/a", "b": ["/etc/b"]})), Action::Deny);
    assert_eq!(tool(&p, "x", json!({})), Action::Deny, "no strings: nothing to allow on");
}

#[test]
fn non_object_arguments_only_match_rules_without_argument_conditions() {
    let p = policy(
        r#"
        [[rule]]
        id = "cond"
        action = "allow"
        tool = "run"
        args.cmd = "ls*"
        [[rule]]
        id = "plain"
        action = "prompt"
        tool = "run"
    "#,
    );
    assert_eq!(tool_id(&p, "run", json!({"cmd": "ls -l"})).as_deref(), Some("cond"));
    assert_eq!(tool_id(&p, "run", json!("ls -l")).as_deref(), Some("plain"));
    assert_eq!(tool_id(&p, "run", json!(["ls"])).as_deref(), Some("plain"));
    let params = json!({"name": "run"});
    let d = p.decide(&Call::from_params("tools/call", Some(&Json::from(&params))));
    assert_eq!(d.rule_id(), Some("plain"), "absent arguments cannot satisfy argument conditions");
}

#[test]
fn operation_condition_uses_the_detector() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-delete"
        action = "deny"
        operation = "delete"
        [[rule]]
        id = "reads"
        action = "allow"
        tool = "**"
        operation = "read"
    "#,
    );
    assert_eq!(tool_id(&p, "github_delete_repo", json!({})).as_deref(), Some("no-delete"));
    assert_eq!(tool_id(&p, "removeFile", json!({})).as_deref(), Some("no-delete"));
    assert_eq!(tool_id(&p, "drop-table", json!({})).as_deref(), Some("no-delete"));
    assert_eq!(tool_id(&p, "github_list_repos", json!({})).as_deref(), Some("reads"));
    assert_eq!(tool_id(&p, "write_file", json!({})), None);
}

#[test]
fn service_condition_reads_server_or_tool_prefix() {
    let p = policy(
        "[[rule]]\naction = \"deny\"\nservice = \"github\"\noperation = \"delete\"\n[[rule]]\naction = \"allow\"\ntool = \"**\"\n",
    );
    assert_eq!(tool(&p, "github_delete_repo", json!({})), Action::Deny);
    let params = json!({"name": "delete_branch"});
    let params_json = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params_json));
    assert_eq!(p.decide(&call.with_server(Some("github"))).action, Action::Deny);
    assert_eq!(p.decide(&call.with_server(Some("gitlab"))).action, Action::Allow);
}

#[test]
fn annotations_with_spec_defaults() {
    let p = policy(
        r#"
        [[rule]]
        id = "ro"
        action = "allow"
        read_only = true
        [[rule]]
        id = "destructive"
        action = "prompt"
        destructive = true
        [[rule]]
        id = "rest"
        action = "audit"
        destructive = false
    "#,
    );
    let params = json!({"name": "t", "arguments": {}});
    let params_json = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params_json));
    let with = |a: Option<ToolAnnotations>| p.decide(&call.with_annotations(a)).rule_id().map(str::to_owned);
    assert_eq!(
        with(Some(ToolAnnotations { read_only_hint: Some(true), destructive_hint: None })).as_deref(),
        Some("ro")
    );
    assert_eq!(with(None).as_deref(), Some("destructive"), "an unlisted tool is destructive by default");
    assert_eq!(with(Some(ToolAnnotations::default())).as_deref(), Some("destructive"));
    assert_eq!(
        with(Some(ToolAnnotations { read_only_hint: Some(false), destructive_hint: Some(false) })).as_deref(),
        Some("rest")
    );
}

#[test]
fn method_rules_cover_any_method_by_glob() {
    let p = policy(
        "[[rule]]\naction = \"deny\"\nmethod = \"elicitation/*\"\n[[rule]]\naction = \"allow\"\nmethod = \"**\"\n",
    );
    let d = |m: &str| p.decide(&Call::from_params(m, Some(&Json::from(&json!({}))))).action;
    assert_eq!(d("elicitation/create"), Action::Deny);
    assert_eq!(d("sampling/createMessage"), Action::Allow);
    assert_eq!(d("tools/call"), Action::Allow);
}

#[test]
fn thousand_rules_decide_like_a_linear_scan() {
    let mut text = String::new();
    for i in 0..1000 {
        let action = ["allow", "deny", "prompt", "audit"][i % 4];
        text.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\naction = \"{action}\"\ntool = \"svc{}_*\"\nargs.path = \"/d{}/**\"\n",
            i % 37,
            i % 11
        ));
    }
    let p = policy(&text);
    for n in 0..200 {
        let name = format!("svc{}_op", n % 41);
        let args = json!({"path": format!("/d{}/x", n % 13)});
        let params = json!({"name": name, "arguments": args});
        let params_json = Json::from(&params);
        let call = Call::from_params("tools/call", Some(&params_json));
        assert_eq!(p.decide(&call).rule_id(), p.explain(&call).decision.rule_id());
    }
}

// ---------- bad input ----------

#[test]
fn syntax_errors_name_file_and_line() {
    let e = error("[[rule]]\naction = \"deny\"\ntool = \n");
    let text = e.to_string();
    assert!(text.starts_with("test.toml:3:"), "{text}");
}

#[test]
fn unknown_keys_are_refused_never_ignored() {
    for (text, line) in [
        ("[[rule]]\naction = \"deny\"\ntol = \"x\"\n", 3),
        ("[[rule]]\naction = \"deny\"\ntool = \"x\"\narg.path = \"/etc/**\"\n", 4),
        ("[[rules]]\naction = \"deny\"\ntool = \"x\"\n", 1),
        ("[defaults]\ndecision = \"deny\"\n", 2),
    ] {
        let e = error(text);
        assert_eq!(e.diagnostics[0].line, Some(line), "{e}");
        assert!(e.to_string().contains("unknown field"), "{e}");
    }
    assert!(
        error("[[rule]]\naction = \"deny\"\ntool = \"x\"\narg.path = \"/etc/**\"\n").to_string().contains("args.NAME")
    );
}

#[test]
fn bad_actions_globs_and_regexes() {
    let e = error("[[rule]]\naction = \"block\"\ntool = \"x\"\n");
    assert!(e.to_string().contains("test.toml:2:") && e.to_string().contains("unknown action `block`"), "{e}");
    let e = error("[defaults]\naction = \"maybe\"\n");
    assert!(e.to_string().contains("unknown action"), "{e}");
    let e = error("[[rule]]\ntool = \"x\"\n");
    assert!(e.to_string().contains("no `action`"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\ntool_regex = \"(unclosed\"\n");
    assert!(e.to_string().contains("test.toml:3:") && e.to_string().contains("tool_regex"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\ntool = \"\"\n");
    assert!(e.to_string().contains("empty pattern"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\noperation = \"nuke\"\n");
    assert!(e.to_string().contains("unknown operation"), "{e}");
}

#[test]
fn missing_and_contradictory_targets() {
    let e = error("[[rule]]\naction = \"deny\"\nargs.path = \"/etc/**\"\n");
    assert!(e.to_string().contains("no target"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\ntool = \"x\"\nresource = \"file:///x\"\n");
    assert!(e.to_string().contains("contradictory targets"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\ntool = \"x\"\nmethod = \"resources/read\"\n");
    assert!(e.to_string().contains("contradicts"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\nresource = \"file:///x\"\ndestructive = true\n");
    assert!(e.to_string().contains("only applies to tools"), "{e}");
    let e = error("[[rule]]\naction = \"deny\"\nmethod = \"sampling/createMessage\"\noperation = \"delete\"\n");
    assert!(e.to_string().contains("about tools"), "{e}");
    // Consistent combinations are fine.
    policy("[[rule]]\naction = \"deny\"\ntool = \"x\"\nmethod = \"tools/call\"\n");
}

#[test]
fn shadowed_rules_are_refused() {
    let e = error(
        "[[rule]]\nid = \"all\"\naction = \"allow\"\ntool = \"*\"\n\n[[rule]]\nid = \"never\"\naction = \"deny\"\ntool = \"rm_*\"\n",
    );
    let text = e.to_string();
    assert!(
        text.contains("test.toml:6:") && text.contains("`never` can never match") && text.contains("`all`"),
        "{text}"
    );
    error("[[rule]]\naction = \"allow\"\nmethod = \"**\"\n[[rule]]\naction = \"deny\"\nresource = \"file:///x\"\n");
    error(
        "[[rule]]\naction = \"allow\"\ntool = \"read_file\"\n[[rule]]\naction = \"deny\"\ntool = \"read_file\"\nargs.path = \"/etc/**\"\n",
    );
    error(
        "[[rule]]\naction = \"allow\"\nmethod = \"tools/call\"\n[[rule]]\naction = \"deny\"\noperation = \"delete\"\n",
    );
    // Not shadowed: the earlier rule has a condition, or covers something else.
    policy("[[rule]]\naction = \"allow\"\ntool = \"*\"\nserver = \"a\"\n[[rule]]\naction = \"deny\"\ntool = \"rm\"\n");
    policy("[[rule]]\naction = \"allow\"\ntool = \"read_*\"\n[[rule]]\naction = \"deny\"\ntool = \"write_*\"\n");
    policy("[[rule]]\naction = \"allow\"\ntool = \"*\"\n[[rule]]\naction = \"deny\"\nresource = \"**\"\n");
}

#[test]
fn errors_are_all_reported_and_nothing_is_half_loaded() {
    let e = error("[[rule]]\naction = \"nope\"\ntool = \"a\"\n[[rule]]\naction = \"deny\"\ntool_regex = \"(\"\n");
    assert_eq!(e.diagnostics.len(), 2, "{e}");
}

mod indexed_decisions {
    use super::*;
    use proptest::prelude::*;

    fn rule() -> impl Strategy<Value = String> {
        let pattern = "[abB_/]{0,3}[*]{0,2}[aAb_/?]{0,2}".prop_filter("non-empty", |p| !p.is_empty());
        (pattern, 0..4usize, any::<bool>(), any::<bool>()).prop_map(|(p, action, regex, cond)| {
            let action = ["allow", "deny", "prompt", "audit"][action];
            let target = if regex {
                format!("tool_regex = \"^{}\"", p.replace('*', ".*").replace('?', "."))
            } else {
                format!("tool = {p:?}")
            };
            let cond = if cond { "\nargs.x = \"1\"" } else { "" };
            format!("[[rule]]\naction = \"{action}\"\n{target}{cond}\n")
        })
    }

    proptest! {
        /// The tool index only preselects: decisions equal a rule-by-rule scan.
        #[test]
        fn indexed_decide_equals_linear_explain(rules in prop::collection::vec(rule(), 1..12), names in prop::collection::vec("[ \tabAB_/]{0,5}", 1..8)) {
            let text: String = rules.concat();
            // Shadowed rules are refused by the loader; skip those policies.
            let Ok(p) = load_str(&text, Format::Toml, "t.toml") else { return Ok(()) };
            for name in names {
                for args in [json!({"x": "1"}), json!({})] {
                    let params = json!({"name": name, "arguments": args});
                    let params_json = Json::from(&params);
                    let call = Call::from_params("tools/call", Some(&params_json));
                    let fast = p.decide(&call).rule.map(|(i, _)| i);
                    let slow = p.explain(&call).decision.rule.map(|(i, _)| i);
                    prop_assert_eq!(fast, slow, "policy:\n{}\nname {:?}", text, name);
                }
            }
        }
    }
}

#[test]
fn guards_pinning_is_on_unless_turned_off() {
    assert!(policy("[[rule]]\naction = \"allow\"\ntool = \"a\"\n").guards().pinning);
    assert!(policy("[guards]\npinning = true\n").guards().pinning);
    assert!(!policy("[guards]\npinning = false\n").guards().pinning);
}

#[test]
fn guards_scan_is_on_and_quarantines_from_warn_unless_told_otherwise() {
    use crate::ScanSeverity;
    let default = policy("[[rule]]\naction = \"allow\"\ntool = \"a\"\n").guards();
    assert!(default.scan);
    assert_eq!(default.quarantine_on, ScanSeverity::Warn);
    assert!(!policy("[guards]\nscan = false\n").guards().scan);
    for (word, level) in
        [("info", ScanSeverity::Info), ("warn", ScanSeverity::Warn), ("critical", ScanSeverity::Critical)]
    {
        assert_eq!(policy(&format!("[guards]\nquarantine_on = \"{word}\"\n")).guards().quarantine_on, level);
    }
    assert!(ScanSeverity::Info < ScanSeverity::Warn && ScanSeverity::Warn < ScanSeverity::Critical);
}

#[test]
fn guards_take_every_key_of_the_language_and_check_their_values() {
    let all = "[guards]\npinning = true\nscan = true\nquarantine_on = \"critical\"\nresults = \"flag\"\n\
               max_result_bytes = 1048576\nsecrets_in_arguments = \"deny\"\nhide_denied_tools = false\n";
    assert!(policy(all).guards().pinning);
    let typo = error("[guards]\npining = false\n").to_string();
    assert!(typo.contains("pining") && typo.contains("test.toml:2"), "{typo}");
    for (text, key) in [
        ("quarantine_on = \"loud\"", "quarantine_on"),
        ("results = \"hide\"", "results"),
        ("secrets_in_arguments = \"maybe\"", "secrets_in_arguments"),
        ("max_result_bytes = 0", "max_result_bytes"),
    ] {
        let e = error(&format!("[guards]\n{text}\n")).to_string();
        assert!(e.contains(key) && e.contains("test.toml:2"), "{e}");
    }
    assert!(error("[guards]\npinning = \"no\"\n").to_string().contains("test.toml:2"));
}
