//! Linux: the Landlock ruleset, built before the fork, and the stage the child runs
//! between `fork` and `exec`.

mod stage;

pub(crate) use stage::Stage;

use std::os::fd::OwnedFd;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, NetPort, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope,
};

use crate::error::SandboxError;
use crate::grant::{Access as GrantAccess, NetworkGrant};
use crate::profile::Profile;
use crate::report::Protection;
use crate::support::Support;

/// The ABI whose rights clawai asks for; a kernel with an older ABI keeps the rights it
/// knows (the crate's best-effort mode), a newer one is asked for nothing it has not
/// been tested with.
const TESTED_ABI: ABI = ABI::V6;

/// The ruleset of `profile`: every file access is handled (refused unless granted);
/// TCP when `wanted` has [`Protection::TcpPorts`]; signals and abstract Unix sockets
/// when the kernel scopes them. `None` when the kernel has no Landlock.
pub(crate) fn ruleset(
    profile: &Profile,
    support: &Support,
    wanted: &[Protection],
) -> Result<Option<OwnedFd>, SandboxError> {
    if !support.landlock() {
        return Ok(None);
    }
    let fail = |e: &dyn std::fmt::Display| SandboxError::Setup(format!("the Landlock ruleset: {e}"));
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(TESTED_ABI))
        .map_err(|e| fail(&e))?;
    let tcp = wanted.contains(&Protection::TcpPorts) && support.landlock_tcp();
    if tcp {
        ruleset = ruleset.handle_access(AccessNet::from_all(TESTED_ABI)).map_err(|e| fail(&e))?;
    }
    if support.landlock_scopes() {
        ruleset = ruleset.scope(Scope::from_all(TESTED_ABI)).map_err(|e| fail(&e))?;
    }
    let mut created = ruleset.create().map_err(|e| fail(&e))?;
    for grant in &profile.grants {
        let Ok(fd) = PathFd::new(&grant.path) else { continue };
        let is_dir = std::fs::metadata(&grant.path).is_ok_and(|m| m.is_dir());
        let mut access = match grant.access {
            GrantAccess::Read => AccessFs::from_read(TESTED_ABI),
            GrantAccess::Write => AccessFs::from_all(TESTED_ABI),
        };
        if !is_dir {
            access &= AccessFs::from_file(TESTED_ABI);
        }
        created = created.add_rule(PathBeneath::new(fd, access)).map_err(|e| fail(&e))?;
    }
    if tcp {
        for grant in &profile.network {
            if let NetworkGrant::Endpoint { port, .. } = grant {
                created = created.add_rule(NetPort::new(*port, AccessNet::ConnectTcp)).map_err(|e| fail(&e))?;
            }
        }
    }
    Ok(created.into())
}
