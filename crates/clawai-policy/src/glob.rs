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
//! Most globs in policies have a literal part and one wildcard shape (`read_*`,
//! `/etc/**`, `**/.ssh/**`, `**/*.pem`, `file:///**/.env`); those are matched with string
//! operations. The rest compile to one anchored byte regex (several alternatives to one
//! alternation, so matching is a single pass whatever the number of patterns). Its
//! wildcards are byte classes, not Unicode classes: the text is valid UTF-8, so `[^/]`
//! over bytes matches exactly what it would over characters, and `?` is spelled as one
//! UTF-8 sequence. Compiling a Unicode class costs a third of a megabyte of scratch
//! memory per regex, which made loading a policy slow enough to delay the proxy's start.

use regex::bytes::Regex;

/// A compiled glob, or a list of glob alternatives that matches when any one does.
#[derive(Debug, Clone)]
pub struct Glob {
    sources: Vec<String>,
    matcher: Matcher,
    /// The glob with its patterns case-folded, for [`Glob::matches_only_ignoring_case`];
    /// `None` when folding changes no pattern (then the glob itself serves).
    folded: Option<Box<Glob>>,
    /// True when a pattern starts with `file:`: such a glob is also tried on the
    /// `file:///x` spelling of an absolute path `/x` (see [`Glob::names_file_urls`]).
    names_file_urls: bool,
}

/// How a glob is matched.
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
    /// `**/name/**`: `name` as whole components anywhere (the searcher for `name` is
    /// built once: credential rules test every argument string with it)
    ComponentAnywhere(Box<memchr::memmem::Finder<'static>>),
    /// `**/*suffix` (no `/` in the suffix): a last component ending in `suffix`
    LastEndsWith(String),
    /// `**/prefix*` (no `/` in the prefix): a last component starting with `prefix`
    LastStartsWith(String),
    /// `dir/` followed by one of the `**/…` shapes above: that shape, below `dir/`
    Under(String, Box<Simple>),
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
        if let Some(rest) = pattern.strip_prefix("**/") {
            return Self::parse_anywhere(rest);
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
        // `dir/**/rest`: a literal directory, then zero or more components, then `rest`.
        let at = pattern.find("/**/")?;
        let (dir, rest) = (&pattern[..=at], &pattern[at + 1..]);
        if !is_literal(dir) {
            return None;
        }
        let inner = Self::parse_anywhere(rest.strip_prefix("**/")?)?;
        Some(Simple::Under(dir.to_owned(), Box::new(inner)))
    }

    /// The shapes that start with a whole-component `**/`, given what follows it.
    fn parse_anywhere(rest: &str) -> Option<Simple> {
        if is_literal(rest) {
            return Some(Simple::NameAnywhere(rest.to_owned()));
        }
        if let Some(name) = rest.strip_suffix("/**").filter(|n| is_literal(n) && !n.is_empty()) {
            return Some(Simple::ComponentAnywhere(Box::new(memchr::memmem::Finder::new(name).into_owned())));
        }
        if let Some(suffix) = rest.strip_prefix('*').filter(|s| is_literal(s) && !s.contains('/')) {
            return Some(Simple::LastEndsWith(suffix.to_owned()));
        }
        if let Some(prefix) = rest.strip_suffix('*').filter(|p| is_literal(p) && !p.contains('/')) {
            return Some(Simple::LastStartsWith(prefix.to_owned()));
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
            Simple::ComponentAnywhere(name) => contains_components(text, name),
            Simple::LastEndsWith(suffix) => text.ends_with(suffix.as_str()),
            Simple::LastStartsWith(prefix) => {
                let last = text.rfind('/').map_or(text, |slash| &text[slash + 1..]);
                last.starts_with(prefix.as_str())
            }
            Simple::Under(dir, inner) => text.strip_prefix(dir.as_str()).is_some_and(|rest| inner.is_match(rest)),
        }
    }
}

