//! Which strings of a listed item are scanned, and the JSON pointer each is reported at.

use std::collections::HashSet;

use serde_json::Value;

use crate::finding::{Class, Finding, ItemKind, Severity};
use crate::hidden::escape_invisible;
use crate::text::{Scope, scan_string};

/// The members of each kind of item that a client shows or a model reads. Each is
/// walked whole: every string value and every object key (schema property names).
fn members(kind: ItemKind) -> &'static [&'static str] {
    match kind {
        ItemKind::Tool => &["name", "title", "description", "inputSchema", "outputSchema", "annotations"],
        ItemKind::Prompt => &["name", "title", "description", "arguments"],
        ItemKind::ResourceTemplate => &["name", "title", "description", "uriTemplate", "mimeType"],
        ItemKind::Instructions | ItemKind::Text => &[],
    }
}

/// Deeper than this, a value is not walked (serde_json parses at most 128 levels).
const MAX_DEPTH: usize = 160;

/// The longest tool name the MCP specification allows.
const MAX_TOOL_NAME: usize = 128;

/// Every finding in `item`.
pub(crate) fn scan_value(kind: ItemKind, item: &Value, scope: Scope<'_>) -> Vec<Finding> {
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    let mut own_words = HashSet::new();
    if !scope.others.is_empty() && scope.own_words.is_none() {
        vocabulary(item, &mut own_words);
    }
    let own_words = scope.own_words.or(Some(&own_words));
    let mut walker = Walker { kind, name, scope: Scope { own_name: name, own_words, ..scope }, findings: Vec::new() };
    match (kind, item) {
        (ItemKind::Instructions | ItemKind::Text, _) | (_, Value::String(_)) => {
            walker.walk(item, &mut String::new(), 0)
        }
        _ => {
            if kind == ItemKind::Tool {
                walker.check_tool_name(item.get("name"));
            }
            for member in members(kind) {
                if let Some(value) = item.get(*member) {
                    let mut pointer = String::new();
                    push_token(&mut pointer, member);
                    walker.walk(value, &mut pointer, 0);
                }
            }
        }
    }
    walker.findings
}

struct Walker<'a> {
    kind: ItemKind,
    name: &'a str,
    scope: Scope<'a>,
    findings: Vec<Finding>,
}

impl Walker<'_> {
    fn walk(&mut self, value: &Value, pointer: &mut String, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(text) => self.scan(text, pointer),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let len = pointer.len();
                    push_token(pointer, &index.to_string());
                    self.walk(item, pointer, depth + 1);
                    pointer.truncate(len);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = pointer.len();
                    push_token(pointer, key);
                    self.scan(key, pointer);
                    self.walk(item, pointer, depth + 1);
                    pointer.truncate(len);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    fn scan(&mut self, text: &str, pointer: &str) {
        for found in scan_string(text, self.scope) {
            self.findings.push(Finding {
                kind: self.kind,
                name: self.name.to_owned(),
                field: pointer.to_owned(),
                severity: found.severity,
                class: found.class,
                evidence: found.evidence,
                detail: found.detail,
            });
        }
    }

    /// Tool names are identifiers (`[A-Za-z0-9_.-]`, 1 to 128 characters): anything else
    /// can look like another tool or hide text in what a client shows as a name.
    fn check_tool_name(&mut self, name: Option<&Value>) {
        let detail = match name {
            Some(Value::String(name)) if name.is_empty() => "an empty tool name".to_owned(),
            Some(Value::String(name)) if name.len() > MAX_TOOL_NAME => {
                format!("a tool name of {} bytes (at most {MAX_TOOL_NAME})", name.len())
            }
            Some(Value::String(name))
                if name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
            {
                return;
            }
            Some(Value::String(_)) => "a tool name with characters outside A-Z a-z 0-9 _ . -".to_owned(),
            _ => "a tool without a name".to_owned(),
        };
        self.findings.push(Finding {
            kind: self.kind,
            name: self.name.to_owned(),
            field: "/name".to_owned(),
            severity: Severity::Warn,
            class: Class::BadToolName,
            evidence: escape_invisible(self.name),
            detail,
        });
    }
}

/// Appends `/token` to a JSON pointer, escaped as RFC 6901 says.
fn push_token(pointer: &mut String, token: &str) {
    pointer.push('/');
    for c in token.chars() {
        match c {
            '~' => pointer.push_str("~0"),
            '/' => pointer.push_str("~1"),
            _ => pointer.push(c),
        }
    }
}

/// The identifiers an item defines for itself, lowercased: every object key of its
/// schemas and arguments, and every string of an `enum` or `const`.
pub(crate) fn vocabulary(item: &Value, out: &mut HashSet<String>) {
    fn walk(value: &Value, out: &mut HashSet<String>, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Array(items) => items.iter().for_each(|item| walk(item, out, depth + 1)),
            Value::Object(map) => {
                for (key, item) in map {
                    out.insert(key.to_ascii_lowercase());
                    match (key.as_str(), item) {
                        ("const", Value::String(word)) => {
                            out.insert(word.to_ascii_lowercase());
                        }
                        ("enum", Value::Array(words)) => {
                            out.extend(words.iter().filter_map(Value::as_str).map(str::to_ascii_lowercase))
                        }
                        _ => walk(item, out, depth + 1),
                    }
                }
            }
            _ => {}
        }
    }
    for member in ["inputSchema", "outputSchema", "arguments"] {
        if let Some(value) = item.get(member) {
            walk(value, out, 0);
        }
    }
}
