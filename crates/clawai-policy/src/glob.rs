//! Globs as clawai's policies write them.
//!
//! * `*` matches any run of characters without `/`;
//! * `**` matches any run of characters, `/` included;
//! * `?` matches exactly one character;
//! * everything else matches itself; the pattern is anchored at both ends.
//!
//! When `**` stands as a whole path component (`**/x`, `x/**`, `x/**/y`) it also matches
//! zero components, as AgentShield documents: `/etc/**` matches `/etc` itself and
//! `**/.ssh/**` matches the relative `.ssh/id_rsa`. This only ever makes a pattern match
//! more, never less, than the plain reading of seed 000.
//!
//! Each glob compiles to one anchored [`regex::Regex`]; several alternatives compile to
//! one alternation, so matching is a single pass whatever the number of patterns.

use regex::Regex;

/// A compiled glob, or a list of glob alternatives that matches when any one does.
#[derive(Debug, Clone)]
pub struct Glob {
    sources: Vec<String>,
    /// The anchored regex equivalent to the glob (used for indexes such as `RegexSet`).
    regex_source: String,
    matcher: Matcher,
}

/// How a glob is matched. Most globs in policies are a literal with one wildcard at an
/// end; those are matched with string operations, which also keeps policy loading fast
/// (compiling a regex costs tens of microseconds). The rest compile to a regex.
#[derive(Debug, Clone)]
enum Matcher {
    Simple(Vec<Simple>),
    Regex(Regex),
}

#[derive(Debug, Clone)]
pub(crate) enum Simple {
    /// `**`
    Everything,
    /// no wildcard
    Literal(String),
    /// `prefix*`: the prefix, then anything without `/`
    StarAfter(String),
    /// `prefix**` (not a whole component): the prefix, then anything
    AnythingAfter(String),
    /// `dir/**`: `dir` itself or anything below it
    Below(String),
    /// `**/name`: `name`, or anything ending in `/name`
    NameAnywhere(String),
}

impl Simple {
    fn parse(pattern: &str) -> Option<Simple> {
        let stars = |s: &str| s.len() >= 2 && s.chars().all(|c| c == '*');
        if stars(pattern) {
            return Some(Simple::Everything);
        }
        if is_literal(pattern) {
            return Some(Simple::Literal(pattern.to_owned()));
        }
        if let Some(dir) = pattern.strip_suffix("/**").filter(|d| is_literal(d)) {
            return Some(Simple::Below(dir.to_owned()));
        }
        if let Some(prefix) = pattern.strip_suffix("**").filter(|p| is_literal(p) && !p.ends_with('/')) {
            return Some(Simple::AnythingAfter(prefix.to_owned()));
        }
        if let Some(prefix) = pattern.strip_suffix('*').filter(|p| is_literal(p)) {
            return Some(Simple::StarAfter(prefix.to_owned()));
        }
        if let Some(name) = pattern.strip_prefix("**/").filter(|n| is_literal(n)) {
            return Some(Simple::NameAnywhere(name.to_owned()));
        }
        None
    }

    fn is_match(&self, text: &str) -> bool {
        match self {
            Simple::Everything => true,
            Simple::Literal(l) => text == l,
            Simple::StarAfter(p) => text.strip_prefix(p.as_str()).is_some_and(|rest| !rest.contains('/')),
            Simple::AnythingAfter(p) => text.starts_with(p.as_str()),
            Simple::Below(dir) => {
                text.strip_prefix(dir.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
            }
            Simple::NameAnywhere(name) => {
                text.strip_suffix(name.as_str()).is_some_and(|head| head.is_empty() || head.ends_with('/'))
            }
        }
    }
}

/// A glob that could not be compiled.
#[derive(Debug, Clone, thiserror::Error)]
#[error("invalid glob `{pattern}`: {reason}")]
pub struct GlobError {
    /// The pattern as written.
    pub pattern: String,
    /// Why it was refused.
    pub reason: String,
}

impl Glob {
    /// Compiles one glob pattern.
    pub fn new(pattern: &str) -> Result<Self, GlobError> {
        Self::any_of([pattern])
    }

    /// Compiles several patterns into one glob that matches when any of them does.
    pub fn any_of<I, S>(patterns: I) -> Result<Self, GlobError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let sources: Vec<String> = patterns.into_iter().map(|p| p.as_ref().to_owned()).collect();
        if sources.is_empty() {
            return Err(GlobError { pattern: String::new(), reason: "an empty list matches nothing".into() });
        }
        let mut alternatives = Vec::with_capacity(sources.len());
        for source in &sources {
            if source.is_empty() {
                return Err(GlobError {
                    pattern: source.clone(),
                    reason: "an empty pattern matches only the empty string; write `**` to match anything".into(),
                });
            }
            alternatives.push(to_regex_body(source));
        }
        let regex_source = format!("(?s)^(?:{})$", alternatives.join("|"));
        let simple: Option<Vec<Simple>> =
            sources.iter().map(|s| Simple::parse(&collapse_double_star_components(s))).collect();
        let matcher = match simple {
            Some(simple) => Matcher::Simple(simple),
            None => Matcher::Regex(
                Regex::new(&regex_source)
                    .map_err(|e| GlobError { pattern: sources.join(", "), reason: e.to_string() })?,
            ),
        };
        Ok(Glob { sources, regex_source, matcher })
    }

