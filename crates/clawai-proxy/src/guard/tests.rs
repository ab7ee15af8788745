//! The guard's unit tests: ids, refusals and look-alike methods.

use super::*;
use clawai_policy::{Format, load_str};

fn guard(audit: AuditLog) -> Guard {
    let policy = load_str("[[rule]]\nid = \"all\"\naction = \"allow\"\ntool = \"**\"\n", Format::Toml, "test")
        .expect("the policy loads");
    Guard::new(PolicyHandle::new(policy), audit, Some("s".into()))
}

/// The response events in the trail at `path`, once the guard has written it.
fn response_events(guard: &Guard, path: &std::path::Path) -> Vec<serde_json::Value> {
    guard.flush_audit();
    clawai_testkit::trail::where_(path, "kind", "response")
}

#[test]
fn a_response_is_matched_to_its_request_by_the_id_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let guard = guard(AuditLog::open(&path, u64::MAX, 0).unwrap());
    // Numbers and strings, escaped ones included, as the server echoes them.
    for id in ["7", "-3", r#""a-1""#, r#""a\u0062""#, "1.5"] {
        let call = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"t"}}}}"#);
        assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
        let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}}}}"#);
        assert_eq!(guard.from_server(response.as_bytes()), Verdict::Forward);
    }
    let responses = response_events(&guard, &path);
    assert_eq!(responses.len(), 5);
    for event in responses {
        assert_eq!(event["method"], "tools/call", "matched to its request: {event}");
        assert!(event["duration_ms"].is_number(), "{event}");
    }
}

