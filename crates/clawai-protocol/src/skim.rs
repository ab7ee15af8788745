//! A fast look at the top-level members of a JSON object, without building it.
//!
//! Used on messages from the server, which can be many MiB: finding `id`, `method`,
//! `result` and `error` must not cost a full parse. Strings are skipped with `memchr`.
//! The skim refuses (returns `None`) whenever it cannot be sure to read the object as
//! any JSON parser would: escaped or repeated member names, or a structure it does not
//! recognise. Callers then fall back to the strict parse.

use memchr::memchr2;

use crate::cursor::Cursor;
use crate::words;

mod elements;
mod strings;

pub use elements::elements;
pub use strings::{JsonString, strings};

/// The top-level members of interest, as byte ranges of the input.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Skim<'a> {
    /// `id`, as written.
    pub id: Option<&'a [u8]>,
    /// `method`'s string content (without quotes), when it has no escapes.
    pub method: Option<&'a str>,
    /// `result`, as written.
    pub result: Option<&'a [u8]>,
    /// `error`, as written.
    pub error: Option<&'a [u8]>,
    /// `params`, as written.
    pub params: Option<&'a [u8]>,
    /// `result.isError`, as written, when `result` is an object with readable members.
    pub result_is_error: Option<&'a [u8]>,
    /// `result.resultType`, as written, under the same condition.
    pub result_type: Option<&'a [u8]>,
}

/// Skims a JSON object. `None` when the input is not a plain object this skim can read
/// with certainty.
pub fn skim(bytes: &[u8]) -> Option<Skim<'_>> {
    let mut s = Skim::default();
    let mut unsure = false;
    let mut p = Cursor::new(bytes);
    p.ws();
    let distinct = p.object(|c, key| {
        let start = c.i;
        if key == b"result" && c.peek() == Some(b'{') {
            // The result's own top-level members are read in the same pass (results
            // can be many MiB).
            let (mut is_error, mut result_type) = (None, None);
            let readable = c.object(|c, key| {
                let start = c.i;
                c.value()?;
                match key {
                    b"isError" => is_error = Some(&c.b[start..c.i]),
                    b"resultType" => result_type = Some(&c.b[start..c.i]),
                    _ => {}
                }
                Some(())
            })?;
            if readable {
                (s.result_is_error, s.result_type) = (is_error, result_type);
            }
        } else {
            c.value()?;
        }
        let value = &c.b[start..c.i];
        match key {
            b"id" => s.id = Some(value),
            b"result" => s.result = Some(value),
            b"error" => s.error = Some(value),
            b"params" => s.params = Some(value),
            b"method" => {
                s.method = value
                    .strip_prefix(b"\"")
                    .and_then(|v| v.strip_suffix(b"\""))
                    .filter(|inner| !inner.contains(&b'\\'))
                    .and_then(|inner| std::str::from_utf8(inner).ok());
                unsure |= s.method.is_none();
            }
            _ => {}
        }
        Some(())
    });
    (distinct == Some(true) && p.only_ws_left() && !unsure).then_some(s)
}

/// The `id` of a message of which only the first bytes are known (an oversize line),
/// when it comes before the cut.
pub fn leading_id(prefix: &[u8]) -> Option<&[u8]> {
    let mut id = None;
    members(prefix, |key, value| {
        if key == b"id" && id.is_none() {
            id = Some(value);
        }
    });
    id.filter(|v| usable_id(v))
}

/// True for an id a reply can carry as written: one well-formed JSON string or number
/// (`01`, `1e` or a cut string would make the reply itself invalid JSON).
fn usable_id(value: &[u8]) -> bool {
    matches!(value.first(), Some(b'"' | b'-' | b'0'..=b'9'))
        && serde_json::from_slice::<serde::de::IgnoredAny>(value).is_ok()
}

/// What a refused message still says of itself, so that it can be answered instead of
/// leaving its sender (or the request it answers) waiting: read leniently, member by
/// member, as far as the message makes sense (a broken or cut line is read up to the
/// break), member names compared ignoring case and the blanks around them, as a lenient
/// receiver might read them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Salvage<'a> {
    /// The id, as written, when every member named like `id` has that same value and
    /// it is a string or a number.
    pub id: Option<&'a [u8]>,
    /// A member is named like `method`.
    pub request: bool,
    /// A member is named like `result` or `error`.
    pub response: bool,
}

