//! A JSON value that borrows its text from the message it was read from.
//!
//! The `params` of every decided message are read into one of these ([`crate::strict`])
//! and the policy and the audit trail read them from it. Unlike `serde_json::Value` it
//! copies no string that has no escape and keeps an object's members in a plain list,
//! so reading a call costs a couple of allocations instead of one per key and value.

use std::borrow::Cow;

use serde_json::{Number, Value};

/// One JSON value. Objects keep their members in the order written; the strict parse
/// that builds them refuses an object whose keys repeat.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// A number, as serde_json reads it.
    Number(Number),
    /// A string, borrowed from the message unless it had escapes.
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object's members, in the order written.
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

impl<'a> Json<'a> {
    /// The value of an object's member; `None` for other values or a missing key.
    pub fn get(&self, key: &str) -> Option<&Json<'a>> {
        match self {
            Json::Object(members) => members.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text of a string.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// True for an object.
    pub fn is_object(&self) -> bool {
        matches!(self, Json::Object(_))
    }

    /// True for an array.
    pub fn is_array(&self) -> bool {
        matches!(self, Json::Array(_))
    }

    /// The same value as a `serde_json::Value` (copies everything).
    pub fn to_value(&self) -> Value {
        match self {
            Json::Null => Value::Null,
            Json::Bool(b) => Value::Bool(*b),
            Json::Number(n) => Value::Number(n.clone()),
            Json::String(s) => Value::String(s.to_string()),
            Json::Array(items) => Value::Array(items.iter().map(Json::to_value).collect()),
            Json::Object(members) => {
                Value::Object(members.iter().map(|(k, v)| (k.to_string(), v.to_value())).collect())
            }
        }
    }
}

/// A view of a `serde_json::Value` (policy fixtures, `clawai policy explain`), borrowing
/// its strings.
impl<'a> From<&'a Value> for Json<'a> {
    fn from(value: &'a Value) -> Self {
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(n.clone()),
            Value::String(s) => Json::String(Cow::Borrowed(s)),
            Value::Array(items) => Json::Array(items.iter().map(Json::from).collect()),
            Value::Object(map) => {
                Json::Object(map.iter().map(|(k, v)| (Cow::Borrowed(k.as_str()), Json::from(v))).collect())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_survives_the_round_trip() {
        let value = json!({"a": [1, -2, 3.5, "x", null, true, {"b": {}}], "c": "d"});
        let view = Json::from(&value);
        assert_eq!(view.to_value(), value);
        assert_eq!(view.get("c").and_then(Json::as_str), Some("d"));
        assert!(view.get("a").is_some_and(Json::is_array));
        assert_eq!(view.get("missing"), None);
        assert_eq!(Json::String("x".into()).get("x"), None);
    }
}
