//! mcp-gov's decision, written out from its code (`src/rules.js`, `bin/mcp-gov-proxy.js`),
//! on a model of a `rules.json` that is also written out as JSON in one of its layouts.
//! The operation detector is shared with the import: it is checked against every example
//! of mcp-gov's documentation on its own.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Map, Value, json};

use clawai_policy::Action;
use clawai_policy::operation::mcpgov;

#[derive(Debug, Clone, Copy)]
pub(crate) enum Layout {
    Array,
    Legacy,
    Flat,
}

#[derive(Debug, Clone)]
pub(crate) struct Gov {
    layout: Layout,
    default: Option<&'static str>,
    comment: bool,
    entries: Vec<(&'static str, &'static str, &'static str)>,
}

impl Gov {
    pub(crate) fn json(&self) -> String {
        let mut top = Map::new();
        if self.comment {
            top.insert("_comment".into(), json!("generated"));
        }
        if let Some(d) = self.default {
            top.insert("defaultPolicy".into(), json!(d));
        }
        match self.layout {
            Layout::Array => {
                let rules: Vec<Value> = self
                    .entries
                    .iter()
                    .map(|(s, op, p)| json!({"service": s, "operations": [op], "permission": p}))
                    .collect();
                top.insert("rules".into(), Value::Array(rules));
            }
            Layout::Legacy | Layout::Flat => {
                let mut services: BTreeMap<&str, Map<String, Value>> = BTreeMap::new();
                for (s, op, p) in &self.entries {
                    let ops = services.entry(s).or_default();
                    if self.comment {
                        ops.insert("_comment".into(), json!("per service"));
                    }
                    ops.insert((*op).into(), json!(p));
                }
                for (s, ops) in services {
                    let value = match self.layout {
                        Layout::Legacy => json!({"operations": ops}),
                        _ => Value::Object(ops),
                    };
                    if matches!(self.layout, Layout::Legacy) {
                        top.entry("services").or_insert_with(|| json!({}))[s] = value;
                    } else {
                        top.insert(s.into(), value);
                    }
                }
            }
        }
        serde_json::to_string_pretty(&Value::Object(top)).unwrap()
    }

    /// `normalizeRules` then `isAllowed`: the last valid entry for a service and
    /// operation decides, else `defaultPolicy` (deny only when it says "deny").
    pub(crate) fn decide(&self, tool: &str, server: Option<&str>) -> Action {
        let service = server.unwrap_or_else(|| match tool.split_once('_') {
            Some((first, _)) => first,
            None => "unknown",
        });
        let op = mcpgov::operation(tool).as_str();
        let valid_ops = ["read", "write", "delete", "execute", "admin"];
        // In the map layouts a repeated key keeps only its last value (JSON.parse); in
        // the array layout each entry is read, and an invalid one changes nothing.
        let mut entries = self.entries.clone();
        if !matches!(self.layout, Layout::Array) {
            let mut last = Vec::new();
            for e in entries.into_iter().rev() {
                if !last.iter().any(|l: &(&str, &str, &str)| l.0 == e.0 && l.1 == e.1) {
                    last.push(e);
                }
            }
            last.reverse();
            entries = last;
        }
        let mut permission = None;
        for (s, o, p) in &entries {
            if *s == service && *o == op && valid_ops.contains(o) && matches!(*p, "allow" | "deny") {
                permission = Some(*p);
            }
        }
        match permission.unwrap_or(if self.default == Some("deny") { "deny" } else { "allow" }) {
            "deny" => Action::Deny,
            _ => Action::Allow,
        }
    }
}

pub(crate) fn strategy() -> impl Strategy<Value = Gov> {
    let entry = (
        proptest::sample::select(&["github", "slack", "fs", "api", "unknown", "list"][..]),
        proptest::sample::select(&["read", "write", "delete", "execute", "admin", "list", "nuke"][..]),
        proptest::sample::select(&["allow", "deny", "deny", "allow", "bogus"][..]),
    );
    (
        prop_oneof![Just(Layout::Array), Just(Layout::Legacy), Just(Layout::Flat)],
        proptest::option::of(proptest::sample::select(&["allow", "deny", "maybe"][..])),
        any::<bool>(),
        proptest::collection::vec(entry, 0..10),
    )
        .prop_map(|(layout, default, comment, entries)| Gov { layout, default, comment, entries })
}
