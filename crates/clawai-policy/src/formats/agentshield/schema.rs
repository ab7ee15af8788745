//! The shape of AgentShield's `mcp-policy.yaml` and its rule packs, as serde reads it.
//!
//! AgentShield ignores keys it does not know, and so does this reading: a rule pack
//! that carries a key AgentShield never looks at (`tool_name_pattern` in a structural
//! match) is applied as AgentShield applies it. Every such key is named in the
//! conversion's notes ([`super::unknown`]), so a misspelt `tool_nme` that silently
//! disables a rule in AgentShield is at least pointed out here.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::IgnoredAny;

/// An absent or empty (`rules:` with nothing under it) list or map, as AgentShield reads
/// it: empty.
fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// One string or a list of them.
#[derive(Deserialize, Debug, Clone)]
#[serde(untagged)]
pub(super) enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub(super) fn to_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

#[derive(Deserialize, Default)]
pub(super) struct File {
    #[serde(default)]
    pub(super) defaults: Option<Defaults>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) blocked_tools: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) blocked_resources: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) rules: Vec<Rule>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) resource_rules: Vec<ResourceRule>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) value_limits: Vec<ValueLimit>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) structural_rules: Vec<StructuralRule>,
    /// Decided by a heuristic intent classifier that clawai does not have.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) semantic_rules: Vec<IgnoredAny>,
    /// Decided by a content scanner that clawai does not have.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) data_labels: Vec<IgnoredAny>,
}

#[derive(Deserialize)]
pub(super) struct Defaults {
    #[serde(default)]
    pub(super) decision: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct Rule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(rename = "match", default, deserialize_with = "null_as_empty")]
    pub(super) matcher: Match,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
    /// A rule claimed by one of AgentShield's built-in scanners, never pattern-matched.
    #[serde(default)]
    pub(super) engine: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct Match {
    pub(super) tool_name: Option<String>,
    pub(super) tool_name_regex: Option<String>,
    pub(super) tool_name_any: Option<Vec<String>>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) argument_patterns: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) argument_regex_patterns: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) exclude_argument_patterns: BTreeMap<String, OneOrMany>,
    #[serde(default)]
    pub(super) structural: Option<StructuralMatch>,
}

#[derive(Deserialize, Default)]
pub(super) struct StructuralMatch {
    #[serde(default)]
    pub(super) tool_name_any: Option<Vec<String>>,
    #[serde(default)]
    pub(super) tool_name_regex: Option<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) args_match: BTreeMap<String, FieldMatch>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) exclude_args_match: BTreeMap<String, FieldMatch>,
}

#[derive(Deserialize, Default)]
pub(super) struct FieldMatch {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) pattern_any: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) pattern_all: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub(super) pattern_not: Vec<String>,
    #[serde(default)]
    pub(super) exists: Option<bool>,
    #[serde(default)]
    pub(super) value_gt: Option<f64>,
    #[serde(default)]
    pub(super) value_lt: Option<f64>,
}

#[derive(Deserialize)]
pub(super) struct StructuralRule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(rename = "match", default, deserialize_with = "null_as_empty")]
    pub(super) matcher: StructuralMatch,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ResourceRule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(rename = "match", default, deserialize_with = "null_as_empty")]
    pub(super) matcher: ResourceMatch,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
}

#[derive(Deserialize, Default)]
pub(super) struct ResourceMatch {
    pub(super) uri_pattern: Option<String>,
    pub(super) uri_regex: Option<String>,
    pub(super) scheme: Option<String>,
}

#[derive(Deserialize)]
pub(super) struct ValueLimit {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(default)]
    pub(super) tool_pattern: Option<String>,
    #[serde(default)]
    pub(super) tool_name_regex: Option<String>,
    pub(super) argument: String,
    #[serde(default)]
    pub(super) max: Option<f64>,
    #[serde(default)]
    pub(super) min: Option<f64>,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
}
