//! Other servers' tool names in a description (tool shadowing). The text is read once,
//! word by word, whatever the number of names: each identifier-like word is looked up
//! in a hash set, and only the words that could be a name at all.

use std::collections::HashSet;

use foldhash::fast::RandomState;

/// The lowercased tool names of other servers, without the plain single words
/// ("search", "read") that ordinary prose uses, and the words a server uses itself.
#[derive(Debug, Clone, Default)]
pub(crate) struct OtherNames {
    /// Names with a separator or a digit (`read_file`, `web.search`, `s3_put`): only
    /// words that have one too are looked up.
    marked: HashSet<String, RandomState>,
    /// Names distinctive only by an inner capital (`createIssue`), lowercased.
    camel: HashSet<String, RandomState>,
    /// Bit `n` set when some camel-case name is `n` bytes long (lengths over 63 share
    /// bit 63), so most plain words are never hashed.
    camel_lengths: u64,
}

impl OtherNames {
    pub(crate) fn new(names: &[&str]) -> Self {
        let mut others = OtherNames::default();
        for name in names.iter().filter(|name| distinctive(name)) {
            let lowered = name.to_ascii_lowercase();
            if lowered.bytes().any(is_mark) {
                others.marked.insert(lowered);
            } else {
                others.camel_lengths |= length_bit(lowered.len());
                others.camel.insert(lowered);
            }
        }
        others
    }

    /// Leaves out these (lowercased) names: a listing's own tools and words.
    pub(crate) fn exclude(&mut self, names: impl IntoIterator<Item = String>) {
        for name in names {
            self.marked.remove(&name);
            self.camel.remove(&name);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.marked.is_empty() && self.camel.is_empty()
    }

    /// The byte range of each name found in `lowered` (ASCII-lowercased text) for which
    /// `own` is false.
    pub(crate) fn find<'t>(
        &'t self,
        lowered: &'t str,
        own: impl Fn(&str) -> bool + 't,
    ) -> impl Iterator<Item = (usize, usize)> + 't {
        // Without camel-case names only words with a mark can match: found from their
        // marks, which are far fewer than letters, instead of word by word.
        let words: Box<dyn Iterator<Item = (usize, usize)> + 't> =
            if self.camel.is_empty() { Box::new(marked_words(lowered)) } else { Box::new(words(lowered)) };
        words.filter_map(move |(start, end)| {
            let word = &lowered[start..end];
            if !word.bytes().any(is_mark) {
                let known = self.camel_lengths & length_bit(word.len()) != 0 && self.camel.contains(word);
                return (known && !own(word)).then_some((start, end));
            }
            // The name itself, or the name behind a prefix that only says where it is
            // (`mcp_tool_send_email`, `github__create_issue`, `functions.read_file`).
            let namespaced = PREFIXES.iter().find(|p| word.starts_with(*p)).map(|p| p.len());
            let gateway = word.find("__").map(|at| at + 2);
            // `gmail.send_email`, `default_api.send_email`: what follows any dot.
            let dotted = word.match_indices('.').map(|(at, _)| Some(at + 1));
            [Some(0), namespaced, gateway]
                .into_iter()
                .chain(dotted)
                .flatten()
                .filter(|&at| at < word.len())
                .map(|at| (start + at, &word[at..]))
                .find(|(_, name)| name.bytes().any(is_mark) && self.marked.contains(*name))
                .filter(|(_, name)| !own(name))
                .map(|(at, _)| (at, end))
        })
    }
}

/// Prefixes that say where a tool is, not what it is: what follows is the tool's name.
const PREFIXES: [&str; 5] = ["mcp_tool_", "mcp__", "mcp_", "functions.", "tool_"];

/// A separator or digit: what makes a word an identifier rather than prose.
fn is_mark(b: u8) -> bool {
    matches!(b, b'_' | b'.' | b'-') || b.is_ascii_digit()
}

fn length_bit(len: usize) -> u64 {
    1 << len.min(63)
}

/// The identifier-like words of `text`: runs of `[A-Za-z0-9_.-]` of three bytes or more,
/// without leading or trailing dots and dashes (the end of a sentence, a list dash).
fn words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        loop {
            while at < bytes.len() && !is_word(bytes[at]) {
                at += 1;
            }
            if at >= bytes.len() {
                return None;
            }
            let mut start = at;
            while at < bytes.len() && is_word(bytes[at]) {
                at += 1;
            }
            let mut end = at;
            while start < end && matches!(bytes[start], b'.' | b'-') {
                start += 1;
            }
            while end > start && matches!(bytes[end - 1], b'.' | b'-') {
                end -= 1;
            }
            if end - start >= 3 {
                return Some((start, end));
            }
        }
    })
}

/// The words of [`words`] that have a mark, found from their marks.
fn marked_words(text: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        loop {
            let mark = at + bytes[at..].iter().position(|&b| BYTES[usize::from(b)] == MARK)?;
            let mut start = mark;
            while start > at && BYTES[usize::from(bytes[start - 1])] != OTHER {
                start -= 1;
            }
            let mut end = mark;
            while end < bytes.len() && BYTES[usize::from(bytes[end])] != OTHER {
                end += 1;
            }
            at = end;
            while start < end && matches!(bytes[start], b'.' | b'-') {
                start += 1;
            }
            while end > start && matches!(bytes[end - 1], b'.' | b'-') {
                end -= 1;
            }
            if end - start >= 3 && bytes[start..end].iter().any(|&b| is_mark(b)) {
                return Some((start, end));
            }
        }
    })
}

const OTHER: u8 = 0;
const LETTER: u8 = 1;
const MARK: u8 = 2;

/// What each byte is to a word: not part of one, a letter, or a mark.
static BYTES: [u8; 256] = {
    let mut class = [OTHER; 256];
    let mut b = 0;
    while b < 256 {
        let byte = b as u8;
        class[b] = if byte.is_ascii_digit() || byte == b'_' || byte == b'.' || byte == b'-' {
            MARK
        } else if byte.is_ascii_alphabetic() {
            LETTER
        } else {
            OTHER
        };
        b += 1;
    }
    class
};

fn is_word(b: u8) -> bool {
    BYTES[usize::from(b)] != OTHER
}

/// A name that cannot be an ordinary word: three characters or more of
/// `[A-Za-z0-9_.-]`, starting and ending with a letter or digit, with a separator, a
/// digit or an inner capital (`read_file`, `web.search`, `searchWeb`).
fn distinctive(name: &str) -> bool {
    let bytes = name.as_bytes();
    bytes.len() >= 3
        && bytes.iter().all(|&b| is_word(b))
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes[1..].iter().any(|&b| is_mark(b) || b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_identifiers_without_sentence_punctuation() {
        let text = "call send_email. then -x a.b.c web.search, ok... v2 s3_put";
        let found: Vec<&str> = words(text).map(|(s, e)| &text[s..e]).collect();
        assert_eq!(found, ["call", "send_email", "then", "a.b.c", "web.search", "s3_put"]);
        let marked: Vec<&str> = marked_words(text).map(|(s, e)| &text[s..e]).collect();
        assert_eq!(marked, ["send_email", "a.b.c", "web.search", "s3_put"]);
    }
}
