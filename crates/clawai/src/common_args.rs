//! Options and loaders several commands share: `--policy`, `--audit`, and the policy
//! loaded with the error text people need. A leaf: it uses no command.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Args;
use clawai_policy::{Policy, load_file};

use crate::paths;

/// `--policy FILE`, also read from `CLAWAI_POLICY`.
#[derive(Debug, Args)]
pub(crate) struct PolicyArg {
    /// The policy file [default: $XDG_CONFIG_HOME/clawai/policy.toml].
    #[arg(long = "policy", env = "CLAWAI_POLICY", value_name = "FILE")]
    pub path: Option<PathBuf>,
}

impl PolicyArg {
    /// The path to read.
    pub(crate) fn resolve(&self) -> PathBuf {
        paths::policy_path(self.path.clone())
    }
}

/// Which audit file.
#[derive(Debug, Args)]
pub(crate) struct FileArg {
    /// The audit trail [default: $XDG_STATE_HOME/clawai/audit.jsonl].
    #[arg(long = "audit", env = "CLAWAI_AUDIT", value_name = "FILE")]
    path: Option<PathBuf>,
}

impl FileArg {
    pub(crate) fn resolve(&self) -> PathBuf {
        self.path.clone().unwrap_or_else(|| paths::state_dir().join("audit.jsonl"))
    }
}

/// Loads a policy for a command, with the error text people need.
/// What a conversion from another format shaped or left out is logged as a warning.
pub(crate) fn load(path: &Path) -> Result<Policy> {
    let policy = load_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    for note in policy.notes() {
        tracing::warn!("{}: {note}", path.display());
    }
    Ok(policy)
}
