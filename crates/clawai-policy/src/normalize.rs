//! How argument values are read before they are matched.
//!
//! A server does not use a path as it is spelled: `/home/u/p/../../.ssh/id_rsa` opens
//! `/home/.ssh/id_rsa`, and a `file://` URI may be percent-encoded once or twice. The
//! engine therefore matches every *reading* of a string: as written, lexically
//! normalised, percent-decoded then normalised, as a URL parser cleans it, and a
//! `file:` URL in its canonical `file:///path` spelling. A deny, prompt or audit condition
//! holds when any reading matches; an allow condition only when every reading does.
//! Nothing here touches the filesystem, and the value forwarded is always the original.

use std::borrow::Cow;

use clawai_protocol::words;

use crate::call::FollowLinks;
use percent_encoding::percent_decode_str;

/// Rounds of percent-decoding before giving up (`%252e` needs two).
const MAX_DECODE_ROUNDS: usize = 8;

/// Every reading of `value` the engine matches, without duplicates, the original first.
pub fn readings(value: &str) -> Vec<Cow<'_, str>> {
    let mut out = vec![Cow::Borrowed(value)];
    if is_plain(value) {
        // Nothing to normalise or decode: the spelling is the only reading.
        return out;
    }
    let mut push = |s: String| {
        if !out.iter().any(|o| *o == s) {
            out.push(Cow::Owned(s));
        }
    };
    push(normalize(value));
    let decoded = decode_fully(value);
    push(normalize(&decoded));
    for text in [value, decoded.as_str()] {
        if let Some(nul) = text.find('\0') {
            // A server written in C opens the path up to its first NUL (`key.pem\0.txt`
            // opens `key.pem`); Node and Python refuse such a path.
            push(normalize(&text[..nul]));
        }
    }
    if let Some(trimmed) = trimmed_path(value) {
        // Servers often trim what the model sends (`.trim()`, `.strip()`, zod's `trim`).
        for reading in readings(trimmed) {
            push(reading.into_owned());
        }
    }
    if decoded.contains('\\') {
        // Windows-style separators, as a server on Windows would read them.
        push(normalize(&decoded.replace('\\', "/")));
    }
    for text in [value, decoded.as_str()] {
        let cleaned = as_url_parser_reads_it(text);
        if let Some(url) = &cleaned {
            push(normalize(url));
        }
        if let Some(file) = canonical_file_url(cleaned.as_deref().unwrap_or(text)) {
            if let Some(local) = without_host(&file) {
                push(local);
            }
            push(file);
        }
    }
    out
}

/// `value` as a URL parser (the WHATWG URL standard: Node's `URL`, browsers) reads it
/// before anything else: C0 controls and spaces around it dropped, tabs and line breaks
/// inside it removed. `None` when that changes nothing or leaves no `scheme:` in front:
/// a path is opened as spelled.
fn as_url_parser_reads_it(value: &str) -> Option<String> {
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    let cleaned: Cow<'_, str> = if trimmed.contains(['\t', '\n', '\r']) {
        Cow::Owned(trimmed.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect())
    } else {
        Cow::Borrowed(trimmed)
    };
    (cleaned != value && split_scheme(&cleaned).is_some()).then(|| cleaned.into_owned())
}

/// A `file:` URL in the one spelling every URL parser agrees on, `file:///path`, as
/// Node's `fileURLToPath` and Python's `url2pathname` read the others: `file:/etc/x`,
/// `file:etc/x`, `file://localhost/etc/x` and `file:\\\etc\x` all open `/etc/x`.
/// Query and fragment are dropped (they are not part of the file's name); a host other
/// than `localhost` is kept (a UNC share on Windows). `None` for other schemes.
fn canonical_file_url(value: &str) -> Option<String> {
    let (scheme, rest) = split_scheme(value)?;
    if !scheme.eq_ignore_ascii_case("file") {
        return None;
    }
    let rest = rest.replace('\\', "/");
    let rest = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    let (host, path) = match rest.strip_prefix("//") {
        Some(after) => after.split_at(after.find('/').unwrap_or(after.len())),
        None => ("", rest),
    };
    let host = if host.eq_ignore_ascii_case("localhost") { "" } else { host };
    Some(format!("file://{}{}", host.to_ascii_lowercase(), normalize_path(&format!("/{path}"))))
}

