//! Base64 runs decoded, to be scanned again.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// A base64 (or base64url) run long enough to carry a sentence, as the detector of
/// `phrases` matches it ([`BASE64_RUN`] characters; a test holds the two together).
pub(crate) const BASE64: &str = r"[A-Za-z0-9+/_-]{40,}={0,2}";

/// The shortest run [`BASE64`] matches.
pub(crate) const BASE64_RUN: usize = 40;

/// The characters of the base64 alphabets (standard and URL-safe), padding aside, by
/// byte: a table, as a result's run of base64 (an image) is MiB long.
static BASE64_BYTE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-');
        b += 1;
    }
    table
};

fn is_base64(b: u8) -> bool {
    BASE64_BYTE[usize::from(b)]
}

/// The maximal runs of base64 characters at least [`BASE64_RUN`] long: what the base64
/// detector's pattern matches (its `=` padding aside, which decoding drops). A run
/// must cover the byte [`BASE64_RUN`] − 1 after the end of the last one looked at, so
/// text with short words is read one byte in forty.
pub(crate) fn long_runs(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    // Always 0 or just after a byte that is not base64.
    let mut at = 0;
    std::iter::from_fn(move || {
        while at + BASE64_RUN <= bytes.len() {
            let probe = at + BASE64_RUN - 1;
            if !is_base64(bytes[probe]) {
                at = probe + 1;
                continue;
            }
            let mut start = probe;
            while start > at && is_base64(bytes[start - 1]) {
                start -= 1;
            }
            let end =
                probe + 1 + bytes[probe + 1..].iter().position(|&b| !is_base64(b)).unwrap_or(bytes.len() - probe - 1);
            at = end + 1;
            if end - start >= BASE64_RUN {
                return Some(&text[start..end]);
            }
        }
        None
    })
}

/// The text a base64 or base64url run decodes to, if it is text: valid UTF-8 with no
/// control characters but line breaks, tabs and escapes. Binary (images, hashes, keys)
/// is not text and is left alone. The whole run is decoded, however long: a payload
/// after 64 KiB of harmless text was once missed because only the start was read. A
/// run of binary (megabytes of an image) is refused on its first bytes, undecoded.
pub(crate) fn decode_base64(run: &str) -> Option<String> {
    const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    let body = run.trim_end_matches('=');
    // A last group of one character carries no whole byte: drop it.
    let body = if body.len() % 4 == 1 { &body[..body.len() - 1] } else { body };
    let url_safe = |text: &str| text.bytes().any(|b| matches!(b, b'-' | b'_'));
    // The first six bytes first: a run of binary (an image, a hash, a path read as
    // base64) has a control byte or a broken UTF-8 sequence in them nearly always, and
    // the whole decode would be refused for it anyway. Before anything reads the whole
    // run (a megabyte of image): the head's own characters say its alphabet (a head
    // with none of `+/-_` decodes the same in both).
    if let Some(head) = body.get(..8) {
        let engine = if url_safe(head) { &URL_SAFE } else { &STANDARD };
        let mut bytes = [0u8; 6];
        let length = engine.decode_slice(head, &mut bytes).ok()?;
        let head = &bytes[..length];
        let broken = std::str::from_utf8(head).is_err_and(|e| e.error_len().is_some());
        if broken || head.iter().any(|&b| (b < 0x20 && !matches!(b, b'\n' | b'\t' | b'\r' | 0x1B)) || b == 0x7F) {
            return None;
        }
    }
    let engine = if url_safe(body) { &URL_SAFE } else { &STANDARD };
    let bytes = engine.decode(body).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let printable = text.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r' | '\u{1B}'));
    printable.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// A run decodes to text exactly when its bytes are UTF-8 without control
        /// characters (line breaks, tabs and escapes aside): the look at its first
        /// bytes refuses nothing the whole decode would take.
        #[test]
        fn a_run_decodes_to_text_exactly_when_its_bytes_are_text(
            bytes in proptest::collection::vec(proptest::prop_oneof![
                3 => 0x20u8..0x7F, 1 => proptest::num::u8::ANY, 1 => proptest::sample::select(vec![b'\n', 0xC3, 0xA9, 0xE2, 0x80, 0x8B])
            ], 30..80),
            url_safe in proptest::bool::ANY,
        ) {
            use base64::engine::general_purpose::{STANDARD, URL_SAFE};
            let run = if url_safe { URL_SAFE.encode(&bytes) } else { STANDARD.encode(&bytes) };
            let text = String::from_utf8(bytes.clone()).ok()
                .filter(|t| t.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r' | '\u{1B}')));
            // A URL-safe run without `-` or `_` decodes as the standard alphabet, the same bytes.
            proptest::prop_assert_eq!(decode_base64(&run), text);
        }

        /// The runs are exactly the base64 detector's matches, padding aside.
        #[test]
        fn long_runs_are_the_patterns_matches(text in "([A-Za-z0-9+/_=-]{0,50}[ .\n]){0,6}") {
            let pattern = regex::Regex::new(BASE64).unwrap();
            let matched: Vec<&str> = pattern.find_iter(&text).map(|m| m.as_str().trim_end_matches('=')).collect();
            let runs: Vec<&str> = long_runs(&text).collect();
            proptest::prop_assert_eq!(runs, matched);
        }
    }
}