/// True when `name` occurs in `text` with a component boundary (the text's start or end,
/// or a `/`) on each side. Occurrences may overlap (`a/a` in `a/a/a`), so every start is
/// tried.
fn contains_components(text: &str, name: &memchr::memmem::Finder<'_>) -> bool {
    let bytes = text.as_bytes();
    let length = name.needle().len();
    let mut from = 0;
    while let Some(found) = name.find(&bytes[from..]) {
        let start = from + found;
        let end = start + length;
        if (start == 0 || bytes[start - 1] == b'/') && (end == bytes.len() || bytes[end] == b'/') {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
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
        if let Some(empty) = sources.iter().find(|s| s.is_empty()) {
            return Err(GlobError {
                pattern: empty.clone(),
                reason: "an empty pattern matches only the empty string; write `**` to match anything".into(),
            });
        }
        let matcher = Matcher::compile(&sources)?;
        let names_file_urls = sources.iter().any(|s| s.get(..5).is_some_and(|p| p.eq_ignore_ascii_case("file:")));
        let folded = if sources.iter().all(|s| matches!(fold_case(s), std::borrow::Cow::Borrowed(_))) {
            None
        } else {
            let folded_sources: Vec<String> = sources.iter().map(|s| fold_case(s).into_owned()).collect();
            let matcher = Matcher::compile(&folded_sources)?;
            Some(Box::new(Glob { sources: folded_sources, matcher, folded: None, names_file_urls }))
        };
        Ok(Glob { sources, matcher, folded, names_file_urls })
    }

    /// True when one of the patterns is a `file:` URL (`file:///etc/**`). A server that
    /// takes a path where a URI goes opens `/etc/shadow` as `file:///etc/shadow`, so
    /// conditions that deny try such a glob on that spelling too.
    pub(crate) fn names_file_urls(&self) -> bool {
        self.names_file_urls
    }

    /// For a `text` that does not match exactly: true when it matches once both are
    /// case-folded ([`fold_case`]), as `/Users/me/.SSH/id_rsa` does `**/.ssh/**`. What a
    /// case-insensitive file system (macOS, Windows) opens for a path, and what
    /// deny-like conditions also look at. When folding changes neither the text nor the
    /// glob, the answer is the exact one, false, without matching again.
    pub fn matches_only_ignoring_case(&self, text: &str) -> bool {
        let text = fold_case(text);
        if self.folded.is_none() && matches!(text, std::borrow::Cow::Borrowed(_)) {
            return false;
        }
        self.folded().is_match(&text)
    }

    /// The glob with its patterns case-folded (itself when folding changes none):
    /// what [`Glob::matches_only_ignoring_case`] matches folded text against.
    pub(crate) fn folded(&self) -> &Glob {
        self.folded.as_deref().unwrap_or(self)
    }

    /// True when folding changes one of the patterns (`Delete*`), so that a name
    /// already in lower case may still match only ignoring case.
    pub(crate) fn folds(&self) -> bool {
        self.folded.is_some()
    }

    /// True when `text` matches the glob (or any of its alternatives).
    pub fn is_match(&self, text: &str) -> bool {
        match &self.matcher {
            Matcher::Simple(alternatives) => alternatives.iter().any(|a| a.is_match(text)),
            Matcher::Regex(r) => r.is_match(text.as_bytes()),
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

    /// The anchored regular expression equivalent to the glob, for
    /// [`regex::bytes::Regex`] and [`regex::bytes::RegexSet`] (its wildcards match bytes).
    pub fn regex_source(&self) -> String {
        regex_source(&self.sources)
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

impl Matcher {
    fn compile(sources: &[String]) -> Result<Matcher, GlobError> {
        let simple: Option<Vec<Simple>> =
            sources.iter().map(|s| Simple::parse(&collapse_double_star_components(s))).collect();
        Ok(match simple {
            Some(simple) => Matcher::Simple(simple),
            None => Matcher::Regex(
                Regex::new(&regex_source(sources))
                    .map_err(|e| GlobError { pattern: sources.join(", "), reason: e.to_string() })?,
            ),
        })
    }
}

/// `text` lower-cased as a case-insensitive file system compares names: Unicode lower
/// case, and `ſ` (long s) as `s`, which Unicode case folding maps it to. Borrowed when
/// nothing changes (lower-case ASCII, the usual path).
pub fn fold_case(text: &str) -> std::borrow::Cow<'_, str> {
    // Every deny-like condition asks this of every argument string. A chunk is tested
    // without a branch per byte, which the compiler turns into vector compares.
    let may_fold = |chunk: &[u8]| chunk.iter().fold(false, |any, &b| any | b.is_ascii_uppercase() | !b.is_ascii());
    if !text.as_bytes().chunks(16).any(may_fold) {
        return std::borrow::Cow::Borrowed(text);
    }
    let folded: String = if text.is_ascii() {
        // Byte by byte: a long argument (a file's content) folds at memory speed.
        text.to_ascii_lowercase()
    } else {
        text.chars().flat_map(char::to_lowercase).map(|c| if c == 'ſ' { 's' } else { c }).collect()
    };
    if folded == text { std::borrow::Cow::Borrowed(text) } else { std::borrow::Cow::Owned(folded) }
}

/// True when the pattern has no wildcard at all.
pub fn is_literal(pattern: &str) -> bool {
    !pattern.contains(['*', '?'])
}

/// The anchored byte regex for a list of alternatives.
fn regex_source(sources: &[String]) -> String {
    let alternatives: Vec<String> = sources.iter().map(|s| to_regex_body(s)).collect();
    format!("(?s)^(?:{})$", alternatives.join("|"))
}

/// `**`: any run of bytes, newlines included (the pattern sets `s`).
const ANY_BYTES: &str = "(?-u:.)*";
/// `**/` at the start or in the middle: zero or more whole components.
const LEADING_COMPONENTS: &str = "(?:(?-u:.)*/)?";
/// `/**` at the end: nothing, or anything below.
const TRAILING_COMPONENTS: &str = "(?:/(?-u:.)*)?";
/// `*`: any run of bytes without `/`.
const NO_SLASH_BYTES: &str = "(?-u:[^/])*";
/// `?`: any one character, as the bytes of its UTF-8 encoding (the text is valid UTF-8).
const ONE_CHARACTER: &str =
    r"(?-u:[\x00-\x7F]|[\xC0-\xDF][\x80-\xBF]|[\xE0-\xEF][\x80-\xBF]{2}|[\xF0-\xF7][\x80-\xBF]{3})";

/// Translates a glob into the body of a byte regex (without anchors).
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
                            out.push_str(ANY_BYTES);
                        }
                        (true, false) => {
                            // `**/rest`: zero or more leading components.
                            flush(&mut literal, &mut out);
                            out.push_str(LEADING_COMPONENTS);
                            end += 1; // the `/` is part of the optional group
                        }
                        (false, true) => {
                            // `prefix/**`: the prefix itself, or anything below it.
                            literal.pop(); // the `/` moves into the optional group
                            flush(&mut literal, &mut out);
                            out.push_str(TRAILING_COMPONENTS);
                        }
                        (false, false) => {
                            // `a/**/b`: zero or more components in between.
                            flush(&mut literal, &mut out);
                            out.push_str(LEADING_COMPONENTS);
                            end += 1;
                        }
                    }
                } else {
                    flush(&mut literal, &mut out);
                    out.push_str(ANY_BYTES);
                }
                i = end;
                continue;
            }
            '*' => {
                flush(&mut literal, &mut out);
                out.push_str(NO_SLASH_BYTES);
            }
            '?' => {
                flush(&mut literal, &mut out);
                out.push_str(ONE_CHARACTER);
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

    #[test]
    fn common_shapes_are_matched_without_a_regex() {
        for pattern in [
            "**/.ssh/**",
            "**/*.pem",
            "**/id_rsa*",
            "**/.env.*",
            "**/.kube/config",
            "file:///**/.ssh/**",
            "file:///**/*.key",
            "/home/user/projects/**",
            "filesystem_*",
        ] {
            let glob = Glob::new(pattern).unwrap();
            assert!(matches!(glob.matcher, Matcher::Simple(_)), "{pattern} compiles to a regex");
        }
        assert!(matches!(Glob::new("/home/*/.aws/**").unwrap().matcher, Matcher::Regex(_)));
    }

    #[test]
    fn new_shapes_match_as_the_regex_would() {
        assert!(m("**/.ssh/**", ".ssh"));
        assert!(m("**/.ssh/**", "/root/.ssh"));
        assert!(!m("**/.ssh/**", "/root/.sshx/id"));
        assert!(m("**/a/a/**", "xa/a/a"), "overlapping occurrences are all tried");
        assert!(m("**/*.pem", "/etc/tls/server.pem"));
        assert!(m("**/*.pem", ".pem"));
        assert!(!m("**/*.pem", "/etc/x.pem/key"));
        assert!(m("**/id_rsa*", "/home/u/.ssh/id_rsa.pub"));
        assert!(!m("**/id_rsa*", "/home/u/id_rsa/x"));
        assert!(!m("**/id_rsa*", "/home/u/my_id_rsa"));
        assert!(m("file:///**/.env", "file:///.env"));
        assert!(m("file:///**/.env", "file:///srv/app/.env"));
        assert!(!m("file:///**/.env", "file://host/.env"));
    }

    #[test]
    fn question_mark_is_one_character_of_any_width() {
        // `?` inside a pattern that compiles to a regex (an inner `*`).
        assert!(m("a*?b", "aéb"));
        assert!(m("a/*?/b", "a/x€/b"));
        assert!(!m("a*/??/b", "a/€/b"));
        assert!(m("?*/?", "😀/é"));
        assert!(!m("?*/??", "😀/é"));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        #[test]
        fn agrees_with_reference(
            pattern in "[ab/*?.é]{0,8}",
            text in "[ab/.é]{0,10}",
        ) {
            prop_assume!(!pattern.is_empty());
            prop_assert_eq!(m(&pattern, &text), reference(&pattern, &text), "pattern {:?} text {:?}", pattern, text);
        }

        /// The string fast paths and the regex the glob compiles to always agree.
        #[test]
        fn fast_paths_agree_with_the_regex(
            pattern in "[ab/*.]{0,3}[*]{0,2}[/]?[*]{0,2}[ab.]{0,3}|([aé]{0,2}/)?(\\*\\*/)?[ab/.é]{0,3}[*]{0,2}[ab/.é]{0,2}(/\\*\\*)?",
            text in "[ab/.é]{0,8}",
        ) {
            prop_assume!(!pattern.is_empty());
            let g = Glob::new(&pattern).unwrap();
            let regex = Regex::new(&g.regex_source()).unwrap();
            prop_assert_eq!(g.is_match(&text), regex.is_match(text.as_bytes()), "pattern {:?} text {:?}", pattern, text);
        }

        /// An exact match or a match ignoring case (what deny-like conditions take) is
        /// matching the lower-cased text against the lower-cased pattern, and folding
        /// never loses an exact match.
        #[test]
        fn matching_ignoring_case_is_matching_both_lower_cased(
            pattern in "[aAbB/*?.éÉ]{1,8}",
            text in "[aAbB/.éÉ]{0,10}",
        ) {
            let g = Glob::new(&pattern).unwrap();
            let lowered = reference(&pattern.to_lowercase(), &text.to_lowercase());
            prop_assert_eq!(g.is_match(&text) || g.matches_only_ignoring_case(&text), lowered, "pattern {:?} text {:?}", pattern, text);
            prop_assert!(!g.is_match(&text) || lowered, "pattern {:?} text {:?}", pattern, text);
        }
    }
}
