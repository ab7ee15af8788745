//! The usual decided request, read in one pass without serde.
//!
//! Nearly every message a policy decides on looks the same: `jsonrpc`, `id`, `method`
//! and then `params`, with strings that have no escapes. Reading that through serde (the
//! envelope's visitor, then the strict value's) was the largest single cost of a call.
//! This reader handles exactly that case and gives up (`None`) on anything else, for
//! [`Envelope::parse_deciding_in_full`] to read and, where needed, refuse with its
//! reasons: an escape or a control character in a string, `params` before `method` or
//! for a method not decided on, `result` or `error`, a key that repeats or has a case
//! twin at any depth, a `jsonrpc` other than `"2.0"`, an `id` that is not a string or a
//! number, an object with more than [`MAX_MEMBERS`] members, nesting deeper than
//! [`MAX_DEPTH`], any byte out of place. When it does return a message, it is the one
//! the full reader returns (a property test and a fuzz target compare the two).

use std::borrow::Cow;

use serde_json::Number;
use serde_json::value::RawValue;

use crate::cursor::Cursor;
use crate::envelope::{Envelope, EnvelopeError, Kind, MEMBERS, Params};
use crate::json::Json;
use crate::words;

/// Objects with more members go to the full reader, which checks keys with a set.
pub const MAX_MEMBERS: usize = 32;

/// Deeper values go to the full reader (serde_json stops at 128).
pub const MAX_DEPTH: usize = 64;

// Here rather than in `envelope`, so that the envelope never names its shortcut.
impl<'a> Envelope<'a, Params<'a>> {
    /// Reads one message like [`Envelope::parse`]; when `method` comes before `params`
    /// (as every SDK writes them) and `decides(method)` holds, `params` is read strictly
    /// in the same pass instead of being scanned once here and again by the caller.
    pub fn parse_deciding(
        line: &'a [u8],
        decides: impl Fn(&str) -> bool,
    ) -> Result<Envelope<'a, Params<'a>>, EnvelopeError> {
        match read_decided(line, &decides) {
            Some(envelope) => Ok(envelope),
            None => Self::parse_deciding_in_full(line, decides),
        }
    }
}

/// Reads `line` when it is a plain request or notification whose method `decides`
/// accepts (or that has no `params`); `None` otherwise (read it with the full reader).
pub fn read_decided<'a>(line: &'a [u8], decides: &impl Fn(&str) -> bool) -> Option<Envelope<'a, Params<'a>>> {
    // Every string below is cut at ASCII bytes, so it is UTF-8 when the line is.
    let text = std::str::from_utf8(line).ok()?;
    let mut r = Reader { text, at: Cursor::new(line) };
    r.at.ws();
    r.at.expect(b'{')?;
    let (mut jsonrpc, mut id, mut method, mut params) = (false, None, None::<&'a str>, None);
    r.at.ws();
    if r.at.peek()? == b'}' {
        return None;
    }
    loop {
        r.at.ws();
        r.at.expect(b'"')?;
        let key = r.string()?;
        r.at.ws();
        r.at.expect(b':')?;
        r.at.ws();
        match key {
            "jsonrpc" if !jsonrpc => {
                r.at.expect(b'"')?;
                if r.string()? != "2.0" {
                    return None;
                }
                jsonrpc = true;
            }
            "id" if id.is_none() => {
                let start = r.at.i;
                match r.at.peek()? {
                    b'"' => {
                        r.at.i += 1;
                        r.string()?;
                    }
                    b'-' | b'0'..=b'9' => {
                        r.number()?;
                    }
                    _ => return None,
                }
                id = Some(serde_json::from_str::<&RawValue>(&text[start..r.at.i]).ok()?);
            }
            "method" if method.is_none() => {
                r.at.expect(b'"')?;
                method = Some(r.string()?);
            }
            "params" if params.is_none() => {
                // After `method`, for a method decided on, as an object or an array.
                if !method.is_some_and(decides) || !matches!(r.at.peek()?, b'{' | b'[') {
                    return None;
                }
                params = Some(r.value(1)?);
            }
            other => {
                // A known member again, `result`/`error`, or a case twin of a known one.
                if MEMBERS.iter().any(|k| k.eq_ignore_ascii_case(other)) {
                    return None;
                }
                r.value(1)?;
            }
        }
        r.at.ws();
        match r.at.next()? {
            b',' => continue,
            b'}' => break,
            _ => return None,
        }
    }
    if !r.at.only_ws_left() || !jsonrpc {
        return None;
    }
    let method = method?;
    Some(Envelope {
        kind: if id.is_some() { Kind::Request } else { Kind::Notification },
        id,
        method: Some(Cow::Borrowed(method)),
        params: params.map(|p| Params::Decoded(Ok(p))),
        result: None,
        error: None,
    })
}

/// The cursor, and the line as text for the strings cut from it.
struct Reader<'a> {
    text: &'a str,
    at: Cursor<'a>,
}

