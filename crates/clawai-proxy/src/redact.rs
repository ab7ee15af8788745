//! Secrets out of the audit trail.
//!
//! Values under secret-looking keys (password, token, secret, api_key, authorization…)
//! are replaced whole; strings shaped like well-known credentials (GitHub, GitLab,
//! OpenAI/Anthropic, Stripe, npm and Hugging Face keys, AWS access keys, Slack tokens,
//! JWTs, bearer tokens, private key blocks) are replaced wherever they appear. Only the
//! audit copy is redacted: the message forwarded is untouched.

use std::sync::LazyLock;

use clawai_protocol::{Json, words};
use regex::Regex;

use crate::json_string::json_str;

/// What replaces a secret.
pub const REDACTED: &str = "[REDACTED]";

/// Credentials recognised by their shape wherever they appear, each with what it is
/// (said to a person asked about a call that carries one).
pub const CREDENTIAL_SHAPES: [(&str, &str); 12] = [
    ("a private key", r"(?s)-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(-----END [A-Z ]*PRIVATE KEY-----|$)"),
    ("a GitHub token", r"(?-u:\b)(gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"),
    ("an OpenAI or Anthropic API key", r"(?-u:\b)sk-(ant-)?[A-Za-z0-9_\-]{16,}"),
    ("an AWS access key", r"(?-u:\b)(AKIA|ASIA)[0-9A-Z]{16}(?-u:\b)"),
    ("a Slack token", r"(?-u:\b)xox[abposr]-[A-Za-z0-9\-]{10,}"),
    ("a Google API key", r"(?-u:\b)AIza[0-9A-Za-z_\-]{35}"),
    ("a GitLab token", r"(?-u:\b)glpat-[A-Za-z0-9_\-]{20,}"),
    ("a Stripe key", r"(?-u:\b)[rs]k_(live|test)_[A-Za-z0-9]{16,}"),
    ("an npm token", r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)"),
    ("a Hugging Face token", r"(?-u:\b)hf_[A-Za-z0-9]{30,}"),
    ("a JSON Web Token", r"(?-u:\b)eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ("a bearer token", r"(?i:bearer)\s+[A-Za-z0-9._~+/\-]{12,}=*"),
];

/// Secrets the audit trail redacts besides the shapes: what is written next to a name
/// that says it is one. Only the secret part (a capture group) is replaced.
const NAMED_SECRETS: [&str; 2] = [
    // A password in a URL (`https://user:PASSWORD@host`): only the password goes.
    r"(?-u:\b)[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:(?P<url_password>[^/\s@]+)@",
    NAMED_ASSIGNMENT,
];

/// A value assigned to a secret-named key in text (`DB_PASSWORD=…`, `token: …`,
/// `"api_key": "…"`, `Authorization: Basic …`): only the value (group `assigned`) goes.
pub(crate) const NAMED_ASSIGNMENT: &str = concat!(
    r#"(?i:(?-u:\b)[A-Za-z0-9_\-]*?(?:password|passwd|passphrase|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credentials?|authorization|pwd)["']?\s*[=:]\s*["']?)"#,
    r#"(?P<assigned>(?:(?i:basic|bearer|token)\s+)?[^\s"'&;,]+)"#,
);

/// Every secret the audit trail redacts, as one pattern.
fn secret_pattern() -> String {
    CREDENTIAL_SHAPES.iter().map(|(_, pattern)| *pattern).chain(NAMED_SECRETS).collect::<Vec<_>>().join("|")
}

static SECRET_VALUE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&secret_pattern()).expect("the secret patterns compile"));

/// No secret shape matches fewer bytes (`pwd=x`); shorter strings skip the search. A
/// test checks it against the pattern.
const SHORTEST_SECRET: usize = 5;

/// The capture groups that hold the secret part of a match; without one, the whole match
/// is the secret.
const SECRET_PARTS: [&str; 2] = ["url_password", "assigned"];

/// True when `text` contains something shaped like a credential.
fn has_secret_value(text: &str) -> bool {
    text.len() >= SHORTEST_SECRET && may_hold_secret(text.as_bytes()) && SECRET_VALUE.is_match(text)
}

