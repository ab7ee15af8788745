//! AgentShield's `mcp-policy.yaml` and rule packs.
//!
//! AgentShield starts every `tools/call` and `resources/read` at `defaults.decision`
//! (AUDIT when absent), returns BLOCK at once for a blocked tool or resource, and then
//! lets each matching rule (`rules`, `structural_rules`, BLOCK `value_limits`; for
//! resources `resource_rules`) *raise* the decision, BLOCK over AUDIT over ALLOW: a rule
//! never lowers it below the default. In a first-match language that is: blocked tools
//! and resources, then BLOCK rules, then AUDIT rules, then ALLOW rules, leaving out every
//! rule below the default (it can never change a decision there). A rule whose `match`
//! names nothing never matches there, and is left out here. Other methods pass through.

use clawai_protocol::methods;
mod schema;
mod structural;
mod unknown;

use super::{ConvertError, Converted, RuleOut, head, key, pass_through_rule, quote, quote_all};
use schema::{File, Match, ResourceRule, Rule, ValueLimit};

/// AgentShield's decisions, ordered as it ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Severity {
    Allow,
    Audit,
    Block,
}

impl Severity {
    fn action(self) -> &'static str {
        match self {
            Severity::Allow => "allow",
            Severity::Audit => "audit",
            Severity::Block => "deny",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Severity::Allow => "ALLOW",
            Severity::Audit => "AUDIT",
            Severity::Block => "BLOCK",
        }
    }
}

/// Reads a decision as AgentShield compares it: exactly `ALLOW`, `AUDIT` or `BLOCK`. Any
/// other spelling is refused: AgentShield would ignore such a rule (or forward every
/// call under such a default), which is never what its author meant.
fn severity(decision: Option<&str>, what: &str) -> Result<Severity, ConvertError> {
    match decision {
        Some("ALLOW") => Ok(Severity::Allow),
        Some("AUDIT") => Ok(Severity::Audit),
        Some("BLOCK") => Ok(Severity::Block),
        None => Err(ConvertError::new(format!("{what} has no decision; write ALLOW, AUDIT or BLOCK"))),
        Some(other) => {
            let hint = match other.to_ascii_uppercase().as_str() {
                "ALLOW" | "AUDIT" | "BLOCK" => format!("write {}", other.to_ascii_uppercase()),
                "DENY" => "AgentShield has no DENY: write BLOCK".to_owned(),
                _ => "write ALLOW, AUDIT or BLOCK".to_owned(),
            };
            Err(ConvertError::new(format!(
                "{what}: unknown decision `{other}`; AgentShield compares decisions exactly and would ignore it, so the policy would not do what it says; {hint}"
            )))
        }
    }
}

/// What one AgentShield entry becomes: its severity and the clawai rules (alternatives
/// of one condition, so any of them matching is the entry matching).
struct Entry {
    severity: Severity,
    label: String,
    rules: Vec<RuleOut>,
    resource: bool,
}

