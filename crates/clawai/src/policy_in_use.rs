//! The policy that wrapped entries will use: checked before `wrap`, `watch` and `run`
//! write entries whose servers would refuse to start, and described by `status`.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::paths;

/// What a policy file is like, as the proxy will find it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PolicyState {
    /// It loads.
    Usable,
    /// There is no file.
    Missing,
    /// It does not load: why.
    Invalid(String),
}

impl PolicyState {
    /// Loads `path` as `clawai proxy` will.
    pub(crate) fn of(path: &Path) -> PolicyState {
        if !path.exists() {
            return PolicyState::Missing;
        }
        match clawai_policy::load_file(path) {
            Ok(_) => PolicyState::Usable,
            Err(e) => PolicyState::Invalid(e.to_string()),
        }
    }

    /// A few words for `status`, after the path: empty when usable.
    pub(crate) fn remark(&self, path: &Path) -> String {
        match self {
            PolicyState::Usable => String::new(),
            PolicyState::Missing => {
                format!(", missing: the server will not start; `{}` writes it", paths::init_command(path))
            }
            PolicyState::Invalid(_) => format!(
                ", invalid: the server will not start; `clawai policy check {}` shows why",
                paths::shell_word(&path.display().to_string())
            ),
        }
    }
}

/// The policy a wrapped entry uses: the one pinned with `--policy`, else the default
/// path (what the proxy finds when the client sets no `CLAWAI_POLICY`).
pub(crate) fn for_entries(pinned: Option<&Path>) -> PathBuf {
    pinned.map(Path::to_owned).unwrap_or_else(paths::default_policy)
}

/// Refuses (unless `force`) when the servers about to be wrapped could not start with
/// `policy`; with `force`, or for a dry run (`warn_only`), says so on stderr and goes on.
pub(crate) fn check_before_wrapping(policy: &Path, force: bool, warn_only: bool) -> Result<()> {
    let shown = policy.display();
    let problem = match PolicyState::of(policy) {
        PolicyState::Usable => return Ok(()),
        PolicyState::Missing => format!(
            "there is no policy at {shown}, and a wrapped server does not start without one, so the client would lose its servers.\nCreate it with `{}` (or pass --policy FILE)",
            paths::init_command(policy)
        ),
        PolicyState::Invalid(why) => format!(
            "the policy {shown} does not load, and a wrapped server does not start without a valid one, so the client would lose its servers:\n{why}\nFix it (`clawai policy check {}` shows what is wrong)",
            paths::shell_word(&shown.to_string())
        ),
    };
    // Clients start servers with their own environment, not this shell's.
    let environment = match std::env::var_os("CLAWAI_POLICY") {
        Some(set) if policy == paths::default_policy() => format!(
            "\nCLAWAI_POLICY is set here, but a client does not pass it on to its servers: `--policy {}` pins that policy in the entries.",
            paths::shell_word(&set.to_string_lossy())
        ),
        _ => String::new(),
    };
    if force || warn_only {
        eprintln!("warning: {problem}.{environment}");
        return Ok(());
    }
    bail!("{problem}, then run this again; --force wraps anyway.{environment}")
}
