//! Credentials in a call's arguments: private keys, cloud and API tokens (the shapes the
//! audit trail redacts), a password in a URL, also base64-encoded. An agent must not
//! quietly send your keys to a server: the guard decides such a call as the policy's
//! `[guards] secrets_in_arguments` says.
//!
//! Only shapes that are credentials whatever surrounds them count; a value merely under
//! a key named `token` or `key` does not (a tool's `key` argument is usually a name).

use std::sync::LazyLock;

use base64::Engine;
use clawai_protocol::Json;
use regex::{Regex, RegexSet};

use crate::redact::CREDENTIAL_SHAPES;

/// A password in a URL (`https://user:PASSWORD@host`); the password is its group.
const URL_PASSWORD: &str = r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]+:(?P<password>[^/\s@]+)@";

/// The shapes, and a password in a URL.
static SHAPES: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(CREDENTIAL_SHAPES.iter().map(|(_, pattern)| *pattern).chain([URL_PASSWORD]))
        .expect("the credential shapes compile")
});

/// The same, as one pattern, to replace them: compiled only once a text holds one (the
/// set above tells), so that the usual result costs one compiled pattern, not two.
static ANY_SHAPE: LazyLock<Regex> = LazyLock::new(|| {
    let all: Vec<&str> = CREDENTIAL_SHAPES.iter().map(|(_, pattern)| *pattern).chain([URL_PASSWORD]).collect();
    Regex::new(&all.join("|")).expect("the credential shapes compile")
});

/// `text` with every credential shape replaced by `[REDACTED]` (of a URL, only the
/// password), or `None` when it has none. Unlike the audit trail's redaction, a value
/// merely next to a secret-sounding name (`token: …`) is left: in what a tool returns
/// (source code, JSON, logs) that is more often not a secret than one.
pub fn redact_credentials(text: &str) -> Option<String> {
    if text.len() < 12 || !SHAPES.is_match(text) {
        return None;
    }
    Some(
        ANY_SHAPE
            .replace_all(text, |found: &regex::Captures<'_>| match found.name("password") {
                Some(password) => {
                    let whole = found.get(0).expect("a match has its group 0");
                    format!(
                        "{}{}{}",
                        &text[whole.start()..password.start()],
                        crate::redact::REDACTED,
                        &text[password.end()..whole.end()]
                    )
                }
                None => crate::redact::REDACTED.to_owned(),
            })
            .into_owned(),
    )
}

/// A run of base64 long enough to hold a token (standard or URL-safe alphabet).
static BASE64_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_\-]{24,}={0,2}").expect("the base64 pattern compiles"));

/// What credential `arguments` carry, said for a person (`a GitHub token`), if any:
/// every string at any depth and every key, as written or base64-decoded.
pub fn credential_in(arguments: &Json<'_>) -> Option<&'static str> {
    match arguments {
        Json::String(text) => credential_in_text(text),
        Json::Array(items) => items.iter().find_map(credential_in),
        Json::Object(members) => {
            members.iter().find_map(|(key, value)| credential_in_text(key).or_else(|| credential_in(value)))
        }
        _ => None,
    }
}

fn credential_in_text(text: &str) -> Option<&'static str> {
    shape_in(text).or_else(|| {
        BASE64_RUN.find_iter(text).find_map(|run| {
            let run = run.as_str().trim_end_matches('=');
            let engines =
                [base64::engine::general_purpose::STANDARD_NO_PAD, base64::engine::general_purpose::URL_SAFE_NO_PAD];
            engines
                .iter()
                .find_map(|engine| engine.decode(run).ok())
                .and_then(|bytes| std::str::from_utf8(&bytes).ok().and_then(shape_in))
        })
    })
}

fn shape_in(text: &str) -> Option<&'static str> {
    if text.len() < 12 {
        return None;
    }
    let index = SHAPES.matches(text).iter().next()?;
    Some(CREDENTIAL_SHAPES.get(index).map_or("a password in a URL", |(what, _)| *what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use serde_json::{Value, json};

    fn found(value: Value) -> Option<&'static str> {
        credential_in(&Json::from(&value))
    }

    #[test]
    fn credentials_are_found_at_any_depth() {
        let aws = "AKIAIOSFODNN7EXAMPLE";
        assert_eq!(found(json!({"body": format!("key={aws}")})), Some("an AWS access key"));
        assert_eq!(
            found(json!({"files": [{"content": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}]})),
            Some("a GitHub token")
        );
        let key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
        assert_eq!(found(json!({"text": key})), Some("a private key"));
        assert_eq!(found(json!({"url": "https://bob:hunter2@db.example/x"})), Some("a password in a URL"));
        assert_eq!(
            found(json!({"sk-ant-abcdefghijklmnopqrstu": 1})),
            Some("an OpenAI or Anthropic API key"),
            "keys too"
        );
    }

    #[test]
    fn base64_does_not_hide_them() {
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        assert_eq!(found(json!({"data": STANDARD.encode(format!("token={token}"))})), Some("a GitHub token"));
        assert_eq!(found(json!({"data": URL_SAFE.encode(format!("{token}??>>"))})), Some("a GitHub token"));
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----";
        assert_eq!(found(json!(format!("upload {}", STANDARD.encode(key)))), Some("a private key"));
    }

    #[test]
    fn shapes_are_redacted_and_names_alone_are_not() {
        let text = "aws AKIAIOSFODNN7EXAMPLE, db https://bob:hunter2@db.example/x";
        assert_eq!(redact_credentials(text).unwrap(), "aws [REDACTED], db https://bob:[REDACTED]@db.example/x");
        assert_eq!(redact_credentials(r#"{"progressToken":"p", "password": input()}"#), None);
    }

    #[test]
    fn ordinary_arguments_are_not_credentials() {
        for value in [
            json!({"path": "/home/me/project/src/main.rs", "content": "fn main() {}"}),
            json!({"key": "user:123", "token_count": 5, "password_hint": "the usual"}),
            json!({"sha": "3f786850e387550fdab836ed7e6dc881de23001b"}),
            json!({"data": STANDARD.encode("just some ordinary text that is long enough")}),
            json!({"url": "https://example.com/a:b@c"}),
            json!({"id": "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6"}),
        ] {
            assert_eq!(found(value.clone()), None, "{value}");
        }
    }
}
