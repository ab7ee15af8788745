#![warn(missing_docs)]
//! What the benchmark binaries share: a JSON-RPC session over a child's stdio, the
//! release binaries built beside the running one, and the statistics of the tables.

pub mod http;
pub mod results;
pub mod stats;
pub mod stdio;

use std::path::PathBuf;

use anyhow::{Context, Result};

/// `CLAWAI_BENCH_QUICK=1`: every benchmark runs one short round, its figures
/// meaningless, so that CI finds a benchmark that no longer runs (`scripts/bench
/// --quick`, which `scripts/test` runs on the debug build).
pub fn quick() -> bool {
    std::env::var_os("CLAWAI_BENCH_QUICK").is_some_and(|v| !v.is_empty() && v != "0")
}

/// `full`, or `small` in [`quick`] mode.
pub fn scaled(full: usize, small: usize) -> usize {
    if quick() { small } else { full }
}

/// The rounds of a benchmark: `CLAWAI_BENCH_ROUNDS`, else `full` (one in [`quick`] mode).
pub fn rounds(full: usize) -> usize {
    let chosen = std::env::var("CLAWAI_BENCH_ROUNDS").ok().and_then(|r| r.parse().ok());
    chosen.unwrap_or(scaled(full, 1)).max(1)
}

/// `name`, built beside the running binary (`target/release/`), or an error that says
/// how to build it.
pub fn sibling(name: &str) -> Result<PathBuf> {
    let here = std::env::current_exe()?;
    let path = here.parent().context("binary directory")?.join(name);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build with `cargo build --release -p clawai -p clawai-bench` (or run `scripts/bench`)",
        path.display()
    );
    Ok(path)
}
