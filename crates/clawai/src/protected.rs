//! What clawai's self-protection covers: its own files and the MCP clients'
//! configuration files `wrap` knows. No tool call writes, moves or deletes them,
//! whatever the policy says (see `clawai_proxy::self_protection`).

use std::path::{Path, PathBuf};

use clawai_proxy::self_protection::{Protected, SelfProtection};

use crate::paths;

/// The protection of a process that reads `policy`, writes `audit` and keeps its pins
/// in `pins` (any directory `--pins` or `CLAWAI_PINS` names: a pin file overwritten or
/// a store moved away trusts a rug pull anew); `also`: other files it reads (standing
/// approvals given by flag, the gateway's configuration).
pub(crate) fn self_protection(policy: &Path, audit: &Path, pins: Option<&Path>, also: &[PathBuf]) -> SelfProtection {
    let mut protected = vec![
        Protected::file(policy),
        // clawai's configuration (policy, approvals, skills) and state (audit, pins).
        Protected::tree(paths::default_policy().parent().map(Path::to_owned).unwrap_or_default()),
        Protected::tree(paths::state_dir()),
        Protected::file(audit),
    ];
    // The trail's rotated files.
    protected.extend((1..=9).map(|n| Protected::file(format!("{}.{n}", audit.display()))));
    protected.extend(pins.map(Protected::tree));
    // The store other clawai processes of this environment use (`clawai mcp-server`
    // keeps none of its own, yet its tools must not rewrite the proxies' pins).
    protected.extend(std::env::var_os("CLAWAI_PINS").filter(|dir| !dir.is_empty()).map(Protected::tree));
    protected.extend(also.iter().map(Protected::file));
    let dirs = clawai_clients::known::Dirs::from_env();
    // The project's own clawai directory (`./.clawai/skills`).
    protected.push(Protected::tree(dirs.project.join(".clawai")));
    protected.extend(clawai_clients::known::files(&dirs).into_iter().map(|known| Protected::file(known.path)));
    let absolute: Vec<Protected> = protected
        .into_iter()
        .map(|item| Protected { path: absolute(&item.path), ..item })
        .flat_map(|item| {
            // A file reached through a link is protected where it really is, too.
            let real = std::fs::canonicalize(&item.path).ok().filter(|real| *real != item.path);
            let real = real.map(|path| Protected { path, ..item.clone() });
            std::iter::once(item).chain(real)
        })
        .collect();
    SelfProtection::new(absolute)
}

/// `path` made absolute against the working directory (without touching the disk).
fn absolute(path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_owned()
    } else {
        std::env::current_dir().map(|dir| dir.join(path)).unwrap_or_else(|_| path.to_owned())
    }
}
