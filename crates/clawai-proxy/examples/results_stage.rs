//! Runs 1 MiB `tools/call` results (text, a base64 PNG, JSON `structuredContent`, as
//! `clawai-bench` sends them) through the guard with every default guard on, and prints
//! the time each takes, for profilers and for a quick look at the results stage:
//! `cargo run --release -p clawai-proxy --example results_stage [ROUNDS] [SHAPE]`.

use std::time::Instant;

use clawai_bench::results::BigShape;
use clawai_policy::{Format, load_str};
use clawai_proxy::{AuditLog, Guard, PolicyHandle};

fn main() {
    let rounds: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let only = std::env::args().nth(2);
    let policy = load_str("[[rule]]\nid = \"all\"\naction = \"allow\"\ntool = \"**\"\n", Format::Toml, "bench")
        .expect("the policy loads");
    let guard = Guard::new(PolicyHandle::new(policy), AuditLog::disabled(), Some("bench".into()));
    for (tool, shape) in [("big_text", BigShape::Text), ("big_image", BigShape::Image), ("big_json", BigShape::Json)] {
        if only.as_deref().is_some_and(|o| o != tool) {
            continue;
        }
        let result = shape.result(1 << 20);
        let mut times = Vec::new();
        for id in 0..rounds {
            let call = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{}}}}}}"#
            );
            let response = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
            let _ = guard.from_client(call.as_bytes());
            let t = Instant::now();
            let verdict = guard.from_server(response.as_bytes());
            times.push(t.elapsed());
            assert!(matches!(verdict, clawai_proxy::Verdict::Forward), "{tool}: {verdict:?}");
        }
        times.sort();
        println!("{tool}: median {:.2} ms per MiB", times[times.len() / 2].as_secs_f64() * 1e3);
    }
}
