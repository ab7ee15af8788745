//! The published MCP attacks (`tests/attacks/published.json`): tool poisoning, shadowing
//! and rug pulls (Invariant Labs), line jumping, conversation-history theft and ANSI
//! escapes (Trail of Bits), full-schema poisoning and poisoned results (CyberArk), and
//! the hiding tricks of MCPSEC, each rewritten in our own words with the classes the scan
//! should report; and clean twins, legitimate texts that look like them and must give
//! nothing at `warn` or above.
//!
//! Run with `cargo test -p clawai-scan --test attacks -- --nocapture` for the table.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use clawai_scan::{Class, Finding, ItemKind, Scanner, Severity};
use serde::Deserialize;
use serde_json::Value;

/// Every class, to read the names of the data file.
const CLASSES: [Class; 14] = [
    Class::TagCharacters,
    Class::BidiControl,
    Class::ZeroWidth,
    Class::ControlCharacter,
    Class::VariationSelector,
    Class::BadToolName,
    Class::InstructionTag,
    Class::OverridePhrase,
    Class::Concealment,
    Class::CredentialPath,
    Class::CrossServerToolName,
    Class::HiddenWhitespace,
    Class::HtmlComment,
    Class::EncodedPayload,
];

/// The severity `Class` documents for the attack form of each class (tag runs, bidi
/// overrides, several zero-width characters, terminal escapes, selector runs, a
/// directed mention of another server's tool; base64 of text with critical findings).
fn documented(class: Class) -> Severity {
    match class {
        Class::TagCharacters
        | Class::BidiControl
        | Class::ControlCharacter
        | Class::VariationSelector
        | Class::OverridePhrase
        | Class::Concealment
        | Class::EncodedPayload => Severity::Critical,
        Class::ZeroWidth
        | Class::BadToolName
        | Class::InstructionTag
        | Class::CredentialPath
        | Class::CrossServerToolName
        | Class::HiddenWhitespace
        | Class::HtmlComment => Severity::Warn,
    }
}

fn class_named(name: &str) -> Class {
    CLASSES.into_iter().find(|c| c.as_str() == name).unwrap_or_else(|| panic!("unknown class {name:?}"))
}

#[derive(Deserialize)]
struct Case {
    id: String,
    source: String,
    technique: String,
    target: String,
    item: Value,
    #[serde(default)]
    other_tools: Vec<String>,
    expect: Vec<Expected>,
}

#[derive(Deserialize)]
struct Expected {
    class: String,
    severity: String,
}

fn cases() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/attacks/published.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the scan reports for one case, through the public API as the pipeline uses it.
fn scan(case: &Case) -> Vec<Finding> {
    let others: Vec<&str> = case.other_tools.iter().map(String::as_str).collect();
    let listed = |kind| Scanner::new(&others).scan_item(kind, &case.item);
    match case.target.as_str() {
        "tool" => listed(ItemKind::Tool),
        "prompt" => listed(ItemKind::Prompt),
        "resource_template" => listed(ItemKind::ResourceTemplate),
        "instructions" => {
            assert!(case.item.is_string(), "{}: instructions are a string", case.id);
            listed(ItemKind::Instructions)
        }
        "result" => {
            let text = case.item.as_str().unwrap_or_else(|| panic!("{}: a result is a string", case.id));
            Scanner::new(&[]).scan_text(text)
        }
        other => panic!("{}: unknown target {other:?}", case.id),
    }
}

fn expected(case: &Case) -> Vec<(Class, Severity)> {
    case.expect
        .iter()
        .map(|e| {
            let severity: Severity = e.severity.parse().unwrap_or_else(|err| panic!("{}: {err}", case.id));
            (class_named(&e.class), severity)
        })
        .collect()
}

/// The worst severity found for `class`.
fn worst_of(findings: &[Finding], class: Class) -> Option<Severity> {
    findings.iter().filter(|f| f.class == class).map(|f| f.severity).max()
}

