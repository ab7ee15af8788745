//! `clawai audit ship --postgres URL` and `clawai audit verify --postgres URL`: the
//! trail in PostgreSQL, run by the `clawai-http` binary (the database client stays out
//! of the small one that clients launch for every server).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use clawai_audit_ship::{Postgres, ShipOptions};

use crate::common_args::FileArg;
use crate::exit::ExitCode;

/// Options of `clawai audit ship`.
#[derive(Debug, Args)]
pub struct ShipArgs {
    /// The database: `postgres://USER[:PASSWORD]@HOST:PORT/DATABASE` (tables are
    /// created on first use; docs/cluster.md shows them).
    #[arg(long, value_name = "URL")]
    postgres: String,
    #[command(flatten)]
    file: FileArg,
    /// Catch up and exit, instead of following the trail until stopped.
    #[arg(long)]
    once: bool,
    /// The name this trail's position is kept under in the database [default:
    /// HOSTNAME:PATH of the trail].
    #[arg(long, value_name = "NAME")]
    source: Option<String>,
    /// The most lines stored in one transaction.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    batch_lines: usize,
}

/// Ships the trail, in process.
pub fn ship(args: ShipArgs) -> Result<ExitCode> {
    if args.batch_lines == 0 {
        bail!("--batch-lines must be 1 or more");
    }
    let db = Postgres::parse(&args.postgres)?;
    let trail = args.file.resolve();
    let source = match args.source {
        Some(source) => source,
        None => default_source(&trail),
    };
    let options = ShipOptions {
        trail,
        source,
        follow: !args.once,
        batch_lines: args.batch_lines,
        poll: Duration::from_millis(200),
    };
    let runtime = crate::http_cmd::runtime()?;
    let shipped = runtime.block_on(async {
        let (stop, stopping) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            crate::http_cmd::shutdown_signal().await;
            stop.send_replace(true);
        });
        if options.follow {
            eprintln!(
                "clawai: shipping {} to {} as {} (Ctrl-C stops)",
                options.trail.display(),
                db.shown(),
                options.source
            );
        }
        clawai_audit_ship::ship(&db, &options, stopping).await
    })?;
    eprintln!("clawai: {} line(s) shipped to {}", shipped.lines, db.shown());
    if shipped.already_there > 0 {
        eprintln!(
            "clawai: {} line(s) of the trail were already in the database under the same writer and number, with other content: the trail changed after it was shipped",
            shipped.already_there
        );
    }
    Ok(ExitCode::Ok)
}

/// `HOSTNAME:/absolute/path/of/the/trail`.
fn default_source(trail: &Path) -> String {
    let host =
        nix::unistd::gethostname().map(|h| h.to_string_lossy().into_owned()).unwrap_or_else(|_| "localhost".into());
    let path = std::path::absolute(trail).unwrap_or_else(|_| trail.to_owned());
    format!("{host}:{}", path.display())
}

/// Checks every writer's chain in the database, in process.
pub fn verify(url: String) -> Result<ExitCode> {
    let db = Postgres::parse(&url)?;
    let runtime = crate::http_cmd::runtime()?;
    let found = runtime.block_on(clawai_audit_ship::verify(&db)).context("the database was not checked")?;
    let verdict = &found.verdict;
    if let Some(problem) = &verdict.problem {
        println!("{problem}");
        println!(
            "the trail in {} is not whole: {} event(s) before this row check out; nothing after it was checked",
            db.shown(),
            verdict.checked
        );
        return Ok(ExitCode::Failure);
    }
    for (writer, first, found_first) in &found.missing_starts {
        match found_first {
            Some(seq) => println!(
                "{}: deleted: events #{first}–#{} of writer {writer} are missing: it was first shipped from #{first}, its first row now is #{seq}",
                clawai_audit_ship::verify::ROW_SOURCE,
                seq - 1
            ),
            None => println!(
                "{}: deleted: every row of writer {writer} is missing (it was shipped from #{first})",
                clawai_audit_ship::verify::ROW_SOURCE
            ),
        }
    }
    for cut in &found.cut_heads {
        print_cut_head(cut);
    }
    if !found.is_whole() {
        return Ok(ExitCode::Failure);
    }
    println!("{}: whole: {} event(s) checked, {} writer(s)", db.shown(), verdict.checked, verdict.writers.len());
    if verdict.unchained > 0 {
        println!("not verified: {} row(s) without a hash chain", verdict.unchained);
    }
    crate::audit_verify::print_writers(verdict);
    Ok(ExitCode::Ok)
}

/// A writer's newest line that another writer's checkpoint saw, missing or changed.
fn print_cut_head(cut: &clawai_audit_ship::verify::CutHead) {
    let rows = clawai_audit_ship::verify::ROW_SOURCE;
    let (writer, seq) = (&cut.head.writer, cut.head.seq);
    let seen = format!(
        "the checkpoint of writer {} ({rows}:{}) saw event #{seq} of writer {writer}",
        cut.by, cut.checkpoint_row
    );
    match (cut.found_row, cut.newest) {
        (Some(row), _) => println!("{rows}:{row}: edited: {seen} with another hash"),
        (None, Some(newest)) => println!(
            "{rows}:{}: cut: {seen}, which is not in the database (its newest row is #{newest}): the newest \
             lines of writer {writer} were deleted, or are not shipped yet",
            cut.checkpoint_row
        ),
        (None, None) => println!(
            "{rows}:{}: cut: {seen}, and the database has no row of writer {writer}: its lines were deleted, or \
             are not shipped yet",
            cut.checkpoint_row
        ),
    }
}
