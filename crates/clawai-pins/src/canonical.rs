//! What is hashed of each listed item, and how: the members that say what a tool,
//! prompt or resource template is, as RFC 8785 canonical JSON, under SHA-256.
//!
//! Canonical JSON makes one digest for one definition however the server spells it
//! (member order, `1.0` or `1`, `\u00e9` or `é`). Nothing else is normalised: a
//! description that gains a zero-width space or swaps a letter for a look-alike gets a
//! new hash, which is the point.

use serde_json::{Map, Value};

/// What a server lists that is pinned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A tool (`tools/list`).
    Tool,
    /// A prompt (`prompts/list`).
    Prompt,
    /// A resource template (`resources/templates/list`).
    ResourceTemplate,
}

impl Kind {
    /// Every kind, in the order they are shown.
    pub const ALL: [Kind; 3] = [Kind::Tool, Kind::Prompt, Kind::ResourceTemplate];

    /// The name shown by `clawai pins list` and written in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::ResourceTemplate => "resource_template",
        }
    }

    /// The kind a list method lists, and the member of its result that holds the items.
    pub fn of_list_method(method: &str) -> Option<(Kind, &'static str)> {
        match method {
            "tools/list" => Some((Kind::Tool, "tools")),
            "prompts/list" => Some((Kind::Prompt, "prompts")),
            "resources/templates/list" => Some((Kind::ResourceTemplate, "resourceTemplates")),
            _ => None,
        }
    }

    /// The notification that tells a client to list this kind again.
    pub fn list_changed(self) -> &'static str {
        match self {
            Kind::Tool => "notifications/tools/list_changed",
            Kind::Prompt => "notifications/prompts/list_changed",
            Kind::ResourceTemplate => "notifications/resources/list_changed",
        }
    }

    /// The members of an item that are pinned: everything that tells a model or a
    /// policy what the item is or does.
    pub fn pinned_members(self) -> &'static [&'static str] {
        match self {
            Kind::Tool => &["name", "title", "description", "inputSchema", "outputSchema", "annotations", "execution"],
            Kind::Prompt => &["name", "title", "description", "arguments"],
            Kind::ResourceTemplate => &["name", "title", "description", "uriTemplate", "mimeType"],
        }
    }
}

/// The pinned view of one listed item: its pinned members, those it has (absent stays
/// absent, so `"title": null` and no title differ as the server wrote them).
pub fn view(kind: Kind, item: &Value) -> Value {
    let mut out = Map::new();
    if let Value::Object(members) = item {
        for &key in kind.pinned_members() {
            if let Some(value) = members.get(key) {
                out.insert(key.to_owned(), value.clone());
            }
        }
    }
    Value::Object(out)
}

/// The hash of an item's pinned view, written straight from the item (no copy of the
/// view is made: a list of a thousand tools is hashed on its way to the client).
/// Equal to `digest(&view(kind, item))`.
pub fn view_digest(kind: Kind, item: &Value) -> String {
    let mut out = Vec::with_capacity(512);
    out.push(b'{');
    if let Value::Object(members) = item {
        // The pinned member names are ASCII: their canonical order is their byte order.
        let mut keys: Vec<&str> = kind.pinned_members().iter().copied().filter(|k| members.contains_key(*k)).collect();
        keys.sort_unstable();
        for (n, key) in keys.into_iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write_string(key, &mut out);
            out.push(b':');
            write_canonical(&members[key], &mut out);
        }
    }
    out.push(b'}');
    sha256_hex(&out)
}

/// The name an item is pinned under: its `name` (a template without one, by its
/// `uriTemplate`).
pub fn item_name(kind: Kind, item: &Value) -> Option<&str> {
    let name = item.get("name").and_then(Value::as_str);
    match kind {
        Kind::ResourceTemplate => name.or_else(|| item.get("uriTemplate").and_then(Value::as_str)),
        _ => name,
    }
}

/// RFC 8785 (JSON Canonicalization Scheme) text of `value`: members sorted by their
/// UTF-16 code units, numbers as ECMAScript writes them, strings with the fewest
/// escapes, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::with_capacity(256);
    write_canonical(value, &mut out);
    String::from_utf8(out).expect("canonical JSON is UTF-8")
}

