//! The per-message cost of the decision path, without pipes or processes.

use std::hint::black_box;

use clawai_policy::{Format, load_str};
use clawai_proxy::{AuditLog, Guard, PolicyHandle, Verdict};
use criterion::{Criterion, criterion_group, criterion_main};

fn policy() -> String {
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
    text
}

fn bench(c: &mut Criterion) {
    let policy = load_str(&policy(), Format::Toml, "bench").unwrap();
    let call = br#"{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/u/projects/app/src/main.rs"}}}"#;
    let response = br#"{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"path":"/home/u/projects/app/src/main.rs"}}}"#;
    for (name, audit) in
        [("no audit", None), ("audit to a file", Some(std::env::temp_dir().join("clawai-guard-bench.jsonl")))]
    {
        let log = match &audit {
            Some(path) => AuditLog::open(path, u64::MAX, 0).unwrap(),
            None => AuditLog::disabled(),
        };
        let guard = Guard::new(PolicyHandle::new(policy.clone()), log, Some("bench".into()));
        c.bench_function(&format!("tools/call + response, {name}"), |b| {
            b.iter(|| {
                assert_eq!(guard.from_client(black_box(call)), Verdict::Forward);
                assert_eq!(guard.from_server(black_box(response)), Verdict::Forward);
            })
        });
        let ping = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let pong = br#"{"jsonrpc":"2.0","id":7,"result":{}}"#;
        c.bench_function(&format!("ping + response (pass-through), {name}"), |b| {
            b.iter(|| {
                assert_eq!(guard.from_client(black_box(ping)), Verdict::Forward);
                assert_eq!(guard.from_server(black_box(pong)), Verdict::Forward);
            })
        });
        // A 1 MiB text result: what the results stage reads on its way.
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":12345,"result":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
            "fn main() { println!(\"hello, world\"); } // plain source text\n".repeat(16 * 1024)
        );
        c.bench_function(&format!("tools/call + 1 MiB response, {name}"), |b| {
            b.iter(|| {
                assert_eq!(guard.from_client(black_box(call)), Verdict::Forward);
                assert_eq!(guard.from_server(black_box(big.as_bytes())), Verdict::Forward);
            })
        });
        if let Some(path) = audit {
            let _ = std::fs::remove_file(path);
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
