//! One decision for a `tools/call` against a 1,000-rule policy (issue bar: median ≤ 5 µs).

use clawai_policy::{Call, Format, load_str};
use clawai_protocol::Json;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use std::hint::black_box;

/// 1,000 realistic rules: per-service tool globs with argument conditions, regexes,
/// operations and a few catch-alls at the end; the call under test matches late.
fn thousand_rules() -> String {
    let mut text = String::from("[defaults]\naction = \"deny\"\n");
    for i in 0..1000 {
        let rule = match i % 5 {
            0 => format!("tool = \"svc{i}_*\"\nargs.path = \"/data/{i}/**\""),
            1 => format!("tools = [\"svc{i}_read\", \"svc{i}_list\"]"),
            2 => format!("tool_regex = \"^svc{i}_(get|put)$\""),
            3 => format!("tool = \"svc{i}_*\"\nany_arg = \"**/.secret{i}/**\""),
            _ => format!("tool = \"svc{i}_*\"\nserver = \"srv{i}\""),
        };
        let action = ["allow", "deny", "prompt", "audit"][i % 4];
        text.push_str(&format!("[[rule]]\nid = \"r{i}\"\naction = \"{action}\"\n{rule}\n"));
    }
    text.push_str(
        "[[rule]]\nid = \"reads\"\naction = \"allow\"\ntool = \"read_*\"\nargs.path = \"/home/u/projects/**\"\n",
    );
    text
}

fn bench(c: &mut Criterion) {
    let text = thousand_rules();
    c.bench_function("load and validate a 1000-rule policy", |b| {
        b.iter(|| load_str(black_box(&text), Format::Toml, "bench").unwrap())
    });
    let policy = load_str(&text, Format::Toml, "bench").unwrap();
    let params = json!({"name": "read_file", "arguments": {"path": "/home/u/projects/app/src/main.rs"}});
    let params_json = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params_json)).with_server(Some("filesystem"));
    assert_eq!(policy.decide(&call).rule_id(), Some("reads"));
    c.bench_function("decide tools/call, 1000 rules, match at the end", |b| {
        b.iter(|| black_box(policy.decide(black_box(&call)).action))
    });

    let params = json!({"name": "svc995_read", "arguments": {"path": "/x"}});
    let params_json = Json::from(&params);
    let early = Call::from_params("tools/call", Some(&params_json));
    c.bench_function("decide tools/call, 1000 rules, name-indexed match", |b| {
        b.iter(|| black_box(policy.decide(black_box(&early)).action))
    });

    let params = json!({"name": "unknown_tool", "arguments": {"path": "/x"}});
    let params_json = Json::from(&params);
    let none = Call::from_params("tools/call", Some(&params_json));
    c.bench_function("decide tools/call, 1000 rules, no match (default)", |b| {
        b.iter(|| black_box(policy.decide(black_box(&none)).action))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
