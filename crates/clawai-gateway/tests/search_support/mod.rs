//! The search fixture (200 claude-flow-like tools) and its golden queries, as documents.
//! Shared by `tests/search_quality.rs` and `benches/search.rs`.

#![allow(dead_code)] // each user takes what it needs

use std::path::PathBuf;

use clawai_gateway::search::Document;
use serde_json::Value;

/// The server the golden file's expected names are under.
pub(crate) const SERVER: &str = "claude-flow";

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The fixture's tools as documents of `server`, ids from `first_id` on.
pub(crate) fn documents(server: &str, first_id: usize) -> Vec<Document> {
    let tools = fixture("claude-flow-tools.json");
    let tools = tools.as_array().expect("the fixture is a list of tools");
    tools
        .iter()
        .enumerate()
        .map(|(i, tool)| {
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            let properties = tool["inputSchema"]["properties"].as_object();
            Document {
                id: first_id + i,
                name: format!("{server}__{}", text(&tool["name"])),
                server: server.to_owned(),
                description: text(&tool["description"]),
                parameters: properties
                    .into_iter()
                    .flatten()
                    .map(|(name, schema)| (name.clone(), text(&schema["description"])))
                    .collect(),
            }
        })
        .collect()
}

/// The fixture replicated over `servers` servers (`server-0`, `server-1`, ...).
pub(crate) fn replicated(servers: usize) -> Vec<Document> {
    let per_server = documents(SERVER, 0).len();
    (0..servers).flat_map(|s| documents(&format!("server-{s}"), s * per_server)).collect()
}

/// One golden query and the tools it should find.
pub(crate) struct Golden {
    /// What an agent would type.
    pub query: String,
    /// Gateway names of the tools expected in the top 5.
    pub expected: Vec<String>,
}

/// The golden queries.
pub(crate) fn golden() -> Vec<Golden> {
    let golden = fixture("search-golden.json");
    golden
        .as_array()
        .expect("the golden file is a list")
        .iter()
        .map(|entry| Golden {
            query: entry["query"].as_str().expect("query").to_owned(),
            expected: entry["expected"]
                .as_array()
                .expect("expected")
                .iter()
                .map(|name| name.as_str().expect("expected name").to_owned())
                .collect(),
        })
        .collect()
}
