//! The shape of AgentShield's `mcp-policy.yaml` and its rule packs, as serde reads it.
//!
//! AgentShield ignores keys it does not know. clawai reads every key AgentShield reads,
//! accepts the metadata AgentShield carries but never decides on (`taxonomy`, `tests`,
//! `confidence`, pack names…), and refuses any other key: a misspelt `tool_nme` would
//! silently disable a rule there, and the import says so instead.

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
#[serde(deny_unknown_fields)]
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
    // A rule pack's metadata.
    #[serde(default, rename = "name")]
    _name: Option<IgnoredAny>,
    #[serde(default, rename = "description")]
    _description: Option<IgnoredAny>,
    #[serde(default, rename = "version")]
    _version: Option<IgnoredAny>,
    #[serde(default, rename = "author")]
    _author: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Defaults {
    #[serde(default)]
    pub(super) decision: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(default, rename = "taxonomy")]
    _taxonomy: Option<IgnoredAny>,
    #[serde(default, rename = "tests")]
    _tests: Option<IgnoredAny>,
    #[serde(default, rename = "confidence")]
    _confidence: Option<IgnoredAny>,
    #[serde(default, rename = "suggested")]
    _suggested: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
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
    /// Parsed but never evaluated inside `rules` by AgentShield.
    #[serde(default, rename = "semantic")]
    _semantic: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub(super) struct StructuralRule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(rename = "match", default, deserialize_with = "null_as_empty")]
    pub(super) matcher: StructuralMatch,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
    #[serde(default, rename = "taxonomy")]
    _taxonomy: Option<IgnoredAny>,
    #[serde(default, rename = "tests")]
    _tests: Option<IgnoredAny>,
    #[serde(default, rename = "confidence")]
    _confidence: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ResourceRule {
    #[serde(default)]
    pub(super) id: Option<String>,
    #[serde(rename = "match", default, deserialize_with = "null_as_empty")]
    pub(super) matcher: ResourceMatch,
    #[serde(default)]
    pub(super) decision: Option<String>,
    #[serde(default)]
    pub(super) reason: Option<String>,
    #[serde(default, rename = "taxonomy")]
    _taxonomy: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct ResourceMatch {
    pub(super) uri_pattern: Option<String>,
    pub(super) uri_regex: Option<String>,
    pub(super) scheme: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
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
    #[serde(default, rename = "taxonomy")]
    _taxonomy: Option<IgnoredAny>,
}
