//! AgentShield's structural matches (`structural_rules`, and `match.structural` inside a
//! rule) as clawai conditions.
//!
//! Tool names there are case-insensitive, with `*` matching any run (`/` included) and
//! `?` one character; `tool_name_regex` is case-insensitive too. Each field of
//! `args_match` (dotted into nested objects) must match: `pattern_any` (a regular
//! expression, searched, that any of the list finds), `value_gt`/`value_lt` (strict, on
//! numbers), `pattern_not` and `exists`. `exclude_args_match` fields exempt a call.

use super::schema::{FieldMatch, StructuralMatch};
use crate::formats::{ConvertError, key, quote, quote_all};

/// `(key, value)` pairs of TOML, values already written.
type Lines = Vec<(String, String)>;

/// The name alternatives and the conditions of a structural match.
pub(super) fn convert(m: &StructuralMatch, label: &str) -> Result<(Lines, Lines), ConvertError> {
    let mut names = Vec::new();
    if let Some(list) = m.tool_name_any.as_ref().filter(|l| !l.is_empty()) {
        let alternatives: Vec<String> = list.iter().map(|g| glob_to_regex(g)).collect();
        names.push(("tool_regex".to_owned(), quote(&format!("(?i)^(?:{})$", alternatives.join("|")))));
    }
    if let Some(r) = &m.tool_name_regex {
        names.push(("tool_regex".to_owned(), quote(&format!("(?i){r}"))));
    }
    let mut conditions = Vec::new();
    for (field, fm) in &m.args_match {
        conditions.extend(field_conditions(field, fm, label)?);
    }
    for (field, fm) in &m.exclude_args_match {
        let unsupported = !fm.pattern_all.is_empty()
            || !fm.pattern_not.is_empty()
            || fm.exists.is_some()
            || fm.value_gt.is_some()
            || fm.value_lt.is_some();
        if unsupported || fm.pattern_any.is_empty() {
            return Err(unsupported_error(label, &format!("exclude_args_match.{field} other than pattern_any")));
        }
        conditions.push((format!("unless_args_regex.{}", key(field)), quote_all(&fm.pattern_any)));
    }
    Ok((names, conditions))
}

fn field_conditions(field: &str, fm: &FieldMatch, label: &str) -> Result<Lines, ConvertError> {
    let field_key = key(field);
    let mut out = Vec::new();
    let regexes: Vec<String> = match (fm.pattern_any.is_empty(), fm.pattern_all.len()) {
        (_, 0) => fm.pattern_any.clone(),
        (true, 1) => fm.pattern_all.clone(),
        _ => {
            return Err(unsupported_error(
                label,
                &format!("args_match.{field}.pattern_all with more than one pattern, or beside pattern_any"),
            ));
        }
    };
    let mut present = false;
    if !regexes.is_empty() {
        out.push((format!("args_regex.{field_key}"), quote_all(&regexes)));
        present = true;
    }
    let bounds: Vec<String> = [("gt", fm.value_gt), ("lt", fm.value_lt)]
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| format!("{k} = {v}")))
        .collect();
    if !bounds.is_empty() {
        out.push((format!("args_number.{field_key}"), format!("{{ {} }}", bounds.join(", "))));
        present = true;
    }
    if fm.exists == Some(false) {
        if present || !fm.pattern_not.is_empty() {
            return Err(unsupported_error(label, &format!("args_match.{field}.exists = false beside other tests")));
        }
        // The rule applies only when the field is absent.
        out.push((format!("unless_args_regex.{field_key}"), quote("")));
        return Ok(out);
    }
    if !fm.pattern_not.is_empty() {
        out.push((format!("unless_args_regex.{field_key}"), quote_all(&fm.pattern_not)));
    }
    if !present {
        // Every test but `exists` fails on a missing field: the field must be there.
        out.push((format!("args_regex.{field_key}"), quote("")));
    }
    Ok(out)
}

/// What differs between AgentShield's lookup of a structural field and clawai's.
pub(super) fn lookup_note(what: &str) -> String {
    format!(
        "{what}: recent AgentShield versions also look for a field under other spellings \
         (camelCase or snake_case, plural) and inside nested objects or JSON strings; clawai reads \
         it at its path (and in other letter case) only, so check that the converted rule names \
         every place the server takes it from (an `any_arg_regex` rule covers every string)"
    )
}

fn unsupported_error(label: &str, what: &str) -> ConvertError {
    ConvertError::new(format!(
        "rule `{label}` uses {what}, which clawai's policy language cannot express; write this rule by hand in TOML (see `args_regex` and `unless_args_regex`)"
    ))
}

/// A structural tool-name glob as a regular expression body: `*` any run, `?` one
/// character, everything else literal.
fn glob_to_regex(glob: &str) -> String {
    let mut out = String::new();
    let mut literal = String::new();
    for c in glob.chars() {
        match c {
            '*' | '?' => {
                out.push_str(&regex::escape(&literal));
                literal.clear();
                out.push_str(if c == '*' { ".*" } else { "." });
            }
            c => literal.push(c),
        }
    }
    out.push_str(&regex::escape(&literal));
    out
}