/// A canonical `file://host/path` URL without its host, `file:///path`: the file a
/// server opens when it takes the URL's path and ignores the host, as Python's
/// `urlparse(uri).path` and Node's `new URL(uri).pathname` do (`file://127.0.0.1/etc/x`,
/// `file://user@localhost/etc/x`). `None` when there is no host to drop.
fn without_host(file_url: &str) -> Option<String> {
    let after = file_url.strip_prefix("file://")?;
    let slash = after.find('/')?;
    (slash > 0).then(|| format!("file://{}", &after[slash..]))
}

/// Tests the names a server may open for `reading` that are not spellings of it, and
/// returns true when `test` holds for one: `~` and `~/x` in the home directory (servers
/// expand them, as server-filesystem does), the path `/x` of a `file:///x` URL (a
/// server that takes a URL where a path goes), when `as_file_url`, an absolute path
/// `/x` (or `~/x`) as `file:///x` (a server that takes a path where a URI goes), and,
/// with `follow_links`, where the path leads once symbolic links are followed, and a
/// relative path (`../../etc/x`, `.ssh/id_rsa`) in the working directory. Only
/// conditions that deny look at these: an allow must never match on a name the text
/// does not spell. The home and working directories are the proxy's: a stdio server
/// runs as the same user, in the directory it was started in.
pub(crate) fn other_names_match(
    reading: &str,
    as_file_url: bool,
    follow_links: Option<FollowLinks>,
    test: impl Fn(&str) -> bool,
) -> bool {
    let expanded;
    // The local path the reading names, and whether the reading is its `file:` URL.
    let (path, reading_is_url) = match reading.as_bytes().first() {
        Some(b'~') => {
            expanded = expand_home(reading, home_dir());
            match expanded.as_deref() {
                Some(path) if test(path) => return true,
                Some(path) => (path, false),
                None => return false,
            }
        }
        Some(b'/') => (reading, false),
        _ => match file_url_path(reading) {
            Some(path) if test(path) => return true,
            Some(path) => (path, true),
            None => {
                expanded = in_working_dir(reading, working_dir());
                match expanded.as_deref() {
                    Some(path) if test(path) => return true,
                    Some(path) => (path, false),
                    // A bare name (`notes.txt`) is not read as a path (prose would be), but
                    // a link of that name in the working directory is followed: a
                    // repository may hold `README -> ~/.ssh/id_rsa`.
                    None => {
                        let Some(follow) = follow_links else { return false };
                        let Some(path) = bare_name_in_working_dir(reading, working_dir()) else { return false };
                        return follow(&path)
                            .is_some_and(|real| test(&real) || (as_file_url && test(&format!("file://{real}"))));
                    }
                }
            }
        },
    };
    let as_url = |path: &str| as_file_url && test(&format!("file://{path}"));
    if !reading_is_url && as_url(path) {
        return true;
    }
    follow_links.and_then(|follow| follow(path)).is_some_and(|real| test(&real) || as_url(&real))
}

/// The local path `reading` names as spelled, and whether it is spelled as a `file:`
/// URL: `/x` and `file:///x`; `None` for anything else (`~` is not expanded: an allow
/// matches what is written).
pub(crate) fn spelled_path(reading: &str) -> Option<(&str, bool)> {
    match reading.as_bytes().first() {
        Some(b'/') => Some((reading, false)),
        Some(b'f' | b'F') => file_url_path(reading).map(|path| (path, true)),
        _ => None,
    }
}

