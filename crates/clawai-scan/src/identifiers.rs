//! The identifiers an item defines for itself (schema property names, `enum` and
//! `const` values): a description may name them without naming another server's tool.
//! A leaf: it uses no other module.

use std::collections::HashSet;

use serde_json::Value;

/// Deeper than this, a value is not walked (serde_json parses at most 128 levels).
pub(crate) const MAX_DEPTH: usize = 160;

/// The identifiers an item defines for itself, lowercased: every object key of its
/// schemas and arguments, and every string of an `enum` or `const`.
pub(crate) fn vocabulary(item: &Value, out: &mut HashSet<String>) {
    own_words(item, &mut |word| {
        out.insert(word.to_ascii_lowercase());
        false
    });
}

/// Whether `item` defines `word` (any case) as one of its identifiers (see
/// [`vocabulary`]). Asked only when a description names another server's tool.
pub(crate) fn defines(item: &Value, word: &str) -> bool {
    own_words(item, &mut |own| own.eq_ignore_ascii_case(word))
}

/// Calls `visit` on each identifier `item` defines, until it returns true.
fn own_words(item: &Value, visit: &mut dyn FnMut(&str) -> bool) -> bool {
    fn walk(value: &Value, visit: &mut dyn FnMut(&str) -> bool, depth: usize) -> bool {
        if depth > MAX_DEPTH {
            return false;
        }
        match value {
            Value::Array(items) => items.iter().any(|item| walk(item, visit, depth + 1)),
            Value::Object(map) => map.iter().any(|(key, item)| {
                visit(key)
                    || match (key.as_str(), item) {
                        ("const", Value::String(word)) => visit(word),
                        ("enum", Value::Array(words)) => words.iter().filter_map(Value::as_str).any(&mut *visit),
                        _ => walk(item, visit, depth + 1),
                    }
            }),
            _ => false,
        }
    }
    ["inputSchema", "outputSchema", "arguments"]
        .iter()
        .any(|member| item.get(*member).is_some_and(|v| walk(v, visit, 0)))
}
