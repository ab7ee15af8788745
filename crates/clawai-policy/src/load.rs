//! Reading a policy file: TOML (native), AgentShield YAML or mcp-gov JSON.
//!
//! Loading is all or nothing: any error (syntax, unknown key, bad action, glob or
//! regex, missing or contradictory target, a rule that can never match) rejects the
//! whole file with the file, line and what to do, and no policy is returned.

use clawai_protocol::methods;
use std::fmt;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use crate::engine::{Guards, Policy};
use crate::formats::{self, Converted};
use crate::glob::Glob;
use crate::operation::Operation;
use crate::rule::{Action, Detector, Rule, Target, ToolNames};

mod args;
mod guards;
mod session_keys;

use guards::RawGuards;
use session_keys::{find_rate_key_clashes, find_unset_labels, labels};

/// One problem found in a policy, with where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// What is wrong and what to do.
    pub message: String,
}

/// A policy that could not be loaded. Nothing of it is used.
#[derive(Debug, Clone, thiserror::Error)]
pub struct PolicyError {
    /// The file (or a name for the text) that was read.
    pub path: String,
    /// Every problem found.
    pub diagnostics: Vec<Diagnostic>,
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, d) in self.diagnostics.iter().enumerate() {
            if n > 0 {
                writeln!(f)?;
            }
            match (d.line, d.column) {
                (Some(l), Some(c)) => write!(f, "{}:{l}:{c}: {}", self.path, d.message)?,
                (Some(l), None) => write!(f, "{}:{l}: {}", self.path, d.message)?,
                _ => write!(f, "{}: {}", self.path, d.message)?,
            }
        }
        Ok(())
    }
}

impl PolicyError {
    fn one(path: &str, line: Option<usize>, column: Option<usize>, message: impl Into<String>) -> Self {
        PolicyError { path: path.to_owned(), diagnostics: vec![Diagnostic { line, column, message: message.into() }] }
    }
}

/// The policy file formats clawai reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// clawai's TOML language.
    Toml,
    /// AgentShield's `mcp-policy.yaml` (seed 004).
    AgentShield,
    /// mcp-gov's `rules.json` (seed 003).
    McpGov,
}

impl Format {
    /// Picks the format from the file extension (`.yaml`/`.yml`, `.json`, else TOML).
    pub fn from_path(path: &Path) -> Format {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("yaml" | "yml") => Format::AgentShield,
            Some("json") => Format::McpGov,
            _ => Format::Toml,
        }
    }
}

/// Reads and validates a policy file of any supported format.
pub fn load_file(path: &Path) -> Result<Policy, PolicyError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| {
        // `policy init` writes where it is told: the path that was not found.
        let hint = if e.kind() == std::io::ErrorKind::NotFound {
            let plain = name.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
            let shown = if plain { name.clone() } else { format!("'{}'", name.replace('\'', "'\\''")) };
            format!("; create one with `clawai policy init --path {shown}` or pass --policy FILE")
        } else {
            String::new()
        };
        PolicyError::one(&name, None, None, format!("cannot read the policy: {e}{hint}"))
    })?;
    load_str(&text, Format::from_path(path), &name)
}

/// Validates a policy given as text; `name` is used in error messages.
pub fn load_str(text: &str, format: Format, name: &str) -> Result<Policy, PolicyError> {
    match format {
        Format::Toml => parse_toml(text, name, true),
        Format::AgentShield | Format::McpGov => {
            let converted = convert(text, format, name)?;
            // AgentShield's "most restrictive wins" can leave rules that never decide
            // anything; that is legal there, so it is not an error here either.
            parse_toml(&converted.toml, &format!("{name} (converted to TOML)"), false)
                .map(|policy| policy.with_notes(converted.notes))
        }
    }
}

/// Converts a policy of another format to clawai's TOML text.
pub fn to_toml(text: &str, format: Format, name: &str) -> Result<String, PolicyError> {
    convert(text, format, name).map(|c| c.toml)
}