/// Reads what a refused message still says of itself (see [`Salvage`]).
pub fn salvage(bytes: &[u8]) -> Salvage<'_> {
    let mut found = Salvage::default();
    let (mut id, mut ids_disagree) = (None::<&[u8]>, false);
    let mut c = Cursor::new(bytes);
    c.ws();
    if c.expect(b'{').is_some() {
        loop {
            c.ws();
            if c.expect(b'"').is_none() {
                break;
            }
            let key_start = c.i - 1;
            let Some(escaped) = c.string() else { break };
            let key = &c.b[key_start..c.i];
            let name = if escaped {
                serde_json::from_slice::<String>(key).unwrap_or_default()
            } else {
                String::from_utf8_lossy(&key[1..key.len() - 1]).into_owned()
            };
            let name = name.trim().to_ascii_lowercase();
            match name.as_str() {
                "method" => found.request = true,
                "result" | "error" => found.response = true,
                _ => {}
            }
            c.ws();
            if c.expect(b':').is_none() {
                break;
            }
            c.ws();
            let value_start = c.i;
            let complete = c.value().is_some();
            if name == "id" {
                // A value that did not end may have left the cursor past the input.
                match (complete.then(|| &c.b[value_start..c.i]), id) {
                    (None, _) => ids_disagree = true,
                    (Some(value), None) => id = Some(value),
                    (Some(value), Some(earlier)) => ids_disagree |= earlier != value,
                }
            }
            c.ws();
            if !complete || c.expect(b',').is_none() {
                break;
            }
        }
    }
    found.id = id.filter(|v| !ids_disagree && usable_id(v));
    found
}

/// The value of one top-level member of an object, as written; `None` when absent or
/// when the object cannot be skimmed.
pub fn member<'a>(object: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let [value] = members_named(object, [name]);
    value
}

/// The values of several top-level members, in one pass over the object (all `None`
/// when it cannot be skimmed).
pub fn members_named<'a, const N: usize>(object: &'a [u8], names: [&[u8]; N]) -> [Option<&'a [u8]>; N] {
    let mut found = [None; N];
    let complete = members(object, |key, value| {
        if let Some(i) = names.iter().position(|n| *n == key) {
            found[i] = Some(value);
        }
    });
    if complete { found } else { [None; N] }
}

/// Calls `f` with each top-level member of an object, in order (until a member name
/// repeats or has an escape); true when the whole input was one well-formed object
/// with distinct, escape-free member names.
fn members<'a>(bytes: &'a [u8], mut f: impl FnMut(&'a [u8], &'a [u8])) -> bool {
    let mut p = Cursor::new(bytes);
    p.ws();
    let distinct = p.object(|c, key| {
        let start = c.i;
        c.value()?;
        f(key, &c.b[start..c.i]);
        Some(())
    });
    distinct == Some(true) && p.only_ws_left()
}

impl<'a> Cursor<'a> {
    /// At `{`: moves past the object, calling `on_member` with each member name and the
    /// cursor at its value, which `on_member` must move past. `None` when the object is
    /// not well formed; `Some(false)` when a member name repeats (in any case) or has an
    /// escape, after which `on_member` is no longer called and the rest is only skipped.
    fn object(&mut self, mut on_member: impl FnMut(&mut Self, &'a [u8]) -> Option<()>) -> Option<bool> {
        // Member names so far: a message has a handful (no allocation for up to eight).
        let mut first_seen: [&[u8]; 8] = [&[]; 8];
        let mut more_seen: Vec<&[u8]> = Vec::new();
        let mut count = 0;
        let mut distinct = true;
        self.expect(b'{')?;
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Some(true);
        }
        loop {
            self.ws();
            self.expect(b'"')?;
            let key_start = self.i;
            let had_escape = self.string()?;
            let key = &self.b[key_start..self.i - 1];
            if distinct {
                let seen = first_seen[..count.min(8)].iter().chain(&more_seen);
                if had_escape || seen.into_iter().any(|k| k.eq_ignore_ascii_case(key)) {
                    distinct = false;
                } else {
                    match first_seen.get_mut(count) {
                        Some(slot) => *slot = key,
                        None => more_seen.push(key),
                    }
                    count += 1;
                }
            }
            self.ws();
            self.expect(b':')?;
            self.ws();
            if distinct {
                on_member(self, key)?;
            } else {
                self.value()?;
            }
            self.ws();
            match self.next()? {
                b',' => continue,
                b'}' => return Some(distinct),
                _ => return None,
            }
        }
    }

