//! Pinning a 1,000-tool `tools/list` result: compared with the pins (every tool
//! pinned already, the steady state of a proxy) and filtered; and the first listing of
//! a server, where every tool is new: pinned and scanned for poisoning.

use clawai_pins::{Identity, Kind, PinFile, ScanSettings, Screen, Tracker};
use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
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
    let scan = ScanSettings::default();
    pins.filter_list("tools/list", &result, scan).expect("a list");
    c.bench_function("pin_1000_tools_list", |b| b.iter(|| pins.filter_list("tools/list", &result, scan)));
    // The first listing: every tool hashed, scanned, pinned, and the pin file written.
    c.bench_function("pin_and_scan_1000_new_tools", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap();
                let pins = Tracker::open(dir.path(), Identity::command("bench", &["server".to_owned()])).unwrap();
                (dir, pins)
            },
            |(dir, pins)| {
                pins.filter_list("tools/list", &result, scan).expect("a list");
                (dir, pins)
            },
            BatchSize::PerIteration,
        )
    });
    // The same without the scan, to see its share.
    c.bench_function("pin_1000_new_tools_unscanned", |b| {
        b.iter_batched(
            || {
                let dir = tempfile::tempdir().unwrap();
                let pins = Tracker::open(dir.path(), Identity::command("bench", &["server".to_owned()])).unwrap();
                (dir, pins)
            },
            |(dir, pins)| {
                pins.filter_list("tools/list", &result, ScanSettings::OFF).expect("a list");
                (dir, pins)
            },
            BatchSize::PerIteration,
        )
    });
    // The first listing in memory (no pin file written): compared, hashed, scanned.
    let tools: Vec<serde_json::Value> =
        serde_json::from_slice::<serde_json::Value>(&result).unwrap()["tools"].as_array().unwrap().clone();
    let identity = Identity::command("bench", &["server".to_owned()]);
    for (label, settings) in
        [("observe_and_scan_1000_new_tools", scan), ("observe_1000_new_tools_unscanned", ScanSettings::OFF)]
    {
        c.bench_function(label, |b| {
            b.iter_batched(
                || PinFile::new(&identity),
                |mut file| {
                    file.observe_items(Kind::Tool, &tools, &Screen::alone(settings));
                    file
                },
                BatchSize::SmallInput,
            )
        });
    }
    // The share of that which is reading the JSON at all.
    c.bench_function("parse_1000_tools_list", |b| {
        b.iter(|| serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&result).unwrap())
    });
}

criterion_group!(benches, pinning);
criterion_main!(benches);
