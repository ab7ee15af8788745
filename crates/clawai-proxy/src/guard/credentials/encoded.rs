//! Credentials hidden in base64, in any of the ways an encoder or an evasive agent
//! writes it: standard or URL-safe, padded or not, with characters of either alphabet
//! glued before or after it (so that it starts anywhere within a group of four), or
//! wrapped over lines as MIME and PEM write it.
//!
//! Decoding every run at four offsets would cost every path argument hundreds of
//! instructions; a run is decoded only when it holds the encoding of a literal every
//! credential shape has ([`may_encode_shape`]), which costs a few a character.

use std::sync::LazyLock;

use base64::Engine;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use super::{may_hold_shape, shape_in};

/// The shortest run of base64 that can hold a token once decoded.
const BASE64_RUN: usize = 24;

/// What credential the base64 in `text` decodes to, said for a person, if any.
pub(super) fn credential_encoded_in(text: &str) -> Option<&'static str> {
    base64_runs(text)
        .find_map(decoded_credential)
        .or_else(|| wrapped_base64(text).iter().find_map(|block| decoded_credential(block)))
}

/// A character of either base64 alphabet (standard or URL-safe), padding aside.
fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-')
}

/// The maximal runs of the base64 alphabets (standard and URL-safe) at least
/// [`BASE64_RUN`] long, padding left out.
fn base64_runs(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() {
            let start = at;
            while at < bytes.len() && is_base64(bytes[at]) {
                at += 1;
            }
            if at - start >= BASE64_RUN {
                return Some(&text[start..at]);
            }
            at += 1;
        }
        None
    })
}

/// Base64 wrapped over lines (76 or 64 characters a line), each block of lines joined:
/// a block starts with a line of at least [`BASE64_RUN`] characters that are all base64
/// and goes on while they are, up to a shorter last line; `=` padding and blanks around
/// a line are left out. Text without such blocks allocates nothing.
fn wrapped_base64(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    if !text.contains('\n') {
        return blocks;
    }
    let (mut joined, mut lines) = (String::new(), 0);
    let mut close = |joined: &mut String, lines: &mut usize| {
        if *lines > 1 {
            blocks.push(std::mem::take(joined));
        }
        joined.clear();
        *lines = 0;
    };
    for line in text.lines().map(|line| line.trim().trim_end_matches('=')) {
        let base64 = !line.is_empty() && line.bytes().all(is_base64);
        if !base64 || (lines == 0 && line.len() < BASE64_RUN) {
            close(&mut joined, &mut lines);
            continue;
        }
        joined.push_str(line);
        lines += 1;
        if line.len() < BASE64_RUN {
            close(&mut joined, &mut lines);
        }
    }
    close(&mut joined, &mut lines);
    blocks
}

/// What credential a run decodes to. Each stretch of one alphabet (a run holding both
/// is split at the other's characters) is decoded at the four offsets of a group, and
/// what decodes is read as text, bytes that are not UTF-8 replaced.
fn decoded_credential(run: &str) -> Option<&'static str> {
    // Most runs (paths, ids, hashes) hold no literal's encoding: one pass, nothing decoded.
    if !may_encode_shape(run) {
        return None;
    }
    let has_url_safe_chars = run.bytes().any(|b| matches!(b, b'-' | b'_'));
    let has_standard_chars = run.bytes().any(|b| matches!(b, b'+' | b'/'));
    let standard = (has_standard_chars || !has_url_safe_chars)
        .then(|| run.split(['-', '_']).map(|part| (part, &LENIENT_STANDARD)));
    let url_safe = has_url_safe_chars.then(|| run.split(['+', '/']).map(|part| (part, &LENIENT_URL_SAFE)));
    let parts = standard.into_iter().flatten().chain(url_safe.into_iter().flatten());
    parts.filter(|(part, _)| part.len() >= BASE64_RUN && may_encode_shape(part)).find_map(|(part, engine)| {
        (0..4).find_map(|offset| {
            let from = &part[offset..];
            // 4n + 1 characters hold no whole byte in their last one: it is left out.
            let from = if from.len() % 4 == 1 { &from[..from.len() - 1] } else { from };
            let bytes = engine.decode(from).ok()?;
            may_hold_shape(&bytes).then(|| shape_in(&String::from_utf8_lossy(&bytes))).flatten()
        })
    })
}

/// Decoders that take what encoders write (no padding, as the runs leave it out) and
/// whatever bits the last character carries beyond the last byte (an offset that is
/// not the encoder's leaves some).
static LENIENT_STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, LENIENT);
static LENIENT_URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, LENIENT);
const LENIENT: GeneralPurposeConfig = GeneralPurposeConfig::new()
    .with_encode_padding(false)
    .with_decode_allow_trailing_bits(true)
    .with_decode_padding_mode(DecodePaddingMode::RequireNone);

/// What every credential shape holds, written out: a text that decodes to a shape holds
/// the encoding of one of these, or of `bearer` in some case (added where the table is
/// built). A test holds every shape to them.
pub(super) const SHAPE_LITERALS: [&str; 19] = [
    "-----BEGIN",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "sk-",
    "AKIA",
    "ASIA",
    "xox",
    "AIza",
    "glpat-",
    "k_live_",
    "k_test_",
    "npm_",
    "hf_",
    "eyJ",
    "://",
];

