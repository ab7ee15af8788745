//! Scanning the strings of one item: the raw pass over each string's characters, then
//! the detectors over the folded readings of all of them at once (one regex pass per
//! item, not per string), base64 runs decoded and scanned again, and other servers'
//! tool names.

use serde_json::Value;
use std::borrow::Cow;

use crate::context;
use crate::encoded::decode_base64;
use crate::finding::{Class, Severity};
use crate::fold::fold_owned;
use crate::hidden::{Hidden, Span, decode_selectors, decode_tags, escape_invisible, plain_ascii, spans_of};
use crate::identifiers::defines;
use crate::others::OtherNames;
use crate::phrases::{Checks, Matched, matching};

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
/// Between two strings in the joined text: no pattern reads across a NUL between line
/// breaks, and no folded string has a NUL (control characters are removed).
const SEPARATOR: &str = "\n\0\n";

/// What to look for.
#[derive(Clone, Copy)]
pub(crate) struct Scope<'a> {
    pub checks: Checks,
    pub others: &'a OtherNames,
    /// The scanned item's own name: naming itself is not shadowing.
    pub own_name: &'a str,
    /// The scanned item: the identifiers it defines (property names, enum values) are
    /// its own words, not another server's tools, even when they are spelled alike.
    pub own_item: Option<&'a Value>,
    /// The rest of the scanned server's listing, whose names and identifiers are its
    /// own words too (looked through only when another server's name turns up).
    pub own_listing: &'a [Value],
}

/// Every finding in `texts`, as (index of the text, finding), at most one per class and
/// text.
pub(crate) fn scan_texts(texts: &[&str], scope: Scope<'_>) -> Vec<(usize, Found)> {
    let mut found = Vec::new();
    scan_into(texts, scope, 0, &mut found);
    found
}

fn scan_into(texts: &[&str], scope: Scope<'_>, depth: u8, found: &mut Vec<(usize, Found)>) {
    let folded: Vec<Cow<'_, str>> = texts
        .iter()
        .enumerate()
        .map(|(index, &text)| {
            if plain_ascii(text) {
                return Cow::Borrowed(text);
            }
            raw_pass(text, &spans_of(text), &mut |f| found.push((index, f)));
            Cow::Owned(fold_owned(text))
        })
        .collect();
    let mut lowered = String::with_capacity(folded.iter().map(|f| f.len() + SEPARATOR.len()).sum());
    let mut starts = Vec::with_capacity(folded.len());
    for text in &folded {
        starts.push(lowered.len());
        lowered.push_str(text);
        lowered.push_str(SEPARATOR);
    }
    lowered.make_ascii_lowercase();
    // The text a match starts in, and the match's range inside that text.
    let locate = |start: usize, end: usize| {
        let index = starts.partition_point(|&s| s <= start) - 1;
        let len = folded[index].len();
        let local = start - starts[index];
        (local < len).then(|| (index, local, (end - starts[index]).min(len)))
    };
    for detector in matching(&lowered, scope.checks) {
        for m in detector.regex.find_iter(&lowered) {
            let Some((index, start, end)) = locate(m.start(), m.end()) else { continue };
            if has(found, index, detector.class) {
                continue;
            }
            if let Some(f) = describe(&folded[index], start, end, &detector, scope, depth) {
                found.push((index, f));
            }
        }
    }
    if scope.others.is_empty() {
        return;
    }
    let own = |name: &str| {
        name.eq_ignore_ascii_case(scope.own_name)
            || scope.own_item.is_some_and(|item| defines(item, name))
            || scope.own_listing.iter().any(|item| {
                item.get("name").and_then(Value::as_str).is_some_and(|own| own.eq_ignore_ascii_case(name))
                    || defines(item, name)
            })
    };
    for (start, end) in scope.others.find(&lowered, own) {
        let Some((index, start, end)) = locate(start, end) else { continue };
        let earlier = found.iter().position(|(i, f)| *i == index && f.class == Class::CrossServerToolName);
        if earlier.is_some_and(|at| found[at].1.severity >= Severity::Warn) {
            continue;
        }
        let name = &folded[index][start..end];
        // A name in a sentence that tells the model to use or avoid the tool, or how it
        // must behave, is shadowing; a mere mention ("unlike WebFetch, …") is recorded.
        // Every mention is read: a harmless one first must not hide an order after it.
        let (severity, detail) = if context::directs_at(&folded[index], start, end) {
            (
                Severity::Warn,
                format!("names {name:?}, a tool of another server, and tells the model to use or avoid it"),
            )
        } else if earlier.is_some() {
            continue;
        } else {
            (Severity::Info, format!("names {name:?}, a tool of another server (a mention, not a direction)"))
        };
        let finding = Found { class: Class::CrossServerToolName, severity, evidence: escape_invisible(name), detail };
        match earlier {
            Some(at) => found[at].1 = finding,
            None => found.push((index, finding)),
        }
    }
}

