//! The argument conditions beyond globs (`args_regex`, `args_number`, `args_host`,
//! `any_arg_regex`, `any_arg_host`), URLs read as a URL parser reads them, and decisions
//! that agree with what the proxy does on the wire for every method.

use clawai_policy::{Action, Call, Format, Policy, load_str};
use clawai_protocol::Json;
use serde_json::{Value, json};

fn policy(text: &str) -> Policy {
    load_str(text, Format::Toml, "test.toml").unwrap_or_else(|e| panic!("policy should load: {e}"))
}

fn refused(text: &str) -> String {
    match load_str(text, Format::Toml, "test.toml") {
        Ok(_) => panic!("policy should be refused:\n{text}"),
        Err(e) => e.to_string(),
    }
}

fn tool(p: &Policy, name: &str, args: Value) -> Action {
    let params = json!({"name": name, "arguments": args});
    p.decide(&Call::from_params("tools/call", Some(&Json::from(&params)))).action
}

/// Every spelling of a URL to `evil.example` that a URL parser reads as that host.
const EVIL_SPELLINGS: [&str; 12] = [
    "http://evil.example/",
    "http://user@evil.example/",
    "http://%75ser@evil.example/",
    "http://user:secret@evil.example/x",
    "http://evil.example./",
    "http://evil.example:80/",
    "https://evil.example:443/",
    "HTTP://EVIL.EXAMPLE/",
    "http://%65vil.example/",
    "http://evil.example",
    "http:evil.example/",
    "https://ｅｖｉｌ.example/",
];

#[test]
fn a_deny_on_a_url_glob_sees_every_spelling_of_the_url() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-evil"
        action = "deny"
        tool = "fetch"
        any_arg = "http*://evil.example/**"
        [[rule]]
        action = "allow"
        tool = "fetch"
        "#,
    );
    for url in EVIL_SPELLINGS {
        assert_eq!(tool(&p, "fetch", json!({"url": url})), Action::Deny, "{url}");
    }
    for url in ["http://good.example/", "http://evil.example.good.example/", "http://good.example/?u=evil.example"] {
        assert_eq!(tool(&p, "fetch", json!({"url": url})), Action::Allow, "{url}");
    }
}

#[test]
fn an_allow_on_a_url_glob_matches_only_the_url_as_written() {
    let p = policy(
        r#"
        [[rule]]
        action = "allow"
        tool = "fetch"
        args.url = ["https://api.example/**", "https://api.example"]
        "#,
    );
    assert_eq!(tool(&p, "fetch", json!({"url": "https://api.example/v1/x"})), Action::Allow);
    assert_eq!(tool(&p, "fetch", json!({"url": "https://api.example"})), Action::Allow, "written without a path");
    for url in [
        "https://api.example@evil.example/",
        "https://api.example.evil.example/",
        "HTTPS://API.EXAMPLE/v1",
        "https://api.example:443/v1",
    ] {
        assert_eq!(tool(&p, "fetch", json!({"url": url})), Action::Deny, "{url}");
    }
}

#[test]
fn host_conditions_match_the_host_a_url_parser_reads() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-evil-hosts"
        action = "deny"
        tool = "**"
        any_arg_host = ["evil.example", "*.evil.example"]
        [[rule]]
        id = "api-only"
        action = "allow"
        tool = "fetch"
        args_host.url = "*.api.example"
        "#,
    );
    for url in EVIL_SPELLINGS.iter().chain(&["https://a.b.evil.example/", "evil.example:8080/x", "ftp://evil.example/"])
    {
        assert_eq!(tool(&p, "fetch", json!({"url": url})), Action::Deny, "{url}");
        assert_eq!(tool(&p, "anything", json!({"nested": {"list": ["x", url]}})), Action::Deny, "{url} nested");
    }
    assert_eq!(tool(&p, "fetch", json!({"url": "https://eu.api.example/v1"})), Action::Allow);
    for url in ["https://eu.api.example@other.example/", "https://api.example/", "not a url", "/etc/passwd"] {
        assert_eq!(tool(&p, "fetch", json!({"url": url})), Action::Deny, "{url} is not an allowed host");
    }
    assert_eq!(tool(&p, "fetch", json!({"url": "https://notevil.example/"})), Action::Deny, "default");
}

#[test]
fn host_globs_in_a_policy_are_read_in_ascii_form() {
    let p = policy(
        r#"
        [[rule]]
        action = "deny"
        tool = "**"
        any_arg_host = "*.Bücher.Example."
        "#,
    );
    assert_eq!(tool(&p, "fetch", json!({"u": "https://shop.xn--bcher-kva.example/"})), Action::Deny);
    assert_eq!(tool(&p, "fetch", json!({"u": "https://shop.bücher.example/"})), Action::Deny);
    let e = refused("[[rule]]\naction = \"deny\"\ntool = \"**\"\nargs_host.url = \"https://evil.example/\"\n");
    assert!(e.contains("test.toml:4") && e.contains("write only the host"), "{e}");
    let e = refused("[[rule]]\naction = \"deny\"\ntool = \"**\"\nany_arg_host = \"a b.example\"\n");
    assert!(e.contains("not a valid host name"), "{e}");
}