/// The path of a `file:///path` URL as the readings spell it (no host).
fn file_url_path(reading: &str) -> Option<&str> {
    let prefix = reading.get(..7)?;
    let path = &reading[7..];
    (prefix.eq_ignore_ascii_case("file://") && path.starts_with('/')).then_some(path)
}

/// `~` or `~/x` with the home directory in place of `~`, normalised; `None` for other
/// text (`~user/x` included: clawai does not read the user database) or without a home.
fn expand_home(path: &str, home: Option<&str>) -> Option<String> {
    let rest = path.strip_prefix('~')?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    Some(normalize_path(&format!("{}{rest}", home?)))
}

/// A relative path in `dir`, normalised (`../../etc/x` in `/home/me/p` is `/etc/x`):
/// what a server opens for it when it resolves paths against its working directory.
/// `None` for text that does not read as a relative path: it must contain a `/` or
/// start with `.` (a bare word is rarely a path, and prose such as a message would
/// otherwise be read as one), and have neither a URL scheme or drive before its first
/// `/` (`https://…`, `C:/…`) nor control characters (multi-line text is not a path).
fn in_working_dir(text: &str, dir: Option<&str>) -> Option<String> {
    let first_component = text.split('/').next().unwrap_or_default();
    let path_like = (text.contains('/') || text.starts_with('.'))
        && !matches!(text.as_bytes().first(), None | Some(b'/' | b'~' | b'\\'))
        && !first_component.contains(':')
        && !text.chars().any(char::is_control);
    path_like.then(|| dir.map(|dir| normalize_path(&format!("{dir}/{text}")))).flatten()
}

/// `dir/name` for text that may name a file in `dir` by itself: one path component
/// (no `/`), not `.` or `..`, at most 255 bytes (the longest file name), without
/// whitespace or control characters (prose is not looked up).
fn bare_name_in_working_dir(text: &str, dir: Option<&str>) -> Option<String> {
    let name_like = !text.is_empty()
        && text.len() <= 255
        && text != "."
        && text != ".."
        && !text.contains('/')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control());
    name_like.then(|| dir.map(|dir| format!("{dir}/{text}"))).flatten()
}

/// The working directory when it is an absolute path in UTF-8, read once (the proxy
/// never changes it, and the server it starts inherits it).
fn working_dir() -> Option<&'static str> {
    static DIR: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| std::env::current_dir().ok().and_then(|d| d.into_os_string().into_string().ok()))
        .as_deref()
        .filter(|d| d.starts_with('/'))
}

/// `$HOME` when it is an absolute path, read once.
fn home_dir() -> Option<&'static str> {
    static HOME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    HOME.get_or_init(|| std::env::var("HOME").ok().filter(|h| h.starts_with('/'))).as_deref()
}

/// Whether `text`, its tabs and line breaks removed, starts with `scheme:` (what
/// [`split_scheme`] finds) and whether that scheme is `file`: `None` without a scheme,
/// `Some(true)` for `file:`. Found without copying `text`: only the characters up to
/// the first one that cannot be part of a scheme are looked at.
fn cleaned_scheme_is_file(text: &str) -> Option<bool> {
    let mut length = 0;
    let mut file_so_far = true;
    for c in text.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')) {
        match c {
            ':' => return (length >= 2).then_some(file_so_far && length == 4),
            c if c.is_ascii_alphabetic() || (length > 0 && (c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))) => {
                file_so_far &= "file".as_bytes().get(length).is_some_and(|f| c.eq_ignore_ascii_case(&char::from(*f)));
                length += 1;
            }
            _ => return None,
        }
    }
    None
}

/// `value` without the blanks and control characters around it, when it has some and is
/// one line of text: what a server that trims its arguments opens. `None` otherwise
/// (multi-line text, such as a file's contents, is not a path).
fn trimmed_path(value: &str) -> Option<&str> {
    let blank = |c: char| c.is_whitespace() || c.is_control() || c == '\u{FEFF}';
    let edges = [value.chars().next(), value.chars().next_back()];
    if !edges.into_iter().flatten().any(blank) {
        return None;
    }
    let trimmed = value.trim_matches(blank);
    (!trimmed.is_empty() && !trimmed.contains(['\n', '\r'])).then_some(trimmed)
}

