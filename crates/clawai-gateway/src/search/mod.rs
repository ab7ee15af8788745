//! Ranking tools for `search_tools`: an offline BM25F index over tool documents.
//!
//! A [`Document`] is one tool: its gateway name (`SERVER__tool`), its server, its
//! description and its parameters' names and descriptions. [`Index::new`] tokenises every
//! document once; [`Index::search`] ranks the documents a caller may see for a free-text
//! query.
//!
//! Why BM25F and not plain BM25 over one bag of words: a query word that names the tool
//! (`memory` in `memory_store`) says far more than the same word in a parameter's
//! description, so each field is weighted and length-normalised on its own before the
//! term saturation (Robertson & Zaragoza's BM25F, k1 = 1.2, b = 0.75 per field):
//!
//! * name parts (the tool's own name, split on `__`, `_`, `-`, `.`, `/`, spaces and
//!   camelCase): weight 3;
//! * server name: weight 1.5;
//! * description: weight 1;
//! * parameter names and descriptions: weight 0.5.
//!
//! Words are lower-cased, stripped of punctuation and of a few English suffixes
//! ([`stem`]); frequent function words are dropped. A query word the index does not know
//! is widened to the words it starts (`conf` → `config`, `configuration`) or, failing
//! that, to words one or two edits away (`memroy` → `memory`), at a discount, so partial
//! words and typos still find their tool. No dependency: the corpus is a few thousand
//! short documents and the whole index is a few hash maps.
//!
//! Leaks: `search` takes an `admit` predicate and never scores a document it rejects, so
//! a rejected document is never returned and cannot push another out of the results. The
//! only thing rejected documents share with the rest is the corpus statistics (document
//! frequencies and average field lengths), fixed when the index is built.

mod expand;
pub mod fusion;
pub mod hybrid;
mod index;
pub mod render;
pub mod stem;
pub mod tokens;
pub mod vectors;

pub use index::Index;

/// One searchable tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The caller's handle for this document, returned in [`Hit::id`] and passed to `admit`.
    pub id: usize,
    /// The tool's gateway name, e.g. `claude-flow__memory_search`.
    pub name: String,
    /// The server that has the tool, e.g. `claude-flow`.
    pub server: String,
    /// The tool's description (may be empty).
    pub description: String,
    /// The tool's parameters: (name, description).
    pub parameters: Vec<(String, String)>,
}

/// One ranked result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// [`Document::id`] of the tool.
    pub id: usize,
    /// Its BM25F score for the query (higher is better; always above zero).
    pub score: f32,
}

/// The text a document is embedded from: its server, its own name as words
/// (`memory_search`, `getUser` → `memory search`, `get user`), its description and its
/// parameters with theirs. A model reads words, not identifiers. The model reads the
/// first 128 tokens; on BFCL (`docs/gateway.md`) leaving the parameters' descriptions out
/// cut the embedding time by a third but lost .036 nDCG@10 alone and .013 fused.
pub fn embedding_text(doc: &Document) -> String {
    let own_name =
        doc.name.strip_prefix(doc.server.as_str()).and_then(|rest| rest.strip_prefix("__")).unwrap_or(&doc.name);
    let mut text = format!("{} {}: {}", doc.server, tokens::raw_words(own_name).join(" "), doc.description);
    if !doc.parameters.is_empty() {
        text.push_str(" Parameters:");
        for (name, description) in &doc.parameters {
            text.push(' ');
            text.push_str(&tokens::raw_words(name).join(" "));
            if !description.is_empty() {
                text.push_str(" (");
                text.push_str(description);
                text.push(')');
            }
        }
    }
    text
}
