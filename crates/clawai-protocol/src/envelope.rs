//! The strict reading of one JSON-RPC message.
//!
//! Fails closed: anything a receiver might read differently from us is an error, never
//! a guess. That covers bytes that are not one JSON object (bad JSON, invalid UTF-8, a
//! BOM, two objects on a line), batches, a `jsonrpc` other than `"2.0"`, a known member
//! given twice, and a member whose name differs from a known one only in case
//! (`Method`, `PARAMS`), which a lenient receiver might take for the real one.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::strict;

/// The members a JSON-RPC message is read by.
pub const MEMBERS: [&str; 6] = ["jsonrpc", "id", "method", "params", "result", "error"];

/// What a message is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Has `method` and `id`: expects a response.
    Request,
    /// Has `method`, no `id`.
    Notification,
    /// Has `id` and exactly one of `result` or `error`.
    Response,
}

/// One message, read in place: every field borrows from the line. `P` is how `params`
/// is held: as written ([`Envelope::parse`]) or, for a message the caller decides on,
/// read into a value in the same pass ([`Envelope::parse_deciding`]).
#[derive(Debug)]
pub struct Envelope<'a, P = &'a RawValue> {
    /// What the message is.
    pub kind: Kind,
    /// The `id` exactly as written (`1`, `"a"`, `0`, `123456789012345678901234567890`).
    pub id: Option<&'a RawValue>,
    /// The method, for requests and notifications.
    pub method: Option<Cow<'a, str>>,
    /// The `params`: as written, or read as `P` says.
    pub params: Option<P>,
    /// The `result` exactly as written (responses).
    pub result: Option<&'a RawValue>,
    /// The `error` exactly as written (responses).
    pub error: Option<&'a RawValue>,
}

/// Why a message was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnvelopeError {
    /// Not one JSON value (JSON-RPC "Parse error", -32700).
    #[error("parse error: {0}")]
    Parse(String),
    /// JSON, but `jsonrpc` is missing or not `"2.0"` (-32700). Nothing in it is taken
    /// at its word, but a request whose id can be read is answered under that id
    /// ([`EnvelopeError::answer_id`]): its sender waits for that id.
    #[error("not a JSON-RPC 2.0 message: `jsonrpc` must be \"2.0\"")]
    NotJsonRpc,
    /// A JSON array: a batch, which MCP removed in 2025-06-18 ("Invalid Request", -32600).
    #[error("batches are not accepted: send one message per line")]
    Batch,
    /// JSON, but not a valid JSON-RPC 2.0 message ("Invalid Request", -32600). `id` is the
    /// request's id when one could be read, for the error response.
    #[error("invalid request: {reason}")]
    Invalid {
        /// The id as written, if the message had a usable one.
        id: Option<String>,
        /// What is wrong.
        reason: String,
    },
}

impl EnvelopeError {
    /// The id the error answering the refused `line` goes under, as written: the
    /// request's id whenever it can be read, whatever else is wrong with the message
    /// (a client waits for an answer under its id, and `null` never reaches it); none
    /// for a batch or a line that is no request (a response, a notification, not JSON).
    pub fn answer_id<'l>(&'l self, line: &'l [u8]) -> Option<&'l str> {
        match self {
            EnvelopeError::Invalid { id: Some(id), .. } => Some(id.as_str()),
            EnvelopeError::Batch => None,
            _ => {
                let salvaged = crate::skim::salvage(line);
                let id = salvaged.id.filter(|_| salvaged.request && !salvaged.response)?;
                std::str::from_utf8(id).ok()
            }
        }
    }

    /// The JSON-RPC error code for this refusal.
    pub fn code(&self) -> i64 {
        match self {
            EnvelopeError::Parse(_) | EnvelopeError::NotJsonRpc => crate::reply::PARSE_ERROR,
            EnvelopeError::Batch | EnvelopeError::Invalid { .. } => crate::reply::INVALID_REQUEST,
        }
    }
}

