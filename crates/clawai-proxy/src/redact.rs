//! Secrets out of the audit trail.
//!
//! Values under secret-looking keys (password, token, secret, api_key, authorization…)
//! are replaced whole; strings shaped like well-known credentials (GitHub and OpenAI/
//! Anthropic keys, AWS access keys, Slack tokens, JWTs, bearer tokens, private key
//! blocks) are replaced wherever they appear. Only the audit copy is redacted: the
//! message forwarded is untouched.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

static SECRET_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)",
        r"|(?-u:\b)(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})",
        r"|(?-u:\b)sk-(ant-)?[A-Za-z0-9_\-]{16,}",
        r"|(?-u:\b)(AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)",
        r"|(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}",
        r"|(?-u:\b)AIza[0-9A-Za-z_\-]{35}",
        r"|(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}",
        r"|(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*",
    ))
    .expect("the secret patterns compile")
});

/// True when a key's name says its value is a secret.
pub fn is_secret_key(key: &str) -> bool {
    let folded: String = key.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_ascii_lowercase();
    const WORDS: [&str; 14] = [
        "password",
        "passwd",
        "passphrase",
        "secret",
        "token",
        "apikey",
        "authorization",
        "auth",
        "cookie",
        "privatekey",
        "accesskey",
        "credential",
        "sessionid",
        "signature",
    ];
    WORDS.iter().any(|w| folded.contains(w)) || folded == "pwd" || folded == "pass" || folded == "key"
}

/// A value that serialises with its secrets replaced, without copying it first (the
/// audit trail writes one per decided message).
#[derive(Debug, Clone, Copy)]
pub struct Redacted<'a>(pub &'a Value);

impl serde::Serialize for Redacted<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        match self.0 {
            Value::String(s) => match SECRET_VALUE.find(s) {
                None => serializer.serialize_str(s),
                Some(_) => serializer.serialize_str(&redact_str(s)),
            },
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(&Redacted(item))?;
                }
                seq.end()
            }
            Value::Object(map) => {
                let mut out = serializer.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    if is_secret_key(k) && !v.is_null() {
                        out.serialize_entry(k, REDACTED)?;
                    } else {
                        out.serialize_entry(k, &Redacted(v))?;
                    }
                }
                out.end()
            }
            other => other.serialize(serializer),
        }
    }
}

/// A copy of `value` with secrets replaced.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::String(s) => Value::String(redact_str(s)),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(k) && !v.is_null() { Value::String(REDACTED.into()) } else { redact(v) };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A copy of `s` with credential-shaped substrings replaced.
pub fn redact_str(s: &str) -> String {
    SECRET_VALUE.replace_all(s, REDACTED).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secret_keys_are_replaced_whole() {
        let v = redact(
            &json!({"password": "hunter2", "api_key": "abc", "Authorization": "Basic x", "nested": {"github_token": "t"}, "path": "/a"}),
        );
        assert_eq!(v["password"], REDACTED);
        assert_eq!(v["api_key"], REDACTED);
        assert_eq!(v["Authorization"], REDACTED);
        assert_eq!(v["nested"]["github_token"], REDACTED);
        assert_eq!(v["path"], "/a");
    }

    #[test]
    fn redacted_serialises_like_the_redacted_copy() {
        let v = json!({"a": ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", {"token": "t", "n": 1}], "ok": "fine", "password": null});
        assert_eq!(serde_json::to_value(Redacted(&v)).unwrap(), redact(&v));
    }

    #[test]
    fn token_shaped_values_are_replaced_anywhere() {
        let cases = [
            "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 now",
            "sk-proj-abcdefghijklmnopqrstuvwx",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefghij",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "Authorization: Bearer abcdefghijklmnop.qrstuv",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ];
        for c in cases {
            let out = redact_str(c);
            assert!(out.contains(REDACTED), "{c} -> {out}");
            for secret in
                ["ghp_abc", "sk-proj", "sk-ant", "AKIAIOSF", "xoxb-", "b3BlbnNzaC1", "abcdefghijklmnop", "eyJhbGci"]
            {
                assert!(!out.contains(secret), "{c} -> {out}");
            }
        }
        assert_eq!(redact_str("an ordinary sentence about tokens"), "an ordinary sentence about tokens");
    }
}
