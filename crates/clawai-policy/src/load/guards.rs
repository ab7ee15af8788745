//! `[guards]` of a policy file: the stages of the decision path beyond the rules.

use serde::Deserialize;
use toml::Spanned;

use super::Collector;
use crate::engine::{Guards, ResultsGuard};

/// `[guards]`: every key the language has, so that a typo is refused; the values of
/// the guards not built yet are checked and kept for when they are.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGuards {
    pinning: Option<bool>,
    scan: Option<bool>,
    quarantine_on: Option<Spanned<String>>,
    results: Option<Spanned<String>>,
    max_result_bytes: Option<Spanned<i64>>,
    secrets_in_arguments: Option<Spanned<String>>,
    hide_denied_tools: Option<bool>,
}

impl RawGuards {
    /// Checks the values and keeps what is in force.
    pub(super) fn compile(&self, c: &mut Collector) -> Guards {
        let mut one_of = |value: &Option<Spanned<String>>, key: &str, allowed: &[&str]| {
            if let Some(value) = value
                && !allowed.contains(&value.get_ref().as_str())
            {
                c.error(
                    value.span().start,
                    format!("[guards] {key} must be one of {}, not `{}`", allowed.join(", "), value.get_ref()),
                );
            }
        };
        one_of(&self.quarantine_on, "quarantine_on", &["info", "warn", "critical"]);
        one_of(&self.results, "results", &["redact", "flag", "deny"]);
        one_of(&self.secrets_in_arguments, "secrets_in_arguments", &["allow", "deny", "prompt", "audit"]);
        if let Some(bytes) = &self.max_result_bytes
            && *bytes.get_ref() <= 0
        {
            c.error(bytes.span().start, "[guards] max_result_bytes must be a number of bytes, more than 0");
        }
        let defaults = Guards::default();
        let secrets_in_arguments = self
            .secrets_in_arguments
            .as_ref()
            .and_then(|value| value.get_ref().parse().ok())
            .unwrap_or(defaults.secrets_in_arguments);
        let quarantine_on = self
            .quarantine_on
            .as_ref()
            .and_then(|value| value.get_ref().parse().ok())
            .unwrap_or(defaults.quarantine_on);
        let results = match self.results.as_ref().map(|value| value.get_ref().as_str()) {
            Some("flag") => ResultsGuard::Flag,
            Some("deny") => ResultsGuard::Deny,
            _ => defaults.results,
        };
        let max_result_bytes =
            self.max_result_bytes.as_ref().and_then(|bytes| u64::try_from(*bytes.get_ref()).ok()).filter(|b| *b > 0);
        Guards {
            pinning: self.pinning.unwrap_or(defaults.pinning),
            secrets_in_arguments,
            results,
            max_result_bytes,
            hide_denied_tools: self.hide_denied_tools.unwrap_or(defaults.hide_denied_tools),
            scan: self.scan.unwrap_or(defaults.scan),
            quarantine_on,
        }
    }
}