/// The `params` of a message read by [`Envelope::parse_deciding`].
#[derive(Debug)]
pub enum Params<'a> {
    /// As written: the method is not one the caller decides on, or came after `params`
    /// (the caller then reads them itself).
    Raw(&'a RawValue),
    /// Read strictly ([`strict::Decoded`]): `Err` when a key repeats or has a case twin.
    Decoded(Result<crate::Json<'a>, strict::Ambiguous>),
}

impl<'a> Envelope<'a> {
    /// Reads one message (a line, with or without its newline).
    pub fn parse(line: &'a [u8]) -> Result<Envelope<'a>, EnvelopeError> {
        read(line, KeepRaw)
    }
}

impl<'a, P> Envelope<'a, P> {
    /// The id as written, for echoing it back.
    pub fn id_text(&self) -> Option<&'a str> {
        self.id.map(RawValue::get)
    }
}

impl<'a> Envelope<'a, Params<'a>> {
    /// [`Envelope::parse_deciding`] without its shortcut for the usual decided request
    /// ([`crate::quick`]): the reader that handles every message and says why it refuses
    /// one. Public so that tests and fuzzers can hold the shortcut to it.
    pub fn parse_deciding_in_full(
        line: &'a [u8],
        decides: impl Fn(&str) -> bool,
    ) -> Result<Envelope<'a, Params<'a>>, EnvelopeError> {
        read(line, DecodeWhen(decides))
    }
}