/// True when no other reading of `value` can differ from it: no percent-escape, no
/// backslash, no NUL, no empty, `.` or `..` path segment (a leading `/` and a trailing `/` are
/// fine), not a URL with blanks around or breaks inside, not a `file:` URL, no blanks
/// around one line of text. Most argument
/// values are like this, and need no copies.
pub(crate) fn is_plain(value: &str) -> bool {
    let bytes = value.as_bytes();
    if trimmed_path(value).is_some() {
        return false;
    }
    let trimmed = value.trim_matches(|c: char| c <= ' ');
    if let Some(is_file) = cleaned_scheme_is_file(trimmed) {
        // A URL: a `file:` one has its canonical reading, any other one the reading a
        // URL parser makes when there are blanks around it or breaks inside. (Text with
        // line breaks, as file contents have, is not a URL and stays plain.)
        if is_file || trimmed.len() != value.len() || memchr::memchr3(b'\t', b'\n', b'\r', bytes).is_some() {
            return false;
        }
    }
    // A `.`/`..` segment starts the text or follows a `/`, and an empty one is `//`: when
    // no `/` is followed by `/` or `.` and the text does not start with `.`, neither can
    // be there. That is the usual path, and it is checked eight bytes at a time; anything
    // suspect gets the exact test.
    if bytes.first() == Some(&b'.') || bytes == b"/" || may_need_reading(bytes) {
        return !bytes.contains(&b'%') && !bytes.contains(&b'\\') && !bytes.contains(&0) && segments_are_plain(bytes);
    }
    true
}

/// False only when `bytes` has no `%`, no `\\`, no NUL and no `/` followed by `/` or `.`; true
/// when it may have one (the word trick below can flag a byte that is not one, never
/// miss one).
fn may_need_reading(bytes: &[u8]) -> bool {
    let equal = words::bytes_equal;
    let pair_or_escape = |here: u64, next: u64| {
        // `here` holds bytes i..i+8 and `next` bytes i+1..i+9: a `/` in `here` lines up
        // with the byte after it in `next`.
        equal(here, b'%')
            | equal(here, b'\\')
            | equal(here, 0)
            | (equal(here, b'/') & (equal(next, b'/') | equal(next, b'.')))
    };
    let word = |at: usize| words::load(&bytes[at..at + 8]);
    let mut i = 0;
    while i + 9 <= bytes.len() {
        if pair_or_escape(word(i), word(i + 1)) != 0 {
            return true;
        }
        i += 8;
    }
    // The last bytes (at most eight) the same way, padded with `a`, which no test
    // flags: a loop over them byte by byte cost more than all the words before.
    let padded = |from: usize| words::load_padded(bytes.get(from..).unwrap_or_default(), b'a');
    pair_or_escape(padded(i), padded(i + 1)) != 0
}

/// The exact test of [`is_plain`] once `%` and `\\` are ruled out.
fn segments_are_plain(bytes: &[u8]) -> bool {
    // One pass over the bytes (every argument string of every decided call comes here):
    // `segment` counts the bytes of the current segment and `dots` how many of them are
    // `.`, so that an empty, `.` or `..` segment is seen when its `/` arrives.
    let mut segment = 0usize;
    let mut dots = 0usize;
    let mut slashes = 0usize;
    let dot_segment = |segment: usize, dots: usize| dots == segment && dots <= 2;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'/' => {
                // The empty segment before a leading `/` is fine; any other is `//`.
                if i > 0 && dot_segment(segment, dots) {
                    return false;
                }
                slashes += 1;
                segment = 0;
                dots = 0;
            }
            b'.' => {
                segment += 1;
                dots += 1;
            }
            _ => segment += 1,
        }
    }
    // An empty last segment is a trailing `/`: fine, unless `/` is all there is.
    slashes == 0 || if segment == 0 { bytes.len() > 1 } else { !dot_segment(segment, dots) }
}

