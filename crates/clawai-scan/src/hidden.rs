//! The raw pass: characters a reader does not see, told apart from the ones that emoji
//! and scripts need (a zero-width joiner inside 👨‍👩‍👧, VS16 after ❤, a ZWNJ in Persian,
//! the tag letters of 🏴 subdivision flags), and shown escaped.

use unicode_properties::{GeneralCategory, UnicodeEmoji, UnicodeGeneralCategory};

/// What kind of hidden character a run is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hidden {
    /// U+E0000–U+E007F.
    Tag,
    /// Bidi embeddings, overrides and isolates.
    BidiOverride,
    /// LRM, RLM, ALM.
    BidiMark,
    /// Other format (Cf) characters: zero-width space, word joiner, BOM…
    Format,
    /// Letters that render as nothing (Hangul fillers).
    Filler,
    /// C0 and C1 controls other than `\n`, `\t`, `\r`.
    Control,
    /// ESC and CSI, which start terminal escape sequences.
    Ansi,
    /// U+FE00–U+FE0F, U+E0100–U+E01EF.
    VariationSelector,
}

/// A run of hidden characters of one kind, found where it is not expected: byte offsets
/// into the text and the characters themselves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Span {
    pub kind: Hidden,
    pub start: usize,
    pub end: usize,
    pub chars: Vec<char>,
}

const BLACK_FLAG: char = '\u{1F3F4}';
const CANCEL_TAG: char = '\u{E007F}';
const ZWJ: char = '\u{200D}';
const ZWNJ: char = '\u{200C}';
const SOFT_HYPHEN: char = '\u{AD}';
const VS15: char = '\u{FE0E}';
const VS16: char = '\u{FE0F}';
const COMBINING_KEYCAP: char = '\u{20E3}';

/// The kind of hidden character `c` is, whatever surrounds it.
pub(crate) fn classify(c: char) -> Option<Hidden> {
    match c as u32 {
        0x09 | 0x0A | 0x0D | 0x20..=0x7E => None,
        0x1B | 0x9B => Some(Hidden::Ansi),
        0x00..=0x1F | 0x7F..=0x9F => Some(Hidden::Control),
        0xE0000..=0xE007F => Some(Hidden::Tag),
        0x202A..=0x202E | 0x2066..=0x2069 => Some(Hidden::BidiOverride),
        0x200E | 0x200F | 0x061C => Some(Hidden::BidiMark),
        0xFE00..=0xFE0F | 0xE0100..=0xE01EF => Some(Hidden::VariationSelector),
        0x115F | 0x1160 | 0x3164 | 0xFFA0 => Some(Hidden::Filler),
        // Signs that are written before digits in Arabic, Syriac and Kaithi text: visible.
        0x0600..=0x0605 | 0x06DD | 0x070F | 0x0890 | 0x0891 | 0x08E2 | 0x110BD | 0x110CD => None,
        _ if c.general_category() == GeneralCategory::Format => Some(Hidden::Format),
        _ => None,
    }
}

/// Bytes that are not printable ASCII, `\n`, `\t` or `\r`.
static ODD_BYTE: [bool; 256] = {
    let mut odd = [true; 256];
    let mut b = 0x20;
    while b < 0x7F {
        odd[b] = false;
        b += 1;
    }
    odd[b'\n' as usize] = false;
    odd[b'\t' as usize] = false;
    odd[b'\r' as usize] = false;
    odd
};

/// True when every byte is printable ASCII, `\n`, `\t` or `\r`: nothing can be hidden.
/// This runs on every string a server lists, most of them plain ASCII: eight bytes are
/// tested at once for a byte that is not ASCII, below 0x20 or DEL (with false alarms,
/// never misses), and only a word that raises one is looked at byte by byte.
pub(crate) fn plain_ascii(text: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let odd = |b: &u8| ODD_BYTE[usize::from(*b)];
    let (words, rest) = text.as_bytes().as_chunks::<8>();
    for word in words {
        let w = u64::from_le_bytes(*word);
        let below_space = w.wrapping_sub(ONES * 0x20) & !w;
        let del = (w ^ (ONES * 0x7F)).wrapping_sub(ONES) & !(w ^ (ONES * 0x7F));
        if (w | below_space | del) & HIGHS != 0 && word.iter().any(odd) {
            return false;
        }
    }
    !rest.iter().any(odd)
}

/// The runs of hidden characters in `text` that no emoji or script needs there.
pub(crate) fn hidden_spans(text: &str) -> Vec<Span> {
    if plain_ascii(text) { Vec::new() } else { spans_of(text) }
}

