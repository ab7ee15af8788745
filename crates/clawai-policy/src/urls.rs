//! URLs as a URL parser reads them.
//!
//! A server that fetches `HTTP://user@EVIL.example.:80/` connects to `evil.example`: the
//! WHATWG URL parser (Node's `URL` and `fetch`, browsers, and the libraries that follow
//! it) lowercases the scheme and host, decodes percent-escapes in the host, maps an
//! international name to its ASCII form (IDNA), reads IPv4 addresses in their other
//! spellings (`0x7f.1` is `127.0.0.1`) and drops the default port; the userinfo before
//! `@` names nobody's host, and DNS ignores a trailing dot. Deny-like conditions also see
//! that reading ([`canonical_url`]); host conditions (`args_host`, `any_arg_host`) match
//! the host it yields ([`host`]).

use std::fmt;

use url::{Host, Url};

/// `value` as a URL parser reads it, without userinfo and without the trailing dot of
/// its host, when it is a URL with a host (other than `file:`, which has readings of its
/// own) and that reading differs from `value`.
pub(crate) fn canonical_url(value: &str) -> Option<String> {
    if !may_be_url(value) {
        return None;
    }
    let url = Url::parse(value).ok().filter(|u| u.scheme() != "file" && u.host().is_some())?;
    let text = without_userinfo_and_dot(url).to_string();
    (text != value).then_some(text)
}

/// The host `value` names as a URL parser reads it (lowercased, IDNA to ASCII, IPv4 in
/// dotted decimal, IPv6 in brackets), without a trailing dot. Text without a scheme is
/// read as what follows `http://` (`evil.example:8080/x` names `evil.example`), as an
/// HTTP client given a bare host does. `None` when no host can be read.
pub(crate) fn host(value: &str) -> Option<String> {
    let parsed = match Url::parse(value) {
        Ok(url) if url.host().is_some() => Some(url),
        // `localhost:8080` parses with the scheme `localhost` and no host.
        Ok(url) if !url.path().starts_with(|c: char| c.is_ascii_digit()) => None,
        _ if looks_like_bare_host(value) => Url::parse(&format!("http://{value}")).ok(),
        _ => None,
    }?;
    let host = parsed.host_str()?;
    let host = host.trim_end_matches('.');
    (!host.is_empty()).then(|| host.to_owned())
}

/// The host an RFC 3986 parser reads in `value` (Python's `urllib.parse`, Go's
/// `net/url`, curl), which can differ from a WHATWG parser's: the authority runs to the
/// first `/`, `?` or `#` (a `\` is part of it), and the host follows its last `@`.
/// `http://docs.example\@evil.example/` names `docs.example` to Node and
/// `evil.example` to Python. Lowercased, without port or trailing dot; `None` without
/// `scheme://` or when the host is empty.
pub(crate) fn rfc3986_host(value: &str) -> Option<String> {
    let value = value.trim_matches(|c: char| c <= ' ');
    let (scheme, rest) = value.split_once("://")?;
    if scheme.len() < 2 || !scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')) {
        return None;
    }
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if host_port.starts_with('[') {
        &host_port[..host_port.find(']').map_or(host_port.len(), |end| end + 1)]
    } else {
        match host_port.rsplit_once(':') {
            Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
            _ => host_port,
        }
    };
    let host = host.trim_end_matches('.').to_lowercase();
    (!host.is_empty()).then_some(host)
}

/// `value` with the host an RFC 3986 parser reads in place of its authority
/// (`http://evil.example/x` for `http://docs.example\@evil.example/x`), when that
/// differs from what the WHATWG reading gives.
pub(crate) fn rfc3986_url(value: &str) -> Option<String> {
    let host = rfc3986_host(value)?;
    if self::host(value).as_deref() == Some(host.as_str()) {
        return None;
    }
    let value = value.trim_matches(|c: char| c <= ' ');
    let (scheme, rest) = value.split_once("://")?;
    let tail = &rest[rest.find(['/', '?', '#']).unwrap_or(rest.len())..];
    Some(format!("{}://{host}{tail}", scheme.to_ascii_lowercase()))
}

/// A host glob as written in a policy, in the form hosts are matched in: lowercase, and
/// each label that is not a wildcard in its ASCII (IDNA) form, so `*.bücher.example`
/// matches the `xn--bcher-kva.example` a URL parser makes of it.
pub(crate) fn host_pattern(pattern: &str) -> Result<String, InvalidHost> {
    let mut labels = Vec::new();
    for label in pattern.trim_end_matches('.').split('.') {
        let wild = label.contains(['*', '?', '[', ']', '{', '}', ',']);
        // Checked with its wildcards as letters: `*` is a legal host character, but `/`,
        // `@`, `:` or a blank would make a pattern no parsed host can ever match.
        let as_host = if wild { label.replace(['*', '?', '[', ']', '{', '}', ','], "a") } else { label.to_owned() };
        match Host::parse(&as_host) {
            Ok(Host::Domain(ascii)) if !wild => labels.push(ascii),
            Ok(Host::Domain(_)) => labels.push(label.to_lowercase()),
            // A label of digits parses as an IPv4 address; keep it as written.
            Ok(_) if label.bytes().all(|b| b.is_ascii_digit()) => labels.push(label.to_owned()),
            _ => return Err(InvalidHost(label.to_owned())),
        }
    }
    Ok(labels.join("."))
}

/// A label of a host pattern that no URL parser would accept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InvalidHost(String);