/// Percent-decodes until the text stops changing (bounded).
pub fn decode_fully(value: &str) -> String {
    let mut current = value.to_owned();
    for _ in 0..MAX_DECODE_ROUNDS {
        if !current.contains('%') {
            break;
        }
        let next = percent_decode_str(&current).decode_utf8_lossy().into_owned();
        if next == current {
            break;
        }
        current = next;
    }
    current
}

/// Lexically normalises a path or the path part of a URI: `.` and `..` resolved,
/// repeated `/` collapsed. Strings without `/` come back unchanged.
pub fn normalize(value: &str) -> String {
    if !value.contains('/') {
        return value.to_owned();
    }
    if let Some((scheme, rest)) = split_scheme(value) {
        // scheme://authority/path?query#fragment: normalise only the path.
        if let Some(after) = rest.strip_prefix("//") {
            let (authority, path_and_more) = match after.find('/') {
                Some(i) => after.split_at(i),
                None => (after, ""),
            };
            let cut = path_and_more.find(['?', '#']).unwrap_or(path_and_more.len());
            let (path, tail) = path_and_more.split_at(cut);
            let path = if path.is_empty() { String::new() } else { normalize_path(path) };
            return format!("{scheme}://{authority}{path}{tail}");
        }
        if scheme.eq_ignore_ascii_case("file") {
            return format!("{scheme}:{}", normalize_path(rest));
        }
        return value.to_owned();
    }
    normalize_path(value)
}

fn split_scheme(value: &str) -> Option<(&str, &str)> {
    let colon = value.find(':')?;
    let scheme = &value[..colon];
    let valid = scheme.len() >= 2
        && scheme.starts_with(|c: char| c.is_ascii_alphabetic())
        && scheme.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| (scheme, &value[colon + 1..]))
}