/// `bearer` in each of its 64 spellings by case.
fn bearer_spellings() -> impl Iterator<Item = Vec<u8>> {
    (0..64u32).map(|case| {
        let upper = |at: usize| case & (1 << at) != 0;
        "bearer".bytes().enumerate().map(|(at, b)| if upper(at) { b.to_ascii_uppercase() } else { b }).collect()
    })
}

/// The 6-bit value of a character of either base64 alphabet (`-` is `+`, `_` is `/`),
/// or [`NOT_BASE64`].
const SEXTET: [u8; 256] = {
    let mut table = [NOT_BASE64; 256];
    let mut at = 0;
    while at < 64 {
        table[b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[at] as usize] = at as u8;
        at += 1;
    }
    table[b'-' as usize] = 62;
    table[b'_' as usize] = 63;
    table
};
const NOT_BASE64: u8 = 0xff;

/// Three characters of six bits each: the windows [`LITERAL_STARTS`] has a bit for.
const WINDOWS: usize = 1 << 18;

/// Every three characters that begin the encoding of a literal of [`SHAPE_LITERALS`]
/// (or `bearer`) at any of the three places a byte takes in a group of three: only
/// characters whose six bits come from the literal alone count, so that whatever is
/// encoded before and after, the encoding shows them. One bit each (32 KiB).
static LITERAL_STARTS: LazyLock<Box<[u64; WINDOWS / 64]>> = LazyLock::new(|| {
    let mut bits = Box::new([0u64; WINDOWS / 64]);
    let literals = SHAPE_LITERALS.iter().map(|literal| literal.as_bytes().to_vec()).chain(bearer_spellings());
    for literal in literals {
        for place in 0..3 {
            let mut bytes = vec![0u8; place];
            bytes.extend_from_slice(&literal);
            let encoded = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&bytes).into_bytes();
            // The first character of the literal's own bits, and the end of the last whole one.
            let (first, end) = ((8 * place).div_ceil(6), (8 * bytes.len()) / 6);
            debug_assert!(end - first >= 3, "a literal of three bytes leaves three whole characters");
            let start = encoded[first..first + 3]
                .iter()
                .fold(0, |window, &c| (window << 6) | usize::from(SEXTET[usize::from(c)]));
            bits[start / 64] |= 1 << (start % 64);
        }
    }
    bits
});

/// Whether a run of base64 may decode to a credential shape: it holds the start of a
/// literal's encoding ([`LITERAL_STARTS`]).
fn may_encode_shape(run: &str) -> bool {
    let starts: &[u64; WINDOWS / 64] = &LITERAL_STARTS;
    let (mut window, mut filled) = (0usize, 0);
    run.bytes().any(|b| {
        let sextet = SEXTET[usize::from(b)];
        if sextet == NOT_BASE64 {
            filled = 0;
            return false;
        }
        window = ((window << 6) | usize::from(sextet)) & (WINDOWS - 1);
        filled += 1;
        filled >= 3 && starts[window / 64] & (1 << (window % 64)) != 0
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE};
    use regex::Regex;

    #[test]
    fn every_shape_holds_a_literal_the_encoded_text_is_searched_for() {
        for sample in super::super::tests::SAMPLES {
            assert!(
                SHAPE_LITERALS.iter().any(|literal| sample.contains(literal))
                    || sample.to_ascii_lowercase().contains("bearer"),
                "{sample}"
            );
        }
    }

    #[test]
    fn ordinary_runs_are_not_decoded() {
        for run in [
            "/home/u/projects/app/src/main",
            "3f786850e387550fdab836ed7e6dc881de23001b",
            "a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6",
        ] {
            assert!(!may_encode_shape(run), "{run}");
        }
    }

    proptest::proptest! {
        /// Whatever is encoded around a literal of a shape, with either alphabet and with
        /// characters glued before, the encoding passes the quick test.
        #[test]
        fn an_encoded_literal_always_passes_the_quick_test(
            literal in 0..SHAPE_LITERALS.len() + 1,
            before in proptest::collection::vec(proptest::num::u8::ANY, 0..7),
            after in proptest::collection::vec(proptest::num::u8::ANY, 0..7),
            url_safe: bool,
            glue in "[A-Za-z0-9+/]{0,3}",
            case in 0..64usize,
        ) {
            let literal = match SHAPE_LITERALS.get(literal) {
                Some(literal) => literal.as_bytes().to_vec(),
                None => bearer_spellings().nth(case).unwrap(),
            };
            let plain = [before, literal, after].concat();
            let engine = if url_safe { URL_SAFE } else { STANDARD };
            let run = format!("{glue}{}", engine.encode(&plain));
            proptest::prop_assert!(may_encode_shape(&run), "{:?} as {}", String::from_utf8_lossy(&plain), run);
        }

        /// The hand-written runs are what `[A-Za-z0-9+/_-]{24,}` finds, in order.
        #[test]
        fn base64_runs_are_the_patterns_runs(text in "[a-zA-Z0-9+/_=. -]{0,80}") {
            let pattern = Regex::new(r"[A-Za-z0-9+/_\-]{24,}").unwrap();
            let expected: Vec<&str> = pattern.find_iter(&text).map(|m| m.as_str()).collect();
            let found: Vec<&str> = base64_runs(&text).collect();
            proptest::prop_assert_eq!(found, expected);
        }
    }
}
