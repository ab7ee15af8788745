//! From a request to a sandbox ready to apply: the profile, what the kernel offers, what
//! will be enforced, and (on Linux) the stage the child runs before `exec`.

use crate::error::SandboxError;
use crate::grant::NetworkGrant;
use crate::profile::{Profile, ServerContext};
use crate::report::{Protection, Report, network_limits};
use crate::request::{Mode, Request};
use crate::support::Support;

/// A sandbox ready for one child: give [`Prepared::child_stage`] to the command's
/// `pre_exec`, spawn, then [`Prepared::finish`] says what was in force.
pub struct Prepared {
    mode: Mode,
    profile: Profile,
    support: Support,
    wanted: Vec<Protection>,
    #[cfg(target_os = "linux")]
    stage: Option<crate::linux::Stage>,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared").field("mode", &self.mode).field("wanted", &self.wanted).finish_non_exhaustive()
    }
}

/// Derives the profile of the server in `context` and readies it. `die_with_parent`:
/// the sandbox is killed when the thread that starts it ends (for a process that starts
/// it from its main thread, as `clawai proxy` does). Under [`Mode::Require`], refuses
/// when the kernel cannot enforce all of it.
pub fn prepare(request: &Request, context: &ServerContext, die_with_parent: bool) -> Result<Prepared, SandboxError> {
    let profile = Profile::auto(context, request)?;
    let support = Support::probe();
    let wanted = wanted(&profile.network);
    let missing: Vec<String> = wanted.iter().filter(|p| !offered(**p, &support)).map(|p| p.missing(&support)).collect();
    if request.mode == Mode::Require && !missing.is_empty() {
        return Err(SandboxError::NotEnforceable { missing });
    }
    #[cfg(target_os = "linux")]
    let stage = Some(crate::linux::Stage::new(&profile, &support, &wanted, request.mode, die_with_parent)?);
    #[cfg(not(target_os = "linux"))]
    let _ = die_with_parent;
    Ok(Prepared {
        mode: request.mode,
        profile,
        support,
        wanted,
        #[cfg(target_os = "linux")]
        stage,
    })
}

/// What this system would enforce of the sandbox `request` asks for the server in
/// `context`, without starting anything (`clawai status`).
pub fn on_this_system(request: &Request, context: &ServerContext) -> Result<Report, SandboxError> {
    let profile = Profile::auto(context, request)?;
    let support = Support::probe();
    let wanted = wanted(&profile.network);
    let prepared = Prepared {
        mode: request.mode,
        profile,
        support,
        wanted,
        #[cfg(target_os = "linux")]
        stage: None,
    };
    Ok(prepared.expected())
}

/// The protections a profile asks for: all of them, but the network's depend on its
/// grants (TCP ports are restricted for `none` and HOST:PORT grants only; the network
/// namespace is for `none`).
fn wanted(network: &[NetworkGrant]) -> Vec<Protection> {
    let none = network.iter().all(|g| *g == NetworkGrant::None);
    let ports_only = network.iter().all(|g| matches!(g, NetworkGrant::None | NetworkGrant::Endpoint { .. }));
    Protection::ALL
        .into_iter()
        .filter(|p| match p {
            Protection::TcpPorts => ports_only,
            Protection::NetworkNamespace => none,
            _ => true,
        })
        .collect()
}

/// Whether this system offers `protection` (the child may still fail to apply it).
fn offered(protection: Protection, support: &Support) -> bool {
    match protection {
        Protection::Files => support.landlock(),
        Protection::TcpPorts => support.landlock_tcp(),
        Protection::Scopes => support.landlock_scopes(),
        Protection::UserNamespace | Protection::PidNamespace | Protection::NetworkNamespace => support.namespaces,
        Protection::NoNewPrivs => support.linux,
    }
}

impl Prepared {
    /// The profile being applied.
    pub fn profile(&self) -> &Profile {
        &self.profile
    }

    /// What this system would enforce of the profile (before any child tried).
    pub fn expected(&self) -> Report {
        let enforced = self.wanted.iter().copied().filter(|p| offered(*p, &self.support)).collect();
        self.report(enforced)
    }