    /// True when `text` matches the glob (or any of its alternatives).
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Simple(alternatives) => alternatives.iter().any(|a| a.is_match(text)),
            Matcher::Regex(r) => r.is_match(text),
        }
    }

    /// The patterns as written.
    pub fn sources(&self) -> &[String] {
        &self.sources
    }

    /// True when the glob matches every string (`**`).
    pub fn matches_everything(&self) -> bool {
        self.sources.iter().any(|s| s.chars().all(|c| c == '*') && s.len() >= 2)
    }

    /// True when every string that `pattern` (a single glob) can match is also matched by
    /// this glob. Conservative: `false` means "not proven", used to find shadowed rules.
    pub fn covers(&self, pattern: &str) -> bool {
        if self.matches_everything() || self.sources.iter().any(|s| s == pattern) {
            return true;
        }
        if is_literal(pattern) {
            return self.is_match(pattern);
        }
        // `*` alone covers every pattern that can never produce a `/`.
        let single_star = self.sources.iter().any(|s| s == "*");
        single_star && !pattern.contains('/') && !pattern.contains("**") && !pattern.contains('?')
    }

    /// The string-matched alternatives, when every alternative is simple.
    pub(crate) fn simple_parts(&self) -> Option<&[Simple]> {
        match &self.matcher {
            Matcher::Simple(parts) => Some(parts),
            Matcher::Regex(_) => None,
        }
    }

    /// The anchored regular expression the glob compiled to.
    pub fn regex_source(&self) -> &str {
        &self.regex_source
    }
}

impl std::fmt::Display for Glob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.sources.len() == 1 {
            write!(f, "{}", self.sources[0])
        } else {
            write!(f, "[{}]", self.sources.join(", "))
        }
    }
}

/// True when the pattern has no wildcard at all.
pub fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?'])
}

/// Translates a glob into the body of a regex (without anchors).
pub(crate) fn to_regex_body(pattern: &str) -> String {
    let chars: Vec<char> = collapse_double_star_components(pattern).chars().collect();
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut i = 0;
    let mut literal = String::new();
    let flush = |literal: &mut String, out: &mut String| {
        if !literal.is_empty() {
            out.push_str(&regex::escape(literal));
            literal.clear();
        }
    };
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                // Collapse any run of stars into one `**`.
                let mut end = i;
                while end < chars.len() && chars[end] == '*' {
                    end += 1;
                }
                let starts_component = i == 0 || chars[i - 1] == '/';
                let ends_component = end == chars.len() || chars[end] == '/';
                if starts_component && ends_component {
                    let at_start = i == 0;
                    let at_end = end == chars.len();
                    match (at_start, at_end) {
                        (true, true) => {
                            flush(&mut literal, &mut out);
                            out.push_str(".*");
                        }
                        (true, false) => {
                            // `**/rest`: zero or more leading components.
                            flush(&mut literal, &mut out);
                            out.push_str("(?:.*/)?");
                            end += 1; // the `/` is part of the optional group
                        }
                        (false, true) => {
                            // `prefix/**`: the prefix itself, or anything below it.
                            literal.pop(); // the `/` moves into the optional group
                            flush(&mut literal, &mut out);
                            out.push_str("(?:/.*)?");
                        }
                        (false, false) => {
                            // `a/**/b`: zero or more components in between.
                            flush(&mut literal, &mut out);
                            out.push_str("(?:.*/)?");
                            end += 1;
                        }
                    }
                } else {
                    flush(&mut literal, &mut out);
                    out.push_str(".*");
                }
                i = end;
                continue;
            }
            '*' => {
                flush(&mut literal, &mut out);
                out.push_str("[^/]*");
            }
            '?' => {
                flush(&mut literal, &mut out);
                out.push('.');
            }
            c => literal.push(c),
        }
        i += 1;
    }
    flush(&mut literal, &mut out);
    out
}

