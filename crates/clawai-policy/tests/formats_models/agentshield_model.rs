//! AgentShield's decision, written out from its code (`internal/mcp/policy.go`), on a
//! model of a policy that is also written out as YAML.

use proptest::prelude::*;
use serde_json::Value;

use clawai_policy::Action;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Sev {
    Allow,
    Audit,
    Block,
}

impl Sev {
    fn yaml(self) -> &'static str {
        match self {
            Sev::Allow => "ALLOW",
            Sev::Audit => "AUDIT",
            Sev::Block => "BLOCK",
        }
    }

    fn action(self) -> Action {
        match self {
            Sev::Allow => Action::Allow,
            Sev::Audit => Action::Audit,
            Sev::Block => Action::Deny,
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct ToolRule {
    tool_name: Option<String>,
    tool_name_any: Option<Vec<String>>,
    tool_name_regex: Option<String>,
    arg_glob: Option<(String, String)>,
    arg_regex: Option<(String, String)>,
    exclude: Option<(String, String)>,
    decision: Sev,
}

#[derive(Debug, Clone)]
pub(crate) struct Limit {
    tool_pattern: Option<String>,
    tool_name_regex: Option<String>,
    max: Option<i64>,
    min: Option<i64>,
    decision: Sev,
}

#[derive(Debug, Clone)]
pub(crate) struct ResourceRule {
    uri_pattern: Option<String>,
    uri_regex: Option<String>,
    scheme: Option<String>,
    decision: Sev,
}

#[derive(Debug, Clone)]
pub(crate) struct Shield {
    default: Sev,
    blocked_tools: Vec<String>,
    blocked_resources: Vec<String>,
    rules: Vec<ToolRule>,
    limits: Vec<Limit>,
    resource_rules: Vec<ResourceRule>,
}

/// A YAML double-quoted scalar (JSON's string syntax is YAML's).
fn q(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

impl Shield {
    pub(crate) fn yaml(&self) -> String {
        let mut y = format!("defaults:\n  decision: {}\n", q(self.default.yaml()));
        let list = |items: &[String]| items.iter().map(|i| q(i)).collect::<Vec<_>>().join(", ");
        y += &format!("blocked_tools: [{}]\n", list(&self.blocked_tools));
        y += &format!("blocked_resources: [{}]\n", list(&self.blocked_resources));
        y += "rules:\n";
        for (n, r) in self.rules.iter().enumerate() {
            y += &format!("  - id: r{n}\n    decision: {}\n    match:\n", q(r.decision.yaml()));
            if let Some(t) = &r.tool_name {
                y += &format!("      tool_name: {}\n", q(t));
            }
            if let Some(l) = &r.tool_name_any {
                y += &format!("      tool_name_any: [{}]\n", list(l));
            }
            if let Some(t) = &r.tool_name_regex {
                y += &format!("      tool_name_regex: {}\n", q(t));
            }
            if let Some((a, g)) = &r.arg_glob {
                y += &format!("      argument_patterns: {{ {a}: {} }}\n", q(g));
            }
            if let Some((a, g)) = &r.arg_regex {
                y += &format!("      argument_regex_patterns: {{ {a}: {} }}\n", q(g));
            }
            if let Some((a, g)) = &r.exclude {
                y += &format!("      exclude_argument_patterns: {{ {a}: [{}] }}\n", q(g));
            }
        }
        y += "value_limits:\n";
        for (n, l) in self.limits.iter().enumerate() {
            y += &format!("  - id: v{n}\n    argument: amount\n    decision: {}\n", q(l.decision.yaml()));
            if let Some(t) = &l.tool_pattern {
                y += &format!("    tool_pattern: {}\n", q(t));
            }
            if let Some(t) = &l.tool_name_regex {
                y += &format!("    tool_name_regex: {}\n", q(t));
            }
            if let Some(m) = l.max {
                y += &format!("    max: {m}\n");
            }
            if let Some(m) = l.min {
                y += &format!("    min: {m}\n");
            }
        }
        y += "resource_rules:\n";
        for (n, r) in self.resource_rules.iter().enumerate() {
            y += &format!("  - id: res{n}\n    decision: {}\n    match:\n", q(r.decision.yaml()));
            for (k, v) in [("uri_pattern", &r.uri_pattern), ("uri_regex", &r.uri_regex), ("scheme", &r.scheme)] {
                if let Some(v) = v {
                    y += &format!("      {k}: {}\n", q(v));
                }
            }
            if r.uri_pattern.is_none() && r.uri_regex.is_none() && r.scheme.is_none() {
                y += "      {}\n";
            }
        }
        // An empty YAML mapping under `match:` for rules that name nothing.
        y.replace("    match:\n  -", "    match: {}\n  -").replace("    match:\n      {}\n", "    match: {}\n")
    }

    pub(crate) fn decide_tool(&self, tool: &str, args: &Value) -> Action {
        if self.blocked_tools.iter().any(|p| tool_name_matches(p, tool)) {
            return Action::Deny;
        }
        let mut sev = self.default;
        for r in &self.rules {
            if r.matches(tool, args) {
                sev = sev.max(r.decision);
            }
        }
        for l in &self.limits {
            if l.decision == Sev::Block && l.violated(tool, args) {
                sev = Sev::Block;
            }
        }
        sev.action()
    }

    pub(crate) fn decide_resource(&self, uri: &str) -> Action {
        if self.blocked_resources.iter().any(|p| uri_matches(p, uri)) {
            return Action::Deny;
        }
        let mut sev = self.default;
        for r in &self.resource_rules {
            let hit = r.uri_pattern.as_ref().is_some_and(|p| uri_matches(p, uri))
                || r.uri_regex.as_ref().is_some_and(|re| regex::Regex::new(re).unwrap().is_match(uri))
                || r.scheme.as_ref().is_some_and(|s| uri.starts_with(&format!("{s}://")));
            if hit {
                sev = sev.max(r.decision);
            }
        }
        sev.action()
    }
}

impl ToolRule {
    fn matches(&self, tool: &str, args: &Value) -> bool {
        let any_list = self.tool_name_any.as_ref().filter(|l| !l.is_empty());
        let name_specified = self.tool_name.is_some() || any_list.is_some() || self.tool_name_regex.is_some();
        if name_specified {
            let by_name = self.tool_name.as_ref().is_some_and(|p| tool_name_matches(p, tool))
                || any_list.is_some_and(|l| l.iter().any(|p| tool_name_matches(p, tool)))
                || self.tool_name_regex.as_ref().is_some_and(|re| regex::Regex::new(re).unwrap().is_match(tool));
            if !by_name {
                return false;
            }
        }
        let text = |name: &str| args.get(name).map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        if let Some((a, g)) = &self.arg_glob
            && !text(a).is_some_and(|v| glob(g, &v))
        {
            return false;
        }
        if let Some((a, re)) = &self.arg_regex
            && !text(a).is_some_and(|v| regex::Regex::new(re).unwrap().is_match(&v))
        {
            return false;
        }
        if let Some((a, g)) = &self.exclude
            && text(a).is_some_and(|v| glob(g, &v))
        {
            return false;
        }
        name_specified || self.arg_glob.is_some() || self.arg_regex.is_some()
    }
}

impl Limit {
    fn violated(&self, tool: &str, args: &Value) -> bool {
        let applies = match (&self.tool_pattern, &self.tool_name_regex) {
            (None, None) => true,
            (p, r) => {
                p.as_ref().is_some_and(|p| tool_name_matches(p, tool))
                    || r.as_ref().is_some_and(|re| regex::Regex::new(re).unwrap().is_match(tool))
            }
        };
        let Some(value) = args.get("amount").and_then(Value::as_f64) else { return false };
        applies && (self.max.is_some_and(|m| value > m as f64) || self.min.is_some_and(|m| value < m as f64))
    }
}

/// `matchToolName`: exact, or a glob (`*` any run without `/`) when it holds a `*`.
fn tool_name_matches(pattern: &str, name: &str) -> bool {
    if pattern.contains('*') { wildcard(pattern, name) } else { pattern == name }
}

/// `matchResourceURI` for patterns without `**`: whole-string glob, else exact.
fn uri_matches(pattern: &str, uri: &str) -> bool {
    if pattern.contains('*') { wildcard(pattern, uri) } else { pattern == uri }
}

/// `matchGlob`: with `**`, path components (`**` zero or more of them); else the whole
/// string, `*` not crossing `/`. (The corpus holds clean absolute paths.)
fn glob(pattern: &str, value: &str) -> bool {
    if !pattern.contains("**") {
        return wildcard(pattern, value);
    }
    let parts: Vec<&str> = value.trim_end_matches('/').split('/').filter(|c| !c.is_empty()).collect();
    let pattern: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    components(&pattern, &parts)
}

fn components(pattern: &[&str], parts: &[&str]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| components(rest, &parts[skip..])),
        Some((p, rest)) => parts.split_first().is_some_and(|(c, more)| wildcard(p, c) && components(rest, more)),
    }
}

/// `*` any run without `/`, `?` one character, the rest literal; whole string.
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    fn go(p: &[char], t: &[char]) -> bool {
        match p.split_first() {
            None => t.is_empty(),
            Some(('*', rest)) => (0..=t.len()).take_while(|&i| i == 0 || t[i - 1] != '/').any(|i| go(rest, &t[i..])),
            Some(('?', rest)) => !t.is_empty() && go(rest, &t[1..]),
            Some((c, rest)) => t.first() == Some(c) && go(rest, &t[1..]),
        }
    }
    go(&p, &t)
}

