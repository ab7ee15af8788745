//! A compiled rule and how one rule matches one call.

use clawai_protocol::methods;
use std::fmt;
use std::ops::ControlFlow;
use std::str::FromStr;

use clawai_protocol::Json;
use regex::Regex;

use crate::call::{Call, FollowLinks};
use crate::glob::{Glob, fold_case};
use crate::operation::{Operation, detect, mcpgov};
use crate::session::{Rate, SessionView};
use crate::value::{Quantifier, ValueTest};

/// What a rule (or the default) decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Action {
    /// Forward the message.
    Allow,
    /// Refuse the message; it never reaches the other side.
    Deny,
    /// Ask the person before forwarding.
    Prompt,
    /// Forward the message and mark it for review.
    Audit,
}

impl Action {
    /// The lower-case name used in policies and the audit trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Prompt => "prompt",
            Action::Audit => "audit",
        }
    }

    /// True when the message may go on without asking anybody.
    pub fn forwards(self) -> bool {
        matches!(self, Action::Allow | Action::Audit)
    }

    /// How conditions on strings and arrays combine for this action: an allow needs
    /// every reading and element to match, anything stricter needs only one.
    pub(crate) fn quantifier(self) -> Quantifier {
        if self == Action::Allow { Quantifier::Every } else { Quantifier::Any }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Action {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "allow" => Ok(Action::Allow),
            "deny" => Ok(Action::Deny),
            "prompt" => Ok(Action::Prompt),
            "audit" => Ok(Action::Audit),
            other => Err(format!("unknown action `{other}`; write one of allow, deny, prompt, audit")),
        }
    }
}

/// Which tool names a tool rule covers.
#[derive(Debug, Clone)]
pub(crate) enum ToolNames {
    /// No name condition (`operation`, `destructive`… alone).
    Any,
    /// `tool` or `tools`.
    Globs(Glob),
    /// `tool_regex`.
    Regex(Regex),
}

/// What kind of message a rule is about.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Tool(ToolNames),
    Resource(Glob),
    Prompt(Glob),
    Method(Glob),
}

impl Target {
    /// The method this target is fixed to, if any.
    pub(crate) fn fixed_method(&self) -> Option<&'static str> {
        match self {
            Target::Tool(_) => Some(methods::TOOLS_CALL),
            Target::Resource(_) => Some(methods::RESOURCES_READ),
            Target::Prompt(_) => Some(methods::PROMPTS_GET),
            Target::Method(_) => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            Target::Tool(ToolNames::Any) => "any tool".into(),
            Target::Tool(ToolNames::Globs(g)) => format!("tool {g}"),
            Target::Tool(ToolNames::Regex(r)) => format!("tool matching /{}/", r.as_str()),
            Target::Resource(g) => format!("resource {g}"),
            Target::Prompt(g) => format!("prompt {g}"),
            Target::Method(g) => format!("method {g}"),
        }
    }
}

/// How `service` and `operation` conditions read a tool name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Detector {
    /// clawai's own reading: whole words, the most dangerous verb ([`detect`]).
    #[default]
    Clawai,
    /// mcp-gov's reading, for policies imported from mcp-gov
    /// ([`crate::operation::mcpgov`]).
    McpGov,
}

/// A condition on one argument, by dotted path.
#[derive(Debug, Clone)]
pub(crate) struct ArgCondition {
    pub(crate) path: Vec<String>,
    pub(crate) test: ValueTest,
    /// An exception (`unless_args…`): the rule does not match when the test holds.
    pub(crate) except: bool,
}

impl ArgCondition {
    /// The key and path as written (`args.path`, `unless_args_regex.sql`).
    fn describe(&self) -> String {
        format!("{}{}.{}", if self.except { "unless_" } else { "" }, self.test.args_key(), self.path.join("."))
    }
}