/// `**/**` means the same as `**`; merging neighbours keeps the translation simple.
fn collapse_double_star_components(pattern: &str) -> String {
    let is_double_star = |c: &str| c.len() >= 2 && c.chars().all(|ch| ch == '*');
    let mut kept: Vec<&str> = Vec::new();
    for component in pattern.split('/') {
        if is_double_star(component) && kept.last().is_some_and(|last| is_double_star(last)) {
            continue;
        }
        kept.push(component);
    }
    kept.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The plain semantics of seed 000, by backtracking over characters.
    fn plain(p: &[char], s: &[char]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some('*') if p.get(1) == Some(&'*') => {
                let rest = &p[p.iter().take_while(|c| **c == '*').count()..];
                (0..=s.len()).any(|k| plain(rest, &s[k..]))
            }
            Some('*') => (0..=s.len()).take_while(|k| *k == 0 || s[k - 1] != '/').any(|k| plain(&p[1..], &s[k..])),
            Some('?') => !s.is_empty() && plain(&p[1..], &s[1..]),
            Some(c) => s.first() == Some(c) && plain(&p[1..], &s[1..]),
        }
    }

    /// Reference matcher: plain semantics, or the same with one whole-component `**`
    /// and a neighbouring `/` removed (zero components).
    fn reference(pattern: &str, text: &str) -> bool {
        let p: Vec<char> = pattern.chars().collect();
        let s: Vec<char> = text.chars().collect();
        if plain(&p, &s) {
            return true;
        }
        let mut i = 0;
        while i < p.len() {
            if p[i] == '*' && p.get(i + 1) == Some(&'*') {
                let end = i + p[i..].iter().take_while(|c| **c == '*').count();
                let starts = i == 0 || p[i - 1] == '/';
                let ends = end == p.len() || p[end] == '/';
                if starts && ends && p.len() > end - i {
                    let (from, to) = if end < p.len() { (i, end + 1) } else { (i - 1, end) };
                    let reduced: String = p[..from].iter().chain(p[to..].iter()).collect();
                    if reference(&reduced, text) {
                        return true;
                    }
                }
                i = end;
            } else {
                i += 1;
            }
        }
        false
    }

    fn m(p: &str, s: &str) -> bool {
        Glob::new(p).unwrap().is_match(s)
    }

    #[test]
    fn star_does_not_cross_slash() {
        assert!(m("filesystem_*", "filesystem_read"));
        assert!(!m("/home/*", "/home/u/x"));
        assert!(m("/home/*", "/home/u"));
    }

    #[test]
    fn double_star_crosses_slash_and_zero_components() {
        assert!(m("/etc/**", "/etc/passwd"));
        assert!(m("/etc/**", "/etc/ssh/sshd_config"));
        assert!(m("/etc/**", "/etc"));
        assert!(!m("/etc/**", "/etcetera"));
        assert!(m("**/.ssh/**", "/home/u/.ssh/id_rsa"));
        assert!(m("**/.ssh/**", ".ssh/id_rsa"));
        assert!(!m("**/.ssh/**", "/home/u/not.ssh/id_rsa"));
        assert!(m("/home/*/.aws/**", "/home/bob/.aws/credentials"));
        assert!(!m("/home/*/.aws/**", "/home/bob/x/.aws/credentials"));
        assert!(m("a/**/b", "a/b"));
        assert!(m("a/**/b", "a/x/y/b"));
        assert!(m("x**y", "x/a/y"));
    }

    #[test]
    fn question_mark_is_one_character_and_anchoring() {
        assert!(m("file?.txt", "file1.txt"));
        assert!(!m("file?.txt", "file12.txt"));
        assert!(!m("read", "read_file"));
        assert!(!m("read", "xread"));
        assert!(m("a.b", "a.b"));
        assert!(!m("a.b", "axb"), "regex metacharacters are literal");
        assert!(m("(x)+[y]", "(x)+[y]"));
    }

    #[test]
    fn alternatives_and_coverage() {
        let g = Glob::any_of(["**/.ssh/**", "**/.aws/**"]).unwrap();
        assert!(g.is_match("/root/.aws/credentials"));
        assert!(!g.is_match("/root/.gnupg/x"));
        assert!(Glob::new("*").unwrap().covers("read_*"));
        assert!(!Glob::new("*").unwrap().covers("a/**"));
        assert!(Glob::new("read_*").unwrap().covers("read_file"));
        assert!(!Glob::new("read_*").unwrap().covers("write_*"));
        assert!(Glob::new("**").unwrap().covers("anything/**"));
        assert!(Glob::new("").is_err());
    }

    proptest! {
        #[test]
        fn agrees_with_reference(
            pattern in "[ab/*?.]{0,8}",
            text in "[ab/.]{0,10}",
        ) {
            prop_assume!(!pattern.is_empty());
            prop_assert_eq!(m(&pattern, &text), reference(&pattern, &text), "pattern {:?} text {:?}", pattern, text);
        }

        /// The string fast paths and the regex the glob compiles to always agree.
        #[test]
        fn fast_paths_agree_with_the_regex(
            pattern in "[ab/*.]{0,3}[*]{0,2}[/]?[*]{0,2}[ab.]{0,3}",
            text in "[ab/.]{0,8}",
        ) {
            prop_assume!(!pattern.is_empty());
            let g = Glob::new(&pattern).unwrap();
            let regex = Regex::new(g.regex_source()).unwrap();
            prop_assert_eq!(g.is_match(&text), regex.is_match(&text), "pattern {:?} text {:?}", pattern, text);
        }
    }
}