/// False when `bytes` has none of the bytes every secret shape needs one of: `-`
/// (`-----BEGIN`, `sk-`, `xoxb-`, `glpat-`), `_` (`ghp_`, `github_pat_`, `sk_live_`,
/// `npm_`, `hf_`), `A` (`AKIA`, `ASIA`,
/// `AIza`), `J` (`eyJ`), `:` or `=` (a URL's password, a secret assigned to a key), or
/// what can follow `bearer` (a blank, a control character, or a byte of a non-ASCII
/// character, which may be a Unicode space). Plain paths and names, most arguments, then
/// skip the regex, which costs ten times as much; a test checks the claim against the
/// pattern.
fn may_hold_secret(bytes: &[u8]) -> bool {
    let flagged = |word: u64| {
        words::bytes_equal(word, b'-')
            | words::bytes_equal(word, b'_')
            | words::bytes_equal(word, b'A')
            | words::bytes_equal(word, b'J')
            | words::bytes_equal(word, b':')
            | words::bytes_equal(word, b'=')
            | words::bytes_below(word, b' ' + 1)
            | (word & 0x8080_8080_8080_8080)
    };
    let mut chunks = bytes.chunks_exact(8);
    chunks.any(|chunk| flagged(words::load(chunk)) != 0) || flagged(words::load_padded(chunks.remainder(), b'a')) != 0
}

/// True when a key's name says its value is a secret.
pub fn is_secret_key(key: &str) -> bool {
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
    // The key's letters and digits, lower-cased (`API-Key` reads as `apikey`); on the
    // stack for the usual short key, since every key of every decided call comes here.
    let mut stack = [0u8; 64];
    let mut heap = Vec::new();
    let mut length = 0;
    for b in key.bytes().filter(u8::is_ascii_alphanumeric).map(|b| b.to_ascii_lowercase()) {
        if length < stack.len() {
            stack[length] = b;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&stack);
            }
            heap.push(b);
        }
        length += 1;
    }
    let folded = if heap.is_empty() { &stack[..length] } else { &heap[..] };
    WORDS.iter().any(|w| folded.windows(w.len()).any(|window| window == w.as_bytes()))
        || matches!(folded, b"pwd" | b"pass" | b"key")
}

/// A value written with its secrets replaced, without copying it first (the audit trail
/// writes one per decided message).
#[derive(Debug, Clone, Copy)]
pub struct Redacted<'a>(pub &'a Json<'a>);

impl Redacted<'_> {
    /// Appends the value as JSON, secrets replaced: what serde_json writes of a copy with
    /// every secret-keyed value and every credential-shaped substring replaced.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self.0 {
            Json::String(s) if has_secret_value(s) => json_str(out, &redact_str(s)),
            Json::String(s) => json_str(out, s),
            Json::Array(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    Redacted(item).write_json(out);
                }
                out.push(b']');
            }
            Json::Object(members) => {
                out.push(b'{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    // A key can be a secret too (`{"ghp_…": 1}`).
                    if has_secret_value(key) {
                        json_str(out, &redact_str(key));
                    } else {
                        json_str(out, key);
                    }
                    out.push(b':');
                    if is_secret_key(key) && *value != Json::Null {
                        json_str(out, REDACTED);
                    } else {
                        Redacted(value).write_json(out);
                    }
                }
                out.push(b'}');
            }
            Json::Null => out.extend_from_slice(b"null"),
            Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            // Writing a number into a Vec cannot fail.
            Json::Number(n) => drop(serde_json::to_writer(&mut *out, n)),
        }
    }
}