fn has(found: &[(usize, Found)], index: usize, class: Class) -> bool {
    found.iter().any(|(i, f)| *i == index && f.class == class)
}

/// The finding for one match in one folded text, if it is one (a base64 run is one
/// only if what it decodes to has findings).
fn describe(folded: &str, start: usize, end: usize, detector: &Matched, scope: Scope<'_>, depth: u8) -> Option<Found> {
    let matched = &folded[start..end];
    let (severity, evidence, detail) = match detector.class {
        Class::EncodedPayload => {
            if depth >= MAX_DEPTH {
                return None;
            }
            let decoded = decode_base64(matched)?;
            let mut inner = Vec::new();
            scan_into(&[&decoded], scope, depth + 1, &mut inner);
            let worst = inner.iter().map(|(_, f)| f.severity).max()?;
            let classes: Vec<&str> = inner.iter().map(|(_, f)| f.class.as_str()).collect();
            let detail = format!("{} ({})", detector.detail, classes.join(", "));
            (worst.max(detector.severity), shown(&decoded), detail)
        }
        Class::HiddenWhitespace => {
            // The match is the run of blanks and the first character after it.
            let blanks = matched.len() - matched.chars().next_back().map_or(0, char::len_utf8);
            let rest = &folded[start + blanks..];
            (detector.severity, shown(rest), format!("{} ({blanks} whitespace characters)", detector.detail))
        }
        Class::CredentialPath
            if context::advised_against(folded, start, end)
                || context::public_key(folded, start, end)
                || (!scope.checks.credential_paths && !context::asked_back(folded, start, end)) =>
        {
            return None;
        }
        Class::InstructionTag if context::placeholder(folded, start) => return None,
        Class::Concealment if context::only_a_prediction(folded, start, end) => return None,
        Class::HtmlComment if context::shown_as_code(folded, start, end) => return None,
        _ => (detector.severity, window(folded, start, end), detector.detail.to_owned()),
    };
    Some(Found { class: detector.class, severity, evidence, detail })
}

/// The raw pass: one finding per class of hidden character, with the worst severity.
fn raw_pass(text: &str, spans: &[Span], emit: &mut dyn FnMut(Found)) {
    if spans.is_empty() {
        return;
    }
    let mut found: Vec<Found> = Vec::new();
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
            Hidden::Control => add(Class::ControlCharacter, Severity::Warn, span, "control characters".to_owned()),
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
    found.into_iter().for_each(emit);
}

/// `text[start..end]` with some context around it, escaped and cut.
fn window(text: &str, start: usize, end: usize) -> String {
    let from = text[..start].char_indices().rev().nth(BEFORE - 1).map_or(0, |(at, _)| at);
    let to = text[end..].char_indices().nth(AFTER).map_or(text.len(), |(at, _)| end + at);
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    out.push_str(&shown(&text[from..to]));
    if to < text.len() && !out.ends_with('…') {
        out.push('…');
    }
    out
}

/// `text` cut to [`EVIDENCE_CHARS`] characters, then escaped: escaping first would
/// decide on the whole text (a bidi mark is left as it is in text with right-to-left
/// letters) and the cut could then drop the letters that made the mark harmless.
fn shown(text: &str) -> String {
    escape_invisible(&cut(text))
}

/// At most [`EVIDENCE_CHARS`] characters of `text`.
fn cut(text: &str) -> String {
    match text.char_indices().nth(EVIDENCE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}