/// One compiled rule of a policy.
#[derive(Debug, Clone)]
pub struct Rule {
    /// The rule's `id`, if it has one.
    pub id: Option<String>,
    /// What the rule decides.
    pub action: Action,
    /// The rule's `description`, shown in denials and logs.
    pub description: Option<String>,
    /// The line of the policy file where the rule starts (1-based; 0 when built in code).
    pub line: usize,
    pub(crate) target: Target,
    pub(crate) server: Option<Glob>,
    pub(crate) service: Option<Glob>,
    pub(crate) args: Vec<ArgCondition>,
    /// `any_arg`, `any_arg_regex`, `any_arg_host`: each must hold for some string (an
    /// allow: every string).
    pub(crate) any_args: Vec<ValueTest>,
    pub(crate) operations: Vec<Operation>,
    pub(crate) detector: Detector,
    pub(crate) destructive: Option<bool>,
    pub(crate) read_only: Option<bool>,
    /// `annotated`: whether the server declared `readOnlyHint` or `destructiveHint`.
    pub(crate) annotated: Option<bool>,
    /// `rate`: the rule matches only once its other conditions matched more often than
    /// this in the session's window (see [`crate::session`]).
    pub(crate) rate: Option<Rate>,
    /// `taint`: the labels the session gets from every call this rule touches
    /// ([`Rule::touches`]).
    pub(crate) taint: Vec<String>,
    /// `tainted`: the rule matches only in a session carrying one of these labels.
    pub(crate) tainted: Vec<String>,
}

/// Why a rule did not match a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// The message is of another kind, or its name/URI does not match.
    Target,
    /// The `server` condition.
    Server,
    /// The `service` condition.
    Service,
    /// An argument condition (its key and dotted path: `args.path`, `args_number.amount`).
    Arg(String),
    /// An exception held, so the rule does not apply (`unless_args.path`).
    Excepted(String),
    /// Argument conditions need an object and the arguments are not one.
    ArgsNotObject,
    /// An `any_arg` condition (its key: `any_arg`, `any_arg_regex`, `any_arg_host`).
    AnyArg(&'static str),
    /// The `operation` condition (what the detector found).
    Operation(Operation),
    /// The `destructive` condition (the tool's effective value).
    Destructive(bool),
    /// The `read_only` condition (the tool's effective value).
    ReadOnly(bool),
    /// The `annotated` condition (whether the server annotated the tool).
    Annotated(bool),
    /// The `tainted` condition: the session carries none of these labels.
    NotTainted(Vec<String>),
    /// The `rate` condition: this call is the `count`-th match in the window, within
    /// the limit.
    WithinRate {
        /// This call's number in the window.
        count: u32,
        /// The rule's rate.
        rate: Rate,
    },
}

impl Rule {
    /// A name for messages: the id, else the position and line.
    pub fn label(&self, index: usize) -> String {
        match &self.id {
            Some(id) => format!("`{id}`"),
            None if self.line > 0 => format!("#{} (line {})", index + 1, self.line),
            None => format!("#{}", index + 1),
        }
    }

    /// True when the rule has no condition beyond its target.
    pub fn is_unconditional(&self) -> bool {
        self.server.is_none()
            && self.service.is_none()
            && self.args.is_empty()
            && self.any_args.is_empty()
            && self.operations.is_empty()
            && self.destructive.is_none()
            && self.read_only.is_none()
            && self.annotated.is_none()
            && !self.depends_on_session()
    }

    /// The rule's `rate`, if it has one.
    pub fn rate(&self) -> Option<crate::session::Rate> {
        self.rate
    }

    /// True when whether the rule matches depends on the session (`tainted`, `rate`),
    /// not only on the call.
    pub fn depends_on_session(&self) -> bool {
        self.rate.is_some() || !self.tainted.is_empty()
    }

