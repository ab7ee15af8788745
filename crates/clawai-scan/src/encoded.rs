//! Base64 runs decoded, to be scanned again.

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

/// The most of one base64 run that is decoded (results can carry megabytes of images).
const MAX_DECODED_INPUT: usize = 64 * 1024;

/// The text a base64 or base64url run decodes to, if it is text: valid UTF-8 with no
/// control characters but line breaks, tabs and escapes. Binary (images, hashes, keys)
/// is not text and is left alone.
pub(crate) fn decode_base64(run: &str) -> Option<String> {
    const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    let body = run.trim_end_matches('=');
    let body = &body[..body.len().min(MAX_DECODED_INPUT)];
    // A last group of one character carries no whole byte: drop it.
    let body = if body.len() % 4 == 1 { &body[..body.len() - 1] } else { body };
    let engine = if body.contains(['-', '_']) { &URL_SAFE } else { &STANDARD };
    let bytes = engine.decode(body).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let printable = text.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r' | '\u{1B}'));
    printable.then_some(text)
}