fn describe(findings: &[Finding]) -> String {
    if findings.is_empty() {
        return "nothing".to_owned();
    }
    findings
        .iter()
        .map(|f| format!("{} {} at {:?}: {}", f.class, f.severity, f.field, f.evidence))
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn published_attacks_are_detected_and_clean_twins_are_not() {
    let cases = cases();
    let mut ids = BTreeSet::new();
    for case in &cases {
        assert!(ids.insert(case.id.as_str()), "duplicate id {}", case.id);
        assert!(!case.source.is_empty() && case.source.contains("https://"), "{}: source needs a URL", case.id);
    }
    let (attacks, twins): (Vec<&Case>, Vec<&Case>) = cases.iter().partition(|c| !c.expect.is_empty());
    assert!(attacks.len() >= 40, "only {} attack cases", attacks.len());
    assert!(twins.len() >= 15, "only {} clean twins", twins.len());

    // technique -> (cases, detected); class -> cases whose finding has exactly the documented severity.
    let mut by_technique: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut exact: BTreeMap<Class, usize> = BTreeMap::new();
    let mut expected_classes: BTreeSet<Class> = BTreeSet::new();
    let mut misses = Vec::new();
    let mut detected = 0;
    for case in &attacks {
        let findings = scan(case);
        let mut missing = Vec::new();
        for (class, severity) in expected(case) {
            assert_eq!(
                severity,
                documented(class),
                "{}: expects {class} at {severity}, the documentation says {}",
                case.id,
                documented(class)
            );
            expected_classes.insert(class);
            match worst_of(&findings, class) {
                Some(found) if found >= severity => {
                    if findings.iter().any(|f| f.class == class && f.severity == documented(class)) {
                        *exact.entry(class).or_default() += 1;
                    }
                }
                found => missing.push(format!(
                    "{class} >= {severity} (found {})",
                    found.map_or("none".to_owned(), |s| s.to_string())
                )),
            }
        }
        let hit = missing.is_empty();
        detected += usize::from(hit);
        let row = by_technique.entry(format!("{} [{}]", case.technique, case.target)).or_default();
        row.0 += 1;
        row.1 += usize::from(hit);
        let publication = case.source.split(", ").next().unwrap_or(&case.source).to_owned();
        let row = by_source.entry(publication).or_default();
        row.0 += 1;
        row.1 += usize::from(hit);
        if !hit {
            misses.push(format!(
                "  MISS {} ({}): missing {}\n       found: {}",
                case.id,
                case.target,
                missing.join(", "),
                describe(&findings)
            ));
        }
    }

    let mut false_alarms = Vec::new();
    for case in &twins {
        let findings = scan(case);
        let loud: Vec<Finding> = findings.iter().filter(|f| f.severity >= Severity::Warn).cloned().collect();
        let quiet = findings.len() - loud.len();
        println!(
            "clean {:<28} {}",
            case.id,
            if loud.is_empty() { format!("ok ({quiet} info)") } else { "FALSE ALARM".to_owned() }
        );
        if !loud.is_empty() {
            false_alarms.push(format!("  {} ({}): {}", case.id, case.target, describe(&loud)));
        }
    }

    println!("\n{:<120} {:>9}", "technique [target]", "detected");
    for (technique, (total, hit)) in &by_technique {
        println!("{technique:<120} {hit:>4}/{total:<4}");
    }
    println!("\n{:<60} {:>9}", "publication", "detected");
    for (source, (total, hit)) in &by_source {
        println!("{source:<60} {hit:>4}/{total:<4}");
    }
    let percent = 100.0 * detected as f64 / attacks.len() as f64;
    println!(
        "\nattacks detected: {detected}/{} ({percent:.1}%); clean twins with findings at warn or above: {}/{}",
        attacks.len(),
        false_alarms.len(),
        twins.len()
    );
    if !misses.is_empty() {
        println!("misses:\n{}", misses.join("\n"));
    }
    if !false_alarms.is_empty() {
        println!("false alarms:\n{}", false_alarms.join("\n"));
    }

    // Severities are tested per class: each class the corpus expects is reported at
    // exactly its documented severity for at least one case.
    let wrong: Vec<String> = expected_classes
        .iter()
        .filter(|class| !exact.contains_key(class))
        .map(|class| format!("{class} (documented {})", documented(*class)))
        .collect();
    assert!(wrong.is_empty(), "classes never found at their documented severity: {}", wrong.join(", "));
    let uncovered: Vec<&str> = CLASSES.iter().filter(|c| !expected_classes.contains(c)).map(|c| c.as_str()).collect();
    assert!(uncovered.is_empty(), "classes no attack case expects: {uncovered:?}");

    assert!(false_alarms.is_empty(), "clean twins with findings at warn or above:\n{}", false_alarms.join("\n"));
    assert!(
        detected * 100 >= attacks.len() * 95,
        "detection {detected}/{} ({percent:.1}%) is below 95%:\n{}",
        attacks.len(),
        misses.join("\n")
    );
}
