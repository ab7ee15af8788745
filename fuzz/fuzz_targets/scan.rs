//! The poisoning scan: any text, as a result or inside any kind of listed item, is
//! scanned without panicking, the same way twice; what `escape_invisible` gives back has
//! nothing hidden left in it and is stable; each finding points at a string that is in
//! the item, with evidence that has nothing hidden in it either.
#![no_main]

use clawai_scan::{Class, Finding, ItemKind, Scanner, escape_invisible, scan_text};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

/// The classes of the raw pass: characters a reader does not see.
fn hidden(finding: &Finding) -> bool {
    matches!(
        finding.class,
        Class::TagCharacters
            | Class::BidiControl
            | Class::ZeroWidth
            | Class::ControlCharacter
            | Class::VariationSelector
    )
}

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };

    let findings = scan_text(text);
    assert_eq!(findings, scan_text(text), "scanning is deterministic");
    let escaped = escape_invisible(text);
    assert_eq!(escape_invisible(&escaped), escaped, "escaping is stable");
    assert!(!escaped.contains('\r'));
    assert!(!scan_text(&escaped).iter().any(hidden), "nothing hidden is left in {escaped:?}");
    for finding in &findings {
        assert!(finding.kind == ItemKind::Text && finding.field.is_empty() && finding.name.is_empty());
        assert!(!scan_text(&finding.evidence).iter().any(hidden), "evidence {:?} hides nothing", finding.evidence);
    }

    // The same text as every string of an item, or the item itself when it is JSON.
    let words: Vec<&str> = text.split_whitespace().take(8).collect();
    let scanner = Scanner::new(&words);
    let kind = [ItemKind::Tool, ItemKind::Prompt, ItemKind::ResourceTemplate, ItemKind::Instructions]
        [usize::from(selector % 4)];
    let item = match serde_json::from_str::<Value>(text) {
        Ok(value) if selector & 4 == 4 => value,
        _ => json!({
            "name": text,
            "title": text,
            "description": text,
            "inputSchema": {"type": "object", "properties": {text: {"type": "string", "description": text, "enum": [text]}}},
            "arguments": [{"name": text, "description": text}],
            "uriTemplate": text,
        }),
    };
    let findings = scanner.scan_item(kind, &item);
    assert_eq!(findings, scanner.scan_item(kind, &item), "scanning is deterministic");
    let listed = scanner.scan_listing(kind, std::slice::from_ref(&item));
    assert!(listed.len() <= findings.len(), "a listing's own words are never another server's");
    for finding in &findings {
        assert_eq!(finding.kind, kind);
        if finding.class == Class::BadToolName {
            assert_eq!(finding.field, "/name");
            continue;
        }
        let at = item.pointer(&finding.field);
        assert!(at.is_some(), "{:?} points into the item", finding.field);
        assert!(!scan_text(&finding.evidence).iter().any(hidden), "evidence {:?} hides nothing", finding.evidence);
    }
});