/// [`hidden_spans`] of a text known not to be plain ASCII.
pub(crate) fn spans_of(text: &str) -> Vec<Span> {
    let mut has_rtl: Option<bool> = None;
    let mut spans = Vec::new();
    let mut chars = text.char_indices().peekable();
    let mut prev: Option<char> = None;
    while let Some((start, c)) = chars.next() {
        let Some(kind) = classify(c) else {
            prev = Some(c);
            continue;
        };
        let mut run = vec![c];
        while let Some(&(_, n)) = chars.peek().filter(|&&(_, n)| classify(n) == Some(kind)) {
            run.push(n);
            chars.next();
        }
        let next = chars.peek().map(|&(_, n)| n);
        let allowed = match kind {
            Hidden::Tag => is_subdivision_flag(prev, &run),
            Hidden::VariationSelector => run.len() == 1 && selector_has_base(run[0], prev),
            Hidden::Format => run.len() == 1 && joiner_allowed(run[0], prev, next),
            Hidden::BidiMark => *has_rtl.get_or_insert_with(|| text.chars().any(is_rtl_letter)),
            _ => false,
        };
        // What follows a flagged run sees what follows its escape ("}"): no letter or
        // emoji, so escaping never turns a kept character into one to escape.
        prev = if allowed { run.last().copied() } else { None };
        if !allowed {
            let end = chars.peek().map_or(text.len(), |&(at, _)| at);
            spans.push(Span { kind, start, end, chars: run });
        }
    }
    spans
}

/// 🏴 followed by tag letters or digits and a cancel tag: an England, Scotland or Wales
/// style subdivision flag, not smuggled text.
fn is_subdivision_flag(prev: Option<char>, run: &[char]) -> bool {
    let Some((&last, body)) = run.split_last() else { return false };
    prev == Some(BLACK_FLAG)
        && last == CANCEL_TAG
        && (2..=7).contains(&body.len())
        && body.iter().all(|&c| matches!(c as u32, 0xE0030..=0xE0039 | 0xE0061..=0xE007A))
}

/// A lone variation selector after a character it can select a form of: emoji
/// presentation selectors after emoji, standardized variants after letters and symbols,
/// ideographic variants after ideographs.
fn selector_has_base(selector: char, prev: Option<char>) -> bool {
    let Some(base) = prev else { return false };
    match selector {
        VS15 | VS16 => base.is_emoji_char(),
        '\u{FE00}'..='\u{FE0D}' => {
            base.is_alphanumeric()
                || matches!(base.general_category(), GeneralCategory::MathSymbol | GeneralCategory::OtherSymbol)
        }
        _ => base.is_alphabetic(),
    }
}

/// Format characters that belong where they are: a zero-width joiner inside an emoji
/// sequence, joiners between letters of the scripts that use them (Persian, Indic), a
/// soft hyphen inside a word.
fn joiner_allowed(c: char, prev: Option<char>, next: Option<char>) -> bool {
    let (Some(prev), Some(next)) = (prev, next) else { return false };
    let script_letter = |ch: char| !ch.is_ascii() && classify(ch).is_none() && (ch.is_alphabetic() || is_mark(ch));
    match c {
        ZWJ => (emoji_part(prev) && next.is_emoji_char()) || (script_letter(prev) && script_letter(next)),
        ZWNJ => script_letter(prev) && script_letter(next),
        SOFT_HYPHEN => prev.is_alphabetic() && next.is_alphabetic() && classify(next).is_none(),
        _ => false,
    }
}

/// What may stand before the zero-width joiner of an emoji ZWJ sequence.
fn emoji_part(c: char) -> bool {
    c.is_emoji_char()
        || c == VS16
        || c == COMBINING_KEYCAP
        || c == CANCEL_TAG
        || ('\u{1F3FB}'..='\u{1F3FF}').contains(&c)
}

fn is_mark(c: char) -> bool {
    matches!(
        c.general_category(),
        GeneralCategory::NonspacingMark | GeneralCategory::SpacingMark | GeneralCategory::EnclosingMark
    )
}

/// Letters of the right-to-left scripts (Hebrew, Arabic, Syriac, Thaana, N'Ko, …), where
/// bidi marks are ordinary.
fn is_rtl_letter(c: char) -> bool {
    matches!(c as u32, 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFC | 0x10800..=0x10FFF | 0x1E800..=0x1EFFF)
}