    /// A one-line summary of what the rule looks at.
    pub fn summary(&self) -> String {
        let mut parts = vec![self.target.describe()];
        if let Some(s) = &self.server {
            parts.push(format!("server {s}"));
        }
        if let Some(s) = &self.service {
            parts.push(format!("service {s}"));
        }
        for a in &self.args {
            parts.push(format!("{} {}", a.describe(), a.test));
        }
        for test in &self.any_args {
            parts.push(format!("{} {test}", test.any_arg_key()));
        }
        if !self.operations.is_empty() {
            let ops: Vec<&str> = self.operations.iter().map(|o| o.as_str()).collect();
            parts.push(format!("operation {}", ops.join("|")));
        }
        if self.detector == Detector::McpGov {
            parts.push("names read as mcp-gov reads them".into());
        }
        if let Some(d) = self.destructive {
            parts.push(format!("destructive = {d}"));
        }
        if let Some(r) = self.read_only {
            parts.push(format!("read_only = {r}"));
        }
        if let Some(a) = self.annotated {
            parts.push(format!("annotated = {a}"));
        }
        if !self.tainted.is_empty() {
            parts.push(format!("only in a session tainted {}", quoted(&self.tainted)));
        }
        if let Some(rate) = self.rate {
            parts.push(format!("beyond rate {rate}"));
        }
        if !self.taint.is_empty() {
            parts.push(format!("taints the session {}", quoted(&self.taint)));
        }
        parts.join(", ")
    }

    /// True when the rule's target covers the call's method and name.
    pub(crate) fn target_matches(&self, call: &Call) -> bool {
        self.target_matches_as(call, self.action)
    }

    /// [`Rule::target_matches`], with names and URIs read as a rule of `action` reads
    /// them (a deny-like action reads them loosely, on any reading).
    fn target_matches_as(&self, call: &Call, action: Action) -> bool {
        match &self.target {
            Target::Method(g) => g.is_match(call.method),
            target => {
                if target.fixed_method() != Some(call.method) {
                    return false;
                }
                match (target, call.name) {
                    (Target::Tool(ToolNames::Any), _) => true,
                    (_, None) => false,
                    (Target::Tool(ToolNames::Globs(g)), Some(n)) => name_matches(g, n, action),
                    (Target::Tool(ToolNames::Regex(r)), Some(n)) => r.is_match(n),
                    (Target::Resource(g), Some(uri)) => {
                        crate::value::string_matches(uri, g, action.quantifier(), call.follow_links)
                    }
                    (Target::Prompt(g), Some(n)) => name_matches(g, n, action),
                    (Target::Method(_), _) => unreachable!("handled above"),
                }
            }
        }
    }

    /// True when the rule looks at the arguments (`args…`, `unless_args…`, `any_arg…`):
    /// whether it matches depends on them.
    pub fn reads_arguments(&self) -> bool {
        !self.args.is_empty() || !self.any_args.is_empty()
    }

    /// Checks every condition after the target, in a fixed order.
    pub(crate) fn conditions_match(&self, call: &Call) -> Result<(), Miss> {
        self.conditions_besides_arguments_match(call)?;
        self.argument_conditions_match(call, self.action.quantifier())
    }

    /// The conditions on the server, the name and the annotations: what holds for a
    /// tool whatever its arguments.
    pub(crate) fn conditions_besides_arguments_match(&self, call: &Call) -> Result<(), Miss> {
        self.conditions_besides_arguments_match_as(call, self.action.quantifier())
    }

    fn conditions_besides_arguments_match_as(&self, call: &Call, q: Quantifier) -> Result<(), Miss> {
        if let Some(g) = &self.server
            && !call.server.is_some_and(|s| g.is_match(s))
        {
            return Err(Miss::Server);
        }
        if let Some(g) = &self.service {
            let matched = match self.detector {
                Detector::Clawai => {
                    let parsed = call.name.and_then(|n| detect(n).service);
                    q.over(call.server.into_iter().chain(parsed.as_deref()), |s| g.is_match(s))
                }
                Detector::McpGov => g.is_match(mcpgov::service(call.server, call.name.unwrap_or_default())),
            };
            if !matched {
                return Err(Miss::Service);
            }
        }
        if !self.operations.is_empty() {
            let found = match (self.detector, call.name) {
                (Detector::Clawai, Some(n)) => detect(n).operation,
                (Detector::McpGov, name) => mcpgov::operation(name.unwrap_or_default()),
                (Detector::Clawai, None) => Operation::Unknown,
            };
            if !self.operations.iter().any(|op| op.includes(found)) {
                return Err(Miss::Operation(found));
            }
        }
        let annotations = call.effective_annotations();
        if let Some(want) = self.destructive
            && annotations.is_destructive() != want
        {
            return Err(Miss::Destructive(annotations.is_destructive()));
        }
        if let Some(want) = self.read_only
            && annotations.is_read_only() != want
        {
            return Err(Miss::ReadOnly(annotations.is_read_only()));
        }
        if let Some(want) = self.annotated
            && annotations.is_annotated() != want
        {
            return Err(Miss::Annotated(annotations.is_annotated()));
        }
        Ok(())
    }

