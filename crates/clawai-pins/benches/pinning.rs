//! Pinning a 1,000-tool `tools/list` result: compared with the pins (every tool
//! pinned already, the steady state of a proxy) and filtered.

use clawai_pins::{Identity, Tracker};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn thousand_tools() -> Vec<u8> {
    let tools: Vec<_> = (0..1000)
        .map(|i| {
            json!({
                "name": format!("tool_{i}"),
                "title": format!("Tool {i}"),
                "description": format!("Does thing number {i} with the file it is given, and returns what it found. Use it when the user asks for thing {i}."),
                "inputSchema": {"type": "object", "properties": {"path": {"type": "string", "description": "the file"}, "depth": {"type": "integer", "minimum": 0, "maximum": 10}}, "required": ["path"]},
                "annotations": {"readOnlyHint": i % 2 == 0, "destructiveHint": false}
            })
        })
        .collect();
    serde_json::to_vec(&json!({"tools": tools})).unwrap()
}

fn pinning(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let pins = Tracker::open(dir.path(), Identity::command("bench", &["server".to_owned()])).unwrap();
    let result = thousand_tools();
    pins.filter_list("tools/list", &result).expect("a list");
    c.bench_function("pin_1000_tools_list", |b| b.iter(|| pins.filter_list("tools/list", &result)));
    // The share of that which is reading the JSON at all.
    c.bench_function("parse_1000_tools_list", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&result).unwrap())
    });
}

criterion_group!(benches, pinning);
criterion_main!(benches);
