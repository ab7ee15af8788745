//! Runs the decision path N times (default 10,000) on one `tools/call` and its response,
//! with the benchmark's 100-rule policy, for profilers that count instructions:
//! `valgrind --tool=callgrind target/release/examples/guard_loop 10000`.
//! `GUARD_LOOP_AUDIT=FILE` records to an audit file.

use clawai_policy::{Format, load_str};
use clawai_proxy::{AuditLog, Guard, PolicyHandle, Verdict};

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(10_000);
    let mut text = String::from(
        "[[rule]]\nid = \"no-credentials\"\naction = \"deny\"\ntool = \"**\"\nany_arg = [\"**/.ssh/**\", \"**/.aws/**\", \"**/.env\"]\n",
    );
    for i in 0..98 {
        text.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\naction = \"deny\"\ntool = \"svc{i}_*\"\nargs.path = \"/data/{i}/**\"\n"
        ));
    }
    text.push_str(
        "[[rule]]\nid = \"project\"\naction = \"allow\"\ntool = \"read_*\"\nargs.path = \"/home/u/projects/**\"\n",
    );
    let policy = load_str(&text, Format::Toml, "bench").expect("the policy loads");
    let audit = match std::env::var_os("GUARD_LOOP_AUDIT") {
        Some(path) => AuditLog::open(path.as_ref(), u64::MAX, 0).expect("the audit file opens"),
        None => AuditLog::disabled(),
    };
    let guard = Guard::new(PolicyHandle::new(policy), audit, Some("bench".into()));
    for i in 0..n {
        let call = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"read_file","arguments":{{"path":"/home/u/projects/app/src/main.rs"}}}}}}"#
        );
        let response = format!(
            r#"{{"jsonrpc":"2.0","id":{i},"result":{{"content":[{{"type":"text","text":"ok"}}],"structuredContent":{{"path":"/home/u/projects/app/src/main.rs"}}}}}}"#
        );
        assert_eq!(guard.from_client(call.as_bytes()), Verdict::Forward);
        assert_eq!(guard.from_server(response.as_bytes()), Verdict::Forward);
    }
    guard.flush_audit();
}