fn read<'a, R: ReadParams<'a>>(line: &'a [u8], reader: R) -> Result<Envelope<'a, R::Params>, EnvelopeError> {
    if line.starts_with(b"\xEF\xBB\xBF") {
        return Err(EnvelopeError::Parse("the line starts with a byte order mark".into()));
    }
    // The whole line at once: serde_json checks the strings it decodes, not those it
    // skips (unknown members), and reading from `&str` spares it a check per string.
    let text =
        std::str::from_utf8(line).map_err(|e| EnvelopeError::Parse(format!("the message is not valid UTF-8 ({e})")))?;
    let first = line.iter().copied().find(|b| !b.is_ascii_whitespace());
    match first {
        None => return Err(EnvelopeError::Parse("empty message".into())),
        Some(b'[') => {
            return Err(match serde_json::from_str::<IgnoredAny>(text) {
                Ok(_) => EnvelopeError::Batch,
                Err(e) => EnvelopeError::Parse(e.to_string()),
            });
        }
        Some(b'{') => {}
        Some(_) => {
            return Err(match serde_json::from_str::<IgnoredAny>(text) {
                Ok(_) => EnvelopeError::Invalid { id: None, reason: "a message must be a JSON object".into() },
                Err(e) => EnvelopeError::Parse(e.to_string()),
            });
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let raw = MembersSeed(reader).deserialize(&mut de).and_then(|m| de.end().map(|()| m)).map_err(|e| {
        match e.classify() {
            serde_json::error::Category::Data => EnvelopeError::Invalid { id: None, reason: strip_position(&e) },
            _ => EnvelopeError::Parse(e.to_string()),
        }
    })?;
    raw.validate(R::structured)
}

/// How the members visitor reads `params`.
trait ReadParams<'de> {
    type Params;
    fn read<A: MapAccess<'de>>(&self, map: &mut A, method: Option<&str>) -> Result<Self::Params, A::Error>;
    /// Whether the params are an object or an array, as JSON-RPC requires.
    fn structured(params: &Self::Params) -> bool;
}

/// `params` as written.
struct KeepRaw;

impl<'de> ReadParams<'de> for KeepRaw {
    type Params = &'de RawValue;
    fn read<A: MapAccess<'de>>(&self, map: &mut A, _: Option<&str>) -> Result<&'de RawValue, A::Error> {
        map.next_value()
    }
    fn structured(params: &&'de RawValue) -> bool {
        matches!(params.get().as_bytes().first(), Some(b'{' | b'['))
    }
}

/// `params` read strictly when the method seen before them is decided on.
struct DecodeWhen<F>(F);

impl<'de, F: Fn(&str) -> bool> ReadParams<'de> for DecodeWhen<F> {
    type Params = Params<'de>;
    fn read<A: MapAccess<'de>>(&self, map: &mut A, method: Option<&str>) -> Result<Params<'de>, A::Error> {
        Ok(if method.is_some_and(&self.0) {
            Params::Decoded(map.next_value::<strict::Decoded<'de>>()?.0)
        } else {
            Params::Raw(map.next_value()?)
        })
    }
    fn structured(params: &Params<'de>) -> bool {
        match params {
            Params::Raw(raw) => KeepRaw::structured(raw),
            // A clash of keys is only possible inside an object.
            Params::Decoded(value) => value.as_ref().map_or(true, |v| v.is_object() || v.is_array()),
        }
    }
}

fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

struct Members<'a, P> {
    /// As written: a `jsonrpc` that is not even a string is as foreign as a wrong one.
    jsonrpc: Option<&'a RawValue>,
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    params: Option<P>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

impl<'a, P> Members<'a, P> {
    /// `structured` says whether `params` are an object or an array.
    fn validate(self, structured: impl Fn(&P) -> bool) -> Result<Envelope<'a, P>, EnvelopeError> {
        let usable_id = self.id.filter(|id| matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9')));
        let invalid = |reason: &str| EnvelopeError::Invalid {
            id: usable_id.map(|i| i.get().to_owned()),
            reason: reason.to_owned(),
        };
        if !self.jsonrpc.is_some_and(is_version_2) {
            return Err(EnvelopeError::NotJsonRpc);
        }
        if let Some(id) = self.id {
            let ok = usable_id.is_some() || (id.get() == "null" && self.method.is_none() && self.error.is_some());
            if !ok {
                return Err(invalid("`id` must be a string or a number"));
            }
        }
        if self.params.as_ref().is_some_and(|p| !structured(p)) {
            return Err(invalid("`params` must be an object or an array"));
        }
        let kind = match (&self.method, self.id, self.result.is_some(), self.error.is_some()) {
            (Some(_), _, true, _) | (Some(_), _, _, true) => {
                return Err(invalid("a request cannot carry `result` or `error`"));
            }
            (Some(_), Some(_), false, false) => Kind::Request,
            (Some(_), None, false, false) => Kind::Notification,
            (None, Some(_), true, false) | (None, Some(_), false, true) => Kind::Response,
            (None, Some(_), true, true) => {
                return Err(invalid("a response carries `result` or `error`, not both"));
            }
            (None, _, false, false) => {
                return Err(invalid("a message needs a `method`, or a `result` or `error`"));
            }
            (None, None, _, _) => return Err(invalid("a response needs an `id`")),
        };
        Ok(Envelope {
            kind,
            id: self.id,
            method: self.method,
            params: self.params,
            result: self.result,
            error: self.error,
        })
    }
}

/// True for the JSON string `"2.0"`, however it is escaped.
fn is_version_2(raw: &RawValue) -> bool {
    raw.get() == r#""2.0""# || serde_json::from_str::<String>(raw.get()).is_ok_and(|v| v == "2.0")
}

/// A string that borrows from the input when it can.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Reads the members of a message, `params` with `R`.
struct MembersSeed<R>(R);

impl<'de, R: ReadParams<'de>> DeserializeSeed<'de> for MembersSeed<R> {
    type Value = Members<'de, R::Params>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, R: ReadParams<'de>> Visitor<'de> for MembersSeed<R> {
    type Value = Members<'de, R::Params>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON-RPC message object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut m = Members { jsonrpc: None, id: None, method: None, params: None, result: None, error: None };
        fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &str) -> Result<(), E> {
            if slot.is_some() {
                return Err(E::custom(format!("member `{key}` appears twice")));
            }
            *slot = Some(value);
            Ok(())
        }
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match key.as_ref() {
                "jsonrpc" => once(&mut m.jsonrpc, map.next_value::<&'de RawValue>()?, "jsonrpc")?,
                "id" => once(&mut m.id, map.next_value::<&'de RawValue>()?, "id")?,
                "method" => once(&mut m.method, map.next_value::<Text<'de>>()?.0, "method")?,
                "params" => {
                    if m.params.is_some() {
                        return Err(de::Error::custom("member `params` appears twice"));
                    }
                    m.params = Some(self.0.read(&mut map, m.method.as_deref())?);
                }
                "result" => once(&mut m.result, map.next_value::<&'de RawValue>()?, "result")?,
                "error" => once(&mut m.error, map.next_value::<&'de RawValue>()?, "error")?,
                other => {
                    if let Some(known) = MEMBERS.iter().find(|k| k.eq_ignore_ascii_case(other)) {
                        return Err(de::Error::custom(format!(
                            "member `{other}` differs from `{known}` only in case; refused because a receiver might read it as `{known}`"
                        )));
                    }
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(line: &str) -> Result<Kind, EnvelopeError> {
        Envelope::parse(line.as_bytes()).map(|e| e.kind)
    }

    #[test]
    fn kinds() {
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#), Ok(Kind::Request));
        assert_eq!(kind(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Ok(Kind::Notification));
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Ok(Kind::Response));
        assert_eq!(kind(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}"#), Ok(Kind::Response));
        assert_eq!(kind("{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"x\",\"extra\":[1]}\r\n"), Ok(Kind::Request));
    }

    #[test]
    fn ids_are_kept_as_written() {
        let line = br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#;
        assert_eq!(Envelope::parse(line).unwrap().id_text(), Some("123456789012345678901234567890"));
        let line = br#"{"jsonrpc":"2.0","id":"x\"y","method":"ping"}"#;
        assert_eq!(Envelope::parse(line).unwrap().id_text(), Some(r#""x\"y""#));
    }

    #[test]
    fn parse_errors() {
        for bad in [
            "{",
            "not json",
            "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}{\"jsonrpc\":\"2.0\",\"method\":\"b\"}",
            "\u{feff}{\"jsonrpc\":\"2.0\",\"method\":\"a\"}",
            "",
        ] {
            assert!(matches!(kind(bad), Err(EnvelopeError::Parse(_))), "{bad:?}: {:?}", kind(bad));
        }
        let invalid_utf8 = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}";
        assert!(matches!(Envelope::parse(invalid_utf8), Err(EnvelopeError::Parse(_))));
        // Also where no member is decoded: an unknown member, skipped whole.
        let hidden = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"x\":\"\xff\"}";
        assert!(matches!(Envelope::parse(hidden), Err(EnvelopeError::Parse(_))));
    }

    #[test]
    fn batches_and_invalid_requests() {
        assert_eq!(kind(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#), Err(EnvelopeError::Batch));
        for bad in [
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"x","params":"s"}"#,
            r#"{"jsonrpc":"2.0","id":1}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":5}"#,
            r#"42"#,
        ] {
            assert!(matches!(kind(bad), Err(EnvelopeError::Invalid { .. })), "{bad}: {:?}", kind(bad));
        }
        match Envelope::parse(br#"{"jsonrpc":"2.0","id":7,"method":"x","params":"s"}"#) {
            Err(EnvelopeError::Invalid { id, .. }) => assert_eq!(id.as_deref(), Some("7")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_or_wrong_jsonrpc_is_not_json_rpc_at_all() {
        for bad in [
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":2.0,"id":1,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0 ","id":1,"method":"ping"}"#,
            r#"{"jsonrpc":null,"id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"1.0","id":1,"result":{}}"#,
        ] {
            let refusal = kind(bad).unwrap_err();
            assert_eq!(refusal, EnvelopeError::NotJsonRpc, "{bad}");
            assert_eq!(refusal.code(), crate::reply::PARSE_ERROR);
        }
        // The version is a JSON string like any other: escapes read as what they stand for.
        assert_eq!(kind(r#"{"jsonrpc":"2\u002e0","id":1,"method":"ping"}"#), Ok(Kind::Request));
    }

    #[test]
    fn duplicate_and_case_variant_members_are_refused() {
        for bad in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","Method":"tools/call"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","PARAMS":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping","meth\u006fd":"tools/call"}"#,
        ] {
            assert!(matches!(kind(bad), Err(EnvelopeError::Invalid { .. })), "{bad}");
        }
    }

    fn deciding(line: &str) -> Result<Envelope<'_, Params<'_>>, EnvelopeError> {
        Envelope::parse_deciding(line.as_bytes(), |m| m == "tools/call")
    }

    #[test]
    fn decided_params_are_read_in_the_same_pass() {
        let line = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"rm","arguments":{"path":"/x","n":[1,2.5,null,true]}}}"#;
        let e = deciding(line).unwrap();
        assert_eq!((e.kind, e.id_text(), e.method.as_deref()), (Kind::Request, Some("7"), Some("tools/call")));
        let raw = Envelope::parse(line.as_bytes()).unwrap().params.unwrap();
        match e.params {
            Some(Params::Decoded(Ok(value))) => assert_eq!(value, strict::parse(raw.get().as_bytes()).unwrap()),
            other => panic!("{other:?}"),
        }
        // Not a decided method, or `params` before `method`: left as written.
        let e = deciding(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"a"}}"#).unwrap();
        assert!(matches!(e.params, Some(Params::Raw(raw)) if raw.get() == r#"{"cursor":"a"}"#));
        let e = deciding(r#"{"jsonrpc":"2.0","id":1,"params":{"name":"rm"},"method":"tools/call"}"#).unwrap();
        assert!(matches!(e.params, Some(Params::Raw(raw)) if raw.get() == r#"{"name":"rm"}"#));
    }

    #[test]
    fn ambiguous_decided_params_are_the_callers_to_refuse() {
        // The envelope is valid; its params carry the ambiguity (refused with its own code).
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"p":1,"P":2}}}"#,
        ] {
            match deciding(line).unwrap().params {
                Some(Params::Decoded(Err(why))) => assert!(why.0.contains("`"), "{why}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        // What the envelope itself refuses is refused the same way by both readings.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":"s"}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{},"params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"Params":{}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a",}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}} x"#,
        ] {
            let plain = Envelope::parse(line.as_bytes()).map(|_| ()).unwrap_err();
            let decided = deciding(line).map(|_| ()).unwrap_err();
            assert_eq!(std::mem::discriminant(&plain), std::mem::discriminant(&decided), "{line}");
            assert_eq!(plain.code(), decided.code(), "{line}");
        }
        // A lone surrogate escape: skipping `params` as written lets it by (the caller's
        // strict parse then refuses it); reading them refuses it at once.
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud800"}}"#;
        assert!(Envelope::parse(line.as_bytes()).is_ok());
        assert!(strict::parse(br#"{"name":"\ud800"}"#).is_err());
        assert!(matches!(deciding(line), Err(EnvelopeError::Parse(_))));
    }

    #[test]
    fn deeply_nested_decided_params_are_refused_not_passed_through() {
        // serde_json stops at 128 levels for the whole message, of which the message's
        // object is one: decided `params` may nest 126 levels below their own.
        let nested = |depth: usize| {
            let params = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{params}}}"#)
        };
        assert!(matches!(deciding(&nested(126)).unwrap().params, Some(Params::Decoded(Ok(_)))));
        for depth in [127, 128, 10_000] {
            match deciding(&nested(depth)) {
                Err(EnvelopeError::Parse(why)) => assert!(why.contains("recursion limit"), "{why}"),
                other => panic!("depth {depth}: {other:?}"),
            }
        }
    }
}