#[test]
fn a_response_is_matched_to_its_request_when_the_server_rewrote_the_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let guard = guard(AuditLog::open(&path, u64::MAX, 0).unwrap());
    // As the client wrote them, and as a server that decodes and re-encodes ids
    // (Python's json, JavaScript's JSON) answers them.
    let pairs = [("-0", "0"), (r#""\u0061""#, r#""a""#), ("1.0", "1"), ("1e2", "100")];
    for (sent, answered) in pairs {
        let call = format!(r#"{{"jsonrpc":"2.0","id":{sent},"method":"tools/call","params":{{"name":"t"}}}}"#);
        assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
        let response = format!(r#"{{"jsonrpc":"2.0","id":{answered},"result":{{"content":[]}}}}"#);
        assert_eq!(guard.from_server(response.as_bytes()), Verdict::Forward);
    }
    // Nothing is left waiting, so the client gets no second answer when the server goes.
    assert!(guard.server_gone("the MCP server exited").is_empty());
    // One left unanswered is failed with its id as the client wrote it.
    assert_eq!(
        guard.from_client(br#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"name":"t"}}"#),
        Verdict::Forward
    );
    let gone = guard.server_gone("the MCP server exited");
    assert_eq!(gone.len(), 1);
    assert!(gone[0].starts_with(br#"{"jsonrpc":"2.0","id":-0,"#), "{}", String::from_utf8_lossy(&gone[0]));
    let responses = response_events(&guard, &path);
    assert_eq!(responses.len(), 5);
    for (event, (_, answered)) in responses.iter().zip(pairs) {
        assert_eq!(event["method"], "tools/call", "matched to its request: {event}");
        assert!(event["duration_ms"].is_number(), "{event}");
        assert_eq!(event["id"], serde_json::from_str::<serde_json::Value>(answered).unwrap(), "the id it carried");
    }
}

#[test]
fn a_server_message_whose_id_is_not_json_is_dropped() {
    let guard = guard(AuditLog::disabled());
    for id in ["01", "1e", "-", r#""a"#, "0x1", "+1"] {
        let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{}}}}"#);
        assert_eq!(guard.from_server(response.as_bytes()), Verdict::Drop, "{id}");
    }
    assert_eq!(guard.from_server(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#), Verdict::Forward);
}

#[test]
fn a_refused_server_message_is_answered_so_that_nobody_waits() {
    let guard = guard(AuditLog::disabled());
    let error = |verdict: Verdict| -> (&'static str, serde_json::Value) {
        match verdict {
            Verdict::Reply(bytes) => ("to the server", serde_json::from_slice(&bytes).unwrap()),
            Verdict::Replace(bytes) => ("to the client", serde_json::from_slice(&bytes).unwrap()),
            other => panic!("{other:?}"),
        }
    };
    // Ambiguous requests of the server: refused to the server, for their id.
    for (line, id) in [
        (&br#"{"jsonrpc":"2.0","id":3,"Method":"sampling/createMessage","method":"ping"}"#[..], serde_json::json!(3)),
        (br#"{"jsonrpc":"2.0","id":"s7","method":"sampling/createMessage","params":{},"method":"ping"}"#, "s7".into()),
    ] {
        let (to, answer) = error(guard.from_server(line));
        assert_eq!(
            (to, &answer["id"], &answer["error"]["code"]),
            ("to the server", &id, &reply::INVALID_REQUEST.into())
        );
    }
    // A response the client's request waits for, but refused: an error for that request.
    for (n, bad) in
        [r#""result":{"x":1},"result":{"x":2}"#, r#""result":{"x":1},"Result":{"x":2}"#, r#""result":{"x":1"#]
            .into_iter()
            .enumerate()
    {
        let call = format!(r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"t"}}}}"#);
        assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
        let response = format!(r#"{{"jsonrpc":"2.0","id":{n},{bad}}}"#);
        let (to, answer) = error(guard.from_server(response.as_bytes()));
        assert_eq!(
            (to, &answer["id"], &answer["error"]["code"]),
            ("to the client", &n.into(), &reply::SERVER_UNAVAILABLE.into())
        );
        // Answered once: the same refused response again has nobody waiting for it.
        assert_eq!(guard.from_server(response.as_bytes()), Verdict::Drop, "{response}");
    }
    // Neither clearly a request nor a response, or no usable id: dropped.
    assert_eq!(
        guard.from_client(br#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"t"}}"#),
        Verdict::Forward
    );
    for line in [
        &br#"{"jsonrpc":"2.0","id":9,"method":"x","result":{},"result":{}}"#[..],
        br#"{"jsonrpc":"2.0","id":9,"id":10,"result":{},"result":{}}"#,
        br#"{"jsonrpc":"2.0","id":09,"method":"x","method":"y"}"#,
    ] {
        assert_eq!(guard.from_server(line), Verdict::Drop, "{}", String::from_utf8_lossy(line));
    }
}

#[test]
fn methods_that_read_as_decided_ones_are_refused_both_ways() {
    let policy = load_str(
        "[[rule]]\naction = \"deny\"\nmethod = \"custom/Run\"\n[defaults]\naction = \"allow\"\n",
        Format::Toml,
        "test",
    )
    .expect("the policy loads");
    let guard = Guard::new(PolicyHandle::new(policy), AuditLog::disabled(), None);
    let request =
        |method: &str| serde_json::json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": {}}).to_string();
    let notification = |method: &str| serde_json::json!({"jsonrpc": "2.0", "method": method, "params": {}}).to_string();
    let refused = |verdict: Verdict| match verdict {
        Verdict::Reply(bytes) => {
            let answer: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
            answer["id"] == 5 && answer["error"]["code"] == reply::AMBIGUOUS
        }
        _ => false,
    };
    for method in [
        "Tools/Call",
        "TOOLS/CALL",
        "tools/call ",
        "\ttools/call",
        "tools/call\u{0}",
        "re\u{17f}ources/read",
        "Prompts/Get",
        "custom/run",
        "CUSTOM/RUN ",
    ] {
        assert!(refused(guard.from_client(request(method).as_bytes())), "{method:?}");
        assert_eq!(guard.from_client(notification(method).as_bytes()), Verdict::Drop, "{method:?}");
    }
    for method in ["Sampling/CreateMessage", "sampling/createmessage", "elicitation/create\n", "Custom/Run"] {
        assert!(refused(guard.from_server(request(method).as_bytes())), "{method:?}");
        assert_eq!(guard.from_server(notification(method).as_bytes()), Verdict::Drop, "{method:?}");
    }
    // The methods as spelled pass or are decided; other methods pass.
    for method in ["ping", "tools/list", "notifications/progress", "tools/call/extra", "Ping"] {
        assert_eq!(guard.from_client(request(method).as_bytes()), Verdict::Forward, "{method:?}");
    }
    assert!(matches!(guard.from_client(request("custom/Run").as_bytes()), Verdict::Reply(_)));
    assert_eq!(guard.from_server(request("sampling/createMessage").as_bytes()), Verdict::Forward);
    assert_eq!(guard.from_server(notification("notifications/message").as_bytes()), Verdict::Forward);
}

#[test]
fn deny_rules_see_where_a_link_leads_when_the_policy_asks_and_the_server_is_local() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let root = root.to_str().unwrap();
    std::fs::create_dir_all(format!("{root}/keys")).unwrap();
    std::fs::write(format!("{root}/keys/id_rsa"), "k").unwrap();
    std::fs::create_dir_all(format!("{root}/site")).unwrap();
    std::os::unix::fs::symlink(format!("{root}/keys"), format!("{root}/site/docs")).unwrap();
    let policy = |follow: bool| {
        let text = format!(
            "[defaults]\nfollow_links = {follow}\n[[rule]]\nid = \"keys\"\naction = \"deny\"\ntool = \"**\"\n\
             any_arg = \"{root}/keys/**\"\n[[rule]]\naction = \"allow\"\ntool = \"**\"\n"
        );
        PolicyHandle::new(load_str(&text, Format::Toml, "test").expect("the policy loads"))
    };
    let read = |path: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"read","arguments":{{"p":"{path}"}}}}}}"#
        )
    };
    let through_link = read(&format!("{root}/site/docs/id_rsa"));
    let denied = |verdict: Verdict| match verdict {
        Verdict::Reply(bytes) => String::from_utf8(bytes).unwrap().contains("rule `keys`"),
        _ => false,
    };
    let local = Guard::new(policy(true), AuditLog::disabled(), None);
    assert!(denied(local.from_client(through_link.as_bytes())));
    assert!(denied(local.from_client(read(&format!("{root}/keys/id_rsa")).as_bytes())));
    assert_eq!(local.from_client(read(&format!("{root}/site/index.html")).as_bytes()), Verdict::Forward);
    // The policy did not ask, or the server's files are on another machine.
    let unasked = Guard::new(policy(false), AuditLog::disabled(), None);
    assert_eq!(unasked.from_client(through_link.as_bytes()), Verdict::Forward);
    let remote = Guard::new(policy(true), AuditLog::disabled(), None).for_remote_server();
    assert_eq!(remote.from_client(through_link.as_bytes()), Verdict::Forward);
}

