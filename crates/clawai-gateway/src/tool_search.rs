//! The `search_tools` tool as the gateway lists it, and the index it searches: the
//! catalog's tools and the skills. Below the core, which keeps the index for a catalog
//! generation, and the sessions, which answer the tool (`session::search`).

use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::lists::ListKind;
use crate::search::render::MAX_LIMIT;
use crate::search::{Document, Index};
use crate::skills::Loaded;

/// The tool's name.
pub(crate) const SEARCH_TOOL: &str = "search_tools";

/// The tool as listed.
pub(crate) fn tool_json() -> Value {
    json!({
        "name": SEARCH_TOOL,
        "description": "Search every tool this gateway can offer (including those of servers not listed now) and the skills that show them; returns the best matches with the skills to activate for the ones not listed now. Describe the tool you need (what it does, the kind of thing it works on: \"create a calendar event\", \"search memory by meaning\"), not the user's request word for word.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What the tool you need does, in a few words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many results (5 by default, at most 20)"}
            },
            "required": ["query"]
        },
        "annotations": {"readOnlyHint": true}
    })
}

/// The index of a catalog's tools and the skills: documents `0..tools` are the
/// catalog's tools by position, then the skills in order.
pub(crate) fn index(catalog: &Catalog, skills: &Loaded) -> Index {
    Index::new(documents(catalog, skills))
}

/// The documents of [`index`].
fn documents(catalog: &Catalog, skills: &Loaded) -> Vec<Document> {
    let mut docs = Vec::with_capacity(catalog.len(ListKind::Tools) + skills.skills.len());
    for (id, item) in catalog.items(ListKind::Tools).enumerate() {
        let tool: Value = serde_json::from_str(item.listed.json.get()).unwrap_or(Value::Null);
        let parameters = tool
            .pointer("/inputSchema/properties")
            .and_then(Value::as_object)
            .map(|properties| {
                properties
                    .iter()
                    .map(|(name, schema)| {
                        let about = schema.get("description").and_then(Value::as_str).unwrap_or_default();
                        (name.clone(), about.to_owned())
                    })
                    .collect()
            })
            .unwrap_or_default();
        docs.push(Document {
            id,
            name: item.listed.full_name.clone(),
            server: item.upstream.name.clone(),
            description: tool.get("description").and_then(Value::as_str).unwrap_or_default().to_owned(),
            parameters,
        });
    }
    let tools = docs.len();
    for (n, skill) in skills.skills.iter().enumerate() {
        docs.push(Document {
            id: tools + n,
            name: skill.listed_name(),
            server: "skill".into(),
            description: skill.description().to_owned(),
            parameters: skill
                .variables()
                .iter()
                .map(|v| (v.name.clone(), v.description.clone().unwrap_or_default()))
                .collect(),
        });
    }
    docs
}

/// The text each document of [`index`] is embedded from, by document id (see
/// [`crate::search::embedding_text`]); a skill's body is added to its text.
pub(crate) fn embedding_texts(catalog: &Catalog, skills: &Loaded) -> Vec<String> {
    let docs = documents(catalog, skills);
    let tools = catalog.len(ListKind::Tools);
    docs.iter()
        .map(|doc| {
            let mut text = crate::search::embedding_text(doc);
            if let Some(skill) = doc.id.checked_sub(tools).and_then(|n| skills.skills.get(n)) {
                text.push('\n');
                text.push_str(skill.body());
            }
            text
        })
        .collect()
}
