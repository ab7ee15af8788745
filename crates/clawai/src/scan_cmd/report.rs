//! What `clawai scan` prints: every server and every item it scanned, each "clean" or
//! with its findings, for a person (text) or a program (`--json`). Showing the clean
//! items too is the point: "no findings" alone does not say what was looked at.

use std::fmt::Write as _;

use clawai_scan::{Finding, ItemKind, escape_invisible};
use serde_json::{Value, json};

use super::Scanned;

/// Text from a server shown on one line of a report: hidden characters escaped, and
/// line feeds and tabs too, so that a name or a description cannot add lines that look
/// like the report's own.
pub(crate) fn one_line(text: &str) -> String {
    escape_invisible(text).replace('\n', "\\n").replace('\t', "\\t")
}

/// One scanned item: its kind and name (empty for the instructions).
struct Item<'a> {
    kind: ItemKind,
    name: &'a str,
}

/// Every item a server listed, in the order of the report: the instructions, tools,
/// prompts, resource templates.
fn items(scanned: &Scanned) -> Vec<Item<'_>> {
    let Ok(listed) = &scanned.listed else { return Vec::new() };
    fn name(item: &Value) -> &str {
        item.get("name").and_then(Value::as_str).unwrap_or_default()
    }
    let mut out = Vec::new();
    if listed.instructions.is_some() {
        out.push(Item { kind: ItemKind::Instructions, name: "" });
    }
    out.extend(listed.tools.iter().map(|item| Item { kind: ItemKind::Tool, name: name(item) }));
    out.extend(listed.prompts.iter().map(|item| Item { kind: ItemKind::Prompt, name: name(item) }));
    out.extend(listed.templates.iter().map(|item| Item { kind: ItemKind::ResourceTemplate, name: name(item) }));
    out
}

fn of<'f>(findings: &'f [(String, Finding)], server: &str, item: &Item<'_>) -> Vec<&'f Finding> {
    findings.iter().filter(|(s, f)| s == server && f.kind == item.kind && f.name == item.name).map(|(_, f)| f).collect()
}

fn plural(n: usize, one: &str) -> String {
    if n == 1 { format!("1 {one}") } else { format!("{n} {one}s") }
}

/// The report for a person.
pub(super) fn text(scanned: &[Scanned], findings: &[(String, Finding)], policy_out: bool) -> String {
    let mut out = String::new();
    for server in scanned {
        let name = one_line(&server.name);
        let Ok(listed) = &server.listed else {
            let _ = writeln!(out, "{name}: not scanned (it could not be listed; see the error below)\n");
            continue;
        };
        let info = listed.server_info.as_ref().map(|info| {
            let field = |key: &str| info.get(key).and_then(Value::as_str).map(one_line).unwrap_or_default();
            format!(" ({} {})", field("name"), field("version")).replace(" )", ")")
        });
        let _ = writeln!(out, "server {name}{}", info.unwrap_or_default());
        let _ = writeln!(out, "  named `{name}`: {}", server.named_by.describe());
        let mut found = 0;
        for item in items(server) {
            let mine = of(findings, &server.name, &item);
            found += mine.len();
            let kind = item.kind.as_str().replace('_', " ");
            let label = if item.name.is_empty() { kind } else { format!("{kind} {}", one_line(item.name)) };
            if mine.is_empty() {
                let _ = writeln!(out, "  {label}: clean");
                continue;
            }
            let _ = writeln!(out, "  {label}: {}", plural(mine.len(), "finding"));
            for finding in mine {
                let field = if finding.field.is_empty() { "(the text)".to_owned() } else { one_line(&finding.field) };
                let _ = writeln!(out, "    {:<8} {} at {}: {}", finding.severity, finding.class, field, finding.detail);
                let _ = writeln!(out, "             {}", one_line(&finding.evidence));
            }
        }
        let _ = writeln!(
            out,
            "  {}, {}, {}{}: {}",
            plural(listed.tools.len(), "tool"),
            plural(listed.prompts.len(), "prompt"),
            plural(listed.templates.len(), "resource template"),
            if listed.instructions.is_some() { ", instructions" } else { "" },
            if found == 0 { "no findings".to_owned() } else { plural(found, "finding") }
        );
        if policy_out {
            let _ = writeln!(
                out,
                "  the starter policy names it `server = \"{name}\"`; wrap it under that name, or give --server NAME to use another"
            );
        }
        out.push('\n');
    }
    out
}

fn finding_json(server: &str, f: &Finding) -> Value {
    json!({
        "server": server,
        "kind": f.kind,
        "name": f.name,
        "field": f.field,
        "severity": f.severity,
        "class": f.class,
        "evidence": f.evidence,
    })
}

/// `{"findings": [{server, kind, name, field, severity, class, evidence}], "servers":
/// [{name, named_by, server_info, scanned, items: [{kind, name, status, findings}]}]}`.
pub(super) fn json(scanned: &[Scanned], findings: &[(String, Finding)]) -> String {
    let servers: Vec<Value> = scanned
        .iter()
        .map(|server| {
            let items: Vec<Value> = items(server)
                .iter()
                .map(|item| {
                    let mine: Vec<Value> =
                        of(findings, &server.name, item).into_iter().map(|f| finding_json(&server.name, f)).collect();
                    let status = if mine.is_empty() { "clean" } else { "findings" };
                    json!({"kind": item.kind, "name": item.name, "status": status, "findings": mine})
                })
                .collect();
            let listed = server.listed.as_ref().ok();
            json!({
                "name": server.name,
                "named_by": server.named_by.as_str(),
                "server_info": listed.and_then(|l| l.server_info.clone()),
                "scanned": listed.is_some(),
                "error": server.listed.as_ref().err().map(|e| format!("{e:#}")),
                "items": items,
            })
        })
        .collect();
    let list: Vec<Value> = findings.iter().map(|(server, f)| finding_json(server, f)).collect();
    json!({ "findings": list, "servers": servers }).to_string()
}