mod explain_agrees {
    //! `clawai policy explain` decides with `decide_alone`; the guard decides on the
    //! wire. Over generated calls (tool names read and written, paths inside clawai's
    //! own files and elsewhere, arguments with and without a credential), a call the
    //! guard forwards is one `decide_alone` allows or audits, and every other call it
    //! refuses (nobody can be asked here, so a prompt is refused too).

    use super::*;
    use crate::self_protection::{Protected, SelfProtection};
    use clawai_policy::{Action, Call};
    use proptest::prelude::*;

    const POLICY: &str = r#"
[[rule]]
id = "no-ssh"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"

[[rule]]
id = "ask-delete"
action = "prompt"
operation = "delete"

[[rule]]
id = "rest"
action = "audit"
tool = "**"
"#;

    fn arguments() -> impl Strategy<Value = serde_json::Value> {
        let path = prop::sample::select(vec![
            "/home/u/p/README.md",
            "/home/u/.config/clawai/policy.toml",
            "/home/u/.config/clawai/evil",
            "/home/u/.ssh/id_rsa",
            "/home/u/p/../.config/clawai/approvals.toml",
            "/tmp/x",
        ]);
        let text = prop::sample::select(vec![
            "hello",
            "AKIAIOSFODNN7EXAMPLE",
            "ghp_0123456789abcdefghijklmnopqrstuvwxyzAB",
            "nothing to see",
        ]);
        (path, text).prop_map(|(path, text)| serde_json::json!({"path": path, "text": text}))
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        #[test]
        fn explain_decides_as_the_guard(
            tool in prop::sample::select(vec!["read_file", "write_file", "create_directory", "delete_file", "move_file", "note"]),
            args in arguments(),
        ) {
            let policy = load_str(POLICY, Format::Toml, "test").expect("the policy loads");
            let protection = || SelfProtection::new(vec![Protected::tree("/home/u/.config/clawai")]);
            let dir = tempfile::tempdir().unwrap();
            let audit = AuditLog::open(&dir.path().join("a.jsonl"), u64::MAX, 0).unwrap();
            let handle = PolicyHandle::new(policy.clone()).with_self_protection(protection());
            let guard = Guard::new(handle, audit, Some("s".into()));
            let params = serde_json::json!({"name": tool, "arguments": args});
            let line = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
            let verdict = guard.from_client(line.as_bytes());
            let json = clawai_protocol::Json::from(&params);
            let call = Call::from_params("tools/call", Some(&json)).with_server(Some("s"));
            let session = clawai_policy::Session::default();
            let protection = protection();
            let alone = decide_alone(&policy, Some(&protection), &call, &session);
            let passes = matches!(alone.decision.action, Action::Allow | Action::Audit);
            prop_assert_eq!(verdict == Verdict::Forward, passes, "{} {}: {:?} vs {}", tool, args, verdict, alone.reason());
        }
    }
}