fn sev() -> impl Strategy<Value = Sev> {
    prop_oneof![Just(Sev::Allow), Just(Sev::Audit), Just(Sev::Block)]
}

fn pick(items: &'static [&'static str]) -> impl Strategy<Value = String> {
    proptest::sample::select(items).prop_map(str::to_owned)
}

const TOOL_PATTERNS: &[&str] =
    &["read_file", "write_file", "*_file", "git_*", "run_*", "execute_command", "send_*", "withdraw"];
const TOOL_REGEXES: &[&str] = &["^git_(push|force)", "file", "^send_", "github"];
const PATH_GLOBS: &[&str] = &["**/.ssh/**", "/etc/**", "/home/*/notes.txt", "**/.env.*", "/tmp/*.txt", "/home/**"];
const REGEXES: &[(&str, &str)] = &[("sql", "(?i)drop\\s+table"), ("path", "\\.ssh/"), ("path", "^/etc/")];
const EXCLUDES: &[&str] = &["**/.env.example", "/etc/passwd", "/home/u/**"];

fn tool_rule() -> impl Strategy<Value = ToolRule> {
    (
        proptest::option::weighted(0.4, pick(TOOL_PATTERNS)),
        proptest::option::weighted(0.3, proptest::collection::vec(pick(TOOL_PATTERNS), 0..3)),
        proptest::option::weighted(0.2, pick(TOOL_REGEXES)),
        proptest::option::weighted(0.5, pick(PATH_GLOBS).prop_map(|g| ("path".to_owned(), g))),
        proptest::option::weighted(
            0.2,
            proptest::sample::select(REGEXES).prop_map(|(a, r)| (a.to_owned(), r.to_owned())),
        ),
        proptest::option::weighted(0.2, pick(EXCLUDES).prop_map(|g| ("path".to_owned(), g))),
        sev(),
    )
        .prop_map(|(tool_name, tool_name_any, tool_name_regex, arg_glob, arg_regex, exclude, decision)| ToolRule {
            tool_name,
            tool_name_any,
            tool_name_regex,
            arg_glob,
            arg_regex,
            exclude,
            decision,
        })
}