/// Appends the canonical JSON of `value` to `out`. Written here rather than with
/// serde_jcs, which re-parses every member name and buffers every object in a
/// `BTreeMap`: hashing a 1,000-tool list took about twice as long with it.
pub fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push(b'[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        Value::Object(members) => {
            let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
            // A map that is not ordered by bytes (serde_json's `preserve_order`), or one
            // with names whose UTF-16 order differs from their byte order, is sorted.
            if !sorted.is_sorted_by(|a, b| utf16_order(a.0, b.0).is_le()) {
                sorted.sort_by(|a, b| utf16_order(a.0, b.0));
            }
            out.push(b'{');
            for (n, (key, item)) in sorted.into_iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_string(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
    }
}

/// Member names compared by their UTF-16 code units (RFC 8785 §3.2.3). Byte order is
/// the same unless a name has a character at or above U+E000.
fn utf16_order(a: &str, b: &str) -> std::cmp::Ordering {
    let plain = |s: &str| s.bytes().all(|b| b < 0xEE);
    if plain(a) && plain(b) { a.as_bytes().cmp(b.as_bytes()) } else { a.encode_utf16().cmp(b.encode_utf16()) }
}

/// A string as RFC 8785 writes it: `"` and `\` escaped, control characters as `\b`,
/// `\t`, `\n`, `\f`, `\r` or `\u00xx` (lower-case hex), everything else as it is.
/// serde_json's compact writer does exactly this.
fn write_string(text: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec cannot fail");
}

/// A number as ECMAScript's `Number.prototype.toString` writes the double it stands
/// for (RFC 8785 §3.2.2.3): integers of up to 2^53 exactly, everything else through
/// the shortest round-trip form.
fn write_number(number: &serde_json::Number, out: &mut Vec<u8>) {
    const EXACT: u64 = 1 << 53;
    if let Some(n) = number.as_u64().filter(|n| *n <= EXACT) {
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    } else if let Some(n) = number.as_i64().filter(|n| n.unsigned_abs() <= EXACT) {
        out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    } else {
        let double = number.as_f64().unwrap_or(f64::NAN);
        if double.is_finite() {
            out.extend_from_slice(ryu_js::Buffer::new().format_finite(double).as_bytes());
        } else {
            // serde_json never holds a non-finite number; written as JSON can.
            out.extend_from_slice(b"null");
        }
    }
}

/// Lower-case hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, bytes);
    let mut out = String::with_capacity(64);
    for byte in digest.as_ref() {
        out.push(char::from_digit(u32::from(byte >> 4), 16).expect("a nibble"));
        out.push(char::from_digit(u32::from(byte & 0xf), 16).expect("a nibble"));
    }
    out
}