/// Converts a policy of another format to clawai's TOML, with notes on what the
/// conversion shaped or left out (TOML comes back as it is, without notes).
pub fn convert(text: &str, format: Format, name: &str) -> Result<Converted, PolicyError> {
    let converted = match format {
        Format::Toml => return Ok(Converted { toml: text.to_owned(), notes: Vec::new() }),
        Format::AgentShield => formats::agentshield::convert(text),
        Format::McpGov => formats::mcpgov::convert(text),
    };
    converted.map_err(|e| PolicyError::one(name, e.line, e.column, e.message))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    defaults: Option<RawDefaults>,
    guards: Option<RawGuards>,
    #[serde(default)]
    rule: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDefaults {
    action: Option<Spanned<String>>,
    #[serde(default)]
    follow_links: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: Option<String>,
    action: Option<Spanned<String>>,
    description: Option<String>,
    tool: Option<Spanned<String>>,
    tools: Option<Spanned<Vec<String>>>,
    tool_regex: Option<Spanned<String>>,
    resource: Option<Spanned<OneOrMany>>,
    prompt: Option<Spanned<OneOrMany>>,
    method: Option<Spanned<OneOrMany>>,
    server: Option<Spanned<OneOrMany>>,
    service: Option<Spanned<OneOrMany>>,
    args: Option<Spanned<toml::Table>>,
    args_regex: Option<Spanned<toml::Table>>,
    args_number: Option<Spanned<toml::Table>>,
    args_host: Option<Spanned<toml::Table>>,
    unless_args: Option<Spanned<toml::Table>>,
    unless_args_regex: Option<Spanned<toml::Table>>,
    any_arg: Option<Spanned<OneOrMany>>,
    any_arg_regex: Option<Spanned<OneOrMany>>,
    any_arg_host: Option<Spanned<OneOrMany>>,
    operation: Option<Spanned<OneOrMany>>,
    detector: Option<Spanned<String>>,
    destructive: Option<bool>,
    read_only: Option<bool>,
    annotated: Option<bool>,
    rate: Option<Spanned<String>>,
    taint: Option<Spanned<OneOrMany>>,
    tainted: Option<Spanned<OneOrMany>>,
}

/// Turns byte offsets into line and column.
struct Lines<'t> {
    text: &'t str,
    /// Byte offset where each line starts.
    starts: Vec<usize>,
}

impl<'t> Lines<'t> {
    fn new(text: &'t str) -> Self {
        let starts = std::iter::once(0).chain(memchr_newlines(text)).collect();
        Lines { text, starts }
    }

    fn at(&self, offset: usize) -> (usize, usize) {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset);
        let start = self.starts[line - 1];
        let column = self.text.get(start..offset).map_or(0, |l| l.chars().count()) + 1;
        (line, column)
    }
}

fn memchr_newlines(text: &str) -> impl Iterator<Item = usize> + '_ {
    text.bytes().enumerate().filter(|(_, b)| *b == b'\n').map(|(i, _)| i + 1)
}

struct Collector<'t> {
    lines: Lines<'t>,
    diagnostics: Vec<Diagnostic>,
}

impl Collector<'_> {
    fn error(&mut self, offset: usize, message: impl Into<String>) {
        let (line, column) = self.lines.at(offset);
        self.diagnostics.push(Diagnostic { line: Some(line), column: Some(column), message: message.into() });
    }

    fn glob(&mut self, spanned: &Spanned<OneOrMany>, field: &str) -> Option<Glob> {
        self.glob_list(spanned.get_ref().clone_vec(), spanned.span().start, field)
    }

    fn glob_list(&mut self, patterns: Vec<String>, offset: usize, field: &str) -> Option<Glob> {
        match Glob::any_of(&patterns) {
            Ok(g) => Some(g),
            Err(e) => {
                self.error(offset, format!("`{field}`: {e}"));
                None
            }
        }
    }
}

