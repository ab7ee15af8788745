//! `clawai ui` as an approval broker: asked over its socket like a proxy asks, answered
//! with `clawai approve` / `clawai deny` like a person at a terminal answers.

use crate::ui_support;

use std::time::Duration;

use clawai_approvals::{By, Client, Error, Outcome};
use serde_json::{Value, json};
use ui_support::{Ui, mode};

const WAIT: Duration = Duration::from_secs(10);

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn an_approval_at_the_terminal_reaches_the_waiting_call() {
    let ui = Ui::start();
    let mut once = ui.ask("k1");
    let mut session = ui.ask("k2");
    assert_eq!(once.wait(Duration::from_millis(200)).unwrap(), None, "answered before anyone approved");
    let approved = ui.cli(&["approve", &once.id().to_ascii_lowercase()]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    let answer = once.wait(WAIT).unwrap().expect("the answer arrives");
    assert_eq!((answer.id.as_str(), answer.outcome, answer.by), (once.id(), Outcome::AllowOnce, By::Cli));
    assert!(ui.cli(&["approve", session.id(), "--session"]).status.success());
    assert_eq!(session.wait(WAIT).unwrap().unwrap().outcome, Outcome::AllowSession);
    assert!(ui.client().list().unwrap().is_empty(), "answered approvals are no longer pending");
}

#[test]
fn a_denial_reaches_the_call_and_a_second_answer_is_refused() {
    let ui = Ui::start();
    let mut pending = ui.ask("k");
    let denied = ui.cli(&["deny", pending.id()]);
    assert!(denied.status.success(), "{}", stderr(&denied));
    assert_eq!(pending.wait(WAIT).unwrap().unwrap().outcome, Outcome::Deny);
    let again = ui.cli(&["approve", pending.id()]);
    assert_eq!(again.status.code(), Some(1));
    assert!(stderr(&again).contains("no pending approval"), "{}", stderr(&again));
}

#[test]
fn approvals_lists_what_is_pending_as_json_and_as_escaped_lines() {
    let ui = Ui::start();
    let pending = ui.ask("k");
    let listed = ui.cli(&["approvals", "--json"]);
    assert!(listed.status.success(), "{}", stderr(&listed));
    let items: Vec<Value> = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(item["id"], pending.id());
    assert_eq!(item["server"], "fs");
    assert_eq!(item["method"], "tools/call");
    assert_eq!(item["name"], "write_file");
    assert_eq!(item["arguments"]["path"], "/tmp/evil\u{202e}txt.sh");
    assert_eq!(item["rule"], "ask-writes");
    assert_eq!(item["state"], "waiting");
    let asked_at: jiff::Timestamp = item["asked_at"].as_str().unwrap().parse().expect("asked_at is RFC 3339");
    assert!((jiff::Timestamp::now() - asked_at).get_seconds().abs() < 60);
    let readable = String::from_utf8(ui.cli(&["approvals"]).stdout).unwrap();
    assert!(readable.contains(pending.id()) && readable.contains("write_file"), "{readable}");
    assert!(readable.contains("\\u{202E}") && !readable.contains('\u{202e}'), "{readable}");
}

#[test]
fn an_approval_after_the_timeout_lets_exactly_one_identical_retry_through() {
    let ui = Ui::start();
    let first = ui.ask("same-call");
    let id = first.id().to_owned();
    first.timed_out().unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let listed = ui.client().list().unwrap();
    assert_eq!(listed.len(), 1, "a timed-out approval stays listed");
    assert_eq!(listed[0].state, clawai_approvals::State::Expired);
    assert!(ui.cli(&["approve", &id]).status.success());
    // Another call gets no grant.
    let mut other = ui.ask("another-call");
    assert_eq!(other.wait(Duration::from_millis(200)).unwrap(), None);
    let mut retry = ui.ask("same-call");
    let answer = retry.wait(Duration::ZERO).unwrap().expect("the retry is answered at once");
    assert_eq!((answer.id.as_str(), answer.outcome, answer.by), (id.as_str(), Outcome::AllowOnce, By::Grant));
    let mut second = ui.ask("same-call");
    assert_eq!(second.wait(Duration::from_millis(300)).unwrap(), None, "the grant was used once");
    assert_ne!(second.id(), id);
}

#[test]
fn a_grant_and_a_timed_out_approval_expire_with_the_window() {
    let ui = Ui::start_with(&[("CLAWAI_GRANT_WINDOW_MS", "400")]);
    let first = ui.ask("k");
    let id = first.id().to_owned();
    first.timed_out().unwrap();
    assert!(ui.cli(&["approve", &id]).status.success());
    std::thread::sleep(Duration::from_millis(700));
    let mut late = ui.ask("k");
    assert_eq!(late.wait(Duration::from_millis(200)).unwrap(), None, "an expired grant let a call through");
    // Approving after the window is too late.
    let stale = ui.ask("k2");
    let stale_id = stale.id().to_owned();
    stale.timed_out().unwrap();
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(ui.cli(&["approve", &stale_id]).status.code(), Some(1));
}

#[test]
fn cancel_and_a_closed_connection_withdraw_the_ask() {
    let ui = Ui::start();
    ui.ask("k1").cancel().unwrap();
    drop(ui.ask("k2"));
    std::thread::sleep(Duration::from_millis(200));
    assert!(ui.client().list().unwrap().is_empty());
}

#[test]
fn another_thread_can_withdraw_an_ask_while_it_is_awaited() {
    let ui = Ui::start();
    let mut pending = ui.ask("k");
    let canceller = pending.canceller().unwrap();
    let waiter = std::thread::spawn(move || pending.wait(WAIT));
    std::thread::sleep(Duration::from_millis(100));
    let started = std::time::Instant::now();
    canceller.cancel().unwrap();
    assert!(matches!(waiter.join().unwrap(), Err(Error::Closed)));
    assert!(started.elapsed() < Duration::from_secs(2), "the wait did not end at once");
    std::thread::sleep(Duration::from_millis(100));
    assert!(ui.client().list().unwrap().is_empty());
}

#[test]
fn each_new_ask_raises_a_desktop_notification_where_notify_send_exists() {
    use std::os::unix::fs::PermissionsExt;
    let bin = tempfile::tempdir().unwrap();
    let log = bin.path().join("notified");
    let script = bin.path().join("notify-send");
    std::fs::write(&script, format!("#!/bin/sh\nprintf '%s|%s\\n' \"$1\" \"$2\" >> '{}'\n", log.display())).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.path().display(), std::env::var("PATH").unwrap_or_default());
    let ui = Ui::start_with(&[("PATH", &path)]);
    let pending = ui.ask("k");
    let deadline = std::time::Instant::now() + WAIT;
    // The shell creates the file, then writes the line: wait for the whole line.
    let written = || std::fs::read_to_string(&log).ok().filter(|text| text.ends_with('\n'));
    while written().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let notified = written().expect("notify-send ran");
    assert_eq!(notified, format!("clawai: approval needed|fs write_file — clawai approve {}\n", pending.id()));
}

