//! `clawai audit tail|query`: read the audit trail.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use clawai_policy::glob::Glob;
use serde_json::Value;

use crate::ExitCode;
use crate::paths;

/// Read the audit trail.
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// The last events, one line each; `--follow` keeps printing new ones.
    Tail(TailArgs),
    /// The events that match every filter given (rotated files included, oldest first).
    Query(QueryArgs),
}

/// Which audit file.
#[derive(Debug, Args)]
pub struct FileArg {
    /// The audit trail [default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long = "audit", env = "CLAWAI_AUDIT", value_name = "FILE")]
    path: Option<PathBuf>,
}

impl FileArg {
    pub(crate) fn resolve(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| paths::state_dir().join("audit.jsonl"))
    }
}

#[derive(Debug, Args)]
pub struct TailArgs {
    #[command(flatten)]
    file: FileArg,
    /// How many events.
    #[arg(short = 'n', long, default_value_t = 20)]
    lines: usize,
    /// Keep printing events as they are written (Ctrl-C stops).
    #[arg(short, long)]
    follow: bool,
    /// Print the events as JSON Lines, unchanged.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct QueryArgs {
    #[command(flatten)]
    file: FileArg,
    /// Only events with this decision; `blocked` is every call that did not go
    /// through (deny, refused, and prompt without approval).
    #[arg(long, value_enum)]
    decision: Option<DecisionFilter>,
    /// Only tools whose name matches this glob.
    #[arg(long)]
    tool: Option<String>,
    /// Only this server (glob).
    #[arg(long)]
    server: Option<String>,
    /// Only this method (glob, e.g. `tools/*`).
    #[arg(long)]
    method: Option<String>,
    /// Only events decided by this rule id.
    #[arg(long)]
    rule: Option<String>,
    /// Only events at or after this time: RFC 3339 (2026-11-22T10:00:00Z), or how long
    /// ago (45s, 30m, 1h, 2d, 1w).
    #[arg(long, value_parser = parse_since, value_name = "TIME")]
    since: Option<jiff::Timestamp>,
    /// Print the events as JSON Lines, unchanged.
    #[arg(long)]
    json: bool,
}

/// The decisions `--decision` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DecisionFilter {
    /// Forwarded by an allow rule.
    Allow,
    /// Denied by a rule (or by default).
    Deny,
    /// A person was to be asked.
    Prompt,
    /// Forwarded and marked for review.
    Audit,
    /// No rule applies to the message (forwarded).
    Pass,
    /// Not valid MCP, not forwarded.
    Refused,
    /// Every call that did not go through: deny, refused, and prompt not approved.
    Blocked,
}

impl DecisionFilter {
    fn matches(self, event: &Value) -> bool {
        let decision = event.get("decision").and_then(Value::as_str);
        match self {
            DecisionFilter::Blocked => match decision {
                Some("deny" | "refused") => true,
                // A person is being asked: the outcome is the `approval` event that follows.
                Some("prompt") if event.get("step").and_then(Value::as_str) == Some("asked") => false,
                Some("prompt") => !was_approved(event),
                _ => {
                    event.get("kind").and_then(Value::as_str) == Some("approval")
                        && matches!(event.get("step").and_then(Value::as_str), Some("answered" | "timed_out"))
                        && !was_approved(event)
                }
            },
            _ => decision == self.to_possible_value().as_ref().map(|v| v.get_name()),
        }
    }
}

/// A `prompt` decision let through without asking now (a standing approval, a session
/// grant, the answer a retry carried) carries `"approved": true`; one a person is asked
/// about says `"step": "asked"`, and its `approval` event says how it ended.
fn was_approved(event: &Value) -> bool {
    event.get("approved") == Some(&Value::Bool(true))
}

/// The files of the trail at `path`, oldest first: the rotated ones (`FILE.9` … `FILE.1`
/// that exist), then `path` itself.
pub(crate) fn trail_files(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        (1..=9).rev().map(|n| PathBuf::from(format!("{}.{n}", path.display()))).filter(|p| p.exists()).collect();
    files.push(path.to_owned());
    files
}

/// `--since`: an RFC 3339 time, or a span back from now (`45s`, `30m`, `1h`, `2d`, `1w`).
pub(crate) fn parse_since(text: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(time) = text.parse::<jiff::Timestamp>() {
        return Ok(time);
    }
    let help = || {
        format!("`{text}` is neither an RFC 3339 time (2026-11-22T10:00:00Z) nor how long ago (45s, 30m, 1h, 2d, 1w)")
    };
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(help)?;
    let (count, unit) = text.split_at(split);
    let count: i64 = count.parse().map_err(|_| help())?;
    let seconds = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => return Err(help()),
    };
    let ago = count.checked_mul(seconds).map(jiff::SignedDuration::from_secs).ok_or_else(help)?;
    jiff::Timestamp::now().checked_sub(ago).map_err(|_| help())
}

pub fn run(cmd: AuditCommand) -> Result<ExitCode> {
    match cmd {
        AuditCommand::Tail(args) => tail(args),
        AuditCommand::Query(args) => query(args),
    }
}

