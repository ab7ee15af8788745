//! `${VAR}` in `env` and `headers` values, read from the gateway's environment.

/// Why a value could not be expanded.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ExpandError {
    /// `${NAME}` with `NAME` not set (and no `:-default`).
    Unset(String),
    /// `${` with no `}` after it.
    Unterminated,
    /// `${…}` whose inside is not a variable name.
    NotAName(String),
}

/// Replaces every `${NAME}` with `NAME`'s value, and `${NAME:-default}` with the value
/// or, when `NAME` is unset or empty, `default` (the form Claude Code's `.mcp.json`
/// files use). A `$` not followed by `{` stays as it is. What a variable holds is not
/// expanded again: a value containing `${X}` is passed on as it is.
pub(super) fn expand(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or(ExpandError::Unterminated)?;
        let inside = &after[..end];
        let (name, default) = match inside.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inside, None),
        };
        if !is_variable_name(name) {
            return Err(ExpandError::NotAName(inside.to_owned()));
        }
        match (lookup(name), default) {
            (Some(value), Some(default)) if value.is_empty() => out.push_str(default),
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(default),
            (None, None) => return Err(ExpandError::Unset(name.to_owned())),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A POSIX shell variable name: a letter or `_`, then letters, digits and `_`.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cret".to_owned()),
            "EMPTY" => Some(String::new()),
            "TRICKY" => Some("${TOKEN}".to_owned()),
            _ => None,
        }
    }

    #[test]
    fn variables_are_replaced_by_their_values() {
        assert_eq!(expand("Bearer ${TOKEN}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand("${TOKEN}${TOKEN}-x", &env).unwrap(), "s3crets3cret-x");
        assert_eq!(expand("${EMPTY}", &env).unwrap(), "");
    }

    #[test]
    fn text_without_a_brace_after_the_dollar_stays_literal() {
        assert_eq!(expand("a $TOKEN costs $5 {x} $", &env).unwrap(), "a $TOKEN costs $5 {x} $");
    }

    #[test]
    fn a_value_is_not_expanded_twice() {
        assert_eq!(expand("${TRICKY}", &env).unwrap(), "${TOKEN}");
    }

    #[test]
    fn defaults_apply_when_unset_or_empty() {
        assert_eq!(expand("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${EMPTY:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand("${TOKEN:-fallback}", &env).unwrap(), "s3cret");
        assert_eq!(expand("${NOPE:-}", &env).unwrap(), "");
    }

    #[test]
    fn an_unset_variable_is_named() {
        assert_eq!(expand("x ${TOKEN} ${MISSING}", &env), Err(ExpandError::Unset("MISSING".to_owned())));
    }

    #[test]
    fn an_unterminated_reference_is_refused() {
        assert_eq!(expand("Bearer ${TOKEN", &env), Err(ExpandError::Unterminated));
        assert_eq!(expand("${TOKEN} ${", &env), Err(ExpandError::Unterminated));
    }

    #[test]
    fn what_is_not_a_name_is_refused() {
        assert_eq!(expand("${}", &env), Err(ExpandError::NotAName(String::new())));
        assert_eq!(expand("${A B}", &env), Err(ExpandError::NotAName("A B".to_owned())));
        assert_eq!(expand("${1X}", &env), Err(ExpandError::NotAName("1X".to_owned())));
    }
}
