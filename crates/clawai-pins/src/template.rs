//! Which URIs a resource template (RFC 6570 `uriTemplate`) can stand for: what a
//! `resources/read` of a held template looks like.
//!
//! The match is deliberately wide: every expression (`{id}`, `{+path}`, `{?q,page}`…)
//! stands for any run of characters, empty included, so that no spelling of a value (an
//! unencoded `/`, a query a server ignores) reads a held template. A concrete resource
//! whose URI happens to fit a held template is refused with it until the template is
//! approved; what is approved is read as before.

/// True when `uri` fits `template`: its literal parts in order, anything for each
/// expression. A template whose braces do not close is read literally after the open
/// brace.
pub fn fits(template: &str, uri: &str) -> bool {
    let parts = literal_parts(template);
    let Some((first, rest)) = parts.split_first() else { return uri.is_empty() };
    let Some(mut remaining) = uri.strip_prefix(first.as_str()) else { return false };
    if rest.is_empty() {
        // No expression at all: the URI is the template.
        return remaining.is_empty();
    }
    let (last, middle) = rest.split_last().expect("rest is not empty");
    for literal in middle {
        match remaining.find(literal.as_str()) {
            // The leftmost place leaves the most room for what follows.
            Some(at) => remaining = &remaining[at + literal.len()..],
            None => return false,
        }
    }
    remaining.ends_with(last.as_str())
}

/// The template's literal text, split at each expression: `mem://{id}/x` → `["mem://", "/x"]`
/// (n expressions give n + 1 parts).
fn literal_parts(template: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        parts.last_mut().expect("one part at least").push_str(&rest[..open]);
        parts.push(String::new());
        rest = &rest[open + close + 1..];
    }
    parts.last_mut().expect("one part at least").push_str(rest);
    parts
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn every_expression_stands_for_any_value() {
        assert!(fits("mem://{id}", "mem://42"));
        assert!(fits("mem://{id}", "mem://"));
        assert!(fits("mem://{id}", "mem://a/b?c"), "an unencoded slash still reads the template");
        assert!(fits("file:///{+path}", "file:///etc/passwd"));
        assert!(fits("repo://{owner}/{repo}/issues{?state,page}", "repo://a/b/issues?state=open"));
        assert!(fits("repo://{owner}/{repo}/issues{?state,page}", "repo://a/b/issues"));
        assert!(fits("x://{a}{b}", "x://"));
    }

    #[test]
    fn literal_parts_must_all_be_there_in_order() {
        assert!(!fits("mem://{id}", "file:///42"));
        assert!(!fits("repo://{owner}/{repo}/issues", "repo://a/b/pulls"));
        assert!(!fits("repo://{owner}/issues/{n}", "repo://issues/a"));
        assert!(fits("repo://{owner}/issues/{n}", "repo://a/issues/7"));
        assert!(!fits("mem://fixed", "mem://fixed2"), "no expression: the whole URI");
        assert!(fits("mem://fixed", "mem://fixed"));
        assert!(!fits("a{x}a", "a"), "the first and last literal may not overlap");
        assert!(fits("a{x}a", "aa"));
    }

    #[test]
    fn an_unclosed_brace_is_literal() {
        assert!(fits("mem://{id", "mem://{id"));
        assert!(!fits("mem://{id", "mem://42"));
    }
}
