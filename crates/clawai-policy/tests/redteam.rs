//! The red-team suite: every case in `tests/redteam/*.toml` (at the repository's root) is
//! decided with the real policy engine, as `clawai policy test` decides a fixture, and the
//! decision must be the one the case expects. Prints a table of every case (always: this
//! target has no test harness capturing its output) and fails when any case fails.
//!
//! A case file names one policy (a path from the repository's root) and lists cases:
//!
//! ```toml
//! policy = "examples/policies/starter.toml"
//!
//! [[case]]
//! name = "ssh-key-via-dotdot"
//! tool = "read_text_file"
//! arguments = '{"path": "/home/u/projects/../.ssh/id_rsa"}'
//! expected = "deny"
//! rule = "no-credentials"          # optional: the rule that must decide: its id, else
//!                                  # `#N` (its place in the file), `default` for none
//! why = "`..` climbs out of the project into the SSH directory"
//! ```
//!
//! `arguments` (and `params`, which replaces the whole `params` of the message) are JSON
//! text, read by the same strict reader the proxy reads messages with, so duplicate keys
//! and number spellings reach the engine exactly as written. `expected = "refused"` means
//! that reader refuses the message before any rule sees it (the proxy answers such a
//! message with an error and never forwards it). Other keys: `method` (default
//! `tools/call`), `uri` (for `resources/read`), `prompt` (for `prompts/get`), `server`,
//! `annotations` (the tool's MCP annotations, as `tools/list` gave them).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clawai_policy::{Call, Policy, ToolAnnotations, load_file};
use clawai_protocol::strict;
use serde::Deserialize;

/// One file of cases.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CaseFile {
    /// The policy the cases are decided with, from the repository's root.
    policy: String,
    /// The cases; a file may have none yet.
    #[serde(default, rename = "case")]
    cases: Vec<Case>,
}

/// One red-team case.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    #[serde(default = "tools_call")]
    method: String,
    tool: Option<String>,
    uri: Option<String>,
    prompt: Option<String>,
    /// JSON text of the arguments (`tools/call`, `prompts/get`).
    arguments: Option<String>,
    /// JSON text of the whole `params`, for cases that smuggle something beside the
    /// arguments (a second `name`, say).
    params: Option<String>,
    server: Option<String>,
    annotations: Option<serde_json::Value>,
    expected: String,
    /// The id of the rule that must decide, or `default` when no rule may.
    rule: Option<String>,
    why: String,
}

fn tools_call() -> String {
    "tools/call".to_owned()
}

/// What a case came to.
struct Outcome {
    got: String,
    rule: String,
    passed: bool,
}

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("the repository's root")
}

/// The `params` text of a case's message.
fn params_text(case: &Case) -> Result<String, String> {
    if let Some(params) = &case.params {
        return Ok(params.clone());
    }
    let quoted = |s: &str| serde_json::to_string(s).expect("a string serialises");
    let arguments = case.arguments.as_deref().unwrap_or("{}");
    match case.method.as_str() {
        "tools/call" => {
            let tool = case.tool.as_deref().ok_or("a tools/call case needs `tool`")?;
            Ok(format!(r#"{{"name": {}, "arguments": {arguments}}}"#, quoted(tool)))
        }
        "prompts/get" => {
            let prompt = case.prompt.as_deref().ok_or("a prompts/get case needs `prompt`")?;
            Ok(format!(r#"{{"name": {}, "arguments": {arguments}}}"#, quoted(prompt)))
        }
        "resources/read" => {
            let uri = case.uri.as_deref().ok_or("a resources/read case needs `uri`")?;
            Ok(format!(r#"{{"uri": {}}}"#, quoted(uri)))
        }
        _ => Ok(case.arguments.clone().unwrap_or_else(|| "{}".to_owned())),
    }
}

/// Decides one case as the proxy would: the strict read of `params`, then the engine.
fn decide(policy: &Policy, case: &Case) -> Result<Outcome, String> {
    let text = params_text(case)?;
    let (got, rule) = match strict::parse(text.as_bytes()) {
        Err(why) => ("refused".to_owned(), format!("({why})")),
        Ok(params) => {
            let annotations = case.annotations.as_ref().map(ToolAnnotations::from_json);
            let call = Call::from_params(&case.method, Some(&params))
                .with_server(case.server.as_deref())
                .with_annotations(annotations);
            let decision = policy.decide(&call);
            let rule = match decision.rule {
                Some((_, rule)) if rule.id.is_some() => rule.id.clone().unwrap_or_default(),
                Some((index, _)) => format!("#{}", index + 1),
                None => "default".to_owned(),
            };
            (decision.action.as_str().to_owned(), rule)
        }
    };
    let passed = got == case.expected && case.rule.as_ref().is_none_or(|want| got == "refused" || *want == rule);
    Ok(Outcome { got, rule, passed })
}

/// Shows control and invisible characters of a name as escapes, so the table stays one
/// line per case and shows what was sent.
fn visible(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{feff}' | '\u{a0}' | '\u{2028}' | '\u{2029}')
            {
                c.escape_unicode().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

fn main() -> ExitCode {
    let root = repository_root();
    let dir = root.join("tests/redteam");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();

    let mut rows = Vec::new();
    let mut failures = Vec::new();
    let mut total = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let cases: CaseFile = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let policy = load_file(&root.join(&cases.policy)).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let set = file.file_stem().unwrap().to_string_lossy().into_owned();
        for case in &cases.cases {
            total += 1;
            let outcome =
                decide(&policy, case).unwrap_or_else(|e| panic!("{}: case `{}`: {e}", file.display(), case.name));
            let expected = match &case.rule {
                Some(rule) => format!("{} ({rule})", case.expected),
                None => case.expected.clone(),
            };
            let row = format!(
                "{:<5} {:<48} {:<30} {:<28} {} ({})",
                if outcome.passed { "ok" } else { "FAIL" },
                format!("{set}/{}", visible(&case.name)),
                cases.policy.trim_start_matches("examples/policies/").trim_start_matches("tests/redteam/"),
                expected,
                outcome.got,
                outcome.rule,
            );
            if !outcome.passed {
                failures.push(format!("{row}\n      why it should: {}", case.why));
            }
            rows.push(row);
        }
    }

    println!("{:<5} {:<48} {:<30} {:<28} got (rule)", "", "case", "policy", "expected");
    for row in &rows {
        println!("{row}");
    }
    println!("\n{} of {total} red-team cases decided as expected ({} files)", total - failures.len(), files.len());
    if total < 100 {
        println!("the red-team suite must hold at least 100 cases; it holds {total}");
        return ExitCode::FAILURE;
    }
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        println!("\nFailed:");
        for failure in &failures {
            println!("{failure}");
        }
        ExitCode::FAILURE
    }
}
