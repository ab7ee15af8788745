//! Secrets next to a name that says what they are (`DB_PASSWORD=s3cr3t`, `password:
//! hunter2hunter2`, `"api_key": "abc123def456"`), in what a tool returns.
//!
//! The audit trail replaces whatever is assigned to such a name. A result is different:
//! it is often source code the agent reads and then edits, where `password = input()` or
//! `token: str` assigns no secret, and a `[REDACTED]` written back would break the file.
//! So a result loses only a value that reads as a secret literal ([`is_literal_secret`]).

use std::sync::LazyLock;

use regex::Regex;

use crate::redact::{NAMED_ASSIGNMENT, REDACTED};

static ASSIGNED: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(NAMED_ASSIGNMENT).expect("the named-secret pattern compiles"));

/// The words a secret's name ends with, lower-cased, `_` and `-` left out.
const SECRET_NAMES: [&str; 12] = [
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "apikey",
    "accesskey",
    "privatekey",
    "credential",
    "credentials",
    "authorization",
    "pwd",
];

/// Whether a key's name says its value is a secret: it ends with one of
/// [`SECRET_NAMES`] (`DB_PASSWORD`, `apiKey`, `aws_secret`), not merely holds one
/// (`token_count`, `password_hint`).
pub fn names_secret(key: &str) -> bool {
    names_secret_bytes(key.as_bytes())
}

fn names_secret_bytes(key: &[u8]) -> bool {
    // Most names (`type`, `text`, `content`, `path`) end otherwise: told by three bytes.
    let Some(tail) = key.last_chunk::<3>() else { return false };
    if !matches!(
        tail.map(|b| b.to_ascii_lowercase()),
        [b'o', b'r', b'd'] // password
            | [b's', b'w', b'd'] // passwd
            | [b'p', b'w', b'd']
            | [b'a', b's', b'e'] // passphrase
            | [b'r', b'e', b't'] // secret
            | [b'k', b'e', b'n'] // token
            | [b'k', b'e', b'y'] // api, access and private keys
            | [b'i', b'a', b'l'] // credential
            | [b'a', b'l', b's'] // credentials
            | [b'i', b'o', b'n'] // authorization
    ) {
        return false;
    }
    let mut folded = [0u8; 64];
    let mut length = 0;
    // The last 64 letters and digits are enough to compare the ending.
    for b in key.iter().rev().filter(|b| b.is_ascii_alphanumeric()).take(folded.len()) {
        folded[folded.len() - 1 - length] = b.to_ascii_lowercase();
        length += 1;
    }
    let folded = &folded[folded.len() - length..];
    SECRET_NAMES.iter().any(|name| folded.ends_with(name.as_bytes()))
}

/// Whether a value assigned to a secret's name reads as the secret itself, not as code
/// or a placeholder: at least 8 characters, not only letters (`response`, `string`) nor
/// only digits (`1024`), no brackets, parentheses or `$` (a call, an index, a template
/// or a variable), and not a dotted name (`self.token`, `settings.SECRET_KEY`).
pub fn is_literal_secret(value: &str) -> bool {
    let value = value.trim_end_matches([')', ']', '}', ',', ';']);
    let dotted_name = value.split('.').count() > 1
        && value.split('.').all(|part| {
            part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        });
    value.chars().count() >= 8
        && !value.chars().all(char::is_alphabetic)
        && !value.chars().all(|c| c.is_ascii_digit())
        && !value.contains(['(', ')', '[', ']', '{', '}', '<', '>', '$', '`'])
        && !dotted_name
}

/// Whether an `=` or `:` in `text` follows a secret's name (blanks and a quote between
/// them allowed): only then is the pattern run, as results mostly hold none.
pub(super) fn may_assign_secret(text: &str) -> bool {
    let bytes = text.as_bytes();
    memchr::memchr2_iter(b'=', b':', bytes).any(|at| {
        let before = bytes[..at].trim_ascii_end();
        let before = before.strip_suffix(b"\"").or_else(|| before.strip_suffix(b"'")).unwrap_or(before);
        let start = before
            .iter()
            .rposition(|b| !(b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')))
            .map_or(0, |at| at + 1);
        names_secret_bytes(&before[start..])
    })
}

/// `text` with every secret literal assigned to a secret's name replaced, or `None`
/// when it has none.
pub(super) fn redact_assigned(text: &str) -> Option<String> {
    if !may_assign_secret(text) {
        return None;
    }
    let mut changed = false;
    let redacted = ASSIGNED.replace_all(text, |found: &regex::Captures<'_>| {
        let whole = found.get(0).expect("a match has its group 0");
        let value = found.name("assigned").expect("the pattern has the group");
        if !is_literal_secret(value.as_str()) {
            return whole.as_str().to_owned();
        }
        changed = true;
        format!("{}{REDACTED}{}", &text[whole.start()..value.start()], &text[value.end()..whole.end()])
    });
    changed.then(|| redacted.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secret_literals_next_to_their_names_are_redacted() {
        for (text, expected) in [
            ("DB_PASSWORD=s3cr3tvalue", "DB_PASSWORD=[REDACTED]"),
            ("password: hunter2hunter2", "password: [REDACTED]"),
            (r#"{"api_key": "abc123def456"}"#, r#"{"api_key": "[REDACTED]"}"#),
            ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"),
            ("export GITHUB_TOKEN='tok-2024-xyz'\nnext", "export GITHUB_TOKEN='[REDACTED]'\nnext"),
        ] {
            assert_eq!(redact_assigned(text).as_deref(), Some(expected), "{text}");
        }
    }

    #[test]
    fn code_and_placeholders_are_left_as_they_are() {
        for text in [
            "password = input()",
            "token: str",
            "password: string;",
            "max_tokens: 1024",
            "token = response",
            "password = os.environ[\"DB_PASSWORD\"]",
            "token = self.token",
            "SECRET_KEY = settings.SECRET_KEY",
            "password=${DB_PASSWORD}",
            "password=$DB_PASSWORD",
            "secret = generate_secret(32)",
            "token_count: 5, password_hint: the usual one",
            r#"{"content":[{"type":"text","text":"The sum is 5"}]}"#,
        ] {
            assert_eq!(redact_assigned(text), None, "{text}");
        }
    }

    #[test]
    fn the_quick_ending_test_lets_every_secret_name_through() {
        for name in SECRET_NAMES {
            assert!(names_secret(name) && names_secret(&name.to_ascii_uppercase()), "{name}");
        }
    }

    #[test]
    fn names_are_read_by_their_ending() {
        for name in ["password", "DB_PASSWORD", "apiKey", "api-key", "aws_secret", "Authorization", "x_credentials"] {
            assert!(names_secret(name), "{name}");
        }
        for name in ["token_count", "password_hint", "keys", "tokens", "path", ""] {
            assert!(!names_secret(name), "{name}");
        }
    }
}
