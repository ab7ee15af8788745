//! The keys of an AgentShield file that AgentShield never reads, named for the notes.
//!
//! AgentShield reads its YAML into typed objects and drops what they do not have, so a
//! rule pack written for a later release (its structural rules carry
//! `tool_name_pattern`) still loads, and the rules are applied without that key. This
//! reading does the same, and says which keys it dropped: a misspelt key disables a
//! rule in AgentShield just as silently, so the person importing should see it.

use serde_json::Value;

/// Where in the file a set of keys is read.
#[derive(Clone, Copy)]
enum Section {
    Top,
    Defaults,
    ToolRule,
    ToolMatch,
    StructuralMatch,
    FieldMatch,
    StructuralRule,
    ResourceRule,
    ResourceMatch,
    ValueLimit,
}

impl Section {
    /// The keys AgentShield reads here, with the metadata it carries and never decides
    /// on (`taxonomy`, `tests`, a pack's `name`…), which are not worth a note.
    fn known(self) -> &'static [&'static str] {
        match self {
            Section::Top => &[
                "defaults",
                "blocked_tools",
                "blocked_resources",
                "rules",
                "resource_rules",
                "value_limits",
                "structural_rules",
                "semantic_rules",
                "data_labels",
                "name",
                "description",
                "version",
                "author",
            ],
            Section::Defaults => &["decision"],
            Section::ToolRule => {
                &["id", "match", "decision", "reason", "engine", "taxonomy", "tests", "confidence", "suggested"]
            }
            Section::ToolMatch => &[
                "tool_name",
                "tool_name_regex",
                "tool_name_any",
                "argument_patterns",
                "argument_regex_patterns",
                "exclude_argument_patterns",
                "structural",
                "semantic",
            ],
            Section::StructuralMatch => &["tool_name_any", "tool_name_regex", "args_match", "exclude_args_match"],
            Section::FieldMatch => &["pattern_any", "pattern_all", "pattern_not", "exists", "value_gt", "value_lt"],
            Section::StructuralRule => &["id", "match", "decision", "reason", "taxonomy", "tests", "confidence"],
            Section::ResourceRule => &["id", "match", "decision", "reason", "taxonomy"],
            Section::ResourceMatch => &["uri_pattern", "uri_regex", "scheme"],
            Section::ValueLimit => {
                &["id", "tool_pattern", "tool_name_regex", "argument", "max", "min", "decision", "reason", "taxonomy"]
            }
        }
    }

    /// What a known key holds that has keys of its own to check.
    fn inner(self, key: &str) -> Option<Inner> {
        Some(match (self, key) {
            (Section::Top, "defaults") => Inner::One(Section::Defaults),
            (Section::Top, "rules") => Inner::List(Section::ToolRule),
            (Section::Top, "structural_rules") => Inner::List(Section::StructuralRule),
            (Section::Top, "resource_rules") => Inner::List(Section::ResourceRule),
            (Section::Top, "value_limits") => Inner::List(Section::ValueLimit),
            (Section::ToolRule, "match") => Inner::One(Section::ToolMatch),
            (Section::ToolMatch, "structural") | (Section::StructuralRule, "match") => {
                Inner::One(Section::StructuralMatch)
            }
            (Section::StructuralMatch, "args_match" | "exclude_args_match") => Inner::Fields(Section::FieldMatch),
            (Section::ResourceRule, "match") => Inner::One(Section::ResourceMatch),
            _ => return None,
        })
    }
}

/// The shape of a known key's value.
enum Inner {
    /// An object of that section.
    One(Section),
    /// A list of such objects.
    List(Section),
    /// An object of argument names, each an object of that section.
    Fields(Section),
}

/// A note for each key of `file` that AgentShield ignores, naming where it is (the rule
/// by its `id` when it has one) and that it was ignored.
pub(super) fn ignored_keys(file: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(file, Section::Top, "", &mut found);
    found
        .into_iter()
        .map(|(place, key)| {
            format!(
                "`{key}`{place} is not a key AgentShield reads: ignored, as AgentShield ignores it (check its spelling if it was meant to decide something)"
            )
        })
        .collect()
}

fn walk(value: &Value, section: Section, place: &str, found: &mut Vec<(String, String)>) {
    let Value::Object(members) = value else { return };
    for (key, inner) in members {
        if !section.known().contains(&key.as_str()) {
            found.push((place.to_owned(), key.clone()));
            continue;
        }
        match section.inner(key) {
            Some(Inner::One(next)) => walk(inner, next, &within(place, key, None), found),
            Some(Inner::List(next)) => {
                for (n, item) in inner.as_array().into_iter().flatten().enumerate() {
                    walk(item, next, &within(place, key, Some((n, item))), found);
                }
            }
            Some(Inner::Fields(next)) => {
                for (field, item) in inner.as_object().into_iter().flatten() {
                    walk(item, next, &within(place, &format!("{key}.{field}"), None), found);
                }
            }
            None => {}
        }
    }
}

/// `place` one level down: ` in rules[2] (`id`)`, ` in structural_rules[0].match`.
fn within(place: &str, key: &str, item: Option<(usize, &Value)>) -> String {
    let base = place.strip_prefix(" in ").unwrap_or("");
    let base = base.split(" (").next().unwrap_or(base);
    let path = if base.is_empty() { key.to_owned() } else { format!("{base}.{key}") };
    match item {
        Some((n, item)) => match item.get("id").and_then(Value::as_str) {
            Some(id) => format!(" in {path}[{n}] (`{id}`)"),
            None => format!(" in {path}[{n}]"),
        },
        None => {
            let id = place.split_once(" (").map(|(_, id)| format!(" ({id}")).unwrap_or_default();
            format!(" in {path}{id}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_unread_key_is_named_with_its_rule() {
        let file = json!({
            "name": "pack",
            "structural_rules": [{"id": "s1", "match": {"tool_name_pattern": "*exec*", "args_match": {"cmd": {"pattern_any": ["rm"], "regex": "x"}}}, "decision": "BLOCK"}],
            "rules": [{"match": {"tool_nme": "x"}, "decision": "BLOCK", "severity": "high"}],
            "extra": 1
        });
        let notes = ignored_keys(&file);
        assert_eq!(notes.len(), 5, "{notes:#?}");
        assert!(
            notes.iter().any(|n| n.starts_with("`tool_name_pattern` in structural_rules[0].match (`s1`)")),
            "{notes:#?}"
        );
        assert!(
            notes.iter().any(|n| n.starts_with("`regex` in structural_rules[0].match.args_match.cmd (`s1`)")),
            "{notes:#?}"
        );
        assert!(notes.iter().any(|n| n.starts_with("`tool_nme` in rules[0].match ")), "{notes:#?}");
        assert!(notes.iter().any(|n| n.starts_with("`severity` in rules[0] ")), "{notes:#?}");
        assert!(notes.iter().any(|n| n.starts_with("`extra` is not")), "{notes:#?}");
    }

    #[test]
    fn metadata_and_known_keys_are_not_noted() {
        let file = json!({
            "name": "pack", "version": "1", "author": "a", "description": "d",
            "defaults": {"decision": "AUDIT"},
            "rules": [{"id": "r", "match": {"tool_name": "x", "structural": {"tool_name_any": ["a"]}}, "decision": "BLOCK", "taxonomy": {}, "tests": [], "confidence": 1}],
            "resource_rules": [{"match": {"scheme": "file"}, "decision": "BLOCK"}],
            "value_limits": [{"argument": "amount", "max": 5, "decision": "BLOCK"}]
        });
        assert_eq!(ignored_keys(&file), Vec::<String>::new());
    }
}
