//! `clawai audit verify`: check the trail's hash chains across its rotated files.

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use clawai_proxy::AuditLog;
use clawai_proxy::audit::verify::{Verdict, Verifier};
use clawai_proxy::audit::{ChainHead, checkpoint_heads};

use crate::common_args::FileArg;
use crate::exit::ExitCode;

#[derive(Debug, Args)]
pub(crate) struct VerifyArgs {
    /// Files to check, oldest first (default: the trail and its rotated files).
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    #[command(flatten)]
    file: FileArg,
    /// The hash of a line noted from an earlier check (its "newest line … sha256"):
    /// that line must still be in the trail, unchanged, with everything before it.
    /// The newest lines of a writer have nothing after them to vouch for them but this.
    #[arg(long = "head", value_name = "SHA256")]
    heads: Vec<String>,
    /// Check the trail shipped to this PostgreSQL database (`clawai audit ship`) instead
    /// of files: every writer's chain there, rows named by their id.
    #[arg(long, value_name = "URL", conflicts_with_all = ["files", "heads"])]
    pub(crate) postgres: Option<String>,
}

/// The rotated files of the trail at `path` that exist, oldest first, then `path`.
pub(crate) fn trail_files(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=9).rev().map(|n| numbered(path, n)).filter(|p| p.exists()).collect();
    files.push(path.to_owned());
    files
}

fn numbered(path: &Path, n: usize) -> PathBuf {
    PathBuf::from(format!("{}.{n}", path.display()))
}

/// Whether the trail goes on in older files than `oldest`, so that its writers may
/// begin past their first line: a file older than it exists (not given), or it is as
/// old as rotation keeps, so that older ones may have been deleted by rotation.
pub(crate) fn older_files_missing(oldest: &Path) -> bool {
    let text = oldest.to_string_lossy();
    let (base, index) = match text.rsplit_once('.').and_then(|(base, n)| Some((base, n.parse::<usize>().ok()?))) {
        Some((base, n)) => (PathBuf::from(base), n),
        None => (oldest.to_owned(), 0),
    };
    numbered(&base, index + 1).exists() || index >= AuditLog::DEFAULT_KEEP
}

pub(crate) fn verify(args: VerifyArgs) -> Result<ExitCode> {
    let files = if args.files.is_empty() { trail_files(&args.file.resolve()) } else { args.files };
    let mut verifier = Verifier::new();
    for file in &files {
        let opened = std::fs::File::open(file).with_context(|| {
            format!("cannot read {}; pass the trail with --audit FILE, or the files to check", file.display())
        })?;
        verifier
            .add_file(&file.display().to_string(), BufReader::new(opened))
            .with_context(|| format!("cannot read {}", file.display()))?;
    }
    // Cluster mode: a replica's checkpoints name the other writers' newest lines; those
    // of writers whose lines are among these files must be there too.
    let seen = seen_by_checkpoints(&files)?;
    let mut heads = args.heads.clone();
    heads.extend(seen.values().map(|(_, head)| head.hash.clone()));
    let mut verdict = verifier.finish_with_heads(older_files_missing(&files[0]), &heads);
    let names = files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", ");
    let cut: Vec<&(String, ChainHead)> = seen
        .values()
        .filter(|(_, head)| verdict.heads_missing.contains(&head.hash))
        .filter(|(_, head)| verdict.writers.iter().any(|w| w.writer == head.writer))
        .collect();
    // Those of writers whose trails were not given cannot be checked here.
    verdict.heads_missing.retain(|hash| args.heads.contains(hash));
    print_unchained(&verdict);
    if verdict.problem.is_none() && !cut.is_empty() {
        for (by, head) in &cut {
            println!(
                "{names}: cut: the checkpoint of writer {by} saw event #{} of writer {} (sha256 {}), which no line here has: the newest lines of writer {} were removed or changed",
                head.seq, head.writer, head.hash, head.writer
            );
        }
        println!("the chains of the {} event(s) there are whole, but the trail is not what it was", verdict.checked);
        return Ok(ExitCode::Failure);
    }
    match &verdict.problem {
        Some(problem) => {
            println!("{problem}");
            println!(
                "the trail is not whole: {} event(s) before this line check out; nothing after it was checked",
                verdict.checked
            );
            Ok(ExitCode::Failure)
        }
        None if !verdict.heads_missing.is_empty() => {
            for head in &verdict.heads_missing {
                println!(
                    "{names}: no line has the hash {head}: the line it was taken from was removed or changed (the trail was cut, or rewritten from there on)"
                );
            }
            println!(
                "the chains of the {} event(s) there are whole, but the trail is not what it was",
                verdict.checked
            );
            Ok(ExitCode::Failure)
        }
        None => {
            println!("{names}: whole: {} event(s) checked, {} writer(s)", verdict.checked, verdict.writers.len());
            print_writers(&verdict);
            Ok(ExitCode::Ok)
        }
    }
}

/// For each writer a `checkpoint` line in `files` names, the newest of its lines named,
/// with the writer of that checkpoint.
fn seen_by_checkpoints(files: &[PathBuf]) -> Result<HashMap<String, (String, ChainHead)>> {
    let mut seen: HashMap<String, (String, ChainHead)> = HashMap::new();
    for file in files {
        let opened = std::fs::File::open(file).with_context(|| format!("cannot read {}", file.display()))?;
        for line in BufReader::new(opened).split(b'\n') {
            let line = line.with_context(|| format!("cannot read {}", file.display()))?;
            let Some((by, heads)) = std::str::from_utf8(&line).ok().and_then(checkpoint_heads) else { continue };
            for head in heads {
                if seen.get(&head.writer).is_none_or(|(_, newest)| newest.seq < head.seq) {
                    seen.insert(head.writer.clone(), (by.clone(), head));
                }
            }
        }
    }
    Ok(seen)
}

fn print_unchained(verdict: &Verdict) {
    if let Some((first, last)) = &verdict.unchained_span {
        println!(
            "not verified: {} line(s) without a hash chain, written before clawai chained its trail ({first} to {last})",
            verdict.unchained
        );
    }
}

pub(crate) fn print_writers(verdict: &Verdict) {
    for writer in &verdict.writers {
        let mut origin = Vec::new();
        if let Some(server) = &writer.server {
            origin.push(format!("server {server}"));
        }
        if let Some(session) = &writer.session {
            origin.push(format!("session {session}"));
        }
        let origin = if origin.is_empty() { String::new() } else { format!(" ({})", origin.join(", ")) };
        let last_seq = writer.first_seq + writer.events as u64 - 1;
        let older = if writer.first_seq > 0 {
            format!("; its events before #{} are in files rotated away", writer.first_seq)
        } else {
            String::new()
        };
        println!(
            "  writer {}{origin}: {} event(s), #{}–#{last_seq}{older}",
            writer.writer, writer.events, writer.first_seq
        );
        if let Some((place, hash)) = &writer.last {
            println!("    newest line {place}, sha256 {hash}");
        }
    }
}
