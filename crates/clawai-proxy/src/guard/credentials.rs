//! Credentials in a call's arguments: private keys, cloud and API tokens (the shapes the
//! audit trail redacts), a password in a URL, also base64-encoded. An agent must not
//! quietly send your keys to a server: the guard decides such a call as the policy's
//! `[guards] secrets_in_arguments` says.
//!
//! Only shapes that are credentials whatever surrounds them count; a value merely under
//! a key named `token` or `key` does not (a tool's `key` argument is usually a name).

use std::sync::LazyLock;

use clawai_protocol::Json;
use regex::{Regex, RegexSet};

use crate::redact::CREDENTIAL_SHAPES;

mod assigned;
mod encoded;

pub use assigned::{is_literal_secret, names_secret};

/// A password in a URL (`https://user:PASSWORD@host`); the password is its group.
const URL_PASSWORD: &str = r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]+:(?P<password>[^/\s@]+)@";

/// The shapes, and a password in a URL.
static SHAPES: LazyLock<RegexSet> = LazyLock::new(|| {
    RegexSet::new(CREDENTIAL_SHAPES.iter().map(|(_, pattern)| *pattern).chain([URL_PASSWORD]))
        .expect("the credential shapes compile")
});

/// Whether `text` holds a shape: what `SHAPES.is_match` says, as two patterns the
/// regex engine finds a literal to skip to in (the shapes' literal prefixes; the URL's
/// `://` inside it): a set reads every byte of a MiB-long result.
fn holds_shape(text: &str) -> bool {
    static PREFIXED: LazyLock<Regex> = LazyLock::new(|| {
        let shapes: Vec<String> = CREDENTIAL_SHAPES.iter().map(|(_, pattern)| format!("(?:{pattern})")).collect();
        Regex::new(&shapes.join("|")).expect("the credential shapes compile")
    });
    static IN_URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(URL_PASSWORD).expect("the URL pattern compiles"));
    PREFIXED.is_match(text) || IN_URL.is_match(text)
}

/// The same, as one pattern, to replace them: compiled only once a text holds one
/// ([`holds_shape`] tells), so that the usual result never compiles it.
static ANY_SHAPE: LazyLock<Regex> = LazyLock::new(|| {
    let all: Vec<&str> = CREDENTIAL_SHAPES.iter().map(|(_, pattern)| *pattern).chain([URL_PASSWORD]).collect();
    Regex::new(&all.join("|")).expect("the credential shapes compile")
});

/// `text` with every credential shape replaced by `[REDACTED]` (of a URL, only the
/// password), and every secret literal assigned to a secret's name (`DB_PASSWORD=…`;
/// not code such as `password = input()`: see [`assigned`]), or `None` when it has
/// none.
pub fn redact_credentials(text: &str) -> Option<String> {
    let shaped = redact_shapes(text);
    match assigned::redact_assigned(shaped.as_deref().unwrap_or(text)) {
        Some(both) => Some(both),
        None => shaped,
    }
}

/// False only when [`redact_credentials`] finds nothing in `text`, or in any part of it:
/// no literal a credential shape starts with, and no `=` or `:` after a secret's name.
/// It looks for literals only, so text that holds many strings is tested at once.
pub fn may_hold_credential(text: &str) -> bool {
    may_hold_shape(text.as_bytes()) || assigned::may_assign_secret(text)
}

