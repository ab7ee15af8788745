//! The decision engine: a loaded policy and the first rule that matches a call.

use clawai_protocol::methods;
use std::borrow::Cow;
use std::collections::HashMap;

// Looked up on every `tools/call`, with keys from the policy file: foldhash is several
// times cheaper than the default SipHash and still seeded per process.
use foldhash::fast::RandomState;

use regex::bytes::RegexSet;

use crate::call::Call;
use crate::glob::{Glob, Simple, fold_case};
use crate::rule::{Action, Miss, Rule, Target, ToolNames, loose_name};
use crate::session::SessionView;
use crate::value::Quantifier;
use crate::wire::{LOOK_ALIKE_REASON, PASSED_THROUGH_REASON, Treatment};

/// A loaded, validated policy: ordered rules and a default action.
#[derive(Debug, Clone)]
pub struct Policy {
    rules: Vec<Rule>,
    default_action: Action,
    tools: ToolIndex,
    /// The deny-like rules with tool name globs, filed under their case-folded globs:
    /// they also match a name read loosely (see [`crate::rule::loose_name`]), which is
    /// looked up here, folded.
    loose_tools: ToolIndex,
    /// True when a deny-like tool glob changes when folded (`Delete*`): then even a name
    /// that reads the same loosely may match one only ignoring case.
    loose_always: bool,
    /// Rules whose target is not a tool name pattern, in order.
    other_rules: Vec<usize>,
    /// The `method` rules that name methods (catch-alls such as `**` excluded).
    method_rules: Vec<usize>,
    /// Why each rule decides, in words (see [`Decision::reason`]), written once at load:
    /// every decision is recorded with its reason.
    reasons: Vec<String>,
    default_reason: String,
    /// `[defaults] follow_links`: conditions also look at where a path leads once
    /// symbolic links are followed, when the caller can follow them.
    follow_links: bool,
    /// What a conversion from another format shaped or left out.
    notes: Vec<String>,
    /// `[guards]`: the stages of the decision path beyond the rules.
    guards: Guards,
    /// The rules with `rate`, in order: each counts the calls its conditions match.
    rate_rules: Vec<usize>,
    /// The rules with `taint`, in order: each marks the session on the calls it touches.
    taint_rules: Vec<usize>,
    /// True when some rule reads or marks the session (`rate`, `tainted`, `taint`).
    reads_session: bool,
}

/// `[guards]` of a policy: the stages of the decision path beyond the rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Guards {
    /// Tool pinning (trust on first use): on unless `pinning = false`.
    pub pinning: bool,
    /// What a call whose arguments carry a credential gets when the rules would let it
    /// through (`secrets_in_arguments`, `prompt` unless said otherwise; `allow` turns the
    /// guard off).
    pub secrets_in_arguments: Action,
    /// What happens to the results that reach the client (`results`, `redact` unless
    /// said otherwise).
    pub results: ResultsGuard,
    /// The largest result passed to the client, in bytes (`max_result_bytes`); `None`:
    /// no bound but the transport's message limit.
    pub max_result_bytes: Option<u64>,
    /// Leave out of `tools/list` the tools the policy denies whatever their arguments
    /// (`hide_denied_tools`, off unless said).
    pub hide_denied_tools: bool,
    /// The poisoning scan of what servers list (new and changed tools, prompts,
    /// resource templates, instructions): on unless `scan = false`.
    pub scan: bool,
    /// The lowest scan severity that quarantines an item (`quarantine_on`, `warn`
    /// unless said otherwise).
    pub quarantine_on: ScanSeverity,
}

/// `[guards] results`: what the results guard does with a tool's (resource's, prompt's)
/// result on its way to the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultsGuard {
    /// Secrets are redacted; hidden characters and instruction-like text are recorded in
    /// the audit trail.
    Redact,
    /// Nothing is changed; secrets, hidden characters and instruction-like text are
    /// recorded in the audit trail.
    Flag,
    /// Secrets are redacted, and a result with hidden characters or instruction-like
    /// text becomes an error.
    Deny,
}

impl Default for Guards {
    fn default() -> Self {
        Guards {
            pinning: true,
            secrets_in_arguments: Action::Prompt,
            results: ResultsGuard::Redact,
            max_result_bytes: None,
            hide_denied_tools: false,
            scan: true,
            quarantine_on: ScanSeverity::Warn,
        }
    }
}

