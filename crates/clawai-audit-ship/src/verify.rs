//! `clawai audit verify --postgres`: every writer's chain, as stored in the database,
//! checked by the one chain check clawai has ([`clawai_proxy::audit::verify`]), rows
//! in the order they were shipped, each named by its `id`.

use std::collections::HashMap;

use clawai_proxy::audit::verify::{Verdict, Verifier};
use clawai_proxy::audit::{ChainHead, checkpoint_heads};

use crate::postgres::{Error, Postgres};

/// How rows are named in what is reported: `clawai_audit_events id:17`.
pub const ROW_SOURCE: &str = "clawai_audit_events id";

/// Rows fetched at a time.
const PAGE: i64 = 10_000;

/// What the check found.
#[derive(Debug)]
pub struct DatabaseVerdict {
    /// The chain check over every row, in shipping order.
    pub verdict: Verdict,
    /// Rows read.
    pub rows: u64,
    /// Writers whose first rows are missing: (writer, the first number shipped, the
    /// first number found; `None` when none of its rows is left).
    pub missing_starts: Vec<(String, i64, Option<u64>)>,
    /// Newest lines of a writer that another writer's checkpoint saw and the database
    /// does not have as seen (cut or changed after the checkpoint).
    pub cut_heads: Vec<CutHead>,
}

/// A line another writer's checkpoint named, missing or different in the database.
#[derive(Debug)]
pub struct CutHead {
    /// The row of the checkpoint that named it.
    pub checkpoint_row: i64,
    /// The writer of that checkpoint.
    pub by: String,
    /// The line it saw.
    pub head: ChainHead,
    /// The row with that writer and number, when there is one (its line then hashes
    /// to something else).
    pub found_row: Option<i64>,
    /// The newest number of that writer in the database.
    pub newest: Option<i64>,
}

impl DatabaseVerdict {
    /// Whether every chain is whole and starts where it was first shipped.
    pub fn is_whole(&self) -> bool {
        self.verdict.problem.is_none() && self.missing_starts.is_empty() && self.cut_heads.is_empty()
    }
}

/// Reads every shipped line and checks the chains.
pub async fn verify(db: &Postgres) -> Result<DatabaseVerdict, Error> {
    let client = db.connect().await?;
    let mut verifier = Verifier::new();
    let rows_source = verifier.add_source(ROW_SOURCE);
    let mut after = 0i64;
    let mut rows = 0u64;
    // For each writer another one's checkpoint saw: the newest line seen, and where.
    // (When that line is there as seen and every chain is whole, so are the ones
    // before it.)
    let mut seen: HashMap<String, (i64, String, ChainHead)> = HashMap::new();
    loop {
        let page = client
            .query("SELECT id, line FROM clawai_audit_events WHERE id > $1 ORDER BY id LIMIT $2", &[&after, &PAGE])
            .await
            .map_err(|source| missing_table_or(db, source))?;
        let Some(last) = page.last() else { break };
        after = last.get(0);
        for row in &page {
            let id: i64 = row.get(0);
            let mut line: String = row.get(1);
            if let Some((by, heads)) = checkpoint_heads(&line) {
                for head in heads {
                    if seen.get(&head.writer).is_none_or(|(_, _, newest)| newest.seq < head.seq) {
                        seen.insert(head.writer.clone(), (id, by.clone(), head));
                    }
                }
            }
            line.push('\n');
            verifier.add_line(rows_source, id as u64, line.as_bytes());
            rows += 1;
        }
    }
    // A writer may start past its first line (rotated away before it was shipped):
    // where each began is kept in clawai_audit_writers and compared below.
    let verdict = verifier.finish(true);
    let first_shipped: HashMap<String, i64> = client
        .query("SELECT writer, first_seq FROM clawai_audit_writers", &[])
        .await
        .map_err(|source| missing_table_or(db, source))?
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    let found: HashMap<&str, u64> = verdict.writers.iter().map(|w| (w.writer.as_str(), w.first_seq)).collect();
    let mut missing_starts: Vec<(String, i64, Option<u64>)> = Vec::new();
    if verdict.problem.is_none() {
        for (writer, &first) in &first_shipped {
            match found.get(writer.as_str()) {
                Some(&seq) if seq as i64 == first => {}
                Some(&seq) => missing_starts.push((writer.clone(), first, Some(seq))),
                None => missing_starts.push((writer.clone(), first, None)),
            }
        }
        missing_starts.sort();
    }
    let cut_heads = if verdict.problem.is_none() { cut_heads(db, &client, seen).await? } else { Vec::new() };
    Ok(DatabaseVerdict { verdict, rows, missing_starts, cut_heads })
}

/// The heads checkpoints saw that the database does not hold as seen, by the row of the
/// checkpoint.
async fn cut_heads(
    db: &Postgres,
    client: &tokio_postgres::Client,
    seen: HashMap<String, (i64, String, ChainHead)>,
) -> Result<Vec<CutHead>, Error> {
    let mut cut = Vec::new();
    for (writer, (checkpoint_row, by, head)) in seen {
        let seq = head.seq as i64;
        let row = client
            .query_opt("SELECT id, line FROM clawai_audit_events WHERE writer = $1 AND seq = $2", &[&writer, &seq])
            .await
            .map_err(|source| db.error(source))?;
        let found_row = match row {
            Some(row) => {
                let mut line: String = row.get(1);
                line.push('\n');
                let hash = clawai_proxy::audit::chain::line_hash(line.as_bytes());
                if hash.as_slice() == head.hash.as_bytes() {
                    continue;
                }
                Some(row.get(0))
            }
            None => None,
        };
        let newest: Option<i64> = client
            .query_one("SELECT max(seq) FROM clawai_audit_events WHERE writer = $1", &[&writer])
            .await
            .map_err(|source| db.error(source))?
            .get(0);
        cut.push(CutHead { checkpoint_row, by, head, found_row, newest });
    }
    cut.sort_by_key(|cut| cut.checkpoint_row);
    Ok(cut)
}

fn missing_table_or(db: &Postgres, source: tokio_postgres::Error) -> Error {
    if source.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
        Error::NothingShipped { url: db.shown().to_owned() }
    } else {
        db.error(source)
    }
}
