//! Argument conditions: `args.NAME` (globs), `args_regex.NAME` (regular expressions),
//! `args_number.NAME` (bounds), `args_host.NAME` (host globs), their exceptions
//! `unless_args.NAME` and `unless_args_regex.NAME`, and the `any_arg`, `any_arg_regex`
//! and `any_arg_host` conditions on every string of the arguments.

use toml::Spanned;

use super::{Collector, OneOrMany, RawRule};
use crate::glob::Glob;
use crate::rule::ArgCondition;
use crate::urls::host_pattern;
use crate::value::{Bounds, ValueTest};

/// Every `args*.NAME` condition of a rule, in the order of the keys.
pub(super) fn arg_conditions(raw: &RawRule, label: &str, c: &mut Collector) -> Vec<ArgCondition> {
    let mut out = Vec::new();
    let tables = [
        ("args", &raw.args),
        ("args_regex", &raw.args_regex),
        ("args_number", &raw.args_number),
        ("args_host", &raw.args_host),
        ("unless_args", &raw.unless_args),
        ("unless_args_regex", &raw.unless_args_regex),
    ];
    for (written, table) in tables {
        let Some(table) = table else { continue };
        if table.get_ref().is_empty() {
            c.error(
                table.span().start,
                format!("{label}: `{written}` is empty; remove it or add `{written}.NAME = …`"),
            );
        }
        let key = written.strip_prefix("unless_").unwrap_or(written);
        let first = out.len();
        flatten(key, table.get_ref(), &mut Vec::new(), table.span().start, &mut out, c);
        for cond in &mut out[first..] {
            cond.except = written != key;
        }
    }
    out
}

/// The `any_arg*` conditions of a rule.
pub(super) fn any_arg_conditions(raw: &RawRule, c: &mut Collector) -> Vec<ValueTest> {
    let mut out = Vec::new();
    if let Some(g) = raw.any_arg.as_ref().and_then(|s| c.glob(s, "any_arg")) {
        out.push(ValueTest::Glob(g));
    }
    if let Some(spanned) = &raw.any_arg_regex
        && let Some(re) = regex_of(spanned.get_ref().clone_vec(), spanned.span().start, "any_arg_regex", c)
    {
        out.push(ValueTest::Regex(re));
    }
    if let Some(spanned) = &raw.any_arg_host
        && let Some(g) = host_glob(spanned, "any_arg_host", c)
    {
        out.push(ValueTest::Host(g));
    }
    out
}

/// `args` may be nested tables (`args.user.name = ..`) or dotted keys (`args."user.name"`);
/// both become a dotted path. In `args_number` a table of bounds (`{ gt = 100 }`) ends
/// the path.
fn flatten(
    key: &str,
    table: &toml::Table,
    prefix: &mut Vec<String>,
    offset: usize,
    out: &mut Vec<ArgCondition>,
    c: &mut Collector,
) {
    for (name, value) in table {
        let depth = prefix.len();
        prefix.extend(name.split('.').map(str::to_owned));
        let shown = format!("{key}.{}", prefix.join("."));
        match value {
            // In `args_number`, a table that holds a value (not only tables) is the bounds.
            toml::Value::Table(inner) if !(key == "args_number" && inner.values().any(|v| !v.is_table())) => {
                flatten(key, inner, prefix, offset, out, c);
            }
            value => {
                if let Some(test) = value_test(key, value, &shown, offset, c) {
                    out.push(ArgCondition { path: prefix.clone(), test, except: false });
                }
            }
        }
        prefix.truncate(depth);
    }
}

fn value_test(key: &str, value: &toml::Value, shown: &str, offset: usize, c: &mut Collector) -> Option<ValueTest> {
    if key == "args_number" {
        return bounds(value, shown, offset, c).map(ValueTest::Number);
    }
    let Some(patterns) = strings(key, value) else {
        let what = match key {
            "args_regex" => "a regular expression (or a list of them)",
            "args_host" => "a host glob such as \"*.example.com\" (or a list of them)",
            _ => "a glob string (or a list of them)",
        };
        c.error(offset, format!("`{shown}` must be {what}"));
        return None;
    };
    match key {
        "args_regex" => regex_of(patterns, offset, shown, c).map(ValueTest::Regex),
        "args_host" => host_glob_of(patterns, offset, shown, c).map(ValueTest::Host),
        _ => c.glob_list(patterns, offset, shown).map(ValueTest::Glob),
    }
}

