//! Policy fixtures: a recorded call and the decision it should get (seed 000).
//!
//! ```json
//! { "method": "tools/call",
//!   "params": { "name": "filesystem_read", "arguments": { "path": "/home/user/.ssh/id_rsa" } },
//!   "expected": "deny",
//!   "server": "filesystem",
//!   "annotations": { "readOnlyHint": true } }
//! ```
//!
//! `expected`, `server` and `annotations` are optional. A whole JSON-RPC request
//! (with `jsonrpc` and `id`) is accepted too, so a line copied from the audit trail or
//! the wire is a fixture.
//!
//! `session` sets what the session has seen before this call, for rules with `tainted`
//! and `rate` (see [`crate::session`]): its labels, and how many earlier calls each rate
//! rule (by id, or `#N` for the N-th rule) counted in its window:
//!
//! ```json
//! { "method": "tools/call", "params": { "name": "fetch", "arguments": {} },
//!   "session": { "labels": ["private"], "calls": { "fetch-flood": 30 } },
//!   "expected": "deny" }
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use clawai_protocol::Json;
use serde::Deserialize;
use serde_json::Value;

use crate::call::{Call, ToolAnnotations};
use crate::engine::Policy;
use crate::rule::Action;
use crate::session::{Session, rule_key};

/// A fixture read from a file.
#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    /// The JSON-RPC method.
    pub method: String,
    /// The request's params.
    #[serde(default)]
    pub params: Option<Value>,
    /// The decision the policy must reach, if the fixture says.
    #[serde(default)]
    pub expected: Option<String>,
    /// The server the call goes to.
    #[serde(default)]
    pub server: Option<String>,
    /// The tool's annotations, as `tools/list` would report them.
    #[serde(default)]
    pub annotations: Option<Value>,
    /// What the session saw before this call.
    #[serde(default)]
    pub session: Option<FixtureSession>,
}

/// A fixture's `session`: the labels it carries and the earlier calls rate rules counted.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FixtureSession {
    /// Labels rules put on the session before (`taint`).
    #[serde(default)]
    pub labels: Vec<String>,
    /// Per rate rule (its id, or `#N`), how many calls its window already holds.
    #[serde(default)]
    pub calls: BTreeMap<String, u32>,
}

/// The outcome of one fixture.
#[derive(Debug, Clone)]
pub struct FixtureResult {
    /// Where the fixture came from.
    pub path: PathBuf,
    /// The decision reached.
    pub actual: Action,
    /// The decision required (from the fixture or `--expect`).
    pub expected: Option<Action>,
    /// The deciding rule's id, if any.
    pub rule_id: Option<String>,
    /// Why, in words.
    pub reason: String,
}

impl FixtureResult {
    /// True when there was no expectation, or it was met.
    pub fn passed(&self) -> bool {
        self.expected.is_none_or(|e| e == self.actual)
    }
}

/// Reads a fixture file, with an error that names the file.
pub fn read(path: &Path) -> Result<Fixture, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: cannot read fixture: {e}", path.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}:{}:{}: not a fixture: {e}", path.display(), e.line(), e.column()))
}

/// The fixtures of a directory (`*.json`, sorted by name, not recursive).
pub fn in_dir(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read fixture directory: {e}", dir.display()))?;
    let mut paths: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json") && p.is_file())
        .collect();
    paths.sort();
    if paths.is_empty() {
        return Err(format!("{}: no *.json fixtures found", dir.display()));
    }
    Ok(paths)
}

/// Decides a fixture with a policy. `expect` overrides the fixture's own `expected`.
pub fn run(policy: &Policy, path: &Path, fixture: &Fixture, expect: Option<Action>) -> Result<FixtureResult, String> {
    let expected = match (expect, &fixture.expected) {
        (Some(e), _) => Some(e),
        (None, Some(text)) => Some(text.parse::<Action>().map_err(|e| format!("{}: `expected`: {e}", path.display()))?),
        (None, None) => None,
    };
    let annotations = fixture.annotations.as_ref().map(ToolAnnotations::from_json);
    let params = fixture.params.as_ref().map(Json::from);
    let call = Call::from_params(&fixture.method, params.as_ref())
        .with_server(fixture.server.as_deref())
        .with_annotations(annotations);
    let session = session_of(policy, fixture.session.as_ref())
        .map_err(|e| format!("{}: `session.calls`: {e}", path.display()))?;
    let decision = policy.decide_in(&call, &session);
    Ok(FixtureResult {
        path: path.to_owned(),
        actual: decision.action,
        expected,
        rule_id: decision.rule_id().map(str::to_owned),
        reason: decision.reason().to_owned(),
    })
}

/// The session a fixture describes; an error when `calls` names no rate rule of the
/// policy (the count would be ignored, and the fixture prove nothing).
pub fn session_of(policy: &Policy, described: Option<&FixtureSession>) -> Result<Session, String> {
    let Some(described) = described else { return Ok(Session::new()) };
    let session = Session::with_labels(described.labels.iter().cloned());
    let rate_rules: Vec<String> = policy
        .rules()
        .iter()
        .enumerate()
        .filter(|(_, r)| r.rate().is_some())
        .map(|(i, r)| rule_key(i, r.id.as_deref()))
        .collect();
    for (rule, &count) in &described.calls {
        if !rate_rules.contains(rule) {
            let known = if rate_rules.is_empty() {
                "the policy has no rule with `rate`".to_owned()
            } else {
                format!("its rate rules are {}", rate_rules.join(", "))
            };
            return Err(format!("`{rule}` is not a rule with `rate`; {known}"));
        }
        session.add_prior_calls(rule, count);
    }
    Ok(session)
}
