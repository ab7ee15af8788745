//! The strict reading of one JSON-RPC message.
//!
//! Fails closed: anything a receiver might read differently from us is an error, never
//! a guess. That covers bytes that are not one JSON object (bad JSON, invalid UTF-8, a
//! BOM, two objects on a line), batches, a `jsonrpc` other than `"2.0"`, a known member
//! given twice, and a member whose name differs from a known one only in case
//! (`Method`, `PARAMS`), which a lenient receiver might take for the real one.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

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

/// One message, read in place: every field borrows from the line.
#[derive(Debug)]
pub struct Envelope<'a> {
    /// What the message is.
    pub kind: Kind,
    /// The `id` exactly as written (`1`, `"a"`, `0`, `123456789012345678901234567890`).
    pub id: Option<&'a RawValue>,
    /// The method, for requests and notifications.
    pub method: Option<Cow<'a, str>>,
    /// The `params` exactly as written.
    pub params: Option<&'a RawValue>,
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
    /// The JSON-RPC error code for this refusal.
    pub fn code(&self) -> i64 {
        match self {
            EnvelopeError::Parse(_) => crate::reply::PARSE_ERROR,
            EnvelopeError::Batch | EnvelopeError::Invalid { .. } => crate::reply::INVALID_REQUEST,
        }
    }
}

impl<'a> Envelope<'a> {
    /// Reads one message (a line, with or without its newline).
    pub fn parse(line: &'a [u8]) -> Result<Envelope<'a>, EnvelopeError> {
        if line.starts_with(b"\xEF\xBB\xBF") {
            return Err(EnvelopeError::Parse("the line starts with a byte order mark".into()));
        }
        let first = line.iter().copied().find(|b| !b.is_ascii_whitespace());
        match first {
            None => return Err(EnvelopeError::Parse("empty message".into())),
            Some(b'[') => {
                return Err(match serde_json::from_slice::<IgnoredAny>(line) {
                    Ok(_) => EnvelopeError::Batch,
                    Err(e) => EnvelopeError::Parse(e.to_string()),
                });
            }
            Some(b'{') => {}
            Some(_) => {
                return Err(match serde_json::from_slice::<IgnoredAny>(line) {
                    Ok(_) => EnvelopeError::Invalid { id: None, reason: "a message must be a JSON object".into() },
                    Err(e) => EnvelopeError::Parse(e.to_string()),
                });
            }
        }
        let raw: Members<'a> = serde_json::from_slice(line).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => EnvelopeError::Invalid { id: None, reason: strip_position(&e) },
            _ => EnvelopeError::Parse(e.to_string()),
        })?;
        raw.validate()
    }

    /// The id as written, for echoing it back.
    pub fn id_text(&self) -> Option<&'a str> {
        self.id.map(RawValue::get)
    }
}

fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_owned(),
        None => text,
    }
}

#[derive(Default)]
struct Members<'a> {
    jsonrpc: Option<Cow<'a, str>>,
    id: Option<&'a RawValue>,
    method: Option<Cow<'a, str>>,
    params: Option<&'a RawValue>,
    result: Option<&'a RawValue>,
    error: Option<&'a RawValue>,
}

impl<'a> Members<'a> {
    fn validate(self) -> Result<Envelope<'a>, EnvelopeError> {
        let usable_id = self.id.filter(|id| matches!(id.get().as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9')));
        let invalid = |reason: &str| EnvelopeError::Invalid {
            id: usable_id.map(|i| i.get().to_owned()),
            reason: reason.to_owned(),
        };
        if self.jsonrpc.as_deref() != Some("2.0") {
            return Err(invalid("`jsonrpc` must be \"2.0\""));
        }
        if let Some(id) = self.id {
            let ok = usable_id.is_some() || (id.get() == "null" && self.method.is_none() && self.error.is_some());
            if !ok {
                return Err(invalid("`id` must be a string or a number"));
            }
        }
        if let Some(params) = self.params
            && !matches!(params.get().as_bytes().first(), Some(b'{' | b'['))
        {
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

impl<'de> de::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a JSON-RPC message object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut m = Members::default();
                fn once<T, E: de::Error>(slot: &mut Option<T>, value: T, key: &str) -> Result<(), E> {
                    if slot.is_some() {
                        return Err(E::custom(format!("member `{key}` appears twice")));
                    }
                    *slot = Some(value);
                    Ok(())
                }
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match key.as_ref() {
                        "jsonrpc" => once(&mut m.jsonrpc, map.next_value::<Text<'de>>()?.0, "jsonrpc")?,
                        "id" => once(&mut m.id, map.next_value::<&'de RawValue>()?, "id")?,
                        "method" => once(&mut m.method, map.next_value::<Text<'de>>()?.0, "method")?,
                        "params" => once(&mut m.params, map.next_value::<&'de RawValue>()?, "params")?,
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
        d.deserialize_map(V)
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
    }

    #[test]
    fn batches_and_invalid_requests() {
        assert_eq!(kind(r#"[{"jsonrpc":"2.0","id":1,"method":"tools/call"}]"#), Err(EnvelopeError::Batch));
        for bad in [
            r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#,
            r#"{"id":1,"method":"ping"}"#,
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
        match Envelope::parse(br#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#) {
            Err(EnvelopeError::Invalid { id, .. }) => assert_eq!(id.as_deref(), Some("7")),
            other => panic!("{other:?}"),
        }
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
}