/// A copy of `s` with credential-shaped substrings replaced.
pub fn redact_str(s: &str) -> String {
    SECRET_VALUE
        .replace_all(s, |found: &regex::Captures<'_>| {
            let whole = found.get(0).expect("a match has its group 0");
            match SECRET_PARTS.iter().find_map(|name| found.name(name)) {
                // Keep what names the secret (the key, the URL around the password).
                Some(part) => format!("{}{REDACTED}{}", &s[whole.start()..part.start()], &s[part.end()..whole.end()]),
                None => REDACTED.to_owned(),
            }
        })
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    /// A copy of `value` with secrets replaced: the model `Redacted` must write.
    fn redact(value: &Value) -> Value {
        match value {
            Value::String(s) => Value::String(redact_str(s)),
            Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
            Value::Object(map) => Value::Object(
                map.iter()
                    .map(|(k, v)| {
                        let v =
                            if is_secret_key(k) && !v.is_null() { Value::String(REDACTED.into()) } else { redact(v) };
                        (redact_str(k), v)
                    })
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    #[test]
    fn no_secret_shape_is_shorter_than_the_shortcut_assumes() {
        let hir = regex_syntax::Parser::new().parse(&secret_pattern()).unwrap();
        assert_eq!(hir.properties().minimum_len(), Some(SHORTEST_SECRET));
        // The shortest shapes themselves are found.
        assert!(has_secret_value("xoxb-0123456789"));
        assert_eq!(redact_str("key xoxb-0123456789"), "key [REDACTED]");
        assert!(!has_secret_value("xoxb-012345678"));
        assert_eq!(redact_str("pwd=x"), "pwd=[REDACTED]");
    }

    // Strings that skip the regex cannot hold a secret: each text starts one of the
    // shapes and goes on with bytes the shortcut does not look for, so that a shape the
    // shortcut missed would show up here.
    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn strings_that_skip_the_regex_hold_no_secret(
            text in "[a-z/.]{0,4}(ghp_|github_pat_|glpat-|sk_live_|rk_test_|npm_|hf_|sk-|sk-ant-|AKIA|ASIA|xoxb-|AIza|eyJ|[bB]earer[ \t\u{a0}\u{3000}\u{85}]|-----BEGIN |https://u:[a-z]{1,4}@|(pwd|token|password|apikey)[=:] ?)([a-z0-9B-IK-Z]{6,24}[.]?){1,4}(PRIVATE KEY-----)?[ /]?"
        ) {
            if !may_hold_secret(text.as_bytes()) {
                proptest::prop_assert!(!SECRET_VALUE.is_match(&text), "{:?}", text);
            }
        }
    }

    #[test]
    fn every_secret_shape_has_a_byte_the_shortcut_looks_for() {
        for sample in [
            "-----BEGIN PRIVATE KEY-----",
            "ghp_abcdefghijklmnopqrstuvwxyz",
            "github_pat_abcdefghijklmnopqrstuvwxyz",
            "sk-abcdefghijklmnopqrstuv",
            "AKIAIOSFODNN7EXAMPLE",
            "ASIAIOSFODNN7EXAMPLE",
            "xoxb-0123456789",
            "AIzaabcdefghijklmnopqrstuvwxyz0123456789",
            "glpat-abcdefghij0123456789",
            "sk_live_abcdefghij012345",
            "rk_test_abcdefghij012345",
            "npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "hf_abcdefghijklmnopqrstuvwxyz0123",
            "eyJabcdefgh.abcdefgh.abcdefgh",
            "bearer abcdefghijklmnop",
            "bearer\u{3000}abcdefghijklmnop",
            "bearer\u{85}abcdefghijklmnop",
            "https://u:p@h",
            "pwd=x",
            "token:x",
        ] {
            assert!(SECRET_VALUE.is_match(sample), "{sample:?} is not a secret shape");
            assert!(may_hold_secret(sample.as_bytes()), "{sample:?} would skip the regex");
        }
        // What the shortcut is for.
        assert!(!may_hold_secret(b"/home/u/projects/app/src/main.rs"));
        assert!(!may_hold_secret(b"docs/index.html"));
    }

    #[test]
    fn secret_key_names() {
        for key in ["password", "API-Key", "x_auth_header", "GITHUB_TOKEN", "pwd", "Pass", "key", "client.secret"] {
            assert!(is_secret_key(key), "{key}");
        }
        for key in ["path", "name", "keyboard", "passage", "monkey", "", "ключ"] {
            assert!(!is_secret_key(key), "{key}");
        }
        let long = format!("{}token", "x".repeat(100));
        assert!(is_secret_key(&long), "a long key is read whole");
        assert!(!is_secret_key(&"x".repeat(100)));
    }

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
    fn redacted_writes_what_serde_json_writes_of_the_redacted_copy() {
        let values = [
            json!({"a": ["ghp_abcdefghijklmnopqrstuvwxyz0123456789", {"token": "t", "n": 1}], "ok": "fine", "password": null}),
            json!({"text": "quote \" backslash \\ newline \n tab \t bell \u{7} del \u{7f} é 😀 \u{1f}", "n": [-1, 2.5, 1e300, 18446744073709551615u64], "b": [true, false, null], "": {}}),
            json!([]),
            json!({"ghp_abcdefghijklmnopqrstuvwxyz0123456789": "value", "key AKIAIOSFODNN7EXAMPLE": 1}),
            json!("-----BEGIN RSA PRIVATE KEY-----\nabc\n-----END RSA PRIVATE KEY-----"),
        ];
        for v in values {
            let mut out = Vec::new();
            Redacted(&Json::from(&v)).write_json(&mut out);
            assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&redact(&v)).unwrap());
        }
    }

    #[test]
    fn a_secret_used_as_a_key_is_replaced() {
        let value = json!({"args": {"ghp_abcdefghijklmnopqrstuvwxyz0123456789": "value", "plain": 1}});
        let mut out = Vec::new();
        Redacted(&Json::from(&value)).write_json(&mut out);
        let written = String::from_utf8(out).unwrap();
        assert_eq!(written, r#"{"args":{"[REDACTED]":"value","plain":1}}"#);
    }

    proptest::proptest! {
        #[test]
        fn any_string_is_written_as_serde_json_writes_it(text in "\\PC*|[\\x00-\\x20\"\\\\a-z]*") {
            let mut out = Vec::new();
            json_str(&mut out, &text);
            proptest::prop_assert_eq!(String::from_utf8(out).unwrap(), serde_json::to_string(&text).unwrap());
        }
    }

    #[test]
    fn token_shaped_values_are_replaced_anywhere() {
        let cases = [
            "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 now",
            "sk-proj-abcdefghijklmnopqrstuvwx",
            "sk-ant-api03-abcdefghijklmnopqrstuvwxyz",
            "AKIAIOSFODNN7EXAMPLE",
            "xoxb-123456789012-abcdefghij",
            "clone with glpat-xyzabcdefghij0123456789",
            "STRIPE=sk_live_51Habcdefghij0123456789",
            "//registry.npmjs.org/:_authToken npm_abcdefghijklmnopqrstuvwxyz0123456789",
            "hf_abcdefghijklmnopqrstuvwxyzABCDEF",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
            "Authorization: Bearer abcdefghijklmnop.qrstuv",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        ];
        for c in cases {
            let out = redact_str(c);
            assert!(out.contains(REDACTED), "{c} -> {out}");
            for secret in [
                "ghp_abc",
                "sk-proj",
                "sk-ant",
                "AKIAIOSF",
                "xoxb-",
                "b3BlbnNzaC1",
                "abcdefghijklmnop",
                "eyJhbGci",
                "glpat-",
                "sk_live",
                "npm_",
                "hf_",
            ] {
                assert!(!out.contains(secret), "{c} -> {out}");
            }
        }
        assert_eq!(redact_str("an ordinary sentence about tokens"), "an ordinary sentence about tokens");
    }

    #[test]
    fn secrets_in_urls_and_assignments_lose_only_the_secret() {
        let cases = [
            ("https://user:hunter2@example.com/x", "https://user:[REDACTED]@example.com/x"),
            (
                "git clone https://x-access:abc123@github.com/o/r",
                "git clone https://x-access:[REDACTED]@github.com/o/r",
            ),
            ("postgres://app:s3cr%40t@db:5432/prod", "postgres://app:[REDACTED]@db:5432/prod"),
            ("PASSWORD=hunter2", "PASSWORD=[REDACTED]"),
            ("export DB_PASSWORD='hunter2'; run", "export DB_PASSWORD='[REDACTED]'; run"),
            ("GITHUB_TOKEN=abc echo", "GITHUB_TOKEN=[REDACTED] echo"),
            (r#"{"api_key": "abc", "n": 1}"#, r#"{"api_key": "[REDACTED]", "n": 1}"#),
            ("client-secret: abc", "client-secret: [REDACTED]"),
            ("Authorization: Basic dXNlcjpwYXNz", "Authorization: [REDACTED]"),
            ("curl -H 'Authorization: token abc' x", "curl -H 'Authorization: [REDACTED]' x"),
            ("?access_key=abc&page=2", "?access_key=[REDACTED]&page=2"),
        ];
        for (text, expected) in cases {
            assert!(has_secret_value(text), "{text}");
            assert_eq!(redact_str(text), expected);
        }
        // Ordinary text with the same words, and URLs without a password, stay.
        for text in [
            "max_tokens=100",
            "https://user@example.com/x",
            "https://example.com:8443/x",
            "the secret garden",
            "tokenizer: bpe",
            "C:/Users/u/secrets.txt",
        ] {
            assert_eq!(redact_str(text), text);
        }
    }
}