#[test]
fn regex_conditions_find_a_match_anywhere_in_the_value() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-drop"
        action = "deny"
        tool = "query"
        args_regex.sql = ['(?i)\bdrop\s+table\b', '(?i)\btruncate\b']
        [[rule]]
        id = "no-aws-keys"
        action = "deny"
        tool = "**"
        any_arg_regex = 'AKIA[0-9A-Z]{16}'
        [[rule]]
        action = "allow"
        tool = "**"
        "#,
    );
    assert_eq!(tool(&p, "query", json!({"sql": "select 1; DROP   TABLE users"})), Action::Deny);
    assert_eq!(tool(&p, "query", json!({"sql": "truncate logs"})), Action::Deny);
    assert_eq!(tool(&p, "query", json!({"sql": "select * from dropped_tables"})), Action::Allow);
    assert_eq!(tool(&p, "query", json!({"sql": ["select 1", "drop table x"]})), Action::Deny, "any element");
    assert_eq!(tool(&p, "query", json!({"sql": "drop%20table%20x"})), Action::Deny, "percent-encoded reading");
    assert_eq!(tool(&p, "write", json!({"a": {"b": "key=AKIAABCDEFGHIJKLMNOP"}})), Action::Deny);
    assert_eq!(tool(&p, "write", json!({"a": "AKIA-not-a-key"})), Action::Allow);
}

#[test]
fn an_allow_regex_needs_every_element_and_reading() {
    let p = policy(
        r#"
        [[rule]]
        action = "allow"
        tool = "query"
        args_regex.sql = '^(?i)select\b'
        "#,
    );
    assert_eq!(tool(&p, "query", json!({"sql": "SELECT 1"})), Action::Allow);
    assert_eq!(tool(&p, "query", json!({"sql": ["select 1", "delete from x"]})), Action::Deny);
    assert_eq!(tool(&p, "query", json!({"sql": 1})), Action::Deny);
    assert_eq!(tool(&p, "query", json!({})), Action::Deny, "missing never matches");
}

#[test]
fn number_conditions_compare_values() {
    let p = policy(
        r#"
        [[rule]]
        id = "too-much"
        action = "deny"
        tool = "pay"
        args_number.amount = { gt = 100 }
        [[rule]]
        id = "small-ok"
        action = "allow"
        tool = "pay"
        args_number.amount = { gte = 0, lte = 100 }
        args_number.order.items = { lt = 10 }
        "#,
    );
    assert_eq!(tool(&p, "pay", json!({"amount": 100, "order": {"items": 3}})), Action::Allow);
    assert_eq!(tool(&p, "pay", json!({"amount": 0.5, "order": {"items": 9.99}})), Action::Allow);
    for amount in [json!(101), json!(100.01), json!(1e6), json!("250"), json!(" 1e3 "), json!("0x1000")] {
        assert_eq!(tool(&p, "pay", json!({"amount": amount, "order": {"items": 1}})), Action::Deny, "{amount}");
    }
    // An allow reads JSON numbers only: a string the server might coerce is not one.
    assert_eq!(tool(&p, "pay", json!({"amount": "50", "order": {"items": 1}})), Action::Deny);
    assert_eq!(tool(&p, "pay", json!({"amount": -1, "order": {"items": 1}})), Action::Deny, "below gte");
    assert_eq!(tool(&p, "pay", json!({"amount": 5, "order": {"items": 10}})), Action::Deny, "not lt 10");
    assert_eq!(tool(&p, "pay", json!({"amount": [5, 500], "order": {"items": 1}})), Action::Deny, "any element");
}

#[test]
fn bad_conditions_are_refused_with_line_and_what_to_do() {
    let cases = [
        ("args_number.amount = 100", "must be a table of bounds"),
        ("args_number.amount = { above = 100 }", "unknown bound `above`"),
        ("args_number.amount = { gt = 5, lt = 3 }", "could never match"),
        ("args_number.amount = { gt = 5, lt = 5 }", "could never match"),
        ("args_number.amount = { gt = \"5\" }", "must be a number"),
        ("args_regex.sql = '(unclosed'", "invalid regular expression"),
        ("args_regex.sql = 5", "must be a regular expression"),
        ("any_arg_regex = []", "empty list"),
        ("args_host.url = 5", "must be a host glob"),
        ("args_regex = {}", "`args_regex` is empty"),
    ];
    for (line, message) in cases {
        let e = refused(&format!("[[rule]]\naction = \"deny\"\ntool = \"**\"\n{line}\n"));
        assert!(e.contains("test.toml:4") && e.contains(message), "{line}: {e}");
    }
    policy("[[rule]]\naction = \"deny\"\ntool = \"**\"\nargs_number.amount = { gte = 5, lte = 5 }\n");
}

