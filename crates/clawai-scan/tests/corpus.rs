//! No false alarms: the listings of real MCP servers give no finding at `warn` or above
//! (what quarantines a tool by default; a mention of another server's tool is `info`),
//! and text in many languages and emoji gives no finding at all.

mod support;

use clawai_scan::{ItemKind, Scanner, Severity, escape_invisible, scan_text};

#[test]
fn real_listings_have_no_findings() {
    let listings = support::listings();
    assert!(listings.len() >= 25, "the corpus has {} servers", listings.len());
    // Every server sees the others' tool names, as behind the gateway.
    let all_names: Vec<(String, String)> = listings
        .iter()
        .flat_map(|l| {
            l.items
                .iter()
                .filter(|(k, _)| *k == ItemKind::Tool)
                .map(|(_, i)| (l.server.clone(), i["name"].as_str().unwrap().to_owned()))
        })
        .collect();
    let mut findings = Vec::new();
    let mut tools = 0;
    for listing in &listings {
        let own: Vec<&str> = all_names.iter().filter(|(s, _)| *s == listing.server).map(|(_, n)| n.as_str()).collect();
        let others: Vec<&str> = all_names
            .iter()
            .filter(|(s, n)| *s != listing.server && !own.contains(&n.as_str()))
            .map(|(_, n)| n.as_str())
            .collect();
        let own_items: Vec<_> = listing.items.iter().map(|(_, item)| item.clone()).collect();
        let scanner = Scanner::new(&others).excluding(&own_items);
        for (kind, item) in &listing.items {
            tools += usize::from(*kind == ItemKind::Tool);
            for f in scanner.scan_item(*kind, item).into_iter().filter(|f| f.severity >= Severity::Warn) {
                findings.push(format!(
                    "{}: {} {}{} {} {}: {}",
                    listing.server, f.kind, f.name, f.field, f.severity, f.class, f.evidence
                ));
            }
        }
        if let Some(text) = &listing.instructions {
            let found = scanner.scan_item(ItemKind::Instructions, &serde_json::Value::String(text.clone()));
            for f in found.into_iter().filter(|f| f.severity >= Severity::Warn) {
                findings.push(format!("{}: instructions {} {}: {}", listing.server, f.severity, f.class, f.evidence));
            }
        }
    }
    assert!(tools >= 200, "the corpus has {tools} tools");
    assert!(findings.is_empty(), "{} false positives:\n{}", findings.len(), findings.join("\n"));
}

#[test]
fn multilingual_and_emoji_samples_have_no_findings() {
    let samples = support::samples();
    assert!(samples.len() >= 30);
    for sample in &samples {
        assert_eq!(scan_text(sample), Vec::new(), "{sample}");
        let tool = serde_json::json!({"name": "sample", "description": sample, "inputSchema": {"type": "object", "properties": {"x": {"description": sample}}}});
        assert_eq!(clawai_scan::scan_item(ItemKind::Tool, &tool, &[]), Vec::new(), "{sample}");
        assert_eq!(escape_invisible(sample), *sample, "nothing in {sample:?} needs escaping");
    }
}