impl fmt::Display for InvalidHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` is not a valid host name label", self.0)
    }
}

/// A host (`evil.example`, `evil.example:8080/x`) without a scheme, not a path or text.
fn looks_like_bare_host(value: &str) -> bool {
    !value.is_empty()
        && !value.starts_with(['/', '\\', '.', '~'])
        && !value.contains("://")
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Cheap test before parsing: a scheme of two or more characters before the first `:`.
/// Most strings (paths, prose, identifiers) fail it without a parse.
fn may_be_url(value: &str) -> bool {
    let Some(colon) = memchr::memchr(b':', value.as_bytes()) else { return false };
    let scheme = value[..colon].trim_start_matches(|c: char| c <= ' ');
    scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.' | b'\t' | b'\n' | b'\r'))
}

fn without_userinfo_and_dot(mut url: Url) -> Url {
    // Both only fail for URLs that cannot have userinfo, which then have none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if let Some(Host::Domain(domain)) = url.host() {
        let trimmed = domain.trim_end_matches('.');
        if trimmed.len() != domain.len() && !trimmed.is_empty() {
            let trimmed = trimmed.to_owned();
            let _ = url.set_host(Some(&trimmed));
        }
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_spelling_of_one_host_reads_as_that_host() {
        for spelled in [
            "http://user@evil.example/",
            "http://%75ser@evil.example/",
            "http://user:pw@evil.example/",
            "http://evil.example./",
            "http://evil.example:80/",
            "HTTP://EVIL.EXAMPLE/",
            "http://%65vil.example/",
            "http://evil.example",
            "http:evil.example/",
            "http:\\\\evil.example\\",
            " http://evil.example/",
        ] {
            assert_eq!(canonical_url(spelled).as_deref(), Some("http://evil.example/"), "{spelled}");
            assert_eq!(host(spelled).as_deref(), Some("evil.example"), "{spelled}");
        }
        assert_eq!(canonical_url("http://evil.example/"), None, "already canonical");
        assert_eq!(canonical_url("https://evil.example:443/a/../b"), Some("https://evil.example/b".into()));
        assert_eq!(canonical_url("https://evil.example:8443/"), None, "a port that is not the default stays");
    }

    #[test]
    fn international_names_and_ip_spellings_read_as_a_parser_reads_them() {
        assert_eq!(host("https://bücher.example/").as_deref(), Some("xn--bcher-kva.example"));
        assert_eq!(host("https://ｅｖｉｌ.example/").as_deref(), Some("evil.example"), "full-width letters");
        assert_eq!(host("http://0x7f.1/").as_deref(), Some("127.0.0.1"));
        assert_eq!(host("http://2130706433/").as_deref(), Some("127.0.0.1"));
        assert_eq!(host("http://[::1]:8080/").as_deref(), Some("[::1]"));
    }

    #[test]
    fn a_bare_host_is_read_as_an_http_client_reads_it() {
        assert_eq!(host("evil.example").as_deref(), Some("evil.example"));
        assert_eq!(host("evil.example:8080/x").as_deref(), Some("evil.example"));
        assert_eq!(host("localhost:8080").as_deref(), Some("localhost"));
        assert_eq!(host("/etc/passwd"), None);
        assert_eq!(host("two words"), None);
        assert_eq!(host("mailto:a@evil.example"), None, "a URL without a host names none");
    }

    #[test]
    fn parsers_that_disagree_on_the_authority_are_both_read() {
        let split = "http://docs.example\\@evil.example/x";
        assert_eq!(host(split).as_deref(), Some("docs.example"), "WHATWG: a backslash ends the authority");
        assert_eq!(rfc3986_host(split).as_deref(), Some("evil.example"), "RFC 3986: the host follows the last @");
        assert_eq!(rfc3986_url(split).as_deref(), Some("http://evil.example/x"));
        assert_eq!(rfc3986_host("HTTPS://User@Evil.Example.:8443/a").as_deref(), Some("evil.example"));
        assert_eq!(rfc3986_host("http://[::1]:80/").as_deref(), Some("[::1]"));
        assert_eq!(rfc3986_url("https://evil.example/a"), None, "both parsers agree");
        assert_eq!(rfc3986_host("/etc/passwd"), None);
    }

    #[test]
    fn non_urls_have_no_url_reading() {
        for text in ["/etc/passwd", "hello", "note: hi", "file:///etc/passwd", "C:/x", "mailto:a@b.example"] {
            assert_eq!(canonical_url(text), None, "{text}");
        }
    }

    #[test]
    fn host_patterns_are_lowercase_ascii() {
        assert_eq!(host_pattern("*.Bücher.Example.").unwrap(), "*.xn--bcher-kva.example");
        assert_eq!(host_pattern("EVIL.example").unwrap(), "evil.example");
        assert!(host_pattern("a b.example").is_err());
    }

    proptest::proptest! {
        /// Any text, URL-like or not: a reading or none, never a panic, and a reading is
        /// stable (reading it again changes nothing).
        #[test]
        fn any_text_reads_without_panicking(text in "(?s)(https?|HTTP|ftp|file|x)?:?/{0,3}[ -~\\u{80}-\\u{10FFFF}]{0,40}") {
            if let Some(url) = canonical_url(&text) {
                proptest::prop_assert_eq!(canonical_url(&url), None, "{} read as {}", text, url);
            }
            let _ = host(&text);
            let _ = host_pattern(&text);
        }
    }
}