fn limit() -> impl Strategy<Value = Limit> {
    (
        proptest::option::of(pick(&["send_*", "withdraw", "*"])),
        proptest::option::weighted(0.3, pick(&["send_.*|transfer_.*", "^with"])),
        proptest::option::of(prop_oneof![Just(1000i64), Just(10)]),
        proptest::option::of(Just(0i64)),
        sev(),
    )
        .prop_map(|(tool_pattern, tool_name_regex, max, min, decision)| Limit {
            tool_pattern,
            tool_name_regex,
            max,
            min,
            decision,
        })
}

fn resource_rule() -> impl Strategy<Value = ResourceRule> {
    (
        proptest::option::weighted(
            0.4,
            pick(&["secret://*", "postgres://db/prod", "file:///home/u/readme.md", "https://*"]),
        ),
        proptest::option::weighted(0.3, pick(&["\\.ssh", "readme", "^postgres"])),
        proptest::option::weighted(0.3, pick(&["postgres", "secret", "file"])),
        sev(),
    )
        .prop_map(|(uri_pattern, uri_regex, scheme, decision)| ResourceRule {
            uri_pattern,
            uri_regex,
            scheme,
            decision,
        })
}

pub(crate) fn strategy() -> impl Strategy<Value = Shield> {
    (
        sev(),
        proptest::collection::vec(pick(&["execute_command", "run_*", "git_push"]), 0..2),
        proptest::collection::vec(pick(&["file:///home/u/.ssh/id_rsa", "secret://*"]), 0..2),
        proptest::collection::vec(tool_rule(), 0..5),
        proptest::collection::vec(limit(), 0..3),
        proptest::collection::vec(resource_rule(), 0..3),
    )
        .prop_map(|(default, blocked_tools, blocked_resources, rules, limits, resource_rules)| Shield {
            default,
            blocked_tools,
            blocked_resources,
            rules,
            limits,
            resource_rules,
        })
}
