//! AgentShield's `mcp-policy.yaml` (seed 004).
//!
//! AgentShield checks `blocked_tools` first, then every rule, and the most restrictive
//! matching decision wins (BLOCK over AUDIT over ALLOW), else `defaults.decision`. In a
//! first-match language that is: blocked tools, then BLOCK rules, then AUDIT rules, then
//! ALLOW rules, each group in file order.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{ConvertError, key, pass_through_rule, quote};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    defaults: Option<Defaults>,
    #[serde(default)]
    blocked_tools: Vec<String>,
    #[serde(default)]
    rules: Vec<YamlRule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Defaults {
    decision: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct YamlRule {
    #[serde(default)]
    id: Option<String>,
    #[serde(rename = "match", default)]
    matcher: Match,
    decision: String,
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct Match {
    tool_name: Option<String>,
    tool_name_regex: Option<String>,
    tool_name_any: Option<Vec<String>>,
    #[serde(default)]
    argument_patterns: BTreeMap<String, String>,
}

fn action(decision: &str) -> Result<&'static str, ConvertError> {
    match decision.to_ascii_uppercase().as_str() {
        "ALLOW" => Ok("allow"),
        "AUDIT" => Ok("audit"),
        "BLOCK" | "DENY" => Ok("deny"),
        other => Err(ConvertError::new(format!(
            "unknown decision `{other}`; AgentShield decisions are ALLOW, AUDIT or BLOCK"
        ))),
    }
}

/// Converts AgentShield YAML to clawai TOML.
pub fn convert(text: &str) -> Result<String, ConvertError> {
    let file: File =
        serde_saphyr::from_str(text).map_err(|e| ConvertError::new(format!("not an AgentShield policy: {e}")))?;
    // AgentShield's own default when the file has none.
    let default = match &file.defaults {
        Some(d) => action(&d.decision)?,
        None => "audit",
    };
    let mut out = String::from("# Converted from an AgentShield mcp-policy.yaml by `clawai policy import`.\n");
    out.push_str("# AgentShield's \"most restrictive decision wins\" is kept by ordering the rules:\n");
    out.push_str("# blocked tools, then BLOCK rules, then AUDIT rules, then ALLOW rules.\n\n");
    out.push_str(&format!("[defaults]\naction = {}\n\n", quote(default)));
    out.push_str(&pass_through_rule("AgentShield"));
    for (n, tool) in file.blocked_tools.iter().enumerate() {
        out.push_str(&format!(
            "[[rule]]\nid = {}\naction = \"deny\"\ntool = {}\ndescription = {}\n\n",
            quote(&format!("blocked-tool-{}", n + 1)),
            quote(tool),
            quote(&format!("{tool} is on the blocked_tools list"))
        ));
    }
    for wanted in ["deny", "audit", "allow"] {
        for (n, rule) in file.rules.iter().enumerate() {
            if action(&rule.decision)? != wanted {
                continue;
            }
            out.push_str(&rule_toml(rule, n, wanted)?);
        }
    }
    Ok(out)
}

fn rule_toml(rule: &YamlRule, n: usize, action: &str) -> Result<String, ConvertError> {
    let id = rule.id.clone().unwrap_or_else(|| format!("rule-{}", n + 1));
    let m = &rule.matcher;
    let mut out = format!("[[rule]]\nid = {}\naction = {}\n", quote(&id), quote(action));
    let targets = [m.tool_name.is_some(), m.tool_name_regex.is_some(), m.tool_name_any.is_some()];
    if targets.iter().filter(|t| **t).count() > 1 {
        return Err(ConvertError::new(format!(
            "rule `{id}` combines tool_name, tool_name_regex and tool_name_any; split it into one rule per tool condition"
        )));
    }
    if let Some(t) = &m.tool_name {
        out.push_str(&format!("tool = {}\n", quote(t)));
    } else if let Some(r) = &m.tool_name_regex {
        out.push_str(&format!("tool_regex = {}\n", quote(r)));
    } else if let Some(list) = &m.tool_name_any {
        let items: Vec<String> = list.iter().map(|t| quote(t)).collect();
        out.push_str(&format!("tools = [{}]\n", items.join(", ")));
    } else {
        out.push_str("tool = \"**\"\n");
    }
    for (name, pattern) in &m.argument_patterns {
        out.push_str(&format!("args.{} = {}\n", key(name), quote(pattern)));
    }
    if let Some(reason) = &rule.reason {
        out.push_str(&format!("description = {}\n", quote(reason)));
    }
    out.push('\n');
    Ok(out)
}