    /// After an opening quote: moves past the closing quote. Returns whether the string
    /// had escapes.
    fn string(&mut self) -> Option<bool> {
        let mut escaped = false;
        loop {
            let at = self.i + quote_or_backslash(&self.b[self.i..])?;
            if self.b[at] == b'\\' {
                escaped = true;
                self.i = at + 2;
                if self.i > self.b.len() {
                    return None;
                }
            } else {
                self.i = at + 1;
                return Some(escaped);
            }
        }
    }
    fn value(&mut self) -> Option<()> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string().map(|_| ())
            }
            b'{' | b'[' => self.nested(),
            _ => {
                let start = self.i;
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
                let scalar = &self.b[start..self.i];
                let ok = matches!(scalar, b"true" | b"false" | b"null")
                    || (!scalar.is_empty()
                        && scalar.iter().all(|c| matches!(c, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')));
                ok.then_some(())
            }
        }
    }
    /// Skips a nested object or array, brackets balanced, strings skipped whole.
    fn nested(&mut self) -> Option<()> {
        let mut open = Brackets::default();
        loop {
            match self.next()? {
                b'"' => {
                    self.string()?;
                }
                b'{' => open.push(true),
                b'[' => open.push(false),
                b'}' if !open.pop()? => return None,
                b']' if open.pop()? => return None,
                _ => {}
            }
            if open.depth == 0 {
                return Some(());
            }
        }
    }
}

/// The index of the first `"` or `\\`. Most strings of a message are short (member
/// names, small values), where a few eight-byte words are cheaper than `memchr`'s
/// set-up; past [`SHORT`] bytes `memchr` takes over.
fn quote_or_backslash(bytes: &[u8]) -> Option<usize> {
    const SHORT: usize = 32;
    let mut offset = 0;
    while offset < SHORT
        && let Some(chunk) = bytes.get(offset..offset + 8)
    {
        let word = words::load(chunk);
        if let Some(i) = words::first_flagged(words::bytes_equal(word, b'"') | words::bytes_equal(word, b'\\')) {
            return Some(offset + i);
        }
        offset += 8;
    }
    let rest = &bytes[offset..];
    if offset < SHORT {
        // Fewer than eight bytes left.
        return rest.iter().position(|&b| b == b'"' || b == b'\\').map(|i| offset + i);
    }
    memchr2(b'"', b'\\', rest).map(|i| offset + i)
}

/// The brackets open at a point of a nested value, innermost last (`true` for `{`): the
/// first 64 levels as bits, without allocating (every response is skimmed), deeper ones
/// in a `Vec`.
#[derive(Default)]
struct Brackets {
    bits: u64,
    depth: usize,
    deeper: Vec<bool>,
}

impl Brackets {
    fn push(&mut self, brace: bool) {
        if self.depth < 64 {
            let bit = 1u64 << self.depth;
            self.bits = if brace { self.bits | bit } else { self.bits & !bit };
        } else {
            self.deeper.push(brace);
        }
        self.depth += 1;
    }