    fn report(&self, enforced: Vec<Protection>) -> Report {
        let mut not_enforced: Vec<String> = self
            .wanted
            .iter()
            .filter(|p| !enforced.contains(p))
            .filter(|p| !(**p == Protection::UserNamespace && enforced.contains(&Protection::PidNamespace)))
            .map(|p| p.missing(&self.support))
            .collect();
        // Without a network namespace, `none` still holds for TCP when Landlock has it.
        if self.wanted.contains(&Protection::NetworkNamespace)
            && !enforced.contains(&Protection::NetworkNamespace)
            && enforced.contains(&Protection::TcpPorts)
        {
            not_enforced.retain(|line| !line.starts_with("no network"));
            not_enforced.push(
                "no network for UDP and other protocols (no network namespace; TCP is refused by Landlock)".to_owned(),
            );
        }
        not_enforced.extend(network_limits(&self.profile.network));
        Report { mode: self.mode, enforced, not_enforced }
    }

    /// The function to run in the child between `fork` and `exec` (`pre_exec`): it makes
    /// the namespaces, becomes the server's PID-namespace init, applies `no_new_privs`
    /// and Landlock, and reports what it applied.
    ///
    /// # Safety
    /// What the function does after `fork` is async-signal-safe (system calls on data
    /// prepared before); it must run in the child of a fork, as `pre_exec` runs it.
    #[cfg(target_os = "linux")]
    pub fn child_stage(&mut self) -> impl FnMut() -> std::io::Result<()> + Send + Sync + 'static {
        let stage = self.stage.as_ref().expect("one stage per prepared sandbox");
        stage.child_function()
    }

    /// After the spawn (whether it worked or not): what the child applied.
    pub fn finish(mut self) -> Report {
        #[cfg(target_os = "linux")]
        if let Some(stage) = self.stage.take() {
            let bits = stage.read_report();
            let enforced = Protection::ALL.into_iter().filter(|p| bits & p.bit() != 0).collect();
            return self.report(enforced);
        }
        self.report(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prepared(network: &[&str], support: Support) -> Prepared {
        let profile = Profile { network: NetworkGrant::parse_all(network).unwrap(), ..Profile::default() };
        let wanted = wanted(&profile.network);
        Prepared {
            mode: Mode::Auto,
            profile,
            support,
            wanted,
            #[cfg(target_os = "linux")]
            stage: None,
        }
    }

    const FULL: Support = Support { landlock_abi: 7, namespaces: true, linux: true };

    #[test]
    fn network_none_asks_for_its_namespace_and_all_tcp_refused_any_for_neither() {
        let none = prepared(&["none"], FULL);
        assert!(none.wanted.contains(&Protection::NetworkNamespace) && none.wanted.contains(&Protection::TcpPorts));
        let ports = prepared(&["api.github.com:443"], FULL);
        assert!(!ports.wanted.contains(&Protection::NetworkNamespace) && ports.wanted.contains(&Protection::TcpPorts));
        for open in [&["any"][..], &["loopback"], &["loopback", "a.b:1"]] {
            let open = prepared(open, FULL);
            assert!(
                !open.wanted.contains(&Protection::TcpPorts) && !open.wanted.contains(&Protection::NetworkNamespace)
            );
        }
    }

    #[test]
    fn everything_offered_is_expected_and_only_the_inherent_limits_are_said() {
        let none = prepared(&["none"], FULL).expected();
        assert_eq!(none.enforced.len(), Protection::ALL.len());
        assert!(none.not_enforced.is_empty(), "{:?}", none.not_enforced);
        let loopback = prepared(&["loopback"], FULL).expected();
        assert_eq!(loopback.not_enforced.len(), 1);
        assert!(loopback.not_enforced[0].starts_with("network `loopback` is not confined to this machine"));
    }

    #[test]
    fn without_namespaces_none_still_refuses_tcp_and_says_the_rest_is_open() {
        let report = prepared(&["none"], Support { namespaces: false, ..FULL }).expected();
        assert!(report.has(Protection::TcpPorts) && !report.has(Protection::NetworkNamespace));
        assert!(report.not_enforced.iter().any(|l| l.starts_with("no network for UDP and other protocols")));
        assert!(!report.not_enforced.iter().any(|l| l.starts_with("no network (")), "{:?}", report.not_enforced);
        assert!(report.not_enforced.iter().any(|l| l.starts_with("a PID namespace")));
    }

    #[test]
    fn without_landlock_nothing_of_the_files_is_claimed() {
        let report = prepared(&["none"], Support { landlock_abi: 0, ..FULL }).expected();
        assert!(!report.has(Protection::Files) && !report.has(Protection::TcpPorts));
        assert!(report.summary().split(',').all(|p| !p.starts_with("landlock")), "{}", report.summary());
        assert!(report.not_enforced.iter().any(|l| l.starts_with("files (no Landlock")));
    }
}