    fn argument_conditions_match(&self, call: &Call, q: Quantifier) -> Result<(), Miss> {
        let object = call.arguments.filter(|a| matches!(a, Json::Object(_)));
        for cond in &self.args {
            let Some(object) = object else {
                if cond.except {
                    continue;
                }
                return Err(Miss::ArgsNotObject);
            };
            // An exception is read the other way round: in a deny-like rule it must
            // hold on every reading (a spelling of another file never exempts one), in
            // an allow on any reading.
            let quantifier = if cond.except { q.opposite() } else { q };
            if path_matches(object, &cond.path, &cond.test, quantifier, call.follow_links) == cond.except {
                return Err(if cond.except { Miss::Excepted(cond.describe()) } else { Miss::Arg(cond.describe()) });
            }
        }
        for test in &self.any_args {
            if !call.arguments.is_some_and(|args| over_strings(args, q, |s| test.string(s, q, call.follow_links))) {
                return Err(Miss::AnyArg(test.any_arg_key()));
            }
        }
        Ok(())
    }

    /// Target and conditions together, as in a new session (`tainted` and `rate` are
    /// not looked at: see [`Rule::check_in`]).
    pub(crate) fn check(&self, call: &Call) -> Result<(), Miss> {
        if !self.target_matches(call) {
            return Err(Miss::Target);
        }
        self.conditions_match(call)
    }

    /// True when the rule has no `tainted`, or the session carries one of its labels
    /// (`None`: a new session, which carries none).
    pub(crate) fn tainted_holds(&self, labels: Option<&std::collections::BTreeSet<String>>) -> bool {
        self.tainted.is_empty() || labels.is_some_and(|held| self.tainted.iter().any(|l| held.contains(l)))
    }

    /// True when the rule's target and conditions hold for the call read as a deny reads
    /// it: names loosely, any reading of a value, any element of a list, any argument
    /// string. What `taint` marks on: a call that may touch what the rule describes,
    /// however it is spelt and whatever else it carries.
    pub(crate) fn touches(&self, call: &Call) -> bool {
        self.target_matches_as(call, Action::Deny)
            && self.conditions_besides_arguments_match_as(call, Quantifier::Any).is_ok()
            && self.argument_conditions_match(call, Quantifier::Any).is_ok()
    }

    /// Target and conditions together in a session: `tainted` needs one of its labels
    /// on the session, `rate` a count beyond its limit. `index` is the rule's position.
    pub(crate) fn check_in(&self, index: usize, call: &Call, session: &SessionView) -> Result<(), Miss> {
        self.check(call)?;
        if !self.tainted_holds(session.labels) {
            return Err(Miss::NotTainted(self.tainted.clone()));
        }
        if let Some(rate) = self.rate {
            let count = session.count(index);
            if count <= rate.limit {
                return Err(Miss::WithinRate { count, rate });
            }
        }
        Ok(())
    }
}

/// Labels as a policy writes them: `"a"`, or `"a" or "b"`.
pub(crate) fn quoted(labels: &[String]) -> String {
    labels.iter().map(|l| format!("{l:?}")).collect::<Vec<_>>().join(" or ")
}

/// A tool or prompt name against a rule's name glob. A deny-like rule also matches the
/// name read loosely ([`loose_name`]): a server that trims names or looks them up
/// ignoring case would run `DELETE_ALL` or ` delete_all` as `delete_all`. An allow keeps
/// the exact name: reading loosely would widen it.
fn name_matches(glob: &Glob, name: &str, action: Action) -> bool {
    if glob.is_match(name) {
        return true;
    }
    if action.quantifier() != Quantifier::Any {
        return false;
    }
    let trimmed = loose_name(name);
    (trimmed.len() != name.len() && glob.is_match(trimmed)) || glob.matches_only_ignoring_case(trimmed)
}