/// A severity of the poisoning scan, as `[guards] quarantine_on` names it (ordered:
/// `Info < Warn < Critical`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScanSeverity {
    /// `info`: anything unusual, such as one stray zero-width character.
    Info,
    /// `warn`: what a description has no need for (hidden text, instruction tags).
    Warn,
    /// `critical`: attack patterns only.
    Critical,
}

impl std::str::FromStr for ScanSeverity {
    type Err = ();

    /// `info`, `warn` or `critical`.
    fn from_str(text: &str) -> Result<Self, ()> {
        match text {
            "info" => Ok(ScanSeverity::Info),
            "warn" => Ok(ScanSeverity::Warn),
            "critical" => Ok(ScanSeverity::Critical),
            _ => Err(()),
        }
    }
}

/// Finds the rules whose tool name pattern matches a tool name without trying them one
/// by one: literal names by hash, `prefix*` and `prefix**` by looking up each prefix of
/// the name, and only the remaining patterns (regexes, globs with inner wildcards) in
/// one `RegexSet`. It may return a rule whose pattern does not match (the rule is then
/// checked in full); it never leaves out one that does.
#[derive(Debug, Clone, Default)]
struct ToolIndex {
    literal: HashMap<String, Vec<usize>, RandomState>,
    /// Prefix → rules, and whether the rest may contain `/` (`**`) or not (`*`).
    prefixed: HashMap<String, Vec<(usize, bool)>, RandomState>,
    /// The lengths of the keys of `prefixed`, ascending: only prefixes of these lengths
    /// are looked up.
    prefix_lengths: Vec<usize>,
    everything: Vec<usize>,
    complex: Option<(RegexSet, Vec<usize>)>,
}

/// A name pattern the [`ToolIndex`] files a rule under.
enum NamePattern<'r> {
    Glob(&'r Glob),
    Regex(&'r regex::Regex),
}

impl ToolIndex {
    fn build<'r>(patterns: impl Iterator<Item = (usize, NamePattern<'r>)>) -> Result<ToolIndex, regex::Error> {
        let mut index = ToolIndex::default();
        let mut complex = Vec::new();
        let mut owners = Vec::new();
        for (i, pattern) in patterns {
            match pattern {
                NamePattern::Glob(g) => match g.simple_parts() {
                    Some(parts) => {
                        for part in parts {
                            match part {
                                Simple::Everything => index.everything.push(i),
                                Simple::Literal(l) => index.literal.entry(l.clone()).or_default().push(i),
                                Simple::StarAfter(p) => index.prefixed.entry(p.clone()).or_default().push((i, false)),
                                Simple::AnythingAfter(p) => {
                                    index.prefixed.entry(p.clone()).or_default().push((i, true))
                                }
                                _ => {
                                    complex.push(g.regex_source());
                                    owners.push(i);
                                }
                            }
                        }
                    }
                    None => {
                        complex.push(g.regex_source());
                        owners.push(i);
                    }
                },
                NamePattern::Regex(r) => {
                    complex.push(r.as_str().to_owned());
                    owners.push(i);
                }
            }
        }
        index.prefix_lengths = index.prefixed.keys().map(String::len).collect();
        index.prefix_lengths.sort_unstable();
        index.prefix_lengths.dedup();
        if !complex.is_empty() {
            index.complex = Some((RegexSet::new(&complex)?, owners));
        }
        Ok(index)
    }

    /// Gathers the candidate rules for a tool name into `out`.
    fn candidates(&self, name: &str, out: &mut Candidates) {
        self.everything.iter().for_each(|&i| out.push(i));
        if let Some(rules) = self.literal.get(name) {
            rules.iter().for_each(|&i| out.push(i));
        }
        for &end in &self.prefix_lengths {
            if end > name.len() {
                break;
            }
            if name.is_char_boundary(end)
                && let Some(rules) = self.prefixed.get(&name[..end])
            {
                let rest_has_slash = name[end..].contains('/');
                rules.iter().filter(|(_, crosses)| *crosses || !rest_has_slash).for_each(|&(i, _)| out.push(i));
            }
        }
        if let Some((set, owners)) = &self.complex {
            set.matches(name.as_bytes()).iter().for_each(|p| out.push(owners[p]));
        }
    }
}

/// Candidates kept on the stack before they spill to the heap: a call usually has a
/// handful, and this is on every `tools/call`'s path.
const INLINE_CANDIDATES: usize = 16;