impl<'a> Reader<'a> {
    /// After an opening quote: the string's text, up to and past the closing quote.
    /// `None` at an escape or a control character (the full reader decodes or refuses
    /// them), or at the end of the line.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.at.i;
        let end = start + words::first_to_escape(&self.at.b[start..])?;
        if self.at.b[end] != b'"' {
            return None;
        }
        self.at.i = end + 1;
        Some(&self.text[start..end])
    }

    /// Moves past a number; `None` unless it is one, as serde_json reads it.
    fn number(&mut self) -> Option<Number> {
        let start = self.at.i;
        while matches!(self.at.peek(), Some(b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')) {
            self.at.i += 1;
        }
        let digits = &self.text[start..self.at.i];
        // The common case, a small non-negative integer, without serde_json; the rest
        // (signs, fractions, exponents, `-0`, out of range) exactly as serde_json does.
        if (1..=19).contains(&digits.len())
            && digits.bytes().all(|b| b.is_ascii_digit())
            && (digits.len() == 1 || !digits.starts_with('0'))
        {
            return digits.parse::<u64>().ok().map(Number::from);
        }
        serde_json::from_str::<Number>(digits).ok()
    }

    /// Reads any value at nesting `depth`.
    fn value(&mut self, depth: usize) -> Option<Json<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.at.peek()? {
            b'"' => {
                self.at.i += 1;
                self.string().map(|s| Json::String(Cow::Borrowed(s)))
            }
            b'{' => self.object(depth),
            b'[' => self.array(depth),
            b't' => self.literal("true", Json::Bool(true)),
            b'f' => self.literal("false", Json::Bool(false)),
            b'n' => self.literal("null", Json::Null),
            _ => self.number().map(Json::Number),
        }
    }

    fn literal(&mut self, word: &str, value: Json<'a>) -> Option<Json<'a>> {
        self.at.b[self.at.i..].starts_with(word.as_bytes()).then(|| {
            self.at.i += word.len();
            value
        })
    }

    fn object(&mut self, depth: usize) -> Option<Json<'a>> {
        self.at.expect(b'{')?;
        let mut members: Vec<(Cow<'a, str>, Json<'a>)> = Vec::new();
        self.at.ws();
        if self.at.peek()? == b'}' {
            self.at.i += 1;
            return Some(Json::Object(members));
        }
        loop {
            self.at.ws();
            self.at.expect(b'"')?;
            let key = self.string()?;
            // The same key again or a case twin: the full reader refuses it, saying which.
            if members.len() == MAX_MEMBERS || members.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)) {
                return None;
            }
            self.at.ws();
            self.at.expect(b':')?;
            self.at.ws();
            let value = self.value(depth + 1)?;
            members.push((Cow::Borrowed(key), value));
            self.at.ws();
            match self.at.next()? {
                b',' => continue,
                b'}' => return Some(Json::Object(members)),
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: usize) -> Option<Json<'a>> {
        self.at.expect(b'[')?;
        let mut items = Vec::new();
        self.at.ws();
        if self.at.peek()? == b']' {
            self.at.i += 1;
            return Some(Json::Array(items));
        }
        loop {
            self.at.ws();
            items.push(self.value(depth + 1)?);
            self.at.ws();
            match self.at.next()? {
                b',' => continue,
                b']' => return Some(Json::Array(items)),
                _ => return None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn decides(method: &str) -> bool {
        method == "tools/call"
    }

    /// What both readers must agree on.
    fn summary(e: &Envelope<'_, Params<'_>>) -> (Kind, Option<String>, Option<String>, Option<Json<'static>>) {
        let params = e.params.as_ref().map(|p| match p {
            Params::Decoded(Ok(json)) => owned(json),
            other => panic!("params not decoded: {other:?}"),
        });
        (e.kind, e.id_text().map(str::to_owned), e.method.as_deref().map(str::to_owned), params)
    }

    fn owned(json: &Json<'_>) -> Json<'static> {
        match json {
            Json::Null => Json::Null,
            Json::Bool(b) => Json::Bool(*b),
            Json::Number(n) => Json::Number(n.clone()),
            Json::String(s) => Json::String(Cow::Owned(s.to_string())),
            Json::Array(items) => Json::Array(items.iter().map(owned).collect()),
            Json::Object(members) => {
                Json::Object(members.iter().map(|(k, v)| (Cow::Owned(k.to_string()), owned(v))).collect())
            }
        }
    }

    /// The shortcut's answer, held to the full reader's.
    fn agree(line: &[u8]) -> Result<bool, TestCaseError> {
        let Some(quick) = read_decided(line, &decides) else { return Ok(false) };
        let full = Envelope::parse_deciding_in_full(line, decides);
        let full =
            full.map_err(|e| TestCaseError::fail(format!("{}: accepted, but {e}", String::from_utf8_lossy(line))))?;
        prop_assert_eq!(summary(&quick), summary(&full), "{}", String::from_utf8_lossy(line));
        Ok(true)
    }

    #[test]
    fn reads_the_usual_call() {
        let line = br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/a","n":[1,-2,3.5,true,null,{}]}}}
"#;
        let e = read_decided(line, &decides).expect("the usual call");
        assert_eq!(e.kind, Kind::Request);
        assert_eq!(e.id_text(), Some("7"));
        assert!(agree(line).unwrap());
        // A notification, a string id, whitespace, unknown members, no params.
        for line in [
            &br#"{"jsonrpc":"2.0","method":"tools/call","params":{}}"#[..],
            br#" { "jsonrpc" : "2.0" , "id" : "a-1" , "x" : {"y":[1]}, "method" : "tools/call" } "#,
            br#"{"id":1e2,"method":"tools/call","jsonrpc":"2.0","params":[]}"#,
            // Any method without params: there is nothing to decode.
            br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        ] {
            assert!(agree(line).unwrap(), "{}", String::from_utf8_lossy(line));
        }
    }

    #[test]
    fn leaves_everything_else_to_the_full_reader() {
        for line in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"params":{},"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":{"path":1,"PATH":2}}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"n\u0061me":"a"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","Params":{}}"#,
            br#"{"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"tools/call"}"#,
            br#"{"jsonrpc":"1.0","id":1,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":null,"method":"tools/call"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"x"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":01}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"x	y"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call"} {}"#,
            b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
            b"\x0c{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\"}",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":1}"#,
        ] {
            assert!(read_decided(line, &decides).is_none(), "{}", String::from_utf8_lossy(line));
        }
        let deep = format!("{}{}", "[".repeat(MAX_DEPTH + 1), "]".repeat(MAX_DEPTH + 1));
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{deep}}}"#);
        assert!(read_decided(line.as_bytes(), &decides).is_none());
        let wide: Vec<String> = (0..=MAX_MEMBERS).map(|i| format!("\"k{i}\":{i}")).collect();
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{{}}}}}"#, wide.join(","));
        assert!(read_decided(line.as_bytes(), &decides).is_none());
        assert!(Envelope::parse_deciding(line.as_bytes(), decides).is_ok(), "the full reader takes it");
    }

    fn ws() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec!["", "", "", " ", "\n", "\t", "\r\n", "\x0c"])
    }

    fn scalar() -> impl Strategy<Value = String> {
        prop_oneof![
            prop::sample::select(vec![
                "null",
                "true",
                "false",
                "nul",
                "truex",
                "0",
                "-0",
                "01",
                "1.5",
                "1e400",
                "-1",
                "1.",
                "-",
                "+1",
                "1e5",
                "0.0",
                "123",
                "-9223372036854775808",
                "18446744073709551615",
                "18446744073709551616",
                "9999999999999999999",
                "1E-2",
                "2.5e+3",
            ])
            .prop_map(String::from),
            "[a-zA-Z/ é\"\\\\\u{1}\u{7f}]{0,8}".prop_map(|s| format!("\"{s}\"")),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        prop::sample::select(vec![
            "name",
            "Name",
            "arguments",
            "path",
            "PATH",
            "a",
            "b",
            "id",
            "method",
            "params",
            "jsonrpc",
            "Method",
            "result",
            "error",
            "p\\u0061th",
            "é",
        ])
        .prop_map(|k| format!("\"{k}\""))
    }

    fn value() -> impl Strategy<Value = String> {
        scalar().prop_recursive(4, 32, 5, |inner| {
            prop_oneof![
                prop::collection::vec((ws(), inner.clone(), ws()), 0..5).prop_map(|items| {
                    let items: Vec<String> = items.into_iter().map(|(a, v, b)| format!("{a}{v}{b}")).collect();
                    format!("[{}]", items.join(","))
                }),
                prop::collection::vec((key(), ws(), inner), 0..5).prop_map(|members| {
                    let members: Vec<String> = members.into_iter().map(|(k, w, v)| format!("{k}{w}:{v}")).collect();
                    format!("{{{}}}", members.join(","))
                }),
            ]
        })
    }

    fn member() -> impl Strategy<Value = String> {
        prop_oneof![
            3 => prop::sample::select(vec![r#""jsonrpc":"2.0""#, r#""jsonrpc":"1.0""#, r#""jsonrpc":2.0"#])
                .prop_map(String::from),
            3 => prop::sample::select(vec![
                r#""id":1"#, r#""id":"a""#, r#""id":null"#, r#""id":-0"#, r#""id":1.5"#, r#""id":{}"#, r#""id":"a\"b""#,
            ])
            .prop_map(String::from),
            3 => prop::sample::select(vec![
                r#""method":"tools/call""#, r#""method":"ping""#, r#""method":"tools\/call""#, r#""method":1"#,
            ])
            .prop_map(String::from),
            4 => value().prop_map(|v| format!(r#""params":{v}"#)),
            1 => (key(), value()).prop_map(|(k, v)| format!("{k}:{v}")),
        ]
    }

    fn line() -> impl Strategy<Value = String> {
        let usual = Just(vec![
            r#""jsonrpc":"2.0""#.to_string(),
            r#""id":1"#.to_string(),
            r#""method":"tools/call""#.to_string(),
        ]);
        (
            prop_oneof![usual, prop::collection::vec(member(), 0..4)],
            prop::collection::vec(member(), 0..3),
            ws(),
            prop::sample::select(vec!["", "\n", "\r\n", " ", " x", "{}"]),
        )
            .prop_map(|(first, more, w, tail)| {
                let members: Vec<String> = first.into_iter().chain(more).collect();
                format!("{w}{{{}}}{tail}", members.join(&format!("{w},")))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]
        /// Whenever the shortcut reads a message, the full reader reads the same one.
        #[test]
        fn agrees_with_the_full_reader(line in line()) {
            agree(line.as_bytes())?;
        }
    }
}