/// The patterns a value gives: `args` also takes numbers and booleans (matched as their
/// JSON text); the other keys take strings only.
fn strings(key: &str, value: &toml::Value) -> Option<Vec<String>> {
    match value {
        toml::Value::String(s) => Some(vec![s.clone()]),
        toml::Value::Array(items) => items.iter().map(|v| v.as_str().map(str::to_owned)).collect(),
        toml::Value::Integer(i) if key == "args" => Some(vec![i.to_string()]),
        toml::Value::Float(f) if key == "args" => {
            Some(vec![serde_json::Number::from_f64(*f).map_or(f.to_string(), |n| n.to_string())])
        }
        toml::Value::Boolean(b) if key == "args" => Some(vec![b.to_string()]),
        _ => None,
    }
}

fn bounds(value: &toml::Value, shown: &str, offset: usize, c: &mut Collector) -> Option<Bounds> {
    let hint = "write bounds such as `{ gt = 100 }` or `{ gte = 0, lte = 10 }` (keys gt, gte, lt, lte)";
    let Some(table) = value.as_table() else {
        c.error(offset, format!("`{shown}` must be a table of bounds; {hint}"));
        return None;
    };
    let mut b = Bounds::default();
    for (k, v) in table {
        let number = match v {
            toml::Value::Integer(i) => *i as f64,
            toml::Value::Float(f) if f.is_finite() => *f,
            _ => {
                c.error(offset, format!("`{shown}.{k}` must be a number"));
                return None;
            }
        };
        let slot = match k.as_str() {
            "gt" => &mut b.gt,
            "gte" => &mut b.gte,
            "lt" => &mut b.lt,
            "lte" => &mut b.lte,
            other => {
                c.error(offset, format!("`{shown}`: unknown bound `{other}`; {hint}"));
                return None;
            }
        };
        *slot = Some(number);
    }
    if b.is_empty() {
        c.error(offset, format!("`{shown}`: no number is {b}, so the rule could never match"));
        return None;
    }
    Some(b)
}

/// Several expressions as one that matches when any of them does.
fn regex_of(patterns: Vec<String>, offset: usize, shown: &str, c: &mut Collector) -> Option<regex::Regex> {
    if patterns.is_empty() {
        c.error(offset, format!("`{shown}` is an empty list, so the rule could never match"));
        return None;
    }
    for p in &patterns {
        if let Err(e) = regex::Regex::new(p) {
            c.error(offset, format!("`{shown}`: invalid regular expression: {e}"));
            return None;
        }
    }
    let joined = if patterns.len() == 1 {
        patterns[0].clone()
    } else {
        patterns.iter().map(|p| format!("(?:{p})")).collect::<Vec<_>>().join("|")
    };
    regex::Regex::new(&joined).map_err(|e| c.error(offset, format!("`{shown}`: {e}"))).ok()
}

fn host_glob(spanned: &Spanned<OneOrMany>, shown: &str, c: &mut Collector) -> Option<Glob> {
    host_glob_of(spanned.get_ref().clone_vec(), spanned.span().start, shown, c)
}

fn host_glob_of(patterns: Vec<String>, offset: usize, shown: &str, c: &mut Collector) -> Option<Glob> {
    let mut hosts = Vec::new();
    for p in &patterns {
        if p.contains('/') || p.contains("://") {
            c.error(offset, format!("`{shown}`: `{p}` is a URL or path; write only the host, e.g. \"*.example.com\""));
            return None;
        }
        match host_pattern(p) {
            Ok(h) => hosts.push(h),
            Err(e) => {
                c.error(offset, format!("`{shown}`: {e}"));
                return None;
            }
        }
    }
    c.glob_list(hosts, offset, shown)
}
