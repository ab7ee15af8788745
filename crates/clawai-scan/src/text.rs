//! Scanning one string: the raw pass over its characters, then the detectors over its
//! folded reading, base64 runs decoded and scanned again, and other servers' tool names.

use std::collections::HashSet;

use base64::Engine as _;
use base64::alphabet;
use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};

use crate::finding::{Class, Severity};
use crate::fold::fold;
use crate::hidden::{Hidden, Span, decode_selectors, decode_tags, escape_invisible, hidden_spans};
use crate::phrases::{Checks, Hit, detect};

/// A finding before it is placed in an item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub class: Class,
    pub severity: Severity,
    pub evidence: String,
    pub detail: String,
}

/// Longest evidence kept, in characters; longer is cut with an ellipsis.
const EVIDENCE_CHARS: usize = 240;
/// Characters of context kept before and after what was found.
const BEFORE: usize = 24;
const AFTER: usize = 48;
/// How deep base64 inside base64 is followed.
const MAX_DEPTH: u8 = 2;
/// The most of one base64 run that is decoded (results can carry megabytes of images).
const MAX_DECODED_INPUT: usize = 64 * 1024;

/// The lowercased tool names of other servers, for shadowing, without the plain
/// single words ("search", "read") that ordinary prose uses.
#[derive(Debug, Clone, Default)]
pub(crate) struct OtherNames(HashSet<String>);

impl OtherNames {
    pub(crate) fn new(names: &[&str]) -> Self {
        OtherNames(names.iter().filter(|name| distinctive(name)).map(|name| name.to_ascii_lowercase()).collect())
    }

    /// Leaves out these (lowercased) names: a listing's own tools and words.
    pub(crate) fn remove_all<'n>(&mut self, names: impl IntoIterator<Item = &'n String>) {
        for name in names {
            self.0.remove(name);
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A name that cannot be an ordinary word: it has a separator, a digit or an inner
/// capital (`read_file`, `web.search`, `searchWeb`), and three characters or more.
fn distinctive(name: &str) -> bool {
    name.len() >= 3
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        && name.bytes().skip(1).any(|b| matches!(b, b'_' | b'.' | b'-') || b.is_ascii_digit() || b.is_ascii_uppercase())
}

/// What to look for in one string.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub checks: Checks,
    pub others: &'a OtherNames,
    /// The scanned item's own name: naming itself is not shadowing.
    pub own_name: &'a str,
    /// The item's own identifiers (property names, enum values, lowercased): a server
    /// whose action is called like another server's tool is not shadowing it.
    pub own_words: Option<&'a HashSet<String>>,
}

/// Every finding in `text`, at most one per class.
pub(crate) fn scan_string(text: &str, scope: Scope<'_>) -> Vec<Found> {
    let mut found = Vec::new();
    scan_into(text, scope, 0, &mut found);
    found
}

fn scan_into(text: &str, scope: Scope<'_>, depth: u8, found: &mut Vec<Found>) {
    raw_pass(text, &hidden_spans(text), found);
    let folded = fold(text);
    for hit in detect(&folded, scope.checks) {
        if found.iter().any(|f| f.class == hit.class) {
            continue;
        }
        if let Some(f) = describe(&folded, &hit, scope, depth) {
            found.push(f);
        }
    }
    if !scope.others.is_empty()
        && let Some(name) = shadowed_name(&folded, scope)
    {
        found.push(Found {
            class: Class::CrossServerToolName,
            severity: Severity::Warn,
            evidence: escape_invisible(&name),
            detail: format!("names {name:?}, a tool of another server"),
        });
    }
}

fn describe(folded: &str, hit: &Hit<'_>, scope: Scope<'_>, depth: u8) -> Option<Found> {
    let (evidence, detail) = match hit.class {
        Class::EncodedPayload => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let decoded = decode_base64(hit.text)?;
            let mut inner = Vec::new();
            scan_into(&decoded, scope, depth + 1, &mut inner);
            let worst = inner.iter().map(|f| f.severity).max()?;
            let classes: Vec<&str> = inner.iter().map(|f| f.class.as_str()).collect();
            let detail = format!("{} ({})", hit.detail, classes.join(", "));
            return Some(Found {
                class: hit.class,
                severity: worst.max(hit.severity),
                evidence: cut(&escape_invisible(&decoded)),
                detail,
            });
        }
        Class::HiddenWhitespace => {
            // The match is the run of blanks and the first character after it.
            let blanks = hit.text.len() - hit.text.chars().next_back().map_or(0, char::len_utf8);
            let rest = &folded[hit.start + blanks..];
            (cut(&escape_invisible(rest)), format!("{} ({blanks} whitespace characters)", hit.detail))
        }
        _ => (window(folded, hit.start, hit.start + hit.text.len()), hit.detail.to_owned()),
    };
    Some(Found { class: hit.class, severity: hit.severity, evidence, detail })
}

