//! Which URIs a resource template (RFC 6570 `uriTemplate`) can stand for: what a
//! `resources/read` of a held template looks like.
//!
//! The match is deliberately wide: every expression (`{id}`, `{+path}`, `{?q,page}`…)
//! stands for any run of characters, empty included, so that no spelling of a value (an
//! unencoded `/`, a query a server ignores) reads a held template. A concrete resource
//! whose URI happens to fit a held template is refused with it until the template is
//! approved; what is approved is read as before.
//!
//! A server may also read a URI loosely (a scheme or host in capitals, percent-encoded
//! letters, a query or fragment it ignores), so a URI fits when it fits as written or
//! once read that way: ignoring case, percent-escapes decoded, and without its query
//! and fragment.

/// True when `uri` fits `template`: its literal parts in order, anything for each
/// expression; as written, or both read loosely (see the module). A template whose
/// braces do not close is read literally after the open brace.
pub fn fits(template: &str, uri: &str) -> bool {
    let parts = literal_parts(template);
    if parts_fit(&parts, uri) {
        return true;
    }
    let loose_parts: Vec<String> = parts.iter().map(|part| loose(part)).collect();
    let loose_uri = loose(uri);
    let bare = loose_uri.split(['?', '#']).next().unwrap_or_default();
    parts_fit(&loose_parts, &loose_uri) || parts_fit(&loose_parts, bare)
}

/// `text` lower-cased with its percent-escapes decoded (invalid ones kept as written).
fn loose(text: &str) -> String {
    let decoded: Vec<u8> = percent_encoding::percent_decode(text.as_bytes()).collect();
    String::from_utf8_lossy(&decoded).to_lowercase()
}

/// The matching itself: the literal parts in order, the first at the start and the last
/// at the end.
fn parts_fit(parts: &[String], uri: &str) -> bool {
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
    fn a_uri_read_loosely_still_fits() {
        assert!(fits("mem://item/{id}", "MEM://item/7"));
        assert!(fits("mem://item/{id}", "mem://%69tem/7"));
        assert!(fits("mem://item/{id}", "mem://ITEM/7"));
        assert!(fits("repo://{owner}/issues", "repo://a/issues?page=2"));
        assert!(fits("repo://{owner}/issues", "repo://a/issues#top"));
        assert!(!fits("repo://{owner}/issues", "repo://a/pulls?x=issues"), "the query is not the path");
        assert!(!fits("mem://item/{id}", "mem://other/7"));
    }

    #[test]
    fn an_unclosed_brace_is_literal() {
        assert!(fits("mem://{id", "mem://{id"));
        assert!(!fits("mem://{id", "mem://42"));
    }

    proptest::proptest! {
        /// A URI made from a template by putting any text in place of each expression
        /// always fits it (the fuzz target `uri_template` checks the same on any bytes).
        #[test]
        fn an_expanded_template_fits(template in "[a-z:/{}?#%.]{0,24}", value in "[a-zA-Z0-9/?#%.{}]{0,8}") {
            let mut expanded = String::new();
            let mut rest = template.as_str();
            while let Some(open) = rest.find('{') {
                let Some(close) = rest[open..].find('}') else { break };
                expanded.push_str(&rest[..open]);
                expanded.push_str(&value);
                rest = &rest[open + close + 1..];
            }
            expanded.push_str(rest);
            proptest::prop_assert!(fits(&template, &expanded), "{} with {} gives {}", template, value, expanded);
        }
    }
}