/// Converts AgentShield YAML to clawai TOML.
pub fn convert(text: &str) -> Result<Converted, ConvertError> {
    let file: File = if text.trim().is_empty() {
        File::default()
    } else {
        serde_saphyr::from_str(text).map_err(|e| ConvertError::new(format!("not an AgentShield policy: {e}")))?
    };
    let default = match file.defaults.as_ref().and_then(|d| d.decision.as_deref()) {
        None | Some("") => Severity::Audit,
        Some(d) => severity(Some(d), "defaults.decision")?,
    };
    let mut notes = if text.trim().is_empty() {
        Vec::new()
    } else {
        // Read a second time as plain data, for the keys the typed reading dropped.
        let plain: serde_json::Value =
            serde_saphyr::from_str(text).map_err(|e| ConvertError::new(format!("not an AgentShield policy: {e}")))?;
        unknown::ignored_keys(&plain)
    };
    let mut entries = Vec::new();
    for (n, rule) in file.rules.iter().enumerate() {
        if let Some(entry) = tool_rule(rule, n, &mut notes)? {
            entries.push(entry);
        }
    }
    for (n, rule) in file.structural_rules.iter().enumerate() {
        let label = rule.id.clone().unwrap_or_else(|| format!("structural-rule-{}", n + 1));
        let severity = severity(rule.decision.as_deref(), &format!("structural rule `{label}`"))?;
        let (names, conditions) = structural::convert(&rule.matcher, &label)?;
        if !rule.matcher.args_match.is_empty() {
            notes.push(structural::lookup_note(&format!("structural rule `{label}`")));
        }
        if names.is_empty() && conditions.is_empty() {
            notes.push(format!(
                "structural rule `{label}` names no tool and no argument, so it never matches in AgentShield; left out"
            ));
            continue;
        }
        let rules = alternatives(&label, severity, &names, &conditions, rule.reason.as_deref());
        entries.push(Entry { severity, label: format!("structural rule `{label}`"), rules, resource: false });
    }
    for (n, limit) in file.value_limits.iter().enumerate() {
        if let Some(entry) = value_limit(limit, n, &mut notes)? {
            entries.push(entry);
        }
    }
    for (n, rule) in file.resource_rules.iter().enumerate() {
        if let Some(entry) = resource_rule(rule, n, &mut notes)? {
            entries.push(entry);
        }
    }
    if !file.semantic_rules.is_empty() {
        notes.push(format!(
            "{} semantic rule(s) left out: AgentShield decides them with a heuristic intent classifier that clawai does not have; write rules on tool names and arguments instead",
            file.semantic_rules.len()
        ));
    }
    if !file.data_labels.is_empty() {
        notes.push(format!(
            "{} data label(s) left out: AgentShield's content scanner has no equivalent in the policy language; clawai's audit trail redacts secrets on its own",
            file.data_labels.len()
        ));
    }
    for entry in entries.iter().filter(|e| e.severity < default) {
        notes.push(format!(
            "{} (a {} rule) is left out: AgentShield only lets a rule raise the default {}, so it never changes a decision there",
            entry.label,
            entry.severity.name(),
            default.name()
        ));
    }

    let mut out = head(
        "an AgentShield mcp-policy.yaml",
        &[
            "AgentShield's \"a rule can only raise the decision\" is kept by ordering the rules:",
            "blocked tools and resources, then BLOCK, AUDIT and ALLOW rules, none below the default.",
        ],
        &notes,
        default.action(),
    );
    pass_through_rule(
        "AgentShield",
        &[methods::PROMPTS_GET, methods::SAMPLING_CREATE_MESSAGE, methods::ELICITATION_CREATE],
        "tools/call and resources/read",
    )
    .write(&mut out);
    for tool in &file.blocked_tools {
        let mut rule = RuleOut::new(format!("blocked-tool:{tool}"), "deny");
        rule.set("tool", quote(tool));
        rule.description = Some(format!("{tool} is on the blocked_tools list"));
        rule.write(&mut out);
    }
    for resource in &file.blocked_resources {
        let mut rule = RuleOut::new(format!("blocked-resource:{resource}"), "deny");
        rule.set("resource", quote(resource));
        rule.description = Some(format!("{resource} is on the blocked_resources list"));
        rule.write(&mut out);
    }
    for wanted in [Severity::Block, Severity::Audit, Severity::Allow] {
        if wanted < default {
            continue;
        }
        // Tools before resources within a severity only sorts the file: a rule decides
        // one kind of message.
        for resource in [false, true] {
            for entry in entries.iter().filter(|e| e.severity == wanted && e.resource == resource) {
                entry.rules.iter().for_each(|r| r.write(&mut out));
            }
        }
    }
    Ok(Converted { toml: out, notes })
}

/// The rules of one entry: one per name alternative, each with every condition.
fn alternatives(
    id: &str,
    severity: Severity,
    names: &[(String, String)],
    conditions: &[(String, String)],
    reason: Option<&str>,
) -> Vec<RuleOut> {
    let any_tool = [("tool".to_owned(), quote("**"))];
    let names = if names.is_empty() { &any_tool[..] } else { names };
    names
        .iter()
        .map(|(name_key, name_value)| {
            let mut rule = RuleOut::new(id, severity.action());
            rule.set(name_key, name_value.clone());
            for (k, v) in conditions {
                rule.set(k, v.clone());
            }
            rule.description = reason.map(str::to_owned);
            rule
        })
        .collect()
}

/// A tool name as AgentShield matches it: exact, or a glob when it contains `*`.
fn tool_name_glob(name: &str) -> String {
    quote(name)
}