/// The first token of `folded` that is another server's tool name.
fn shadowed_name(folded: &str, scope: Scope<'_>) -> Option<String> {
    let mut token = String::new();
    for word in folded.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))) {
        let word = word.trim_matches(|c| matches!(c, '.' | '-'));
        if word.len() < 3 {
            continue;
        }
        token.clear();
        token.extend(word.chars().map(|c| c.to_ascii_lowercase()));
        if scope.others.0.contains(&token)
            && !token.eq_ignore_ascii_case(scope.own_name)
            && !scope.own_words.is_some_and(|own| own.contains(&token))
        {
            return Some(word.to_owned());
        }
    }
    None
}

/// The raw pass: one finding per class of hidden character, with the worst severity.
fn raw_pass(text: &str, spans: &[Span], found: &mut Vec<Found>) {
    if spans.is_empty() {
        return;
    }
    let mut add = |class: Class, severity: Severity, span: &Span, detail: String| match found
        .iter_mut()
        .find(|f| f.class == class)
    {
        Some(f) if f.severity < severity => {
            f.severity = severity;
            f.evidence = window(text, span.start, span.end);
            f.detail = detail;
        }
        Some(_) => {}
        None => found.push(Found { class, severity, evidence: window(text, span.start, span.end), detail }),
    };
    let invisible: usize =
        spans.iter().filter(|s| matches!(s.kind, Hidden::Format | Hidden::Filler)).map(|s| s.chars.len()).sum();
    for span in spans {
        match span.kind {
            Hidden::Tag => {
                let decoded = decode_tags(&span.chars);
                let detail = format!("{} hidden tag characters spelling \"{}\"", span.chars.len(), cut(&decoded));
                add(Class::TagCharacters, Severity::Critical, span, detail)
            }
            Hidden::BidiOverride => {
                let detail = "bidi override, embedding or isolate characters that reorder the text shown".to_owned();
                add(Class::BidiControl, Severity::Critical, span, detail)
            }
            Hidden::BidiMark => {
                let detail = "bidi marks in text with no right-to-left letters".to_owned();
                add(Class::BidiControl, Severity::Warn, span, detail)
            }
            Hidden::Format | Hidden::Filler => {
                let severity = if invisible > 1 { Severity::Warn } else { Severity::Info };
                let detail = format!("{invisible} zero-width or other invisible characters");
                add(Class::ZeroWidth, severity, span, detail)
            }
            Hidden::Control => {
                let detail = "control characters".to_owned();
                add(Class::ControlCharacter, Severity::Warn, span, detail)
            }
            Hidden::Ansi => {
                let detail = "a terminal escape sequence, which can rewrite what a terminal shows".to_owned();
                add(Class::ControlCharacter, Severity::Critical, span, detail)
            }
            Hidden::VariationSelector if span.chars.len() > 1 => {
                let detail = format!(
                    "{} variation selectors in a row, carrying the bytes \"{}\"",
                    span.chars.len(),
                    cut(&decode_selectors(&span.chars))
                );
                add(Class::VariationSelector, Severity::Critical, span, detail)
            }
            Hidden::VariationSelector => {
                let detail = "a variation selector after a character that takes none".to_owned();
                add(Class::VariationSelector, Severity::Warn, span, detail)
            }
        }
    }
}

/// `text[start..end]` with some context around it, escaped and cut.
fn window(text: &str, start: usize, end: usize) -> String {
    let from = text[..start].char_indices().rev().nth(BEFORE - 1).map_or(0, |(at, _)| at);
    let to = text[end..].char_indices().nth(AFTER).map_or(text.len(), |(at, _)| end + at);
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(&cut(&escape_invisible(&text[from..to])));
    if to < text.len() && !out.ends_with('…') {
        out.push('…');
    }
    out
}

/// At most [`EVIDENCE_CHARS`] characters of `text`.
fn cut(text: &str) -> String {
    match text.char_indices().nth(EVIDENCE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The text a base64 or base64url run decodes to, if it is text: valid UTF-8 with no
/// control characters but line breaks, tabs and escapes. Binary (images, hashes, keys)
/// is not text and is left alone.
fn decode_base64(run: &str) -> Option<String> {
    const CONFIG: GeneralPurposeConfig = GeneralPurposeConfig::new()
        .with_decode_padding_mode(DecodePaddingMode::Indifferent)
        .with_decode_allow_trailing_bits(true);
    const STANDARD: GeneralPurpose = GeneralPurpose::new(&alphabet::STANDARD, CONFIG);
    const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&alphabet::URL_SAFE, CONFIG);
    let body = run.trim_end_matches('=');
    let mut take = body.len().min(MAX_DECODED_INPUT) / 4 * 4;
    let rest = body.len().min(MAX_DECODED_INPUT) - take;
    if rest >= 2 {
        take += rest;
    }
    let body = &body[..take];
    let engine = if body.contains(['-', '_']) { &URL_SAFE } else { &STANDARD };
    let bytes = engine.decode(body).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let printable = text.chars().all(|c| !c.is_control() || matches!(c, '\n' | '\t' | '\r' | '\u{1B}'));
    printable.then_some(text)
}