/// One event as a line people read.
fn render(event: &Value) -> String {
    let s = |k: &str| event.get(k).and_then(Value::as_str).unwrap_or("");
    let target = ["tool", "resource", "prompt"].iter().map(|k| s(k)).find(|v| !v.is_empty()).unwrap_or("");
    let id = event.get("id").map(|v| format!(" #{v}")).unwrap_or_default();
    let arguments = event.get("arguments").map(arguments_summary).unwrap_or_default();
    let mut line =
        format!("{} {:<8} {:<14} {}{} {target}{arguments}", s("time"), s("server"), s("direction"), s("method"), id);
    match s("kind") {
        "response" => {
            let ms =
                event.get("duration_ms").and_then(Value::as_f64).map(|d| format!(" {d:.1} ms")).unwrap_or_default();
            let err = if event.get("is_error") == Some(&Value::Bool(true)) { " error" } else { "" };
            line.push_str(&format!(" response{ms}{err}"));
        }
        _ => {
            line.push_str(&format!(" -> {}", s("decision")));
            if !s("rule").is_empty() {
                line.push_str(&format!(" [{}]", s("rule")));
            }
            if matches!(s("decision"), "deny" | "prompt" | "refused") && !s("reason").is_empty() {
                line.push_str(&format!(": {}", s("reason")));
            }
        }
    }
    line
}

/// The longest value shown in a summary of arguments, in characters.
const VALUE_CHARS: usize = 60;
/// The longest summary of arguments, in characters.
const SUMMARY_CHARS: usize = 200;

/// The arguments of a call, short and safe to print: `(path="/etc/passwd", mode="r")`.
/// Strings are quoted with control and invisible characters escaped, long values are
/// cut, nested values are shown as compact JSON. The trail holds them redacted already.
fn arguments_summary(arguments: &Value) -> String {
    let parts: Vec<String> = match arguments {
        Value::Object(members) => {
            members.iter().map(|(k, v)| format!("{}={}", escaped(k, VALUE_CHARS), value_summary(v))).collect()
        }
        Value::Null => return String::new(),
        other => vec![value_summary(other)],
    };
    let joined = parts.join(", ");
    format!("({})", cut(&joined, SUMMARY_CHARS))
}

fn value_summary(value: &Value) -> String {
    match value {
        Value::String(text) => format!("\"{}\"", escaped(text, VALUE_CHARS)),
        // JSON text: its strings' quotes and escapes are already as they should be read.
        other => cut(&other.to_string(), VALUE_CHARS)
            .chars()
            .map(|c| if matches!(c, '"' | '\\') { c.to_string() } else { c.escape_debug().to_string() })
            .collect(),
    }
}

/// `text` cut to `max` characters, with `"`, `\\` and whatever a terminal would act on
/// or hide (controls, bidi overrides, zero-width characters) escaped: `\n`, `\u{202e}`.
fn escaped(text: &str, max: usize) -> String {
    cut(text, max).escape_debug().to_string()
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn print(line: &str, json: bool) {
    if json {
        println!("{line}");
    } else {
        match serde_json::from_str::<Value>(line) {
            Ok(event) => println!("{}", render(&event)),
            Err(_) => println!("(unreadable line) {line}"),
        }
    }
}

fn open(path: &Path) -> Result<std::fs::File> {
    std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read the audit trail {}; pass --audit FILE (or set CLAWAI_AUDIT) if it is elsewhere",
            path.display()
        )
    })
}

fn tail(args: TailArgs) -> Result<ExitCode> {
    let path = args.file.resolve();
    let mut file = open(&path)?;
    let lines: Vec<String> =
        BufReader::new(&file).lines().map_while(Result::ok).filter(|l| !l.trim().is_empty()).collect();
    for line in &lines[lines.len().saturating_sub(args.lines)..] {
        print(line, args.json);
    }
    if !args.follow {
        return Ok(ExitCode::Ok);
    }
    let mut position = file.seek(SeekFrom::End(0))?;
    let mut partial = String::new();
    loop {
        std::thread::sleep(Duration::from_millis(200));
        let len = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if len < position {
            // Rotated: start again at the top of the new file.
            file = open(&path)?;
            position = 0;
        }
        file.seek(SeekFrom::Start(position))?;
        let mut reader = BufReader::new(&file);
        let mut chunk = String::new();
        while reader.read_line(&mut chunk)? > 0 {
            position += chunk.len() as u64;
            partial.push_str(&chunk);
            chunk.clear();
            if partial.ends_with('\n') {
                print(partial.trim_end(), args.json);
                partial.clear();
            }
        }
    }
}

fn query(args: QueryArgs) -> Result<ExitCode> {
    let path = args.file.resolve();
    let glob = |g: &Option<String>, what: &str| -> Result<Option<Glob>> {
        g.as_deref().map(|p| Glob::new(p).with_context(|| format!("--{what}"))).transpose()
    };
    let (tool, server, method) =
        (glob(&args.tool, "tool")?, glob(&args.server, "server")?, glob(&args.method, "method")?);
    let since = args.since;
    let files = trail_files(&path);
    let mut found = 0;
    for file in &files {
        for line in BufReader::new(open(file)?).lines().map_while(Result::ok) {
            let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
            let field = |k: &str| event.get(k).and_then(Value::as_str);
            let keep = args.decision.is_none_or(|d| d.matches(&event))
                && args.rule.as_deref().is_none_or(|r| field("rule") == Some(r))
                && tool.as_ref().is_none_or(|g| field("tool").is_some_and(|t| g.is_match(t)))
                && server.as_ref().is_none_or(|g| field("server").is_some_and(|t| g.is_match(t)))
                && method.as_ref().is_none_or(|g| field("method").is_some_and(|t| g.is_match(t)))
                && since.is_none_or(|s| {
                    field("time").and_then(|t| t.parse::<jiff::Timestamp>().ok()).is_some_and(|t| t >= s)
                });
            if keep {
                found += 1;
                print(&line, args.json);
            }
        }
    }
    if found == 0 && !args.json {
        eprintln!(
            "no event matches (searched {})",
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    Ok(ExitCode::Ok)
}