/// Resolves `.` and `..` and collapses `//` in a slash-separated path. `..` above the
/// root of an absolute path stays at the root; a relative path keeps its leading `..`.
pub fn normalize_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/') && path.len() > 1;
    let mut parts: Vec<&str> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => match parts.last() {
                Some(&last) if last != ".." => {
                    parts.pop();
                }
                _ if absolute => {}
                _ => parts.push(".."),
            },
            s => parts.push(s),
        }
    }
    let mut out = String::with_capacity(path.len());
    if absolute {
        out.push('/');
    }
    out.push_str(&parts.join("/"));
    if trailing && !parts.is_empty() {
        out.push('/');
    }
    if out.is_empty() {
        out.push('.');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_segments_and_slashes() {
        assert_eq!(normalize("/home/u/projects/../../.ssh/id_rsa"), "/home/.ssh/id_rsa");
        assert_eq!(normalize("/a//b/./c/"), "/a/b/c/");
        assert_eq!(normalize("/../../etc/passwd"), "/etc/passwd");
        assert_eq!(normalize("a/../../b"), "../b");
        assert_eq!(normalize("./x"), "x");
        assert_eq!(normalize("~/.ssh/../.ssh/id_rsa"), "~/.ssh/id_rsa");
        assert_eq!(normalize("no slashes here"), "no slashes here");
    }

    #[test]
    fn uris() {
        assert_eq!(normalize("file:///home/u/../../etc/passwd"), "file:///etc/passwd");
        assert_eq!(normalize("file://localhost//etc/./shadow"), "file://localhost/etc/shadow");
        assert_eq!(normalize("https://h/a/../b?x=../y"), "https://h/b?x=../y");
        assert_eq!(normalize("file:/etc/../root"), "file:/root");
    }

    #[test]
    fn percent_encoding_single_and_double() {
        let has = |value: &str, reading: &str| readings(value).iter().any(|r| r == reading);
        assert!(has("/home/u/%2e%2e/%2e%2e/.ssh/id_rsa", "/.ssh/id_rsa"));
        assert!(has("/home/u/x/%252e%252e/%252e%252e/.ssh", "/home/.ssh"));
        assert!(has("file:///etc%2fpasswd", "file:///etc/passwd"));
        assert_eq!(readings("plain")[0], "plain");
        assert_eq!(readings("plain").len(), 1);
        assert_eq!(readings("/already/normal/path").len(), 1);
        assert_eq!(readings("/trailing/").len(), 1);
        for odd in ["/a//b", "/a/./b", "/a/../b", "./a", "a/..", "//", "/", "file:///x"] {
            assert!(readings(odd).iter().any(|r| *r == normalize(odd)), "{odd}");
        }
    }

    /// `is_plain` as first written: the meaning the one-pass version must keep.
    fn is_plain_reference(value: &str) -> bool {
        let around = |c: char| c.is_whitespace() || c.is_control() || c == '\u{FEFF}';
        let trimmed = value.trim_matches(around);
        if trimmed != value && !trimmed.is_empty() && !trimmed.contains(['\n', '\r']) {
            return false;
        }
        // What a URL parser reads: blanks around dropped, tabs and line breaks removed.
        let cleaned: String =
            value.trim_matches(|c: char| c <= ' ').chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
        if value.contains(['%', '\\', '\0'])
            || (cleaned != value && split_scheme(&cleaned).is_some())
            || cleaned.to_ascii_lowercase().starts_with("file:")
        {
            return false;
        }
        if !value.contains('/') {
            return true;
        }
        let inner = value.strip_prefix('/').unwrap_or(value);
        let inner = inner.strip_suffix('/').unwrap_or(inner);
        !inner.is_empty() && inner.split('/').all(|segment| !matches!(segment, "" | "." | ".."))
    }

    #[test]
    fn is_plain_edge_cases() {
        for (value, plain) in [
            ("", true),
            (".", true),
            ("/", false),
            ("//", false),
            ("/a/", true),
            ("a/", true),
            ("a//", false),
            ("//a", false),
            ("./a", false),
            ("a/..", false),
            ("a/...", true),
            ("/.", false),
            ("/a/./b", false),
            ("/home/u/file.txt", true),
            ("/a/%2e", false),
            ("C:\\x", false),
            (" /etc/passwd", false),
            ("/etc/passwd\t", false),
            ("\u{a0}/etc", false),
            (" ", true),
            ("a\nb\n", true),
        ] {
            assert_eq!(is_plain(value), plain, "{value:?}");
            assert_eq!(is_plain_reference(value), plain, "{value:?}");
        }
    }

    /// Every suspect byte pair at every position of texts up to 26 bytes: the word test
    /// reads the last bytes of a text padded, and must not miss one there either.
    #[test]
    fn a_suspect_pair_is_seen_at_every_position() {
        for length in 2..=26 {
            for at in 1..=length - 2 {
                for suspect in ["//", "/./", "%2", "\\x"] {
                    let mut value = "a".repeat(at) + suspect;
                    value.push_str(&"b".repeat(length - value.len().min(length)));
                    assert!(!is_plain(&value), "{value:?}");
                    assert_eq!(is_plain(&value), is_plain_reference(&value), "{value:?}");
                }
                let clean = "a/".repeat(length / 2);
                assert!(is_plain(&clean), "{clean:?}");
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4000))]
        #[test]
        fn is_plain_agrees_with_the_reference(value in "[ \n]?(file:|FiLe:|fi\tle:|fil|ab:|a\nb:|ht/\tt:)?[/.a%\\\\é \t\n:+\\x00]{0,40}") {
            proptest::prop_assert_eq!(is_plain(&value), is_plain_reference(&value), "{:?}", value);
        }
    }

    #[test]
    fn file_urls_are_read_as_url_parsers_read_them() {
        let has = |value: &str, reading: &str| readings(value).iter().any(|r| r == reading);
        for spelled in [
            "file:///etc/shadow",
            "file://localhost/etc/shadow",
            "File://LOCALHOST/etc/shadow",
            "file:/etc/shadow",
            "file:etc/shadow",
            "file:////etc/shadow",
            " file:///etc/shadow",
            "file:///etc/shadow\n",
            "\u{0}file:/etc/shadow",
            "fi\tle:///et\nc/sha\r\ndow",
            "file:\\\\\\etc\\shadow",
            "file://localhost/%65tc/shadow",
            "file:///etc/shadow?x=1",
            "file:///etc/shadow#top",
            "file://localhost/tmp/../etc/shadow",
        ] {
            assert!(has(spelled, "file:///etc/shadow"), "{spelled:?}: {:?}", readings(spelled));
            assert!(!is_plain(spelled), "{spelled:?}");
        }
        // Another host is kept (a UNC share on Windows), and also dropped: servers that
        // take the URL's path open the local file whatever the host says.
        for spelled in ["file://127.0.0.1/etc/shadow", "file://[::1]/etc/shadow", "file://user@localhost/etc/shadow"] {
            assert!(has(spelled, "file:///etc/shadow"), "{spelled:?}: {:?}", readings(spelled));
        }
        assert!(has("file://Server/share/../x", "file://server/x"));
        assert!(has("file://Server/share/../x", "file:///x"));
        // Other schemes are trimmed the way URL parsers trim them, not rewritten.
        assert!(has(" https://h/a\tb ", "https://h/ab"));
        // A blank around a path is part of its name to the system, but servers often
        // trim what they are sent: one line of text is also read without them.
        assert_eq!(readings(" /etc/shadow"), [" /etc/shadow", "/etc/shadow"]);
        assert_eq!(readings("/etc/shadow\n"), ["/etc/shadow\n", "/etc/shadow"]);
        assert_eq!(
            readings("\u{feff}/etc/%73hadow\t"),
            ["\u{feff}/etc/%73hadow\t", "\u{feff}/etc/shadow\t", "/etc/%73hadow", "/etc/shadow"]
        );
        // Text over several lines is no path.
        assert!(is_plain("a b\nc: d") && is_plain("line 1\nline 2\n") && !is_plain(" indented"));
        // Inside a URL too: `https:/\t/h/x` is `https://h/x`.
        assert!(has("https:/\t/evil.example/x", "https://evil.example/x"));
    }

    #[test]
    fn other_names_are_the_home_directory_and_the_other_side_of_file_urls() {
        let names = |reading: &str, as_file_url: bool| {
            let seen = std::cell::RefCell::new(Vec::new());
            other_names_match(reading, as_file_url, None, |name| {
                seen.borrow_mut().push(name.to_owned());
                false
            });
            seen.into_inner()
        };
        let home = home_dir().map(str::to_owned);
        let in_home = |rest: &str| home.as_ref().map(|h| normalize_path(&format!("{h}/{rest}")));
        assert_eq!(names("~/.ssh/id_rsa", false), in_home(".ssh/id_rsa").into_iter().collect::<Vec<_>>());
        assert_eq!(
            names("~/.ssh/id_rsa", true),
            in_home(".ssh/id_rsa").into_iter().flat_map(|p| [p.clone(), format!("file://{p}")]).collect::<Vec<_>>()
        );
        assert_eq!(names("file:///etc/shadow", false), ["/etc/shadow"]);
        assert_eq!(names("FILE:///etc/shadow", true), ["/etc/shadow"]);
        assert_eq!(names("/etc/shadow", true), ["file:///etc/shadow"]);
        assert!(names("/etc/shadow", false).is_empty());
        // A host is not a path, other schemes and bare words have no other name, and
        // `~user` is left alone.
        for text in ["file://server/x", "https://h/x", "shadow", "~root/.ssh", "~x"] {
            assert!(names(text, true).is_empty(), "{text:?}");
        }
        // A relative path is also the path in the working directory.
        let in_cwd = working_dir().map(|d| normalize_path(&format!("{d}/../etc/shadow")));
        assert_eq!(names("../etc/shadow", false), in_cwd.into_iter().collect::<Vec<_>>());
        assert_eq!(expand_home("~", Some("/home/u")).as_deref(), Some("/home/u"));
        assert_eq!(expand_home("~/", Some("/home/u/")).as_deref(), Some("/home/u/"));
        assert_eq!(expand_home("~/a/../.ssh", Some("/home/u")).as_deref(), Some("/home/u/.ssh"));
        assert_eq!(expand_home("~/x", None), None);
    }

    #[test]
    fn relative_paths_are_read_in_the_working_directory() {
        let dir = Some("/home/me/p");
        for (text, path) in [
            ("../../etc/passwd", "/home/etc/passwd"),
            ("../../../etc/passwd", "/etc/passwd"),
            ("../../../../../../etc/passwd", "/etc/passwd"),
            ("../.ssh/id_rsa", "/home/me/.ssh/id_rsa"),
            ("./src/../.env", "/home/me/p/.env"),
            (".env", "/home/me/p/.env"),
            ("..", "/home/me"),
            ("docs/a b.md", "/home/me/p/docs/a b.md"),
        ] {
            assert_eq!(in_working_dir(text, dir).as_deref(), Some(path), "{text:?}");
        }
        // Not read as relative paths: absolute ones, `~`, URLs and drives, bare words,
        // prose over several lines, and without a working directory.
        for text in ["/etc/passwd", "~/x", "https://h/x", "C:/Windows", "c:\\x/y", "word", "a b", "line 1/\nline 2", ""]
        {
            assert_eq!(in_working_dir(text, dir), None, "{text:?}");
        }
        assert_eq!(in_working_dir("../x", None), None);
    }

    #[test]
    fn a_bare_name_is_looked_up_only_when_it_may_name_a_file() {
        let dir = Some("/home/me/p");
        for name in ["README", "notes.txt", "id_rsa", ".env", "ünïcode"] {
            assert_eq!(bare_name_in_working_dir(name, dir), Some(format!("/home/me/p/{name}")), "{name:?}");
        }
        for text in ["", ".", "..", "a b", "line\nbreak", "a/b", &"x".repeat(256)] {
            assert_eq!(bare_name_in_working_dir(text, dir), None, "{text:?}");
        }
        assert_eq!(bare_name_in_working_dir("README", None), None);
    }

    #[test]
    fn a_link_under_a_bare_name_is_followed_by_deny_conditions() {
        let dir = working_dir().expect("the tests run in an absolute directory");
        // What `follow` reports for the link `dir/README` (the file system is not touched).
        fn follow(path: &str) -> Option<String> {
            path.ends_with("/README").then(|| "/home/me/.ssh/id_rsa".to_owned())
        }
        let is_key = |p: &str| p.ends_with("/.ssh/id_rsa");
        assert!(other_names_match("README", false, Some(follow), is_key));
        assert!(!other_names_match("README", false, None, is_key), "links are followed only when asked");
        assert!(!other_names_match("LICENSE", false, Some(follow), is_key));
        assert!(!other_names_match("see the README", false, Some(follow), is_key), "prose is not looked up");
        assert!(dir.starts_with('/'));
    }

    #[test]
    fn a_nul_ends_the_path_a_c_server_opens() {
        let has = |value: &str, reading: &str| readings(value).iter().any(|r| r == reading);
        assert!(!is_plain("/x/key.pem\0.txt") && !is_plain("/x/a\0") && !is_plain("\0"));
        assert!(has("/x/key.pem\0.txt", "/x/key.pem"));
        assert!(has("/x/key.pem%00.txt", "/x/key.pem"));
        assert!(has("/srv/x\0/../../etc/passwd", "/etc/passwd"), "the rest is read too");
    }

    #[test]
    fn backslashes_are_read_as_separators_too() {
        assert!(readings("C:\\Users\\u\\.ssh\\id_rsa").iter().any(|r| r == "C:/Users/u/.ssh/id_rsa"));
    }
}