/// The rule indexes gathered for one call.
struct Candidates {
    inline: [usize; INLINE_CANDIDATES],
    len: usize,
    spilled: Vec<usize>,
}

impl Candidates {
    fn new() -> Self {
        Candidates { inline: [0; INLINE_CANDIDATES], len: 0, spilled: Vec::new() }
    }

    fn push(&mut self, rule: usize) {
        if self.spilled.is_empty() && self.len < INLINE_CANDIDATES {
            self.inline[self.len] = rule;
            self.len += 1;
            return;
        }
        if self.spilled.is_empty() {
            self.spilled.extend_from_slice(&self.inline[..self.len]);
        }
        self.spilled.push(rule);
    }

    /// The candidates in rule order, without duplicates.
    fn in_order(&mut self) -> &[usize] {
        let all: &mut [usize] = if self.spilled.is_empty() { &mut self.inline[..self.len] } else { &mut self.spilled };
        all.sort_unstable();
        let mut kept = 0;
        for read in 0..all.len() {
            if kept == 0 || all[kept - 1] != all[read] {
                all[kept] = all[read];
                kept += 1;
            }
        }
        &all[..kept]
    }
}

/// The outcome of deciding one call.
#[derive(Debug, Clone, Copy)]
pub struct Decision<'p> {
    /// What to do with the message.
    pub action: Action,
    /// The rule that decided, with its index; `None` when the default did.
    pub rule: Option<(usize, &'p Rule)>,
    /// Why, in words: the rule (id and description) or the default.
    pub reason: &'p str,
}

impl Decision<'_> {
    /// The deciding rule's id, if it has one.
    pub fn rule_id(&self) -> Option<&str> {
        self.rule.and_then(|(_, r)| r.id.as_deref())
    }

    /// A sentence saying why: the rule (id and description) or the default.
    pub fn reason(&self) -> &str {
        self.reason
    }
}

fn rule_reason(index: usize, rule: &Rule) -> String {
    match &rule.description {
        Some(d) => format!("rule {}: {d}", rule.label(index)),
        None => format!("rule {}", rule.label(index)),
    }
}

/// One rule's verdict in an [`Explanation`].
#[derive(Debug, Clone)]
pub struct Step {
    /// Index of the rule in the policy.
    pub index: usize,
    /// The rule's label (id, or position and line).
    pub label: String,
    /// What the rule looks at.
    pub summary: String,
    /// The rule's action.
    pub action: Action,
    /// `Ok` when the rule matched, else why not.
    pub outcome: Result<(), Miss>,
}

/// Every rule considered for a call, in order, up to the one that decided.
#[derive(Debug, Clone)]
pub struct Explanation<'p> {
    /// Rules considered, in order.
    pub steps: Vec<Step>,
    /// The decision (identical to [`Policy::decide`]).
    pub decision: Decision<'p>,
}

