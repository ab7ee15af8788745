//! One digest for one call, however its arguments are spelled: SHA-256 of the RFC 8785
//! canonical JSON (keys sorted, numbers and strings in one spelling) of the server,
//! method, name and arguments. "Allow this call for the session", a grant after an
//! approval that came late, and a sealed approval state all name a call by it, so a
//! call with other arguments, or for another tool or server, never matches.

use ring::digest::{SHA256, digest};
use serde_json::{Value, json};

/// The key of a call: hex SHA-256 of its canonical JSON.
pub fn call_key(server: Option<&str>, method: &str, name: Option<&str>, arguments: Option<&Value>) -> String {
    let call = json!({"server": server, "method": method, "name": name, "arguments": arguments});
    hex_sha256(&canonical(&call))
}

/// The digest of the arguments alone (hex SHA-256 of their canonical JSON).
pub fn arguments_digest(arguments: Option<&Value>) -> String {
    hex_sha256(&canonical(arguments.unwrap_or(&Value::Null)))
}

/// RFC 8785 canonical JSON text of a value.
pub fn canonical(value: &Value) -> String {
    // A serde_json::Value always serializes: its keys are strings and its numbers finite.
    serde_jcs::to_string(value).unwrap_or_default()
}

/// Lower-case hex SHA-256 of `text`.
pub fn hex_sha256(text: &str) -> String {
    digest(&SHA256, text.as_bytes()).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_call_one_key_however_spelled() {
        let a: Value = serde_json::from_str(r#"{"b": 1.0, "a": "x\u0079"}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": "xy", "b": 1}"#).unwrap();
        assert_eq!(
            call_key(Some("fs"), "tools/call", Some("w"), Some(&a)),
            call_key(Some("fs"), "tools/call", Some("w"), Some(&b))
        );
        let other: Value = serde_json::from_str(r#"{"a": "xz", "b": 1}"#).unwrap();
        let key = call_key(Some("fs"), "tools/call", Some("w"), Some(&b));
        assert_ne!(key, call_key(Some("fs"), "tools/call", Some("w"), Some(&other)), "other arguments");
        assert_ne!(key, call_key(Some("gh"), "tools/call", Some("w"), Some(&b)), "another server");
        assert_ne!(key, call_key(Some("fs"), "tools/call", Some("v"), Some(&b)), "another tool");
        assert_eq!(key.len(), 64);
    }
}