/// The hash pinned for a value: SHA-256 of its canonical JSON.
pub fn digest(value: &Value) -> String {
    sha256_hex(canonical_json(value).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canon(text: &str) -> String {
        canonical_json(&serde_json::from_str(text).unwrap())
    }

    #[test]
    fn members_are_sorted_and_whitespace_goes() {
        assert_eq!(
            canon(r#"{ "b": 1, "a": [ 1, 2 ], "c": { "z": null, "y": true } }"#),
            r#"{"a":[1,2],"b":1,"c":{"y":true,"z":null}}"#
        );
    }

    #[test]
    fn rfc_8785_sorting_example_sorts_by_utf16_code_units() {
        // RFC 8785 §3.2.3: the object, and its members in canonical order (the emoji,
        // a surrogate pair, sorts before U+FB33 though its code point is higher).
        let text = "{\"\\u20ac\":\"Euro Sign\",\"\\r\":\"Carriage Return\",\"\\ufb33\":\"Hebrew Letter Dalet With Dagesh\",\
                    \"1\":\"One\",\"\\ud83d\\ude00\":\"Emoji: Grinning Face\",\"\\u0080\":\"Control\",\
                    \"\\u00f6\":\"Latin Small Letter O With Diaeresis\"}";
        let expected = "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\",\
                        \"\u{f6}\":\"Latin Small Letter O With Diaeresis\",\"\u{20ac}\":\"Euro Sign\",\
                        \"\u{1f600}\":\"Emoji: Grinning Face\",\"\u{fb33}\":\"Hebrew Letter Dalet With Dagesh\"}";
        assert_eq!(canon(text), expected);
    }

    #[test]
    fn rfc_8785_number_forms() {
        // RFC 8785 §3.2.2.3 and appendix B: numbers as ECMAScript prints them.
        assert_eq!(
            canon("[1.0, 1e0, 10e-1, -0, 1E2, 0.000001, 1e-7, 1e21, 123456789012.5, 4.50]"),
            "[1,1,1,0,100,0.000001,1e-7,1e+21,123456789012.5,4.5]"
        );
        assert_eq!(
            canon(r#"{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001]}"#),
            r#"{"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27]}"#
        );
    }

    #[test]
    fn rfc_8785_string_escapes() {
        // RFC 8785 §3.2.2.2: only what must be escaped is, the rest is written raw.
        assert_eq!(
            canon(r#"{"string":"\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/"}"#),
            "{\"string\":\"€$\\u000f\\nA'B\\\"\\\\\\\\\\\"/\"}"
        );
    }

    #[test]
    fn unicode_is_hashed_as_written_without_normalisation() {
        // "é" precomposed and as e + combining acute read the same and hash apart.
        let precomposed = json!({"name": "caf\u{e9}"});
        let decomposed = json!({"name": "cafe\u{301}"});
        assert_ne!(digest(&precomposed), digest(&decomposed));
        let spaced = json!({"description": "Reads a file\u{200b}"});
        assert_ne!(digest(&spaced), digest(&json!({"description": "Reads a file"})));
        assert!(canonical_json(&spaced).contains('\u{200b}'), "kept raw, not escaped");
    }

    #[test]
    fn spellings_of_one_definition_hash_alike() {
        let a: Value = serde_json::from_str(
            r#"{"name":"t","inputSchema":{"type":"object","maximum":1.0},"description":"caf\u00e9"}"#,
        )
        .unwrap();
        let b: Value =
            serde_json::from_str(r#"{"description":"café","inputSchema":{"maximum":1,"type":"object"},"name":"t"}"#)
                .unwrap();
        assert_eq!(digest(&view(Kind::Tool, &a)), digest(&view(Kind::Tool, &b)));
    }

    #[test]
    fn the_view_keeps_pinned_members_only_and_absent_stays_absent() {
        let tool = json!({"name": "t", "description": "d", "annotations": {"readOnlyHint": true}, "_meta": {"x": 1}, "icons": []});
        assert_eq!(
            view(Kind::Tool, &tool),
            json!({"name": "t", "description": "d", "annotations": {"readOnlyHint": true}})
        );
        assert_ne!(
            digest(&view(Kind::Tool, &json!({"name": "t", "title": null}))),
            digest(&view(Kind::Tool, &json!({"name": "t"})))
        );
        let prompt = json!({"name": "p", "arguments": [{"name": "x"}], "uriTemplate": "ignored"});
        assert_eq!(view(Kind::Prompt, &prompt), json!({"name": "p", "arguments": [{"name": "x"}]}));
        let template = json!({"uriTemplate": "mem://{id}", "mimeType": "text/plain", "name": "item", "arguments": 1});
        assert_eq!(
            view(Kind::ResourceTemplate, &template),
            json!({"uriTemplate": "mem://{id}", "mimeType": "text/plain", "name": "item"})
        );
    }

    #[test]
    fn every_pinned_member_changes_the_hash() {
        let base = json!({"name": "t", "title": "T", "description": "d", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}, "annotations": {"destructiveHint": false}, "execution": {"taskSupport": "optional"}});
        let pinned = digest(&view(Kind::Tool, &base));
        for key in Kind::Tool.pinned_members() {
            let mut changed = base.clone();
            changed[*key] = json!("other");
            assert_ne!(digest(&view(Kind::Tool, &changed)), pinned, "{key}");
        }
    }

    #[test]
    fn the_direct_digest_of_an_item_is_the_digest_of_its_view() {
        let tool = json!({"name": "t", "title": null, "description": "d\u{200b}", "inputSchema": {"b": 1.5, "a": [1e3]}, "annotations": {"x": true}, "_meta": {}});
        assert_eq!(view_digest(Kind::Tool, &tool), digest(&view(Kind::Tool, &tool)));
        assert_eq!(view_digest(Kind::Prompt, &json!("not an object")), digest(&json!({})));
    }

    #[test]
    fn the_canonical_writer_agrees_with_serde_jcs() {
        // serde_jcs, the maintained reference implementation, as an oracle.
        let samples = [
            r#"{"z":1,"a":{"\ud83d\ude00":1,"\ufb33":2,"b":[1.5,-0.0,1e300,5e-324,9007199254740993,-9007199254740992,18446744073709551615]}}"#,
            r#"["\u0000\u001f\u007f\u2028","\"\\/",true,false,null,{}]"#,
            r#"{"inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":0.1,"maximum":100000000000000000000000}}}}"#,
        ];
        for text in samples {
            let value: Value = serde_json::from_str(text).unwrap();
            assert_eq!(canonical_json(&value), serde_jcs::to_string(&value).unwrap(), "{text}");
        }
    }

    #[test]
    fn sha256_of_the_empty_string_and_abc() {
        assert_eq!(sha256_hex(b""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