fn parse_toml(text: &str, name: &str, refuse_shadowed: bool) -> Result<Policy, PolicyError> {
    let raw: RawPolicy = toml::from_str(text).map_err(|e| {
        let (line, column) = match e.span() {
            Some(span) => {
                let (l, c) = Lines::new(text).at(span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        PolicyError::one(name, line, column, explain_toml_error(e.message()))
    })?;
    let mut c = Collector { lines: Lines::new(text), diagnostics: Vec::new() };
    let default_action = match raw.defaults.as_ref().and_then(|d| d.action.as_ref()) {
        Some(action) => match action.get_ref().parse::<Action>() {
            Ok(a) => a,
            Err(e) => {
                c.error(action.span().start, format!("[defaults] {e}"));
                Action::Deny
            }
        },
        None => Action::Deny,
    };
    let follow_links = raw.defaults.as_ref().is_some_and(|d| d.follow_links);
    let guards = raw.guards.as_ref().map_or_else(Guards::default, |g| g.compile(&mut c));
    let mut rules = Vec::new();
    for spanned in raw.rule {
        let start = spanned.span().start;
        let line = c.lines.at(start).0;
        if let Some(rule) = compile_rule(spanned.into_inner(), start, line, &mut c) {
            rules.push(rule);
        }
    }
    if c.diagnostics.is_empty() {
        find_rate_key_clashes(&rules, &mut c);
    }
    if refuse_shadowed && c.diagnostics.is_empty() {
        find_shadowed(&rules, &mut c);
        find_unset_labels(&rules, &mut c);
    }
    if !c.diagnostics.is_empty() {
        return Err(PolicyError { path: name.to_owned(), diagnostics: c.diagnostics });
    }
    Policy::new(rules, default_action)
        .map(|policy| policy.with_links_followed(follow_links).with_guards(guards))
        .map_err(|e| PolicyError::one(name, None, None, e.to_string()))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawApprovals {
    #[serde(default)]
    allow: Vec<Spanned<RawRule>>,
}

/// Reads an approvals file: `[[allow]]` entries written like rules, without `action`.
/// All or nothing, with file and line, as a policy.
pub(crate) fn parse_approvals(text: &str, name: &str) -> Result<Policy, PolicyError> {
    let raw: RawApprovals = toml::from_str(text).map_err(|e| {
        let (line, column) =
            e.span().map(|s| Lines::new(text).at(s.start)).map_or((None, None), |(l, c)| (Some(l), Some(c)));
        PolicyError::one(name, line, column, explain_toml_error(e.message()))
    })?;
    let mut c = Collector { lines: Lines::new(text), diagnostics: Vec::new() };
    let mut rules = Vec::new();
    for spanned in raw.allow {
        let start = spanned.span().start;
        let line = c.lines.at(start).0;
        if let Some(rule) = compile_entry(spanned.into_inner(), start, line, Some(()), &mut c) {
            rules.push(rule);
        }
    }
    if !c.diagnostics.is_empty() {
        return Err(PolicyError { path: name.to_owned(), diagnostics: c.diagnostics });
    }
    Policy::new(rules, Action::Deny).map_err(|e| PolicyError::one(name, None, None, e.to_string()))
}

/// Adds what to do to serde's messages for the mistakes people make most.
fn explain_toml_error(message: &str) -> String {
    let mut out = message.trim_end().to_owned();
    if message.contains("unknown field") {
        if message.contains("`arg`") || message.contains("`argument") {
            out.push_str("; argument conditions are written `args.NAME = \"glob\"`");
        } else if message.contains("`rules`") {
            out.push_str("; rules are written as `[[rule]]` tables");
        } else {
            out.push_str(
                "; fix the spelling or remove the key (unknown keys are refused so that a typo never widens a rule)",
            );
        }
    }
    out
}

fn compile_rule(raw: RawRule, start: usize, line: usize, c: &mut Collector) -> Option<Rule> {
    compile_entry(raw, start, line, None, c)
}

/// Compiles a rule, or (`approval`) an entry of the approvals file, which always allows.
fn compile_entry(raw: RawRule, start: usize, line: usize, approval: Option<()>, c: &mut Collector) -> Option<Rule> {
    let before = c.diagnostics.len();
    let label = raw.id.as_ref().map_or_else(|| format!("rule at line {line}"), |id| format!("rule `{id}`"));
    let action = match (&raw.action, approval) {
        (Some(a), Some(())) => {
            c.error(a.span().start, format!("{label}: an approval always allows; remove `action`"));
            None
        }
        (None, Some(())) => Some(Action::Allow),
        (None, None) => {
            c.error(
                start,
                format!("{label} has no `action`; add action = \"allow\" | \"deny\" | \"prompt\" | \"audit\""),
            );
            None
        }
        (Some(a), None) => match a.get_ref().parse::<Action>() {
            Ok(action) => Some(action),
            Err(e) => {
                c.error(a.span().start, format!("{label}: {e}"));
                None
            }
        },
    };

    let target = compile_target(&raw, start, &label, c);

    let server = raw.server.as_ref().and_then(|s| c.glob(s, "server"));
    let service = raw.service.as_ref().and_then(|s| c.glob(s, "service"));
    let any_args = args::any_arg_conditions(&raw, c);
    let args = args::arg_conditions(&raw, &label, c);
    let mut operations = Vec::new();
    if let Some(ops) = &raw.operation {
        let offset = ops.span().start;
        for name in ops.get_ref().clone_vec() {
            match name.parse::<Operation>() {
                Ok(op) => operations.push(op),
                Err(e) => c.error(offset, format!("{label}: {e}")),
            }
        }
    }
    let detector = match raw.detector.as_ref().map(|d| (d.get_ref().as_str(), d.span().start)) {
        None | Some(("clawai", _)) => Detector::Clawai,
        Some(("mcp-gov", _)) => Detector::McpGov,
        Some((other, offset)) => {
            c.error(
                offset,
                format!("{label}: unknown detector `{other}`; write \"clawai\" (the default) or \"mcp-gov\""),
            );
            Detector::Clawai
        }
    };
    if raw.detector.is_some() && raw.operation.is_none() && raw.service.is_none() {
        c.error(start, format!("{label}: `detector` only changes `operation` and `service`; add one or remove it"));
    }
    let rate = raw.rate.as_ref().and_then(|r| match r.get_ref().parse::<crate::session::Rate>() {
        Ok(rate) => Some(rate),
        Err(e) => {
            c.error(r.span().start, format!("{label}: `rate`: {e}"));
            None
        }
    });
    let taint = raw.taint.as_ref().map_or_else(Vec::new, |t| labels(t, "taint", &label, c));
    let tainted = raw.tainted.as_ref().map_or_else(Vec::new, |t| labels(t, "tainted", &label, c));
    if approval.is_some() {
        for (key, span) in [
            ("rate", raw.rate.as_ref().map(Spanned::span)),
            ("taint", raw.taint.as_ref().map(Spanned::span)),
            ("tainted", raw.tainted.as_ref().map(Spanned::span)),
        ] {
            if let Some(span) = span {
                c.error(span.start, format!("{label}: `{key}` belongs in the policy's rules; an approval allows matching calls in every session, so remove it"));
            }
        }
    }
    if c.diagnostics.len() > before {
        return None;
    }
    Some(Rule {
        id: raw.id,
        action: action?,
        description: raw.description,
        line,
        target: target?,
        server,
        service,
        args,
        any_args,
        operations,
        detector,
        destructive: raw.destructive,
        read_only: raw.read_only,
        annotated: raw.annotated,
        rate,
        taint,
        tainted,
    })
}

impl OneOrMany {
    fn clone_vec(&self) -> Vec<String> {
        match self {
            OneOrMany::One(s) => vec![s.clone()],
            OneOrMany::Many(v) => v.clone(),
        }
    }
}

fn compile_target(raw: &RawRule, start: usize, label: &str, c: &mut Collector) -> Option<Target> {
    let named: Vec<(&str, usize)> = [
        raw.tool.as_ref().map(|s| ("tool", s.span().start)),
        raw.tools.as_ref().map(|s| ("tools", s.span().start)),
        raw.tool_regex.as_ref().map(|s| ("tool_regex", s.span().start)),
        raw.resource.as_ref().map(|s| ("resource", s.span().start)),
        raw.prompt.as_ref().map(|s| ("prompt", s.span().start)),
    ]
    .into_iter()
    .flatten()
    .collect();
    if named.len() > 1 {
        let keys: Vec<&str> = named.iter().map(|(k, _)| *k).collect();
        c.error(
            named[1].1,
            format!(
                "{label} has contradictory targets ({}); a rule has one target: use `tools = [..]` for several tools, or write one rule per target",
                keys.join(", ")
            ),
        );
        return None;
    }
    let tool_only = [
        raw.operation.is_some().then_some("operation"),
        raw.destructive.is_some().then_some("destructive"),
        raw.read_only.is_some().then_some("read_only"),
        raw.annotated.is_some().then_some("annotated"),
    ]
    .into_iter()
    .flatten()
    .collect::<Vec<_>>();

    let target = match named.first().map(|(k, _)| *k) {
        Some("tool") => {
            let t = raw.tool.as_ref()?;
            Target::Tool(ToolNames::Globs(c.glob_list(vec![t.get_ref().clone()], t.span().start, "tool")?))
        }
        Some("tools") => {
            let t = raw.tools.as_ref()?;
            if t.get_ref().is_empty() {
                c.error(t.span().start, format!("{label}: `tools` is empty, so the rule could never match"));
                return None;
            }
            Target::Tool(ToolNames::Globs(c.glob_list(t.get_ref().clone(), t.span().start, "tools")?))
        }
        Some("tool_regex") => {
            let t = raw.tool_regex.as_ref()?;
            match regex::Regex::new(t.get_ref()) {
                Ok(r) => Target::Tool(ToolNames::Regex(r)),
                Err(e) => {
                    c.error(t.span().start, format!("{label}: invalid `tool_regex`: {e}"));
                    return None;
                }
            }
        }
        Some("resource") => Target::Resource(c.glob(raw.resource.as_ref()?, "resource")?),
        Some("prompt") => Target::Prompt(c.glob(raw.prompt.as_ref()?, "prompt")?),
        _ => match &raw.method {
            Some(m) => {
                let g = c.glob(m, "method")?;
                if g.sources() == [methods::TOOLS_CALL] {
                    Target::Tool(ToolNames::Any)
                } else if let Some(key) = tool_only.first() {
                    c.error(
                        m.span().start,
                        format!(
                            "{label}: `{key}` is about tools, but `method` is not \"tools/call\"; drop one of them"
                        ),
                    );
                    return None;
                } else {
                    Target::Method(g)
                }
            }
            None if !tool_only.is_empty() || raw.service.is_some() => Target::Tool(ToolNames::Any),
            None => {
                c.error(
                    start,
                    format!(
                        "{label} has no target; add one of `tool`, `tools`, `tool_regex`, `resource`, `prompt` or `method` (e.g. tool = \"**\" for every tool)"
                    ),
                );
                return None;
            }
        },
    };
    if let (Some(m), Some(fixed)) = (&raw.method, target.fixed_method())
        && !named.is_empty()
        && m.get_ref().clone_vec() != [fixed]
    {
        c.error(
            m.span().start,
            format!("{label}: `method` contradicts its target, which only applies to {fixed}; remove `method`"),
        );
        return None;
    }
    if !tool_only.is_empty() && target.fixed_method() != Some(methods::TOOLS_CALL) {
        c.error(
            start,
            format!("{label}: `{}` only applies to tools, but the rule's target is not a tool", tool_only[0]),
        );
        return None;
    }
    Some(target)
}

/// Reports rules that can never match because an earlier rule without conditions
/// already decides everything they could match.
fn find_shadowed(rules: &[Rule], c: &mut Collector) {
    for (j, later) in rules.iter().enumerate() {
        if !later.taint.is_empty() {
            // It marks the sessions of the calls it touches even when it decides none.
            continue;
        }
        let shadow = rules[..j]
            .iter()
            .enumerate()
            .find(|(_, earlier)| earlier.is_unconditional() && target_covers(&earlier.target, &later.target));
        if let Some((i, earlier)) = shadow {
            let (line, column) = (later.line, 1);
            c.diagnostics.push(Diagnostic {
                line: Some(line),
                column: Some(column),
                message: format!(
                    "rule {} can never match: rule {} (line {}) has no conditions and already decides every call it could match; move this rule above it, or narrow that rule",
                    later.label(j),
                    earlier.label(i),
                    earlier.line
                ),
            });
        }
    }
}

fn target_covers(earlier: &Target, later: &Target) -> bool {
    let globs_cover = |g: &Glob, h: &Glob| h.sources().iter().all(|p| g.covers(p));
    match (earlier, later) {
        (Target::Method(g), Target::Method(h)) => globs_cover(g, h),
        (Target::Method(g), other) => other.fixed_method().is_some_and(|m| g.is_match(m)),
        (Target::Tool(ToolNames::Any), Target::Tool(_)) => true,
        (Target::Tool(ToolNames::Globs(g)), Target::Tool(names)) => match names {
            ToolNames::Any | ToolNames::Regex(_) => g.matches_everything(),
            ToolNames::Globs(h) => globs_cover(g, h),
        },
        (Target::Tool(ToolNames::Regex(r)), Target::Tool(names)) => match names {
            ToolNames::Regex(s) => r.as_str() == s.as_str(),
            ToolNames::Globs(h) => h.sources().iter().all(|p| crate::glob::is_literal(p) && r.is_match(p)),
            ToolNames::Any => false,
        },
        (Target::Resource(g), Target::Resource(h)) | (Target::Prompt(g), Target::Prompt(h)) => globs_cover(g, h),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