impl Policy {
    /// Builds a policy from compiled rules. Use [`crate::load`] to read one from a file.
    pub(crate) fn new(rules: Vec<Rule>, default_action: Action) -> Result<Self, regex::Error> {
        let tools = ToolIndex::build(rules.iter().enumerate().filter_map(|(i, r)| match &r.target {
            Target::Tool(ToolNames::Globs(g)) => Some((i, NamePattern::Glob(g))),
            Target::Tool(ToolNames::Regex(r)) => Some((i, NamePattern::Regex(r))),
            _ => None,
        }))?;
        let loose_globs = || {
            rules.iter().enumerate().filter_map(|(i, r)| match &r.target {
                Target::Tool(ToolNames::Globs(g)) if r.action.quantifier() == Quantifier::Any => Some((i, g)),
                _ => None,
            })
        };
        let loose_tools = ToolIndex::build(loose_globs().map(|(i, g)| (i, NamePattern::Glob(g.folded()))))?;
        let loose_always = loose_globs().any(|(_, g)| g.folds());
        let other_rules = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !matches!(r.target, Target::Tool(ToolNames::Globs(_) | ToolNames::Regex(_))))
            .map(|(i, _)| i)
            .collect();
        let method_rules = rules
            .iter()
            .enumerate()
            .filter(|(_, r)| matches!(&r.target, Target::Method(g) if !g.matches_everything()))
            .map(|(i, _)| i)
            .collect();
        let reasons = rules.iter().enumerate().map(|(i, r)| rule_reason(i, r)).collect();
        let default_reason = format!("no rule matched; the policy's default is {default_action}");
        let rate_rules = rules.iter().enumerate().filter(|(_, r)| r.rate.is_some()).map(|(i, _)| i).collect();
        let taint_rules = rules.iter().enumerate().filter(|(_, r)| !r.taint.is_empty()).map(|(i, _)| i).collect();
        let reads_session = rules.iter().any(|r| r.depends_on_session() || !r.taint.is_empty());
        Ok(Policy {
            rules,
            default_action,
            tools,
            loose_tools,
            loose_always,
            other_rules,
            method_rules,
            reasons,
            default_reason,
            follow_links: false,
            notes: Vec::new(),
            guards: Guards::default(),
            rate_rules,
            taint_rules,
            reads_session,
        })
    }

    /// The same policy, with the notes of its conversion from another format.
    pub(crate) fn with_notes(mut self, notes: Vec<String>) -> Self {
        self.notes = notes;
        self
    }

    /// What converting the policy from another format (AgentShield, mcp-gov) shaped or
    /// left out, one sentence each; empty for a TOML policy. Shown by `clawai policy
    /// check` and logged by the proxy at start.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The same policy with these `[guards]`.
    pub(crate) fn with_guards(mut self, guards: Guards) -> Self {
        self.guards = guards;
        self
    }

    /// The policy's `[guards]` (their defaults when it has none).
    pub fn guards(&self) -> Guards {
        self.guards
    }

    /// The same policy, following symbolic links or not (`[defaults] follow_links`).
    pub(crate) fn with_links_followed(mut self, follow: bool) -> Self {
        self.follow_links = follow;
        self
    }

    /// True when the policy asks for symbolic links to be followed (`[defaults]
    /// follow_links = true`): callers that decide for a server on this machine pass a
    /// [`crate::FollowLinks`] with [`Call::with_links_followed`]; the engine itself never
    /// touches the filesystem.
    pub fn follows_links(&self) -> bool {
        self.follow_links
    }

    /// The rules, in order.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// The action when no rule matches.
    pub fn default_action(&self) -> Action {
        self.default_action
    }

    /// True when a `method` rule names this method (a glob such as `**` that matches
    /// every method does not count). A proxy decides such methods too, beyond the ones
    /// it always decides (`tools/call`, `resources/read`, …).
    pub fn names_method(&self, method: &str) -> bool {
        self.method_rules.iter().any(|&i| matches!(&self.rules[i].target, Target::Method(g) if g.is_match(method)))
    }

    /// True when a `method` rule names this method once it is read loosely (trimmed as
    /// [`loose_name`] does, ignoring case) but not as written: a proxy refuses such a
    /// look-alike, which a server dispatching leniently would run undecided.
    pub fn names_method_loosely(&self, method: &str) -> bool {
        let trimmed = loose_name(method);
        self.method_rules.iter().any(|&i| {
            matches!(&self.rules[i].target, Target::Method(g)
                if !g.is_match(method) && (g.is_match(trimmed) || g.matches_only_ignoring_case(trimmed)))
        })
    }

    /// True when some rule reads or marks the session (`rate`, `tainted`, `taint`): then
    /// callers decide with [`Policy::decide_in`] and a [`crate::Session`].
    pub fn reads_session(&self) -> bool {
        self.reads_session
    }

    /// The rules with `rate`, in order.
    pub(crate) fn rate_rules(&self) -> &[usize] {
        &self.rate_rules
    }

    /// The rules with `taint`, in order.
    pub(crate) fn taint_rules(&self) -> &[usize] {
        &self.taint_rules
    }

    /// Decides a call: the first rule that matches, else the default.
    /// A method the proxy does not decide is allowed (it passes through), and a
    /// look-alike of one it decides is denied (the proxy refuses it), as on the wire.
    /// Decided as in a new session, which nothing marks: rules with `tainted` or `rate`
    /// do not match (see [`Policy::decide_in`]).
    pub fn decide(&self, call: &Call) -> Decision<'_> {
        self.decide_with(call, &SessionView::default())
    }

    /// Decides a call as the session `view` shows it.
    pub(crate) fn decide_with(&self, call: &Call, view: &SessionView) -> Decision<'_> {
        let first = if call.method == methods::TOOLS_CALL {
            self.first_tool_rule(call, view)
        } else {
            if let Some(undecided) = self.undecided(call.method) {
                return undecided;
            }
            self.other_rules.iter().copied().find(|&i| self.rules[i].check_in(i, call, view).is_ok())
        };
        self.decision_for(first)
    }

    /// The denial every call to `call`'s tool (prompt, resource) gets, whatever its
    /// arguments: the first rule that matches its server, name and annotations and reads
    /// no argument, or the default, when that denies and no rule before it could let
    /// some arguments through. `None` when some arguments might be allowed, asked about
    /// or audited. `call.arguments` is not read. Lists leave such tools out.
    pub fn denies_whatever_the_arguments(&self, call: &Call) -> Option<Decision<'_>> {
        if let Some(undecided) = self.undecided(call.method) {
            return (undecided.action == Action::Deny).then_some(undecided);
        }
        for (index, rule) in self.rules.iter().enumerate() {
            if !rule.target_matches(call) || rule.conditions_besides_arguments_match(call).is_err() {
                continue;
            }
            if rule.reads_arguments() || rule.depends_on_session() {
                if rule.action == Action::Deny {
                    continue; // denies some calls; the others go on to the next rules
                }
                return None;
            }
            return (rule.action == Action::Deny).then(|| self.decision_for(Some(index)));
        }
        (self.default_action == Action::Deny).then(|| self.decision_for(None))
    }

    /// The decision for a method the policy does not decide on the wire, if it is one.
    fn undecided(&self, method: &str) -> Option<Decision<'_>> {
        match self.treatment(method) {
            Treatment::Decided => None,
            Treatment::LookAlike => Some(Decision { action: Action::Deny, rule: None, reason: LOOK_ALIKE_REASON }),
            Treatment::PassedThrough => {
                Some(Decision { action: Action::Allow, rule: None, reason: PASSED_THROUGH_REASON })
            }
        }
    }

    fn first_tool_rule(&self, call: &Call, view: &SessionView) -> Option<usize> {
        let mut candidates = Candidates::new();
        if let Some(name) = call.name {
            self.tools.candidates(name, &mut candidates);
            let trimmed = loose_name(name);
            if trimmed.len() != name.len() {
                self.tools.candidates(trimmed, &mut candidates);
            }
            let folded = fold_case(trimmed);
            if self.loose_always || trimmed.len() != name.len() || matches!(folded, Cow::Owned(_)) {
                self.loose_tools.candidates(&folded, &mut candidates);
            }
        }
        // Merge the two ordered candidate lists and keep rule order.
        let mut named = candidates.in_order().iter().copied().peekable();
        let mut others = self.other_rules.iter().copied().peekable();
        loop {
            let next = match (named.peek(), others.peek()) {
                (Some(&a), Some(&b)) if a < b => named.next(),
                (Some(_), Some(_)) | (None, Some(_)) => others.next(),
                (Some(_), None) => named.next(),
                (None, None) => return None,
            }?;
            if self.rules[next].check_in(next, call, view).is_ok() {
                return Some(next);
            }
        }
    }

    fn decision_for(&self, rule: Option<usize>) -> Decision<'_> {
        match rule {
            Some(i) => {
                Decision { action: self.rules[i].action, rule: Some((i, &self.rules[i])), reason: &self.reasons[i] }
            }
            None => Decision { action: self.default_action, rule: None, reason: &self.default_reason },
        }
    }

    /// Decides a call and says, for every rule up to the deciding one, why it matched
    /// or not. Slower than [`Policy::decide`]; meant for `clawai policy explain`.
    /// Decided as in a new session (see [`Policy::explain_in`]).
    pub fn explain(&self, call: &Call) -> Explanation<'_> {
        self.explain_with(call, &SessionView::default())
    }

    pub(crate) fn explain_with(&self, call: &Call, view: &SessionView) -> Explanation<'_> {
        let mut steps = Vec::new();
        if call.method != methods::TOOLS_CALL
            && let Some(decision) = self.undecided(call.method)
        {
            return Explanation { steps, decision };
        }
        let mut decided = None;
        for (i, rule) in self.rules.iter().enumerate() {
            let outcome = rule.check_in(i, call, view);
            let matched = outcome.is_ok();
            steps.push(Step { index: i, label: rule.label(i), summary: rule.summary(), action: rule.action, outcome });
            if matched {
                decided = Some(i);
                break;
            }
        }
        Explanation { steps, decision: self.decision_for(decided) }
    }
}

mod in_session;
mod wire;

#[cfg(test)]
mod tests;