    /// The innermost open bracket, closed; `None` when none is open.
    fn pop(&mut self) -> Option<bool> {
        self.depth = self.depth.checked_sub(1)?;
        if self.depth < 64 { Some(self.bits & (1u64 << self.depth) != 0) } else { self.deeper.pop() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_members() {
        let line = br#"{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"a \"quoted\" } ]"}],"isError":false}}"#;
        let s = skim(line).unwrap();
        assert_eq!(s.id, Some(&b"12"[..]));
        assert!(s.result.unwrap().ends_with(b"false}"));
        assert_eq!(s.method, None);
        let s = skim(br#" {"method":"sampling/createMessage","id":"a","params":{}} "#).unwrap();
        assert_eq!(s.method, Some("sampling/createMessage"));
        assert_eq!(s.id, Some(&br#""a""#[..]));
    }

    #[test]
    fn deep_nesting_and_many_members() {
        for depth in [1, 63, 64, 65, 200] {
            let open = "[{\"a\":".repeat(depth);
            let deep = format!("{open}1{}", "}]".repeat(depth));
            let line = format!(r#"{{"id":1,"result":{deep}}}"#);
            assert_eq!(skim(line.as_bytes()).unwrap().result, Some(deep.as_bytes()), "depth {depth}");
            // The same with one bracket swapped at the innermost level, then the outermost.
            let inner = format!("{open}1]]{}", "}]".repeat(depth - 1));
            assert!(skim(format!(r#"{{"id":1,"result":{inner}}}"#).as_bytes()).is_none(), "depth {depth}");
            let outer = format!("{open}1{}}}}}", "}]".repeat(depth - 1));
            assert!(skim(format!(r#"{{"id":1,"result":{outer}}}"#).as_bytes()).is_none(), "depth {depth}");
        }
        let many: String = (0..12).map(|i| format!(r#""k{i}":{i},"#)).collect();
        assert!(skim(format!(r#"{{{many}"id":1,"result":{{}}}}"#).as_bytes()).is_some());
        // A case twin of the first member, and of the tenth, both past the eighth.
        assert!(skim(format!(r#"{{{many}"K0":1,"id":1}}"#).as_bytes()).is_none());
        assert!(skim(format!(r#"{{{many}"K9":1,"id":1}}"#).as_bytes()).is_none());
    }

    #[test]
    fn refuses_what_it_cannot_be_sure_of() {
        assert!(skim(br#"{"method":"a","method":"b"}"#).is_none());
        assert!(skim(br#"{"method":"a","Method":"b"}"#).is_none());
        assert!(skim(br#"{"m\u0065thod":"a"}"#).is_none());
        assert!(skim(br#"{"method":"sampling\/createMessage"}"#).is_none());
        assert!(skim(br#"{"a":1}{"b":2}"#).is_none());
        assert!(skim(br#"[1]"#).is_none());
        assert!(skim(br#"{"a":[1}"#).is_none());
        assert!(skim(br#"{"a":"unterminated}"#).is_none());
    }

    #[test]
    fn several_members_in_one_pass() {
        let object = br#"{"isError":true,"content":[],"resultType":"complete"}"#;
        assert_eq!(
            members_named(object, [&b"resultType"[..], b"isError", b"absent"]),
            [Some(&br#""complete""#[..]), Some(&b"true"[..]), None]
        );
        assert_eq!(members_named(br#"{"a":1,"a":2}"#, [&b"a"[..]]), [None]);
    }

    #[test]
    fn finds_the_first_quote_or_backslash_at_any_place() {
        for len in 0..80 {
            for at in 0..len {
                for (stop, filler) in [(b'"', b'a'), (b'\\', 0xC3), (b'"', b'!' /* 0x21, next to `"` */), (b'\\', b']')]
                {
                    let mut bytes = vec![filler; len];
                    bytes[at] = stop;
                    if at + 1 < len {
                        bytes[at + 1] = b'"';
                    }
                    assert_eq!(quote_or_backslash(&bytes), Some(at), "len {len} at {at} filler {filler}");
                }
            }
            assert_eq!(quote_or_backslash(&vec![b'#'; len]), None);
            assert_eq!(quote_or_backslash(&vec![0xA2; len]), None, "0xA2 is `\"` with the high bit");
            assert_eq!(quote_or_backslash(&vec![0xDC; len]), None, "0xDC is `\\\\` with the high bit");
        }
    }

    #[test]
    fn result_members_are_read_in_the_same_pass() {
        let s = skim(br#"{"id":1,"result":{"content":[{"isError":true}],"isError":false,"resultType":"complete"}}"#)
            .unwrap();
        assert_eq!((s.result_is_error, s.result_type), (Some(&b"false"[..]), Some(&br#""complete""#[..])));
        assert!(s.result.unwrap().ends_with(br#""complete"}"#));
        // Nested members of the same names are not the result's own.
        let s = skim(br#"{"id":1,"result":{"content":[],"structuredContent":{"isError":true}}}"#).unwrap();
        assert_eq!((s.result_is_error, s.result_type), (None, None));
        // Names the result repeats are read by nobody, as `members_named` reads them.
        let s = skim(br#"{"id":1,"result":{"isError":true,"ISERROR":false}}"#).unwrap();
        assert_eq!((s.result_is_error, s.result_type), (None, None));
        assert_eq!(s.result, Some(&br#"{"isError":true,"ISERROR":false}"#[..]));
        // A result that is not an object has none.
        let s = skim(br#"{"id":1,"result":[{"isError":true}]}"#).unwrap();
        assert_eq!(s.result_is_error, None);
        assert!(skim(br#"{"id":1,"result":{"isError":true,}}"#).is_none());
        assert!(skim(br#"{"id":1,"result":{"isError":true}"#).is_none());
    }

    #[test]
    fn leading_id_of_a_cut_message() {
        assert_eq!(
            leading_id(
                br#"{"jsonrpc":"2.0","id":"big-1","method":"tools/call","params":{"arguments":{"content":"xxxx"#
            ),
            Some(&br#""big-1""#[..])
        );
        assert_eq!(
            leading_id(br#"{"jsonrpc":"2.0","method":"tools/call","params":{"id":5,"arguments":{"content":"xxxx"#),
            None
        );
        assert_eq!(leading_id(br#"{"jsonrpc":"2.0","id":null,"#), None);
        // An id a reply could not carry as written is no id.
        for bad in ["01", "1e", "-", "0x1", r#""\q""#] {
            let prefix = format!(r#"{{"jsonrpc":"2.0","id":{bad},"method":"tools/call","params":{{"#);
            assert_eq!(leading_id(prefix.as_bytes()), None, "{bad}");
        }
        assert_eq!(leading_id(br#"{"id":1e400,"method":"x","params":"#), Some(&b"1e400"[..]));
    }

    #[test]
    fn salvage_reads_refused_messages_as_far_as_they_go() {
        let request = |id: &'static [u8]| Salvage { id: Some(id), request: true, response: false };
        let response = |id: &'static [u8]| Salvage { id: Some(id), request: false, response: true };
        for (line, expected) in [
            (&br#"{"jsonrpc":"2.0","id":3,"Method":"sampling/createMessage","method":"ping"}"#[..], request(b"3")),
            (br#"{"jsonrpc":"2.0","id":"a","method":"x","method":"y"}"#, request(br#""a""#)),
            (br#"{"jsonrpc":"2.0","id":1,"result":{"x":1},"result":{"x":2}}"#, response(b"1")),
            (br#"{"jsonrpc":"2.0","id":1,"result":{},"Result":{}}"#, response(b"1")),
            (br#"{"jsonrpc":"2.0","id":1,"\u0065rror":{}}"#, response(b"1")),
            (br#"{"jsonrpc":"1.0","id":-4,"result":{}}"#, response(b"-4")),
            // Cut or broken after the members that matter.
            (br#"{"jsonrpc":"2.0","id":7,"result":{"x":1"#, response(b"7")),
            (br#"{"jsonrpc":"2.0","id":7,"method":"a" "oops"}"#, request(b"7")),
            // The same id twice is still that id.
            (br#"{"id":2,"ID":2,"error":{}}"#, response(b"2")),
            // Both shapes: the caller cannot tell which it is.
            (br#"{"id":1,"method":"m","result":{}}"#, Salvage { id: Some(b"1"), request: true, response: true }),
        ] {
            assert_eq!(salvage(line), expected, "{}", String::from_utf8_lossy(line));
        }
        for (line, request, response) in [
            // Ids that disagree, are cut, or are not a string or a number: no id to answer.
            (&br#"{"id":1,"id":2,"result":{}}"#[..], false, true),
            (br#"{"id":1," Id ":2,"method":"m"}"#, true, false),
            (br#"{"method":"m","id":"cut"#, true, false),
            (br#"{"method":"m","id":"cut\"#, true, false),
            (br#"{"id":null,"error":{}}"#, false, true),
            (br#"{"id":{},"method":"m"}"#, true, false),
            (br#"{"id":01,"method":"m","method":"n"}"#, true, false),
            // Not an object.
            (br#"[{"id":1,"method":"m"}]"#, false, false),
            (b"not json", false, false),
        ] {
            assert_eq!(salvage(line), Salvage { id: None, request, response }, "{}", String::from_utf8_lossy(line));
        }
    }

    proptest! {
        /// Whenever the skim answers, it agrees with a real parser on the members.
        #[test]
        fn agrees_with_serde(v in json_object()) {
            let text = serde_json::to_vec(&v).unwrap();
            let s = skim(&text).expect("serde output is always skimmable unless keys repeat by case");
            let obj = v.as_object().unwrap();
            let raw = |k: &str| obj.get(k).map(|x| serde_json::to_vec(x).unwrap());
            prop_assert_eq!(s.id.map(<[u8]>::to_vec), raw("id"));
            prop_assert_eq!(s.result.map(<[u8]>::to_vec), raw("result"));
            prop_assert_eq!(s.error.map(<[u8]>::to_vec), raw("error"));
            let inner = |k: &str| obj.get("result").and_then(|r| r.get(k)).map(|x| serde_json::to_vec(x).unwrap());
            prop_assert_eq!(s.result_is_error.map(<[u8]>::to_vec), inner("isError"));
            prop_assert_eq!(s.result_type.map(<[u8]>::to_vec), inner("resultType"));
        }
    }

    pub(super) fn json_object() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            any::<i64>().prop_map(|n| serde_json::json!(n)),
            "[a-z\"\\\\{}\\[\\] ]{0,12}".prop_map(serde_json::Value::String),
        ];
        let value = leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                prop::collection::btree_map(
                    prop_oneof![Just("isError".to_string()), Just("resultType".to_string()), "[a-z]{1,3}"],
                    inner,
                    0..4
                )
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        });
        prop::collection::btree_map(
            prop_oneof![
                Just("id".to_string()),
                Just("result".to_string()),
                Just("error".to_string()),
                "[a-z]{4,6}".prop_map(String::from)
            ],
            value,
            0..5,
        )
        .prop_map(|m| serde_json::Value::Object(m.into_iter().collect()))
    }
}