/// A session store that hands every session the same memory and counts the opens: a
/// stand-in for a shared store, to see that the guard keeps its session state only
/// where the store chosen at start-up says.
#[derive(Default)]
struct OneMemory {
    memory: std::sync::Arc<clawai_store::LocalSessionMemory>,
    opened: std::sync::atomic::AtomicUsize,
}

impl clawai_store::SessionStore for OneMemory {
    fn open(&self, _id: &str) -> std::sync::Arc<dyn clawai_store::SessionMemory> {
        self.opened.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.memory.clone()
    }
}

#[test]
fn taint_and_rate_windows_live_in_the_store_the_options_name() {
    use clawai_store::SessionMemory as _;
    let policy = "[[rule]]\nid = \"reads\"\naction = \"allow\"\ntool = \"read\"\ntaint = \"private\"\n\n\
                  [[rule]]\nid = \"flood\"\naction = \"deny\"\ntool = \"fetch\"\nrate = \"1/min\"\n\n\
                  [[rule]]\nid = \"leak\"\naction = \"deny\"\ntool = \"send\"\ntainted = \"private\"\n\n\
                  [[rule]]\naction = \"allow\"\nmethod = \"**\"\n";
    let store = std::sync::Arc::new(OneMemory::default());
    let stores = clawai_store::Stores { sessions: store.clone(), ..clawai_store::Stores::local() };
    let guard_in = |stores: &clawai_store::Stores| {
        let policy = load_str(policy, Format::Toml, "test").expect("the policy loads");
        Guard::new(PolicyHandle::new(policy), AuditLog::disabled(), Some("s".into()))
            .with_ask_options(AskOptions { stores: stores.clone(), ..AskOptions::default() })
    };
    let call = |guard: &Guard, id: u32, tool: &str| {
        guard.from_client(
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}"}}}}"#).as_bytes(),
        )
    };
    let first = guard_in(&stores);
    assert_eq!(call(&first, 1, "read"), Verdict::Forward);
    assert_eq!(call(&first, 2, "fetch"), Verdict::Forward);
    assert_eq!(store.memory.labels().into_iter().collect::<Vec<_>>(), ["private"], "the label is in the store");
    // Another guard over the same store (another replica, say) sees the label and the count.
    let second = guard_in(&stores);
    assert_ne!(call(&second, 3, "send"), Verdict::Forward, "tainted in the store: denied");
    assert_ne!(call(&second, 4, "fetch"), Verdict::Forward, "the window in the store counts both");
    assert_eq!(store.opened.load(std::sync::atomic::Ordering::SeqCst), 2);
    // A guard with the local stores keeps its own memory.
    let local = guard_in(&clawai_store::Stores::local());
    assert_eq!(call(&local, 5, "send"), Verdict::Forward);
}