fn redact_shapes(text: &str) -> Option<String> {
    if text.len() < 12 || !may_hold_shape(text.as_bytes()) || !holds_shape(text) {
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

/// The literals of [`encoded::SHAPE_LITERALS`] (every credential shape holds one;
/// `bearer`, in any case, is looked for apart), in one regex. Text without any (most
/// paths, names, prose and JSON) skips the patterns; tests hold every shape to it.
/// On bytes: the decoded base64 it is also asked of need not be UTF-8, and text is not
/// validated a second time.
static SHAPE_LITERALS: LazyLock<regex::bytes::Regex> = LazyLock::new(|| {
    regex::bytes::Regex::new(&encoded::SHAPE_LITERALS.map(regex::escape).join("|")).expect("literals compile")
});

/// Whether `text` holds the start of a credential shape (see [`SHAPE_LITERALS`]). A
/// search for literals skips through text (every argument and result goes through it).
fn may_hold_shape(text: &[u8]) -> bool {
    SHAPE_LITERALS.is_match(text)
        || memchr::memchr2_iter(b'b', b'B', text)
            .any(|at| text.get(at + 1..at + 6).is_some_and(|rest| rest.eq_ignore_ascii_case(b"earer")))
}

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
    shape_in(text).or_else(|| encoded::credential_encoded_in(text))
}

fn shape_in(text: &str) -> Option<&'static str> {
    if text.len() < 12 || !may_hold_shape(text.as_bytes()) {
        return None;
    }
    let index = SHAPES.matches(text).iter().next()?;
    Some(CREDENTIAL_SHAPES.get(index).map_or("a password in a URL", |(what, _)| *what))
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
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
    fn glued_wrapped_or_mixed_base64_does_not_hide_them_either() {
        use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};
        let token = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let aws = "AKIAIOSFODNN7EXAMPLE";
        // Up to three characters glued before it: the encoding starts anywhere in a group.
        for glued in ["x", "xy", "xyz", "wxyz", "Q+"] {
            assert_eq!(
                found(json!({"data": format!("{glued}{}", STANDARD.encode(token))})),
                Some("a GitHub token"),
                "{glued}"
            );
            assert_eq!(
                found(json!(format!("{glued}{}", URL_SAFE_NO_PAD.encode(aws)))),
                Some("an AWS access key"),
                "{glued}"
            );
        }
        // Characters glued after it, and the other alphabet's characters around it.
        assert_eq!(found(json!(format!("{}abc", STANDARD_NO_PAD.encode(token)))), Some("a GitHub token"));
        assert_eq!(
            found(json!(format!("a-_{}", STANDARD_NO_PAD.encode(format!("k={aws}"))))),
            Some("an AWS access key")
        );
        assert_eq!(
            found(json!(format!("{}+/z", URL_SAFE_NO_PAD.encode(format!("{token}>>>?"))))),
            Some("a GitHub token")
        );
        // Binary bytes before it.
        let mut bytes = vec![0xff, 0xfe, 0x00];
        bytes.extend_from_slice(aws.as_bytes());
        assert_eq!(found(json!(STANDARD.encode(bytes))), Some("an AWS access key"));
        // Wrapped over lines as MIME (76, CRLF) and PEM (64) write it, the key across a
        // line's end, so that no line alone holds it.
        for width in [76, 64, 32] {
            let per_line = width / 4 * 3;
            let encoded = STANDARD.encode(format!("{} {aws} and the rest of the mail", "m".repeat(per_line - 6)));
            let lines: Vec<&str> = encoded.as_bytes().chunks(width).map(|c| std::str::from_utf8(c).unwrap()).collect();
            for line in &lines {
                assert_eq!(found(json!(line)), None, "no line alone gives it away at width {width}");
            }
            for end in ["\n", "\r\n"] {
                let wrapped = format!("Content-Transfer-Encoding: base64{end}{end}{}{end}", lines.join(end));
                assert_eq!(found(json!({"body": wrapped})), Some("an AWS access key"), "width {width}");
            }
        }
    }

    #[test]
    fn shapes_are_redacted_and_names_alone_are_not() {
        let text = "aws AKIAIOSFODNN7EXAMPLE, db https://bob:hunter2@db.example/x";
        assert_eq!(redact_credentials(text).unwrap(), "aws [REDACTED], db https://bob:[REDACTED]@db.example/x");
        assert_eq!(redact_credentials(r#"{"progressToken":"p", "password": input()}"#), None);
    }

    /// A sample of every credential shape, and of other spellings of some.
    pub(super) const SAMPLES: [&str; CREDENTIAL_SHAPES.len() + 4] = [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "github_pat_abcdefghijklmnopqrstuvwxyz",
        "sk-ant-abcdefghijklmnopqrstu",
        "AKIAIOSFODNN7EXAMPLE",
        "ASIAIOSFODNN7EXAMPLE",
        "xoxb-1234567890-abcdef",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "glpat-abcdefghijklmnopqrstu",
        "sk_live_abcdefghijklmnop1234",
        "npm_abcdefghijklmnopqrstuvwxyz0123456789",
        "hf_abcdefghijklmnopqrstuvwxyz0123456",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcdefghijkl",
        "Authorization: BeArEr abcdefghijklmnop",
        "bearer abcdefghijklmnopqrstuv",
        "https://bob:hunter2@db.example/x",
    ];

    #[test]
    fn every_shape_passes_the_quick_test() {
        let samples = SAMPLES;
        assert_eq!(samples.len(), CREDENTIAL_SHAPES.len() + 4, "a sample per shape (and spellings)");
        for sample in samples {
            assert!(SHAPES.is_match(sample), "{sample} is a shape");
            assert!(holds_shape(sample), "{sample} is a shape to the quicker test");
            assert!(may_hold_shape(sample.as_bytes()), "{sample} passes the quick test");
            assert!(shape_in(sample).is_some(), "{sample}");
        }
        // Ordinary text and JSON results skip the patterns.
        for plain in [
            "/home/u/projects/app/src/main.rs",
            r#"{"content":[{"type":"text","text":"The sum is 5"}],"is_error":false}"#,
            "AKI AIz",
        ] {
            assert!(!may_hold_shape(plain.as_bytes()), "{plain}");
        }
    }

    proptest::proptest! {
        /// Whatever surrounds it, a shape the patterns find passes the quick test.
        #[test]
        fn no_shape_is_missed_by_the_quick_test(
            before in "[ -~]{0,20}",
            shape in "(-----BEGIN [A-Z ]{0,4}PRIVATE KEY-----|gh[pousr]_[a-z0-9]{20}|github_pat_[a-z]{20}|sk-(ant-)?[a-z]{16}|(AKIA|ASIA)[0-9A-Z]{16}|xox[abposr]-[a-z]{10}|AIza[a-z]{35}|glpat-[a-z]{20}|[rs]k_(live|test)_[a-z]{16}|npm_[a-z]{36}|hf_[a-z]{30}|eyJ[a-z]{8}\\.[a-z]{8}\\.[a-z]{8}|[bB][eE][aA][rR][eE][rR] [a-z]{12}|https://u:p@h)",
            after in "[ -~]{0,20}",
        ) {
            let text = format!("{before} {shape} {after}");
            proptest::prop_assert!(SHAPES.is_match(&text), "the generator makes shapes: {}", text);
            proptest::prop_assert!(holds_shape(&text), "{}", text);
            proptest::prop_assert!(may_hold_shape(text.as_bytes()), "{}", text);
        }

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
            json!({"path": "/home/me/projects/clawai/crates/clawai-proxy/src/credentials_and_more_of_them.rs"}),
            json!({"diff": "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -1,3 +1,3 @@\n-fn main_function_with_a_long_name() {}\n+fn main_function_with_a_longer_name() {}\n"}),
            json!({"text": "Internationalization_and_localization_support\nCounterrevolutionaries_and_their_friends\nend"}),
            json!({"data": STANDARD.encode("ordinary text, wrapped over several lines as mail does it, ".repeat(6))}),
        ] {
            assert_eq!(found(value.clone()), None, "{value}");
        }
    }
}
