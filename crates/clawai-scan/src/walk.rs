//! Which strings of a listed item are scanned, and the JSON pointer each is reported at.

use serde_json::Value;

use crate::finding::{Class, Finding, ItemKind, Severity};
use crate::hidden::escape_invisible;
use crate::identifiers::MAX_DEPTH;
use crate::text::{Scope, scan_texts};

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

/// The longest tool name the MCP specification allows.
const MAX_TOOL_NAME: usize = 128;

/// Every finding in `item`.
pub(crate) fn scan_value(kind: ItemKind, item: &Value, scope: Scope<'_>) -> Vec<Finding> {
    let name = item.get("name").and_then(Value::as_str).unwrap_or_default();
    let scope = Scope { own_name: name, own_item: Some(item), ..scope };
    let mut strings = Strings::default();
    let mut findings = Vec::new();
    match (kind, item) {
        (ItemKind::Instructions | ItemKind::Text, _) | (_, Value::String(_)) => strings.walk(item, ROOT, 0),
        _ => {
            if kind == ItemKind::Tool
                && let Some(detail) = bad_tool_name(item.get("name"))
            {
                findings.push(Finding {
                    kind,
                    name: name.to_owned(),
                    field: "/name".to_owned(),
                    severity: Severity::Warn,
                    class: Class::BadToolName,
                    evidence: escape_invisible(name),
                    detail,
                });
            }
            for member in members(kind) {
                if let Some(value) = item.get(*member) {
                    let node = strings.node(ROOT, Token::Key(member));
                    strings.walk(value, node, 0);
                }
            }
        }
    }
    for (index, found) in scan_texts(&strings.texts, scope) {
        findings.push(Finding {
            kind,
            name: name.to_owned(),
            field: strings.pointer(strings.at[index]),
            severity: found.severity,
            class: found.class,
            evidence: found.evidence,
            detail: found.detail,
        });
    }
    findings
}

/// A step of a JSON pointer.
#[derive(Clone, Copy)]
enum Token<'v> {
    Key(&'v str),
    Index(usize),
}

/// The node of the item itself (pointer "").
const ROOT: usize = usize::MAX;

/// The strings of an item, each with the place it is at. Places are a tree of pointer
/// steps, written out as a pointer only for the strings that have findings.
#[derive(Default)]
struct Strings<'v> {
    texts: Vec<&'v str>,
    at: Vec<usize>,
    nodes: Vec<(usize, Token<'v>)>,
}

impl<'v> Strings<'v> {
    fn node(&mut self, parent: usize, token: Token<'v>) -> usize {
        self.nodes.push((parent, token));
        self.nodes.len() - 1
    }

    fn push(&mut self, text: &'v str, node: usize) {
        self.texts.push(text);
        self.at.push(node);
    }

    /// Every string value and object key under `value`, which is at `node`.
    fn walk(&mut self, value: &'v Value, node: usize, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::String(text) => self.push(text, node),
            Value::Array(items) => {
                for (index, item) in items.iter().enumerate() {
                    let child = self.node(node, Token::Index(index));
                    self.walk(item, child, depth + 1);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let child = self.node(node, Token::Key(key));
                    if !known_keyword(key) {
                        self.push(key, child);
                    }
                    self.walk(item, child, depth + 1);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// The JSON pointer of `node`.
    fn pointer(&self, mut node: usize) -> String {
        let mut tokens = Vec::new();
        while node != ROOT {
            let (parent, token) = self.nodes[node];
            tokens.push(token);
            node = parent;
        }
        let mut pointer = String::new();
        for token in tokens.iter().rev() {
            match token {
                Token::Key(key) => push_token(&mut pointer, key),
                Token::Index(index) => push_token(&mut pointer, &index.to_string()),
            }
        }
        pointer
    }
}

/// The JSON Schema and MCP keywords most keys are: spelled exactly so, they can hide
/// nothing, and leaving them out of the scan took a quarter off its time on the corpus.
fn known_keyword(key: &str) -> bool {
    matches!(
        key,
        "type"
            | "description"
            | "properties"
            | "items"
            | "required"
            | "enum"
            | "default"
            | "title"
            | "additionalProperties"
            | "$schema"
            | "minimum"
            | "maximum"
            | "format"
            | "anyOf"
            | "oneOf"
            | "allOf"
            | "const"
            | "pattern"
            | "minLength"
            | "maxLength"
            | "minItems"
            | "maxItems"
            | "examples"
            | "nullable"
            | "readOnlyHint"
            | "destructiveHint"
            | "idempotentHint"
            | "openWorldHint"
            | "name"
    )
}

/// Tool names are identifiers (`[A-Za-z0-9_.-]`, 1 to 128 characters): anything else
/// can look like another tool or hide text in what a client shows as a name.
fn bad_tool_name(name: Option<&Value>) -> Option<String> {
    Some(match name {
        Some(Value::String(name)) if name.is_empty() => "an empty tool name".to_owned(),
        Some(Value::String(name)) if name.len() > MAX_TOOL_NAME => {
            format!("a tool name of {} bytes (at most {MAX_TOOL_NAME})", name.len())
        }
        Some(Value::String(name))
            if name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')) =>
        {
            return None;
        }
        Some(Value::String(_)) => "a tool name with characters outside A-Z a-z 0-9 _ . -".to_owned(),
        _ => "a tool without a name".to_owned(),
    })
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
