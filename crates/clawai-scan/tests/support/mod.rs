//! The false-positive corpus: real listings of MCP servers (dumped by
//! `tests/corpus/dump.py`) and multilingual samples.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use clawai_scan::ItemKind;
use serde_json::Value;

/// One server's dump.
pub(crate) struct Listing {
    pub server: String,
    pub instructions: Option<String>,
    pub items: Vec<(ItemKind, Value)>,
}

fn dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests").join(name)
}

/// Every dumped server, in file name order.
pub(crate) fn listings() -> Vec<Listing> {
    clawai_testkit::corpus::dumps()
        .into_iter()
        .map(|dump| {
            let mut items = Vec::new();
            for (member, kind) in [
                ("tools", ItemKind::Tool),
                ("prompts", ItemKind::Prompt),
                ("resourceTemplates", ItemKind::ResourceTemplate),
            ] {
                items.extend(dump.items(member).iter().map(|item| (kind, item.clone())));
            }
            Listing { instructions: dump.instructions().map(str::to_owned), server: dump.server, items }
        })
        .collect()
}

/// The multilingual and emoji samples, one per line.
pub(crate) fn samples() -> Vec<String> {
    std::fs::read_to_string(dir("samples").join("multilingual.txt"))
        .expect("samples")
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// Every string of a JSON value, keys included.
pub(crate) fn strings(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(text) => out.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| strings(item, out)),
        Value::Object(map) => {
            for (key, item) in map {
                out.push(key.clone());
                strings(item, out);
            }
        }
        _ => {}
    }
}

/// Every string of the corpus (listings, instructions, samples).
pub(crate) fn corpus_strings() -> Vec<String> {
    let mut out = samples();
    for listing in listings() {
        out.extend(listing.instructions);
        for (_, item) in &listing.items {
            strings(item, &mut out);
        }
    }
    out
}
