//! What every command that runs a guard shares: the policy in force and the trail
//! ([`Guarded`]), how a person is asked ([`ask_options`]), and the processes servers
//! leave behind ([`adopt_orphans`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clawai_proxy::{AskOptions, AuditLog, FileStamp, PolicyHandle};

use crate::common_args::PolicyArg;
use crate::paths;

/// How a call a `prompt` rule holds is asked about: `--ask-timeout`, `--approvals`,
/// and the stores chosen for this process.
pub(crate) fn ask_options(timeout: f64, approvals: Option<&PathBuf>) -> AskOptions {
    crate::stores::ask_options(Duration::from_secs_f64(timeout), paths::approvals_path(approvals))
}

/// From now on, what the servers start and orphan is clawai's to end (see
/// [`clawai_proxy::process_tree`]); without it, a server's tree is its process group.
pub(crate) fn adopt_orphans() {
    if let Err(error) = clawai_proxy::process_tree::adopt_orphans() {
        tracing::warn!(
            "cannot adopt the processes servers leave behind ({error}); only their process groups are ended"
        );
    }
}

/// What every transport needs: the policy in force (reloaded on change) and the audit
/// trail.
pub(crate) struct Guarded {
    pub(crate) policy: PolicyHandle,
    pub(crate) audit: AuditLog,
}

impl Guarded {
    /// Loads the policy (refusing to start without a valid one) and opens the trail;
    /// `pins`: the pin store; `protect_also`: files besides the policy and the trail that
    /// no tool call may change.
    pub(crate) fn open_with(
        policy: &PolicyArg,
        audit: Option<&PathBuf>,
        audit_max_bytes: u64,
        no_reload: bool,
        pins: Option<&Path>,
        protect_also: &[PathBuf],
    ) -> Result<Guarded> {
        let policy_path = policy.resolve();
        if !policy_path.exists() {
            bail!(
                "no policy at {}; clawai will not run a server unguarded. Create one with `{}`, or pass --policy FILE (or set CLAWAI_POLICY)",
                policy_path.display(),
                paths::init_command(&policy_path)
            );
        }
        // Taken before the file is read: an edit after this moment is reloaded.
        let read = FileStamp::of(&policy_path);
        let policy =
            crate::common_args::load(&policy_path).context("the policy is invalid, so the server was not started")?;
        let audit_path = audit.cloned().unwrap_or_else(|| paths::state_dir().join("audit.jsonl"));
        let audit = AuditLog::open(&audit_path, audit_max_bytes, AuditLog::DEFAULT_KEEP)
            .with_context(|| format!("cannot open the audit trail {}; pass --audit FILE", audit_path.display()))?;
        let protection = crate::protected::self_protection(&policy_path, &audit_path, pins, protect_also);
        let handle = PolicyHandle::new(policy).with_self_protection(protection);
        if !no_reload && let Err(e) = handle.watch_in_background(&policy_path, read) {
            tracing::warn!("cannot watch {} for changes ({e}); edits need a restart", policy_path.display());
        }
        Ok(Guarded { policy: handle, audit })
    }
}
