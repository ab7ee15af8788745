//! Shipping a trail: every line exactly once, resuming where the database says.
//!
//! Each batch of lines goes in one transaction with the hash of its last line, the
//! source's position. Whatever stops the shipper (a kill, PostgreSQL going away in the
//! middle of a commit), the lines and the position are stored together or not at all;
//! after any failure the shipper asks the database where it stands and reads the trail
//! on from there. The unique index on (writer, seq) keeps a line stored once even when
//! the position is lost (the line shipped last rotated away while no shipper ran).

use std::path::PathBuf;
use std::time::Duration;

use clawai_proxy::audit::chain::line_hash;
use serde::Deserialize;
use tokio::sync::watch;

use crate::postgres::{Error, Postgres};
use crate::schema;
use crate::trail::{Cursor, Start};

/// What to ship and how.
#[derive(Debug, Clone)]
pub struct ShipOptions {
    /// The trail (`audit.jsonl`; its rotated files beside it are read too).
    pub trail: PathBuf,
    /// The name its position is kept under (host and path unless given).
    pub source: String,
    /// Keep following the trail (`false`: `--once`, catch up and return).
    pub follow: bool,
    /// The most lines in one transaction.
    pub batch_lines: usize,
    /// How often the trail is looked at when nothing is new.
    pub poll: Duration,
}

/// What a run did.
#[derive(Debug, Clone, Default)]
pub struct Shipped {
    /// Lines stored by this run.
    pub lines: u64,
    /// Lines of the trail that the database already had under the same writer and
    /// number (the trail changed after they were shipped): not stored again.
    pub already_there: u64,
}

/// The longest wait between attempts while PostgreSQL is away.
const MOST_BACKOFF: Duration = Duration::from_secs(5);

/// Ships the trail until caught up (`follow: false`) or until `stop` turns true;
/// while PostgreSQL is away, waits and tries again. Returns an error only for what
/// waiting will not mend (a wrong password, a missing database, an unreadable trail).
pub async fn ship(db: &Postgres, options: &ShipOptions, mut stop: watch::Receiver<bool>) -> Result<Shipped, Error> {
    let mut shipped = Shipped::default();
    let mut backoff = Duration::from_millis(250);
    let mut away_since: Option<std::time::Instant> = None;
    loop {
        let before = shipped.lines;
        match run_connected(db, options, &mut shipped, &mut stop).await {
            Ok(()) => return Ok(shipped),
            Err(error) if is_transient(&error) => {
                if shipped.lines > before {
                    backoff = Duration::from_millis(250);
                }
                if away_since.is_none() || shipped.lines > before {
                    tracing::warn!("{error}; the trail keeps every line meanwhile: trying again until it answers");
                    away_since = Some(std::time::Instant::now());
                }
                tokio::select! {
                    () = tokio::time::sleep(backoff) => {}
                    _ = stop.wait_for(|stop| *stop) => return Ok(shipped),
                }
                backoff = (backoff * 2).min(MOST_BACKOFF);
            }
            Err(error) => return Err(error),
        }
    }
}

/// PostgreSQL away (refused, cut, timed out, restarting), rather than told no.
fn is_transient(error: &Error) -> bool {
    let Error::Database { source, .. } = error else { return false };
    match source.code() {
        None => true,
        Some(code) => {
            let code = code.code();
            code.starts_with("08") || code.starts_with("57P") || code == "53300"
        }
    }
}

/// One connection's worth of shipping.
async fn run_connected(
    db: &Postgres,
    options: &ShipOptions,
    shipped: &mut Shipped,
    stop: &mut watch::Receiver<bool>,
) -> Result<(), Error> {
    let mut client = db.connect().await?;
    create_tables(db, &mut client).await?;
    let row = client
        .query_opt("SELECT last_hash FROM clawai_audit_sources WHERE source = $1", &[&options.source])
        .await
        .map_err(|e| db.error(e))?;
    let last_hash: Option<String> = row.map(|row| row.get(0));
    let trail = options.trail.clone();
    let opened = tokio::task::spawn_blocking(move || Cursor::open(&trail, last_hash.as_deref()))
        .await
        .expect("the trail reader does not panic");
    let (mut cursor, start) = opened.map_err(|source| trail_error(options, source))?;
    match start {
        Start::Beginning => tracing::info!("shipping {} from its first line", options.trail.display()),
        Start::AfterLastShipped => tracing::debug!("shipping {} from where it stopped", options.trail.display()),
        Start::LastShippedGone => tracing::warn!(
            "the line shipped last from {} is no longer in the trail (rotated away while no shipper ran): shipping from the oldest file left; lines rotated away in between are not in the database",
            options.trail.display()
        ),
    }
    loop {
        if *stop.borrow() {
            return Ok(());
        }
        let batch = options.batch_lines.max(1);
        let (read, back) = tokio::task::spawn_blocking(move || {
            let lines = cursor.read(batch);
            (lines, cursor)
        })
        .await
        .expect("the trail reader does not panic");
        cursor = back;
        let lines = read.map_err(|source| trail_error(options, source))?;
        if lines.is_empty() {
            if !options.follow && cursor.at_newest() {
                return Ok(());
            }
            tokio::select! {
                () = tokio::time::sleep(options.poll) => {}
                _ = stop.wait_for(|stop| *stop) => return Ok(()),
            }
            continue;
        }
        let stored = store_batch(db, &mut client, &options.source, &lines).await?;
        shipped.lines += stored;
        shipped.already_there += lines.len() as u64 - stored;
    }
}

