//! `clawai audit tail|query`: read the audit trail.

use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
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
    fn resolve(&self) -> PathBuf {
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
    /// Only this decision (allow, deny, prompt, audit, pass, refused).
    #[arg(long)]
    decision: Option<String>,
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
    /// Only events at or after this time (RFC 3339, e.g. 2026-11-22T10:00:00Z).
    #[arg(long)]
    since: Option<String>,
    /// Print the events as JSON Lines, unchanged.
    #[arg(long)]
    json: bool,
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
    let mut line = format!("{} {:<8} {:<14} {}{} {}", s("time"), s("server"), s("direction"), s("method"), id, target);
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
    let since = args
        .since
        .as_deref()
        .map(|s| {
            s.parse::<jiff::Timestamp>()
                .with_context(|| format!("--since {s}: write an RFC 3339 time such as 2026-11-22T10:00:00Z"))
        })
        .transpose()?;
    // Rotated files first (oldest first), then the current one.
    let mut files: Vec<PathBuf> =
        (1..=9).rev().map(|n| PathBuf::from(format!("{}.{n}", path.display()))).filter(|p| p.exists()).collect();
    files.push(path.clone());
    let mut found = 0;
    for file in &files {
        for line in BufReader::new(open(file)?).lines().map_while(Result::ok) {
            let Ok(event) = serde_json::from_str::<Value>(&line) else { continue };
            let field = |k: &str| event.get(k).and_then(Value::as_str);
            let keep = args.decision.as_deref().is_none_or(|d| field("decision") == Some(d))
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
