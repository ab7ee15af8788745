//! `clawai audit tail|query|verify`: read the audit trail, and check its hash chains.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

use anyhow::{Context, Result};
use clap::{Args, Subcommand, ValueEnum};
use clawai_policy::glob::Glob;
use clawai_proxy::audit::{AuditLine, Decision, EventKind, Step};
use serde_json::Value;

use crate::audit_verify::VerifyArgs;
use crate::common_args::FileArg;
use crate::exit::ExitCode;

/// Read the audit trail.
#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// The last events, one line each; `--follow` keeps printing new ones.
    Tail(TailArgs),
    /// The events that match every filter given (rotated files included, oldest first);
    /// `--follow` keeps printing new ones that match.
    Query(QueryArgs),
    /// Check that the trail is whole: every line where its writer put it, unchanged,
    /// none missing, across rotated files. Names the first line that is not and exits 1.
    Verify(VerifyArgs),
    /// Copy the trail to PostgreSQL, every line exactly once, following it until
    /// stopped (`--once`: catch up and exit); resumes where the database says after a
    /// restart, and waits while PostgreSQL is away.
    Ship(crate::audit_postgres::ShipArgs),
}

#[derive(Debug, Args)]
pub(crate) struct TailArgs {
    #[command(flatten)]
    file: FileArg,
    /// How many events.
    #[arg(short = 'n', long, default_value_t = 20)]
    lines: usize,
    /// Keep printing events as they are written, across rotations (Ctrl-C stops).
    #[arg(short, long)]
    follow: bool,
    /// Print the events as JSON Lines, unchanged (with --follow: one line per event as
    /// it is written, for jq, vector, fluent-bit).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
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
    /// After the events found, keep printing new ones that match, across rotations
    /// (Ctrl-C stops).
    #[arg(short, long)]
    follow: bool,
    /// Print the events as JSON Lines, unchanged (with --follow: one line per event as
    /// it is written, for jq, vector, fluent-bit).
    #[arg(long)]
    json: bool,
}

/// The decisions `--decision` selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DecisionFilter {
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
        let Some(line) = AuditLine::of(event) else { return false };
        match self {
            DecisionFilter::Blocked => match line.decision() {
                Some(Decision::Deny | Decision::Refused) => true,
                // A person is being asked: the outcome is the `approval` event that follows.
                Some(Decision::Prompt) if line.step() == Some(Step::Asked) => false,
                Some(Decision::Prompt) => !line.approved(),
                _ => {
                    line.kind() == Some(EventKind::Approval)
                        && matches!(line.step(), Some(Step::Answered | Step::TimedOut))
                        && !line.approved()
                }
            },
            DecisionFilter::Allow => line.decision() == Some(Decision::Allow),
            DecisionFilter::Deny => line.decision() == Some(Decision::Deny),
            DecisionFilter::Prompt => line.decision() == Some(Decision::Prompt),
            DecisionFilter::Audit => line.decision() == Some(Decision::Audit),
            DecisionFilter::Pass => line.decision() == Some(Decision::Pass),
            DecisionFilter::Refused => line.decision() == Some(Decision::Refused),
        }
    }
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