#[test]
fn always_appends_to_approvals_toml_keeping_what_is_there() {
    let ui = Ui::start();
    let file = ui.dir.path().join("config/clawai/approvals.toml");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let before = "# my own notes\n[[allow]]\nid = \"by-hand\"   # keep this spacing\ntool = \"read_*\"\n";
    std::fs::write(&file, before).unwrap();
    let mut pending = ui.ask("k");
    // What --always would write is shown before it is chosen.
    let listed = String::from_utf8_lossy(&ui.cli(&["approvals"]).stdout).into_owned();
    assert!(listed.contains("--always writes: args.path = \"/tmp/evil\\u{202E}txt.sh\""), "{listed}");
    let approved = ui.cli(&["approve", pending.id(), "--always"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert_eq!(pending.wait(WAIT).unwrap().unwrap().outcome, Outcome::AllowAlways);
    let after = std::fs::read_to_string(&file).unwrap();
    assert!(after.starts_with(before), "{after}");
    let parsed: toml::Table = toml::from_str(&after).unwrap();
    let new = parsed["allow"].as_array().unwrap()[1].as_table().unwrap();
    assert_eq!(new["server"].as_str(), Some("fs"));
    assert_eq!(new["tool"].as_str(), Some("write_file"));
    // The arguments shown, and no more: each exactly (a path directly under /tmp is not
    // widened to /tmp/*: a directory one level down is too wide to approve).
    assert_eq!(new["args"]["path"].as_str(), Some("/tmp/evil\u{202e}txt.sh"), "{after}");
    assert_eq!(new["args"]["content"].as_str(), Some("x"), "{after}");
    assert!(new["id"].as_str().unwrap().starts_with("always-"));
    assert!(new["description"].as_str().unwrap().contains("with clawai approve"));
    assert_eq!(mode(&file), 0o600);
    // Read as the proxy reads it: the call shown is approved; another file, or a write to
    // /etc/shadow, is not.
    let approvals = clawai_policy::Approvals::load(&file).unwrap();
    let approves = |path: &str| {
        let params = json!({"name": "write_file", "arguments": {"path": path, "content": "x"}});
        let params = clawai_protocol::Json::from(&params);
        let call = clawai_policy::Call::from_params("tools/call", Some(&params)).with_server(Some("fs"));
        approvals.approving(&call).is_some()
    };
    assert!(approves("/tmp/evil\u{202e}txt.sh"));
    assert!(!approves("/tmp/other.txt"));
    assert!(!approves("/etc/shadow"));
}

#[test]
fn always_for_any_arguments_is_an_explicit_choice() {
    let ui = Ui::start();
    let file = ui.dir.path().join("config/clawai/approvals.toml");
    let mut pending = ui.ask("k");
    let approved = ui.cli(&["approve", pending.id(), "--always", "--any-arguments"]);
    assert!(approved.status.success(), "{}", stderr(&approved));
    assert!(String::from_utf8_lossy(&approved.stdout).contains("for any arguments"));
    assert_eq!(pending.wait(WAIT).unwrap().unwrap().outcome, Outcome::AllowAlways);
    let parsed: toml::Table = toml::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    let new = parsed["allow"].as_array().unwrap()[0].as_table().unwrap();
    assert!(new.get("args").is_none(), "{new:?}");
    assert!(new["description"].as_str().unwrap().contains("for any arguments"));
    let refused = ui.cli(&["approve", "ABCDEF", "--any-arguments"]);
    assert!(!refused.status.success(), "--any-arguments needs --always");
}

#[test]
fn the_socket_and_url_file_are_private_and_removed_on_exit() {
    let mut ui = Ui::start();
    let socket = ui.socket();
    let url_file = socket.with_file_name("ui.url");
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    assert_eq!(mode(&url_file), 0o600);
    assert_eq!(std::fs::read_to_string(&url_file).unwrap().trim(), ui.url);
    assert!(ui.stop().success());
    assert!(!socket.exists() && !url_file.exists());
}

#[test]
fn a_second_broker_refuses_and_a_stale_socket_is_replaced() {
    let ui = Ui::start();
    let second = ui.cli(&["ui", "--listen", "127.0.0.1:0"]);
    assert!(!second.status.success());
    let message = stderr(&second);
    assert!(message.contains("already running") && message.contains(&ui.url), "{message}");
    drop(ui);

    // A socket file nobody listens on (a broker that was killed) is taken over.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run/clawai/broker.sock");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    let ui = Ui::start_in(dir, &[]);
    assert!(ui.client().list().unwrap().is_empty());
    drop(ui);

    // Anything else in its place is left alone.
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("run/clawai/broker.sock");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    std::fs::write(&socket, "mine").unwrap();
    let refused = ui_support::command(dir.path()).args(["ui", "--listen", "127.0.0.1:0"]).output().unwrap();
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("in the way"), "{}", stderr(&refused));
    assert_eq!(std::fs::read_to_string(&socket).unwrap(), "mine");
}

#[test]
fn a_malformed_line_is_refused_and_changes_nothing() {
    use std::io::{BufRead, BufReader, Write};
    let ui = Ui::start();
    let pending = ui.ask("k");
    let before = ui.client().list().unwrap();
    for bad in [
        "not json",
        "{\"type\":\"approve\",\"id\":\"X\"}",
        "{\"type\":\"approve\",\"id\":\"ID\",\"scope\":\"forever\"}",
    ] {
        let bad = bad.replace("ID", pending.id());
        let mut stream = std::os::unix::net::UnixStream::connect(ui.socket()).unwrap();
        stream.write_all(format!("{bad}\n").as_bytes()).unwrap();
        let mut reader = BufReader::new(stream);
        let mut reply = String::new();
        reader.read_line(&mut reply).unwrap();
        let reply: Value = serde_json::from_str(&reply).unwrap();
        assert_eq!(reply["type"], "error", "{bad}: {reply}");
        let mut rest = String::new();
        assert_eq!(reader.read_line(&mut rest).unwrap(), 0, "the connection closes after {bad}");
    }
    assert_eq!(ui.client().list().unwrap(), before);
    drop(pending);
}

#[test]
fn without_a_broker_the_commands_say_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["approvals"][..], &["approve", "ABCDEF"], &["deny", "ABCDEF"]] {
        let output = ui_support::command(dir.path()).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(
            stderr(&output).contains("no approval broker is running; start one with `clawai ui`"),
            "{}",
            stderr(&output)
        );
    }
    let socket = dir.path().join("run/clawai/broker.sock");
    assert!(matches!(Client::connect_to(&socket), Err(Error::NoBroker(_))));
}
