//! The globs of a skill's `allowed-tools`, matched against the gateway's tool names.
//!
//! `*` matches any run of characters (none included) and `?` exactly one character;
//! everything else matches itself, case included, and a pattern matches a whole name.
//! The policy's globs are not used here: their `*` stops at `/`, which a tool name may
//! contain, and `**` means something else there.

/// True when `name` matches `pattern` as a whole.
///
/// Linear backtracking on the last `*` (the classic wildcard algorithm): at most
/// `pattern.len() * name.len()` steps, whatever the pattern.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Where to resume after a mismatch: the pattern just past the last `*`, and the
    // place in the name that `*` has consumed up to.
    let mut resume: Option<(usize, usize)> = None;
    while ti < t.len() {
        match p.get(pi) {
            Some(b'*') => {
                pi += 1;
                resume = Some((pi, ti));
                continue;
            }
            Some(b'?') => {
                pi += 1;
                ti += char_len(name, ti);
                continue;
            }
            Some(&byte) if byte == t[ti] => {
                pi += 1;
                ti += 1;
                continue;
            }
            _ => {}
        }
        let Some((after_star, consumed)) = resume else { return false };
        // Let the `*` take one more character and try the rest again from there.
        let next = consumed + char_len(name, consumed);
        resume = Some((after_star, next));
        pi = after_star;
        ti = next;
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// The length in bytes of the character of `text` that starts at byte `at`.
fn char_len(text: &str, at: usize) -> usize {
    text[at..].chars().next().map_or(1, char::len_utf8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn star_matches_any_run_and_question_mark_one_character() {
        assert!(matches("claude-flow__memory_*", "claude-flow__memory_store"));
        assert!(matches("claude-flow__memory_*", "claude-flow__memory_"));
        assert!(!matches("claude-flow__memory_*", "claude-flow__swarm_init"));
        assert!(matches("*", ""));
        assert!(matches("*", "any/thing__at_all"));
        assert!(matches("a*/*z", "a/b/c/z"));
        assert!(matches("*__Read", "claude-code__Read"));
        assert!(matches("mem?ry", "memory"));
        assert!(matches("mem?ry", "memöry"));
        assert!(!matches("mem?ry", "memry"));
        assert!(!matches("mem?ry", "meemory"));
        assert!(matches("*a*b*c", "xxaxxbxxbxc"));
        assert!(!matches("*a*b*c", "xxaxxbxxbx"));
    }

    #[test]
    fn literal_patterns_match_the_whole_name_case_included() {
        assert!(matches("read_file", "read_file"));
        assert!(!matches("read_file", "read_file2"));
        assert!(!matches("read_file", "xread_file"));
        assert!(!matches("Read", "read"));
        assert!(!matches("", "x"));
        assert!(matches("", ""));
    }

    #[test]
    fn non_ascii_names_match_by_character() {
        assert!(matches("é*ü", "éaaü"));
        assert!(matches("?", "ü"));
        assert!(!matches("??", "ü"));
        assert!(matches("*ü", "aéü"));
    }

    proptest::proptest! {
        /// The matcher agrees with the same glob spelled as an anchored regex.
        #[test]
        fn agrees_with_a_regex(pattern in "[ab*?é_]{0,8}", name in "[abé_/]{0,12}") {
            let mut spelled = String::from("^");
            for c in pattern.chars() {
                match c {
                    '*' => spelled.push_str("(?s:.*)"),
                    '?' => spelled.push_str("(?s:.)"),
                    c => spelled.push_str(&regex::escape(&c.to_string())),
                }
            }
            spelled.push('$');
            let expected = regex::Regex::new(&spelled).unwrap().is_match(&name);
            proptest::prop_assert_eq!(matches(&pattern, &name), expected, "pattern {:?} name {:?}", pattern, name);
        }
    }
}