/// Creates the tables unless they are there: a shipper whose role may only insert
/// (docs/cluster.md) must not need the right to create them.
async fn create_tables(db: &Postgres, client: &mut tokio_postgres::Client) -> Result<(), Error> {
    let present: bool = client.query_one(schema::PRESENT, &[]).await.map_err(|e| db.error(e))?.get(0);
    if present {
        return Ok(());
    }
    let transaction = client.transaction().await.map_err(|e| db.error(e))?;
    transaction.batch_execute(schema::LOCK).await.map_err(|e| db.error(e))?;
    transaction.batch_execute(schema::CREATE).await.map_err(|e| db.error(e))?;
    transaction.commit().await.map_err(|e| db.error(e))
}

/// The chain members a row copies out of its line.
#[derive(Deserialize)]
struct ChainFields {
    writer: Option<String>,
    seq: Option<i64>,
}

/// Stores `lines` (each with its newline) and the new position in one transaction.
/// Returns how many were stored (the others were there already).
async fn store_batch(
    db: &Postgres,
    client: &mut tokio_postgres::Client,
    source: &str,
    lines: &[Vec<u8>],
) -> Result<u64, Error> {
    let mut writers: Vec<Option<String>> = Vec::with_capacity(lines.len());
    let mut seqs: Vec<Option<i64>> = Vec::with_capacity(lines.len());
    let mut texts: Vec<String> = Vec::with_capacity(lines.len());
    for line in lines {
        let fields = serde_json::from_slice::<ChainFields>(line).ok();
        let (writer, seq) = match fields {
            Some(ChainFields { writer: Some(writer), seq: Some(seq) }) => (Some(writer), Some(seq)),
            _ => (None, None),
        };
        writers.push(writer);
        seqs.push(seq);
        let bare = line.strip_suffix(b"\n").unwrap_or(line);
        // PostgreSQL text holds UTF-8 without NUL: a line that is neither (a corrupt
        // trail) is stored readable, and its hash no longer matches, as it should not.
        texts.push(String::from_utf8_lossy(bare).replace('\0', "\u{fffd}"));
    }
    let last_hash = String::from_utf8(line_hash(lines.last().expect("a batch has lines")).to_vec()).expect("hex");
    let count = lines.len() as i64;
    let transaction = client.transaction().await.map_err(|e| db.error(e))?;
    let stored = transaction
        .execute(
            "INSERT INTO clawai_audit_events (source, writer, seq, line) \
             SELECT $1, w, s, l FROM UNNEST($2::text[], $3::bigint[], $4::text[]) WITH ORDINALITY AS t(w, s, l, n) \
             ORDER BY n ON CONFLICT (writer, seq) DO NOTHING",
            &[&source, &writers, &seqs, &texts],
        )
        .await
        .map_err(|e| db.error(e))?;
    transaction
        .execute(
            "INSERT INTO clawai_audit_writers (writer, first_seq) \
             SELECT w, min(s) FROM UNNEST($1::text[], $2::bigint[]) AS t(w, s) WHERE w IS NOT NULL GROUP BY w \
             ON CONFLICT (writer) DO NOTHING",
            &[&writers, &seqs],
        )
        .await
        .map_err(|e| db.error(e))?;
    transaction
        .execute(
            "INSERT INTO clawai_audit_sources (source, last_hash, lines) VALUES ($1, $2, $3) \
             ON CONFLICT (source) DO UPDATE SET last_hash = EXCLUDED.last_hash, \
             lines = clawai_audit_sources.lines + EXCLUDED.lines, updated_at = now()",
            &[&source, &last_hash, &count],
        )
        .await
        .map_err(|e| db.error(e))?;
    transaction.commit().await.map_err(|e| db.error(e))?;
    if stored < lines.len() as u64 {
        tracing::warn!(
            "{} line(s) of {source} have a writer and number the database already holds: not stored again (the trail changed after they were shipped; `clawai audit verify` checks the file, `clawai audit verify --postgres` the database)",
            lines.len() as u64 - stored
        );
    }
    Ok(stored)
}

fn trail_error(options: &ShipOptions, source: std::io::Error) -> Error {
    Error::Trail { path: options.trail.display().to_string(), source }
}