/// The ASCII a run of tag characters spells (each is an ASCII code point plus
/// U+E0000); tags outside printable ASCII are shown as escapes.
pub(crate) fn decode_tags(run: &[char]) -> String {
    let mut out = String::new();
    for &c in run {
        match c as u32 - 0xE0000 {
            code @ 0x20..=0x7E if code != u32::from(b'}') && code != u32::from(b'\\') => {
                out.push(char::from(code as u8))
            }
            _ => push_escape(&mut out, c),
        }
    }
    out
}

/// The bytes a run of variation selectors carries (VS1–VS16 are 0–15, VS17–VS256 are
/// 16–255: how "emoji smuggling" encodes data), read as UTF-8 where it is.
pub(crate) fn decode_selectors(run: &[char]) -> String {
    let bytes: Vec<u8> = run
        .iter()
        .map(|&c| match c as u32 {
            v @ 0xFE00..=0xFE0F => (v - 0xFE00) as u8,
            v => (v - 0xE0100 + 16) as u8,
        })
        .collect();
    escape_invisible(&String::from_utf8_lossy(&bytes))
}

fn push_escape(out: &mut String, c: char) {
    use std::fmt::Write as _;
    match c {
        '\r' => out.push_str("\\r"),
        _ => {
            let _ = write!(out, "\\u{{{:04X}}}", c as u32);
        }
    }
}

/// `text` with every character a reader would not see made visible: hidden characters
/// as `\u{200B}`-style escapes (carriage returns as `\r`), and a run of Unicode tag
/// characters as `\tag{…}` with the ASCII it smuggles. What emoji and scripts need (a
/// zero-width joiner inside an emoji sequence, an emoji presentation selector after an
/// emoji, bidi marks in right-to-left text, subdivision flags) is kept as it is, and so
/// are line feeds and tabs. Text without hidden characters comes back unchanged.
pub fn escape_invisible(text: &str) -> String {
    let spans = hidden_spans(text);
    let carriage_returns = text.contains('\r');
    if spans.is_empty() && !carriage_returns {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 16 * spans.len());
    let mut at = 0;
    for span in &spans {
        push_visible(&mut out, &text[at..span.start]);
        if span.kind == Hidden::Tag {
            out.push_str("\\tag{");
            out.push_str(&decode_tags(&span.chars));
            out.push('}');
        } else {
            for &c in &span.chars {
                push_escape(&mut out, c);
            }
        }
        at = span.end;
    }
    push_visible(&mut out, &text[at..]);
    out
}

/// Text between hidden runs: only a carriage return (a control character the raw pass
/// lets through, but one that can overwrite a terminal line) needs escaping there.
fn push_visible(out: &mut String, text: &str) {
    for piece in text.split_inclusive('\r') {
        match piece.strip_suffix('\r') {
            Some(head) => {
                out.push_str(head);
                out.push_str("\\r");
            }
            None => out.push_str(piece),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_sequences_have_no_hidden_spans() {
        for text in ["👨‍👩‍👧‍👦", "❤️", "🏳️‍🌈", "👩🏽‍💻", "1️⃣", "🇯🇵🇩🇪", "🏴\u{E0067}\u{E0062}\u{E0065}\u{E006E}\u{E0067}\u{E007F}"]
        {
            assert_eq!(hidden_spans(text), Vec::new(), "{text}");
            assert_eq!(escape_invisible(text), text);
        }
    }

    #[test]
    fn tag_run_is_decoded() {
        let text = "ok\u{E0068}\u{E0069}!";
        assert_eq!(escape_invisible(text), "ok\\tag{hi}!");
    }

    #[test]
    fn zero_width_between_ascii_letters_is_escaped() {
        assert_eq!(escape_invisible("ig\u{200B}nore"), "ig\\u{200B}nore");
        assert_eq!(escape_invisible("a\u{200D}b"), "a\\u{200D}b");
        assert_eq!(escape_invisible("line\rover"), "line\\rover");
    }

    #[test]
    fn escaping_is_stable_when_a_joiner_leans_on_an_escaped_character() {
        // The joiner once counted the stray selector before it as a mark of a script.
        for text in ["t\u{FE0F}\u{200D}ש", "ש\u{200D}\u{FE0F}", "a\u{200B}\u{AD}b", "x\u{E0100}\u{200C}ش"] {
            let once = escape_invisible(text);
            assert_eq!(escape_invisible(&once), once, "{text:?}");
        }
    }

    #[test]
    fn selector_runs_decode_to_bytes() {
        let run: Vec<char> = "hi".bytes().map(|b| char::from_u32(0xE0100 + u32::from(b) - 16).unwrap()).collect();
        assert_eq!(decode_selectors(&run), "hi");
    }
}
