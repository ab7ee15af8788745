//! A full parse that refuses ambiguity at any depth.
//!
//! Parsers disagree on duplicate keys (first wins, last wins, error) and some servers
//! match keys without regard to case. A message the policy decides on is therefore
//! refused when any object in it has the same key twice, or two keys that differ only
//! in ASCII case: whatever the server's parser, it reads what the policy read.

use std::collections::HashSet;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a message was refused by the strict parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Ambiguous(pub String);

/// Parses JSON text into a value, refusing duplicate and case-variant keys anywhere.
pub fn parse(text: &[u8]) -> Result<Value, Ambiguous> {
    serde_json::from_slice::<Strict>(text).map(|s| s.0).map_err(|e| Ambiguous(e.to_string()))
}

struct Strict(Value);

impl<'de> de::Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Strict;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Strict, E> {
        Ok(Strict(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Strict, E> {
        Ok(Strict(Value::Number(v.into())))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Strict, E> {
        Ok(Strict(Value::Number(v.into())))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Strict, E> {
        Ok(Strict(Number::from_f64(v).map_or(Value::Null, Value::Number)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Strict, E> {
        Ok(Strict(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Strict, E> {
        Ok(Strict(Value::String(v)))
    }
    fn visit_unit<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Strict, E> {
        Ok(Strict(Value::Null))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Strict, A::Error> {
        let mut items = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            items.push(v);
        }
        Ok(Strict(Value::Array(items)))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Strict, A::Error> {
        let mut out = Map::new();
        // Small objects (the usual case) are checked by comparing with every key seen;
        // large ones switch to a set of folded keys.
        let mut folded: Option<HashSet<String>> = None;
        while let Some(key) = map.next_key::<String>()? {
            // One comparison finds both: a key equal to another ignoring case is either
            // the same key again or a case twin.
            let clash = match &mut folded {
                Some(set) => !set.insert(key.to_ascii_lowercase()),
                None => out.keys().any(|k| k.eq_ignore_ascii_case(&key)),
            };
            if clash {
                return Err(de::Error::custom(if out.contains_key(&key) {
                    format!("key `{key}` appears twice in one object")
                } else {
                    format!("key `{key}` differs from another key of the same object only in case")
                }));
            }
            if folded.is_none() && out.len() >= 16 {
                folded = Some(out.keys().chain([&key]).map(|k| k.to_ascii_lowercase()).collect());
            }
            let Strict(value) = map.next_value()?;
            out.insert(key, value);
        }
        Ok(Strict(Value::Object(out)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_json_parses() {
        let v = parse(br#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}]}"#).unwrap();
        assert_eq!(v["a"][3], "x");
    }

    #[test]
    fn duplicates_anywhere_are_refused() {
        assert!(parse(br#"{"name":"a","name":"b"}"#).is_err());
        assert!(parse(br#"{"params":{"arguments":{"path":"/ok","path":"/etc/shadow"}}}"#).is_err());
        assert!(parse(br#"[{"x":1},{"y":{"z":1,"z":2}}]"#).is_err());
        assert!(parse(br#"{"path":"a","p\u0061th":"b"}"#).is_err(), "escapes are decoded before comparing");
    }

    #[test]
    fn case_variants_are_refused() {
        assert!(parse(br#"{"name":"read","Name":"delete"}"#).is_err());
        assert!(parse(br#"{"arguments":{"path":"/ok","PATH":"/etc"}}"#).is_err());
        assert!(parse(br#"{"name":"a","other":"b"}"#).is_ok());
        // Past the small-object threshold too.
        let mut big: String = (0..40).map(|i| format!("\"k{i}\":{i},")).collect();
        big.push_str("\"K7\":0");
        assert!(parse(format!("{{{big}}}").as_bytes()).is_err());
        let ok: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        assert!(parse(format!("{{{}}}", ok.join(",")).as_bytes()).is_ok());
    }

    #[test]
    fn the_refusal_says_which_clash_it_was() {
        let twice = parse(br#"{"path":"a","path":"b"}"#).unwrap_err().0;
        assert!(twice.contains("`path` appears twice"), "{twice}");
        let twin = parse(br#"{"path":"a","PATH":"b"}"#).unwrap_err().0;
        assert!(twin.contains("`PATH` differs from another key of the same object only in case"), "{twin}");
        let many: String = (0..20).map(|i| format!("\"k{i}\":{i},")).collect();
        let twice = parse(format!("{{{many}\"k3\":0}}").as_bytes()).unwrap_err().0;
        assert!(twice.contains("`k3` appears twice"), "{twice}");
    }
}
