//! The strings of a JSON text, found without parsing it: what the results stage reads
//! of a result that can be many MiB.

use std::borrow::Cow;

use crate::cursor::Cursor;

/// One string of a JSON text, as [`strings`] finds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonString<'a> {
    /// The string as written, with its quotes and escapes (valid JSON text for a
    /// parser to unescape).
    pub quoted: &'a [u8],
    /// Whether it has an escape: without one, the bytes between the quotes are its text.
    pub escaped: bool,
    /// Whether a `:` follows it: it names an object's member.
    pub is_key: bool,
}

impl<'a> JsonString<'a> {
    /// The bytes between the quotes.
    pub fn raw(&self) -> &'a [u8] {
        &self.quoted[1..self.quoted.len() - 1]
    }

    /// The string's text, escapes read. A lone surrogate (`\ud83d` of an emoji cut in
    /// half, which JavaScript writes and reads) and bytes that are not UTF-8 become
    /// U+FFFD, as a client's decoder shows them, where a strict parser refuses the whole
    /// text: a guard that reads what the client reads cannot be made to skip a result
    /// by one such escape or byte. `None` when it has an escape JSON has not (which
    /// every client's parser refuses).
    pub fn text(&self) -> Option<Cow<'a, str>> {
        if !self.escaped {
            return Some(String::from_utf8_lossy(self.raw()));
        }
        unescape(self.raw()).map(Cow::Owned)
    }
}

/// The text of a JSON string's content written with escapes (see [`JsonString::text`]).
fn unescape(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = memchr::memchr(b'\\', rest) {
        out.extend_from_slice(&rest[..at]);
        let escape = *rest.get(at + 1)?;
        rest = &rest[at + 2..];
        let simple = match escape {
            b'"' => b'"',
            b'\\' => b'\\',
            b'/' => b'/',
            b'b' => 0x08,
            b'f' => 0x0C,
            b'n' => b'\n',
            b'r' => b'\r',
            b't' => b'\t',
            b'u' => {
                let unit = hex4(rest)?;
                rest = &rest[4..];
                let paired = match rest.strip_prefix(b"\\u").and_then(hex4) {
                    Some(low) if (0xD800..0xDC00).contains(&unit) && (0xDC00..0xE000).contains(&low) => {
                        rest = &rest[6..];
                        char::from_u32(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))
                    }
                    _ => char::from_u32(unit),
                };
                let c = paired.unwrap_or(char::REPLACEMENT_CHARACTER);
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
                continue;
            }
            _ => return None,
        };
        out.push(simple);
    }
    out.extend_from_slice(rest);
    Some(String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The four hex digits `bytes` starts with, as a number.
fn hex4(bytes: &[u8]) -> Option<u32> {
    let digits = std::str::from_utf8(bytes.get(..4)?).ok()?;
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(digits, 16).ok()
}

/// Every string of the JSON text `json` (member names and values, at any depth), in the
/// order written, found with `memchr` and never parsed: outside a string a `"` can only
/// open one. `None` when a string is not closed; the text is otherwise taken as the
/// skim found it (well formed), and an escape is not checked here (a parser that
/// unescapes a string does).
pub fn strings<'a>(json: &'a [u8], mut each: impl FnMut(JsonString<'a>)) -> Option<()> {
    let mut c = Cursor::new(json);
    while let Some(at) = memchr::memchr(b'"', &c.b[c.i..]) {
        let start = c.i + at;
        c.i = start + 1;
        let escaped = c.string()?;
        let end = c.i;
        c.ws();
        each(JsonString { quoted: &c.b[start..end], escaped, is_key: c.peek() == Some(b':') });
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn strings_are_found_in_order_with_their_roles() {
        let json = br#"{"content":[{"type":"text","text":"a \"b\" \\"}], "n": 1, "k" : "v:"}"#;
        let mut found = Vec::new();
        strings(json, |s| found.push((String::from_utf8_lossy(s.raw()).into_owned(), s.escaped, s.is_key))).unwrap();
        let expected = [
            ("content", false, true),
            ("type", false, true),
            ("text", false, false),
            ("text", false, true),
            (r#"a \"b\" \\"#, true, false),
            ("n", false, true),
            ("k", false, true),
            ("v:", false, false),
        ];
        let expected: Vec<_> = expected.iter().map(|(t, e, k)| (t.to_string(), *e, *k)).collect();
        assert_eq!(found, expected);
        assert_eq!(strings(br#"["open"#, |_| {}), None, "a string not closed");
        let texts = |json: &[u8]| {
            let mut out = Vec::new();
            strings(json, |s| out.push(s.text().map(Cow::into_owned))).unwrap();
            out
        };
        assert_eq!(
            texts(br#"["a\u200bb", "\ud83d\ude00", "cut \ud83d", "\ude00 alone", "\n\t\/\b\f"]"#),
            ["a\u{200b}b", "\u{1f600}", "cut \u{fffd}", "\u{fffd} alone", "\n\t/\u{8}\u{c}"]
                .map(|t| Some(t.to_owned()))
        );
        assert_eq!(texts(br#"["\x41", "\u12", "\q"]"#), [None, None, None]);
        assert_eq!(texts(b"[\"a\xffb\", \"\\n\xff\"]"), [Some("a\u{fffd}b".to_owned()), Some("\n\u{fffd}".to_owned())]);
    }

    proptest! {
        /// The walk finds exactly the strings a parser finds, each unescaping to the same.
        #[test]
        fn strings_agree_with_a_parser(value in crate::skim::tests::json_object()) {
            fn collect(value: &serde_json::Value, out: &mut Vec<String>) {
                match value {
                    serde_json::Value::String(s) => out.push(s.clone()),
                    serde_json::Value::Array(items) => items.iter().for_each(|i| collect(i, out)),
                    serde_json::Value::Object(members) => members.iter().for_each(|(k, v)| {
                        out.push(k.clone());
                        collect(v, out);
                    }),
                    _ => {}
                }
            }
            let text = serde_json::to_vec(&value).unwrap();
            let mut walked = Vec::new();
            strings(&text, |s| {
                let unescaped = s.text().unwrap().into_owned();
                assert_eq!(unescaped, serde_json::from_slice::<String>(s.quoted).unwrap());
                walked.push(unescaped);
            })
            .unwrap();
            let mut parsed = Vec::new();
            collect(&value, &mut parsed);
            prop_assert_eq!(walked, parsed);
        }
    }
}