/// The trail's lines at `path` as they are on disk now: nothing is flushed first.
fn on_disk_now(path: &std::path::Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).expect("each line of the trail is JSON"))
        .collect()
}

#[test]
fn every_verdict_a_transport_gets_was_decided_by_an_event_already_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let policy = "[[rule]]\nid = \"no-rm\"\naction = \"deny\"\ntool = \"rm\"\n\n\
                  [[rule]]\nid = \"all\"\naction = \"allow\"\nmethod = \"**\"\n";
    let policy = load_str(policy, Format::Toml, "test").expect("the policy loads");
    let guard = Guard::new(PolicyHandle::new(policy), AuditLog::open(&path, u64::MAX, 0).unwrap(), Some("s".into()));
    let last = |path: &std::path::Path| on_disk_now(path).pop().expect("an event is on disk");

    // A call the policy lets through: its `allow` is on disk before the call is forwarded.
    let verdict = guard.from_client(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ls"}}"#);
    assert_eq!(verdict, Verdict::Forward);
    let event = last(&path);
    assert_eq!((event["decision"].as_str(), event["tool"].as_str()), (Some("allow"), Some("ls")), "{event}");
    // A denied one: the `deny` is on disk before its answer goes back.
    let verdict = guard.from_client(br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"rm"}}"#);
    assert!(matches!(verdict, Verdict::Reply(_)), "{verdict:?}");
    assert_eq!(last(&path)["rule"], "no-rm");
    // An unparsable line and an oversize one, from either side.
    let verdict =
        guard.from_client(br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ls","name":"rm"}}"#);
    assert!(matches!(verdict, Verdict::Reply(_)), "{verdict:?}");
    assert_eq!(last(&path)["decision"], "refused");
    let lines = on_disk_now(&path).len();
    assert!(matches!(guard.oversize_from_client(br#"{"id":4,"#, 9_000_000, 1_000), Verdict::Reply(_)));
    assert_eq!((on_disk_now(&path).len(), last(&path)["decision"].as_str()), (lines + 1, Some("refused")));
    let lines = on_disk_now(&path).len();
    let _ = guard.oversize_from_server(br#"{"id":1,"#, 9_000_000, 1_000);
    assert_eq!((on_disk_now(&path).len(), last(&path)["decision"].as_str()), (lines + 1, Some("refused")));
    // An HTTP request whose headers disagree with its body.
    let lines = on_disk_now(&path).len();
    let _answer = guard.refuse_header_mismatch(Some("5"), "`Mcp-Method` says tools/list", 40);
    assert_eq!(on_disk_now(&path).len(), lines + 1);
    // Requests still waiting when the server goes: each failure is on disk first.
    let verdict = guard.from_client(br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"ls"}}"#);
    assert_eq!(verdict, Verdict::Forward);
    let lines = on_disk_now(&path).len();
    assert_eq!(guard.server_gone("the MCP server exited").len(), 1);
    assert_eq!(on_disk_now(&path).len(), lines + 1);
}