#[test]
fn explain_names_the_new_conditions() {
    let p = policy(
        r#"
        [[rule]]
        id = "r"
        action = "deny"
        tool = "pay"
        args_number.amount = { gt = 100 }
        args_regex.memo = 'x+'
        any_arg_host = "evil.example"
        "#,
    );
    let params = json!({"name": "pay", "arguments": {"amount": 5, "memo": "xx"}});
    let explanation = p.explain(&Call::from_params("tools/call", Some(&Json::from(&params))));
    let step = &explanation.steps[0];
    assert!(step.summary.contains("args_number.amount > 100"), "{}", step.summary);
    assert!(step.summary.contains("args_regex.memo /x+/"), "{}", step.summary);
    assert!(step.summary.contains("any_arg_host host evil.example"), "{}", step.summary);
    assert_eq!(step.outcome.as_ref().unwrap_err().to_string(), "args_number.amount does not match (or is missing)");
}

#[test]
fn methods_the_proxy_passes_through_are_allowed_whatever_the_default() {
    let p = policy(
        r#"
        [defaults]
        action = "deny"
        [[rule]]
        action = "deny"
        method = "**"
        "#,
    );
    for method in ["initialize", "notifications/initialized", "tools/list", "ping", "roots/list", "server/discover"] {
        let call = Call::from_params(method, None);
        let decision = p.decide(&call);
        assert_eq!(decision.action, Action::Allow, "{method}");
        assert!(decision.reason().contains("forwards it unchanged"), "{method}: {}", decision.reason());
        assert_eq!(p.explain(&call).decision.action, Action::Allow, "explain agrees for {method}");
    }
    // Decided methods still follow the rules and the default.
    for method in ["resources/read", "prompts/get", "sampling/createMessage", "elicitation/create"] {
        assert_eq!(p.decide(&Call::from_params(method, None)).action, Action::Deny, "{method}");
    }
    // A method a rule names is decided by it.
    let p = policy("[[rule]]\naction = \"deny\"\nmethod = \"roots/list\"\n[defaults]\naction = \"allow\"\n");
    assert_eq!(p.decide(&Call::from_params("roots/list", None)).action, Action::Deny);
    // A look-alike of a decided method is refused, as the proxy refuses it.
    let allow_all = policy("[defaults]\naction = \"allow\"\n");
    for method in ["Tools/Call", "resources/read ", "PROMPTS/GET"] {
        let decision = allow_all.decide(&Call::from_params(method, None));
        assert_eq!(decision.action, Action::Deny, "{method}");
        assert_eq!(allow_all.explain(&Call::from_params(method, None)).decision.action, Action::Deny, "{method}");
    }
}

#[test]
fn a_url_that_parsers_split_differently_is_read_both_ways() {
    let p = policy(
        r#"
        [[rule]]
        id = "no-evil-host"
        action = "deny"
        tool = "post"
        any_arg_host = "evil.example"
        [[rule]]
        id = "no-evil-url"
        action = "deny"
        tool = "fetch"
        any_arg = "http*://evil.example/**"
        [[rule]]
        action = "allow"
        tools = ["post", "fetch", "docs"]
        args_host.url = "docs.example"
        "#,
    );
    // Node reads the host `docs.example`, Python's urllib `evil.example`.
    let split = "http://docs.example\\@evil.example/x";
    assert_eq!(tool(&p, "post", json!({"url": split})), Action::Deny);
    assert_eq!(tool(&p, "fetch", json!({"url": split})), Action::Deny);
    assert_eq!(tool(&p, "docs", json!({"url": split})), Action::Deny, "an allow needs every host read to match");
    assert_eq!(tool(&p, "docs", json!({"url": "https://docs.example/a"})), Action::Allow);
}

#[test]
fn deny_like_number_and_regex_conditions_see_every_spelling_of_a_number() {
    let p = policy(
        r#"
        [[rule]]
        id = "too-much"
        action = "deny"
        tool = "pay"
        args_number.amount = { gt = 1000 }
        [[rule]]
        id = "no-ssh-port"
        action = "deny"
        tool = "connect"
        args_regex.port = '^22$'
        [[rule]]
        action = "allow"
        tool = "**"
        "#,
    );
    for amount in [json!("1_000_000"), json!("inf"), json!("Infinity"), json!("1e999")] {
        assert_eq!(tool(&p, "pay", json!({"amount": amount})), Action::Deny, "{amount}");
    }
    assert_eq!(tool(&p, "pay", json!({"amount": "NaN"})), Action::Allow, "not a number: the rule does not hold");
    for port in [json!(22), json!(22.0), json!(2.2e1), json!("22")] {
        assert_eq!(tool(&p, "connect", json!({"port": port})), Action::Deny, "{port}");
    }
    assert_eq!(tool(&p, "connect", json!({"port": 2222})), Action::Allow);
}
