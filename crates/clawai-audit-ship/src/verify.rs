//! `clawai audit verify --postgres`: every writer's chain, as stored in the database,
//! checked by the one chain check clawai has ([`clawai_proxy::audit::verify`]), rows
//! in the order they were shipped, each named by its `id`.

use std::collections::HashMap;

use clawai_proxy::audit::verify::{Verdict, Verifier};

use crate::{Error, Postgres};

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
}

impl DatabaseVerdict {
    /// Whether every chain is whole and starts where it was first shipped.
    pub fn is_whole(&self) -> bool {
        self.verdict.problem.is_none() && self.missing_starts.is_empty()
    }
}

/// Reads every shipped line and checks the chains.
pub async fn verify(db: &Postgres) -> Result<DatabaseVerdict, Error> {
    let client = db.connect().await?;
    let mut verifier = Verifier::new();
    let rows_source = verifier.add_source(ROW_SOURCE);
    let mut after = 0i64;
    let mut rows = 0u64;
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
    Ok(DatabaseVerdict { verdict, rows, missing_starts })
}

fn missing_table_or(db: &Postgres, source: tokio_postgres::Error) -> Error {
    if source.code() == Some(&tokio_postgres::error::SqlState::UNDEFINED_TABLE) {
        Error::NothingShipped { url: db.shown().to_owned() }
    } else {
        db.error(source)
    }
}
