//! `clawai proxy`.
use anyhow::Result;
use clap::Args;

use crate::ExitCode;

/// Options of `clawai proxy`.
#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// The server command and its arguments.
    #[arg(last = true)]
    command: Vec<String>,
}

pub fn run(_args: ProxyArgs) -> Result<ExitCode> {
    anyhow::bail!("not yet")
}
