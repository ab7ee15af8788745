//! The scan of a 1,000-tool `tools/list`, built from the real corpus (every tool of the
//! dumped servers, renamed and varied until there are 1,000), as pinning will run it on
//! first sight. Target: pinning and scan together within 10 ms, so the scan within 5.
//!
//! `cargo bench -p clawai-scan --bench scan`

use std::hint::black_box;
use std::path::Path;

use clawai_scan::{ItemKind, Scanner};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

fn corpus_tools() -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.retain(|p| p.extension().is_some_and(|e| e == "json"));
    files.sort();
    files
        .iter()
        .flat_map(|path| {
            let dump: Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
            dump["tools"].as_array().unwrap().clone()
        })
        .collect()
}

/// 1,000 tools: the corpus's tools over and over, each copy with its own name and a
/// description that differs, so nothing is the same string twice.
fn thousand_tools(corpus: &[Value]) -> Vec<Value> {
    (0..1000)
        .map(|i| {
            let mut tool = corpus[i % corpus.len()].clone();
            let name = format!("{}_{i}", tool["name"].as_str().unwrap());
            let description = format!("{} (copy {i})", tool["description"].as_str().unwrap_or_default());
            tool["name"] = Value::String(name);
            tool["description"] = Value::String(description);
            tool
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let corpus = corpus_tools();
    let tools = thousand_tools(&corpus);
    let bytes = serde_json::to_vec(&tools).unwrap().len();
    // Behind a gateway: another server's 200 tool names to look for.
    let others: Vec<String> = (0..200).map(|i| format!("other_tool_{i}")).collect();
    let others: Vec<&str> = others.iter().map(String::as_str).collect();
    assert!(Scanner::default().scan_listing(ItemKind::Tool, &tools).is_empty(), "the bench list is clean");
    let mut group = c.benchmark_group(format!("scan 1000 tools ({} KiB)", bytes / 1024));
    group.bench_function("alone", |b| {
        let scanner = Scanner::default();
        b.iter(|| black_box(scanner.scan_listing(ItemKind::Tool, black_box(&tools))))
    });
    group.bench_function("with 200 other servers' names", |b| {
        let scanner = Scanner::new(&others);
        b.iter(|| black_box(scanner.scan_listing(ItemKind::Tool, black_box(&tools))))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