/// The `clawai audit` commands this binary runs (`ship` and `verify --postgres` run in
/// `clawai-http`: the root sends them there).
pub(crate) fn run(cmd: AuditCommand) -> Result<ExitCode> {
    match cmd {
        AuditCommand::Tail(args) => tail(args),
        AuditCommand::Query(args) => query(args),
        AuditCommand::Verify(args) => crate::audit_verify::verify(args),
        // The root sends it to `clawai-http`; never here.
        AuditCommand::Ship(_) => anyhow::bail!("`clawai audit ship` runs in the clawai-http binary"),
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
    let words = AuditLine::of(event);
    match words.and_then(|line| line.kind()) {
        Some(EventKind::Sandbox) => return format!("{} {:<8} started: {}", s("time"), s("server"), s("reason")),
        Some(EventKind::Checkpoint) => {
            let seen = event.get("heads").and_then(Value::as_array).map_or(0, Vec::len);
            return format!("{} checkpoint of {}: saw {seen} other writer(s)' newest lines", s("time"), s("session"));
        }
        Some(EventKind::Response) => {
            let ms =
                event.get("duration_ms").and_then(Value::as_f64).map(|d| format!(" {d:.1} ms")).unwrap_or_default();
            let err = if event.get("is_error") == Some(&Value::Bool(true)) { " error" } else { "" };
            line.push_str(&format!(" response{ms}{err}"));
            if !err.is_empty() && !s("sandbox").is_empty() {
                // A call that failed in a sandboxed server: the sandbox may be why.
                line.push_str(&format!(" (in sandbox: {})", s("sandbox")));
            }
        }
        _ => {
            line.push_str(&format!(" -> {}", s("decision")));
            if !s("rule").is_empty() {
                line.push_str(&format!(" [{}]", s("rule")));
            }
            let refusal = matches!(
                words.and_then(|line| line.decision()),
                Some(Decision::Deny | Decision::Prompt | Decision::Refused)
            );
            if refusal && !s("reason").is_empty() {
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

/// Prints one event, as a readable line or as the JSON line it is, and flushes it: a
/// program reading a followed trail gets each event when it is written.
fn print(line: &str, json: bool) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    if json {
        writeln!(out, "{line}")?;
    } else {
        match serde_json::from_str::<Value>(line) {
            Ok(event) => writeln!(out, "{}", render(&event))?,
            Err(_) => writeln!(out, "(unreadable line) {line}")?,
        }
    }
    out.flush()
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
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    // Only whole lines: a line being written is printed when it is complete.
    let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
    let text = String::from_utf8_lossy(&bytes[..complete]);
    let mut lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    // In time order: an event is stamped when its message arrived, and one that waited
    // (a call held for a person, or for the server's tool list) is written after events
    // that came later. The trail's own order stays the chain's; this is only the view.
    lines.sort_by_cached_key(|line| event_time(line));
    for line in &lines[lines.len().saturating_sub(args.lines)..] {
        print(line, args.json)?;
    }
    if args.follow {
        crate::audit_follow::follow(&path, file, complete as u64, |line| print(line, args.json))?;
    }
    Ok(ExitCode::Ok)
}

/// An event's `time` (RFC 3339, UTC), for ordering; a line without one sorts first.
fn event_time(line: &str) -> Option<jiff::Timestamp> {
    #[derive(serde::Deserialize)]
    struct Stamped {
        time: Option<String>,
    }
    serde_json::from_str::<Stamped>(line).ok()?.time?.parse().ok()
}

/// The filters of `clawai audit query`.
struct Filter {
    decision: Option<DecisionFilter>,
    rule: Option<String>,
    tool: Option<Glob>,
    server: Option<Glob>,
    method: Option<Glob>,
    since: Option<jiff::Timestamp>,
}

impl Filter {
    fn new(args: &QueryArgs) -> Result<Filter> {
        let glob = |g: &Option<String>, what: &str| -> Result<Option<Glob>> {
            g.as_deref().map(|p| Glob::new(p).with_context(|| format!("--{what}"))).transpose()
        };
        Ok(Filter {
            decision: args.decision,
            rule: args.rule.clone(),
            tool: glob(&args.tool, "tool")?,
            server: glob(&args.server, "server")?,
            method: glob(&args.method, "method")?,
            since: args.since,
        })
    }

    /// Whether the line is an event that every filter given keeps.
    fn keeps(&self, line: &str) -> bool {
        let Ok(event) = serde_json::from_str::<Value>(line) else { return false };
        let field = |k: &str| event.get(k).and_then(Value::as_str);
        self.decision.is_none_or(|d| d.matches(&event))
            && self.rule.as_deref().is_none_or(|r| field("rule") == Some(r))
            && self.tool.as_ref().is_none_or(|g| field("tool").is_some_and(|t| g.is_match(t)))
            && self.server.as_ref().is_none_or(|g| field("server").is_some_and(|t| g.is_match(t)))
            && self.method.as_ref().is_none_or(|g| field("method").is_some_and(|t| g.is_match(t)))
            && self
                .since
                .is_none_or(|s| field("time").and_then(|t| t.parse::<jiff::Timestamp>().ok()).is_some_and(|t| t >= s))
    }
}

fn query(args: QueryArgs) -> Result<ExitCode> {
    let path = args.file.resolve();
    let filter = Filter::new(&args)?;
    // Rotated files first (oldest first), then the current one.
    let files = crate::audit_verify::trail_files(&path);
    let mut found = 0;
    let mut end = 0;
    let mut current = None;
    for (n, name) in files.iter().enumerate() {
        let mut file = open(name)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        for line in BufReader::new(&bytes[..complete]).lines().map_while(Result::ok) {
            if filter.keeps(&line) {
                found += 1;
                print(&line, args.json)?;
            }
        }
        if n == files.len() - 1 {
            (end, current) = (complete as u64, Some(file));
        }
    }
    if found == 0 && !args.json && !args.follow {
        eprintln!(
            "no event matches (searched {})",
            files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ")
        );
    }
    if let (true, Some(file)) = (args.follow, current) {
        crate::audit_follow::follow(&path, file, end, |line| {
            if filter.keeps(line) { print(line, args.json) } else { Ok(()) }
        })?;
    }
    Ok(ExitCode::Ok)
}