/// The name without what surrounds it invisibly: whitespace, control characters and the
/// zero-width format characters (U+200B–U+200D, U+2060, U+FEFF). Case is folded by the
/// caller ([`crate::glob::fold_case`], [`Glob::matches_only_ignoring_case`]).
pub fn loose_name(name: &str) -> &str {
    name.trim_matches(|c: char| {
        c.is_whitespace() || c.is_control() || matches!(c, '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}')
    })
}

/// Follows a dotted path into the arguments. Arrays on the way (and at the end) are
/// crossed with the action's quantifier; a missing key never matches.
fn path_matches(value: &Json, path: &[String], test: &ValueTest, q: Quantifier, follow: Option<FollowLinks>) -> bool {
    match value {
        Json::Array(items) => q.over(items, |item| path_matches(item, path, test, q, follow)),
        Json::Object(members) if !path.is_empty() => {
            let (key, rest) = (&path[0], &path[1..]);
            match q {
                Quantifier::Every => value.get(key).is_some_and(|v| path_matches(v, rest, test, q, follow)),
                // A deny-like condition also looks under the keys a lenient server might
                // take for this one (`Path`, ` path`); an allow needs the key as written.
                Quantifier::Any => members
                    .iter()
                    .filter(|(k, _)| k == key || fold_case(loose_name(k)) == fold_case(key))
                    .any(|(_, v)| path_matches(v, rest, test, q, follow)),
            }
        }
        _ if !path.is_empty() => false,
        leaf => test.leaf(leaf, q, follow),
    }
}

/// `q` over every string in `value`, depth first: what `q.over` gives for the list of
/// those strings, without building the list, and stopping once the answer is known.
fn over_strings(value: &Json, q: Quantifier, mut test: impl FnMut(&str) -> bool) -> bool {
    let mut seen = false;
    let outcome = visit_strings(value, &mut |s| {
        seen = true;
        match (q, test(s)) {
            (Quantifier::Any, true) => ControlFlow::Break(true),
            (Quantifier::Every, false) => ControlFlow::Break(false),
            _ => ControlFlow::Continue(()),
        }
    });
    match outcome {
        ControlFlow::Break(answer) => answer,
        // `Every` over nothing is not a match, as in `Quantifier::over`.
        ControlFlow::Continue(()) => q == Quantifier::Every && seen,
    }
}

fn visit_strings(value: &Json, f: &mut impl FnMut(&str) -> ControlFlow<bool>) -> ControlFlow<bool> {
    match value {
        Json::String(s) => f(s),
        Json::Array(items) => items.iter().try_for_each(|v| visit_strings(v, f)),
        Json::Object(members) => members.iter().try_for_each(|(_, v)| visit_strings(v, f)),
        _ => ControlFlow::Continue(()),
    }
}

impl fmt::Display for Miss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Miss::Target => f.write_str("not the same kind of message or name"),
            Miss::Server => f.write_str("server does not match"),
            Miss::Service => f.write_str("service does not match"),
            Miss::Excepted(path) => write!(f, "{path} matches, so the rule does not apply"),
            Miss::Arg(path) => write!(f, "{path} does not match (or is missing)"),
            Miss::ArgsNotObject => f.write_str("arguments are not an object, so argument conditions cannot hold"),
            Miss::AnyArg(key) => write!(f, "{key} does not match the string arguments"),
            Miss::Operation(op) => write!(f, "operation is `{op}`"),
            Miss::Destructive(v) => {
                write!(f, "tool is {}destructive", if *v { "" } else { "not " })
            }
            Miss::ReadOnly(v) => write!(f, "tool is {}read-only", if *v { "" } else { "not " }),
            Miss::Annotated(v) => {
                write!(
                    f,
                    "the server {} whether the tool is read-only or destructive",
                    if *v { "says" } else { "does not say" }
                )
            }
            Miss::NotTainted(labels) => write!(f, "the session is not tainted {}", quoted(labels)),
            Miss::WithinRate { count, rate } => {
                write!(f, "call {count} of the {rate} the rule lets by (its other conditions match)")
            }
        }
    }
}
