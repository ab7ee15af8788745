//! The rule keys that read or mark the session (`rate`, `taint`, `tainted`): their
//! labels, and the checks across rules that keep their counts and labels meaningful.

use toml::Spanned;

use super::{Collector, Diagnostic, OneOrMany};
use crate::rule::Rule;

/// The labels of `taint` or `tainted`: each a word of letters, digits and `_.:-`.
pub(super) fn labels(spanned: &Spanned<OneOrMany>, key: &str, label: &str, c: &mut Collector) -> Vec<String> {
    let labels = spanned.get_ref().clone_vec();
    if labels.is_empty() {
        c.error(spanned.span().start, format!("{label}: `{key}` is empty; name a label, e.g. {key} = \"private\""));
    }
    for l in &labels {
        if l.is_empty() || !l.chars().all(|ch| ch.is_ascii_alphanumeric() || "_.:-".contains(ch)) {
            c.error(
                spanned.span().start,
                format!(
                    "{label}: `{key}` label {l:?} is not a word; use letters, digits and `_.:-` (e.g. \"private\")"
                ),
            );
        }
    }
    labels
}

/// Reports rate rules whose counts would be kept under one key: two with the same `id`,
/// or an `id` written as `#N`, the key of the N-th rule when it has no id. Their windows
/// would mix, and the smaller limit would trim the larger one's count.
pub(super) fn find_rate_key_clashes(rules: &[Rule], c: &mut Collector) {
    let mut keys: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for (index, rule) in rules.iter().enumerate() {
        if rule.rate.is_none() {
            continue;
        }
        let key = crate::session::rule_key(index, rule.id.as_deref());
        let message = if rule.id.as_deref().is_some_and(|id| id.starts_with('#')) {
            Some(format!(
                "rule {}: an `id` starting with `#` names an unnamed rule's rate count; choose another id",
                rule.label(index)
            ))
        } else {
            keys.get(&key).map(|&first| {
                format!(
                    "rule {} has the same id as the rate rule at line {}; each rate rule keeps its count under its id, so give it another",
                    rule.label(index),
                    rules[first].line
                )
            })
        };
        if let Some(message) = message {
            c.diagnostics.push(Diagnostic { line: Some(rule.line), column: Some(1), message });
        }
        keys.entry(key).or_insert(index);
    }
}

/// Reports rules that can never match because no rule puts their `tainted` label on a
/// session (a misspelt label would otherwise switch the rule off without a word).
pub(super) fn find_unset_labels(rules: &[Rule], c: &mut Collector) {
    let set: std::collections::BTreeSet<&str> = rules.iter().flat_map(|r| r.taint.iter().map(String::as_str)).collect();
    for (index, rule) in rules.iter().enumerate() {
        if rule.tainted.is_empty() || rule.tainted.iter().any(|l| set.contains(l.as_str())) {
            continue;
        }
        let known = if set.is_empty() {
            "no rule has `taint`".to_owned()
        } else {
            format!("the rules taint sessions {}", set.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(", "))
        };
        c.diagnostics.push(Diagnostic {
            line: Some(rule.line),
            column: Some(1),
            message: format!(
                "rule {} can never match: `tainted` names {}, but {known}; add `taint = {:?}` to the rule that should mark the session, or fix the label",
                rule.label(index),
                crate::rule::quoted(&rule.tainted),
                rule.tainted[0]
            ),
        });
    }
}
