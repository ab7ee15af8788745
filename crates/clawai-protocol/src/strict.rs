//! A full parse that refuses ambiguity at any depth.
//!
//! Parsers disagree on duplicate keys (first wins, last wins, error) and some servers
//! match keys without regard to case. A message the policy decides on is therefore
//! refused when any object in it has the same key twice, or two keys that differ only
//! in ASCII case: whatever the server's parser, it reads what the policy read.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Number;

use crate::json::Json;

/// Why a message was refused by the strict parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Ambiguous(pub String);

/// Parses JSON text into a value, refusing duplicate and case-variant keys anywhere.
pub fn parse(text: &[u8]) -> Result<Json<'_>, Ambiguous> {
    // Checked once as a whole, then read as `&str`: serde_json then skips its check of
    // every string.
    let text = std::str::from_utf8(text).map_err(|e| Ambiguous(format!("not valid UTF-8 ({e})")))?;
    serde_json::from_str::<Decoded>(text).map_err(|e| Ambiguous(e.to_string())).and_then(|d| d.0)
}

/// A value read strictly as part of a larger parse (the `params` of a message read in
/// the same pass as its envelope): a duplicate or case-variant key does not stop the
/// parse, it makes the value `Err` once the value has been read to its end. Bad JSON
/// still fails the whole parse.
#[derive(Debug)]
pub struct Decoded<'a>(pub Result<Json<'a>, Ambiguous>);

impl<'de> de::Deserialize<'de> for Decoded<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let clash = Cell::new(None);
        let value = StrictSeed { clash: &clash }.deserialize(d)?;
        Ok(Decoded(match clash.into_inner() {
            None => Ok(value),
            Some(why) => Err(Ambiguous(why)),
        }))
    }
}

/// Reads any value, noting the first clash of keys in `clash`.
#[derive(Clone, Copy)]
struct StrictSeed<'c> {
    clash: &'c Cell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for StrictSeed<'_> {
    type Value = Json<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Json<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StrictSeed<'_> {
    type Value = Json<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json<'de>, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json<'de>, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Json<'de>, E> {
        Ok(Number::from_f64(v).map_or(Json::Null, Json::Number))
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Json<'de>, E> {
        Ok(Json::String(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json<'de>, E> {
        Ok(Json::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(Json::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json<'de>, A::Error> {
        let mut members: Vec<(Cow<'de, str>, Json<'de>)> = Vec::new();
        // Small objects (the usual case) are checked by comparing with every key seen;
        // large ones switch to a set of folded keys.
        let mut folded: Option<HashSet<String>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            // One comparison finds both: a key equal to another ignoring case is either
            // the same key again or a case twin.
            let clash = match &mut folded {
                Some(set) => !set.insert(key.to_ascii_lowercase()),
                None => members.iter().any(|(k, _)| k.eq_ignore_ascii_case(&key)),
            };
            if clash {
                let first = self.clash.take().unwrap_or_else(|| {
                    if members.iter().any(|(k, _)| *k == key) {
                        format!("key `{key}` appears twice in one object")
                    } else {
                        format!("key `{key}` differs from another key of the same object only in case")
                    }
                });
                self.clash.set(Some(first));
            }
            if folded.is_none() && members.len() >= 16 {
                folded = Some(members.iter().map(|(k, _)| k).chain([&key]).map(|k| k.to_ascii_lowercase()).collect());
            }
            let value = map.next_value_seed(self)?;
            members.push((key, value));
        }
        Ok(Json::Object(members))
    }
}

/// An object key, borrowed from the text unless it has escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_json_parses() {
        let v = parse(br#"{"a":[1,-2,3.5,"x",null,true,{"b":{}}],"k\u0061":"\u0062"}"#).unwrap();
        assert_eq!(v.to_value(), serde_json::json!({"a":[1,-2,3.5,"x",null,true,{"b":{}}],"ka":"b"}));
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