fn tool_rule(rule: &Rule, n: usize, notes: &mut Vec<String>) -> Result<Option<Entry>, ConvertError> {
    let label = rule.id.clone().unwrap_or_else(|| format!("rule-{}", n + 1));
    let severity = severity(rule.decision.as_deref(), &format!("rule `{label}`"))?;
    if let Some(engine) = &rule.engine {
        notes.push(format!(
            "rule `{label}` is decided by AgentShield's built-in `{engine}` scanner, not by its match, which clawai does not have; left out"
        ));
        return Ok(None);
    }
    let m: &Match = &rule.matcher;
    let mut names = Vec::new();
    if let Some(t) = &m.tool_name {
        names.push(("tool".to_owned(), tool_name_glob(t)));
    }
    if let Some(list) = m.tool_name_any.as_ref().filter(|l| !l.is_empty()) {
        names.push(("tools".to_owned(), quote_all(list)));
    }
    if let Some(r) = &m.tool_name_regex {
        names.push(("tool_regex".to_owned(), quote(r)));
    }
    let mut conditions = Vec::new();
    for (name, pattern) in &m.argument_patterns {
        conditions.push((format!("args.{}", key(name)), quote(pattern)));
    }
    for (name, pattern) in &m.argument_regex_patterns {
        conditions.push((format!("args_regex.{}", key(name)), quote(pattern)));
    }
    for (name, patterns) in &m.exclude_argument_patterns {
        conditions.push((format!("unless_args.{}", key(name)), quote_all(&patterns.to_vec())));
    }
    let matches_something =
        !names.is_empty() || !m.argument_patterns.is_empty() || !m.argument_regex_patterns.is_empty();
    if let Some(s) = &m.structural {
        let (structural_names, structural_conditions) = structural::convert(s, &label)?;
        if !s.args_match.is_empty() {
            notes.push(structural::lookup_note(&format!("rule `{label}`")));
        }
        if !structural_names.is_empty() && !names.is_empty() {
            return Err(ConvertError::new(format!(
                "rule `{label}` names tools both in `match` and in `match.structural`; clawai cannot require two name conditions in one rule: write this rule by hand in TOML"
            )));
        }
        if structural_names.is_empty() && structural_conditions.is_empty() {
            notes.push(format!(
                "rule `{label}`: its `structural` match names nothing, so it never matches in AgentShield; left out"
            ));
            return Ok(None);
        }
        names.extend(structural_names);
        conditions.extend(structural_conditions);
    } else if !matches_something {
        notes.push(format!(
            "rule `{label}` has a `match` that names no tool and no argument pattern, so it never matches in AgentShield; left out"
        ));
        return Ok(None);
    }
    let rules = alternatives(&label, severity, &names, &conditions, rule.reason.as_deref());
    Ok(Some(Entry { severity, label: format!("rule `{label}`"), rules, resource: false }))
}

fn value_limit(limit: &ValueLimit, n: usize, notes: &mut Vec<String>) -> Result<Option<Entry>, ConvertError> {
    let label = limit.id.clone().unwrap_or_else(|| format!("value-limit-{}", n + 1));
    let what = format!("value limit `{label}`");
    let severity = severity(limit.decision.as_deref(), &what)?;
    if severity != Severity::Block {
        notes.push(format!(
            "{what} is {}: AgentShield only annotates such a violation and decides the call as before; left out (clawai records every call anyway)",
            severity.name()
        ));
        return Ok(None);
    }
    if limit.max.is_none() && limit.min.is_none() {
        notes.push(format!("{what} has neither max nor min, so it never matches in AgentShield; left out"));
        return Ok(None);
    }
    let mut names = Vec::new();
    if let Some(t) = &limit.tool_pattern {
        names.push(("tool".to_owned(), tool_name_glob(t)));
    }
    if let Some(r) = &limit.tool_name_regex {
        names.push(("tool_regex".to_owned(), quote(r)));
    }
    let argument = format!("args_number.{}", key(&limit.argument));
    let mut rules = Vec::new();
    // Beyond either bound is a violation: one rule per bound.
    for bound in [limit.max.map(|m| format!("{{ gt = {m} }}")), limit.min.map(|m| format!("{{ lt = {m} }}"))]
        .into_iter()
        .flatten()
    {
        let conditions = [(argument.clone(), bound)];
        rules.extend(alternatives(&label, severity, &names, &conditions, limit.reason.as_deref()));
    }
    Ok(Some(Entry { severity, label: what, rules, resource: false }))
}

fn resource_rule(rule: &ResourceRule, n: usize, notes: &mut Vec<String>) -> Result<Option<Entry>, ConvertError> {
    let label = rule.id.clone().unwrap_or_else(|| format!("resource-rule-{}", n + 1));
    let what = format!("resource rule `{label}`");
    let severity = severity(rule.decision.as_deref(), &what)?;
    let m = &rule.matcher;
    let mut rules = Vec::new();
    let mut alternative = |lines: &[(&str, String)]| {
        let mut r = RuleOut::new(label.clone(), severity.action());
        for (k, v) in lines {
            r.set(k, v.clone());
        }
        r.description = rule.reason.clone();
        rules.push(r);
    };
    if let Some(p) = &m.uri_pattern {
        alternative(&[("resource", quote(p))]);
    }
    if let Some(r) = &m.uri_regex {
        alternative(&[("method", quote(methods::RESOURCES_READ)), ("args_regex.uri", quote(r))]);
    }
    if let Some(s) = &m.scheme {
        alternative(&[("resource", quote(&format!("{s}://**")))]);
    }
    if rules.is_empty() {
        notes.push(format!("{what} names no URI, regex or scheme, so it never matches in AgentShield; left out"));
        return Ok(None);
    }
    Ok(Some(Entry { severity, label: what, rules, resource: true }))
}
