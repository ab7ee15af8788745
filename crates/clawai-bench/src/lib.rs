#![warn(missing_docs)]
//! What the benchmark binaries share: a JSON-RPC session over a child's stdio, the
//! release binaries built beside the running one, and the statistics of the tables.

pub mod results;
pub mod stats;
pub mod stdio;

use std::path::PathBuf;

use anyhow::{Context, Result};

/// `name`, built beside the running binary (`target/release/`), or an error that says
/// how to build it.
pub fn sibling(name: &str) -> Result<PathBuf> {
    let here = std::env::current_exe()?;
    let path = here.parent().context("binary directory")?.join(name);
    anyhow::ensure!(
        path.exists(),
        "{} is missing: build with `cargo build --release -p clawai -p clawai-bench`",
        path.display()
    );
    Ok(path)
}
