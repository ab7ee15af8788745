//! What was in force for a started server, and what was not: said at start, written to
//! the audit trail, shown by `clawai status`.

use crate::grant::NetworkGrant;
use crate::request::Mode;
use crate::support::Support;

/// One protection the sandbox applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Protection {
    /// Landlock: files outside the grants are refused.
    Files,
    /// Landlock: TCP bind and connect outside the granted ports are refused.
    TcpPorts,
    /// Landlock: signals and abstract Unix sockets stay inside the sandbox.
    Scopes,
    /// A user namespace.
    UserNamespace,
    /// A PID namespace: what the server starts ends with it.
    PidNamespace,
    /// A network namespace: no network at all.
    NetworkNamespace,
    /// `no_new_privs`.
    NoNewPrivs,
}

impl Protection {
    /// Every protection, in the order they are listed.
    pub const ALL: [Protection; 7] = [
        Protection::Files,
        Protection::TcpPorts,
        Protection::Scopes,
        Protection::UserNamespace,
        Protection::PidNamespace,
        Protection::NetworkNamespace,
        Protection::NoNewPrivs,
    ];

    /// One bit of the child's report.
    pub(crate) fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// The short name written in the audit trail.
    pub fn name(self) -> &'static str {
        match self {
            Protection::Files => "landlock-files",
            Protection::TcpPorts => "landlock-tcp",
            Protection::Scopes => "landlock-scopes",
            Protection::UserNamespace => "user-ns",
            Protection::PidNamespace => "pid-ns",
            Protection::NetworkNamespace => "net-ns",
            Protection::NoNewPrivs => "no-new-privs",
        }
    }

    /// What is not enforced when this protection is missing, in words.
    pub(crate) fn missing(self, support: &Support) -> String {
        let abi = support.landlock_abi;
        match self {
            Protection::Files if !support.linux => "files (not Linux: no Landlock)".to_owned(),
            Protection::Files => "files (no Landlock in this kernel: the server can read and write whatever its user can)".to_owned(),
            Protection::TcpPorts => format!(
                "TCP ports (Landlock ABI {abi} has no network rules; ABI 4, Linux 6.7, has them)"
            ),
            Protection::Scopes => format!(
                "signals and abstract Unix sockets outside the sandbox (Landlock ABI {abi}; ABI 6, Linux 6.12, scopes them)"
            ),
            Protection::UserNamespace => "a user namespace (user namespaces are off for this user)".to_owned(),
            Protection::PidNamespace => {
                "a PID namespace (what the server starts and detaches may outlive it; clawai still ends what it can find)"
                    .to_owned()
            }
            Protection::NetworkNamespace => "no network (no network namespace: the server reaches the network as its user can)".to_owned(),
            Protection::NoNewPrivs => "no_new_privs".to_owned(),
        }
    }
}

/// What was in force for one started server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// The mode asked for.
    pub mode: Mode,
    /// What was in force.
    pub enforced: Vec<Protection>,
    /// What the profile asked and was not enforced, in words; also limits no kernel
    /// lifts (Landlock's ports are not addresses).
    pub not_enforced: Vec<String>,
}

impl Report {
    /// A report of no sandbox.
    pub fn off() -> Report {
        Report { mode: Mode::Off, enforced: Vec::new(), not_enforced: Vec::new() }
    }

    /// The protections as one word list for the audit trail:
    /// `landlock-files,landlock-tcp,user-ns,pid-ns,net-ns,no-new-privs`; `off` without a
    /// sandbox.
    pub fn summary(&self) -> String {
        if self.mode == Mode::Off {
            return "off".to_owned();
        }
        if self.enforced.is_empty() {
            return "none".to_owned();
        }
        self.enforced.iter().map(|p| p.name()).collect::<Vec<_>>().join(",")
    }

    /// True when `protection` was in force.
    pub fn has(&self, protection: Protection) -> bool {
        self.enforced.contains(&protection)
    }

    /// One line said at start: what is in force, and what is not.
    pub fn describe(&self) -> String {
        let mut text = format!("sandbox ({}): {}", self.mode.as_str(), self.summary());
        if !self.not_enforced.is_empty() {
            text.push_str("; NOT enforced: ");
            text.push_str(&self.not_enforced.join("; "));
        }
        text
    }
}

/// Limits of the network grants that no kernel lifts (said even when everything the
/// kernel offers is in force).
pub(crate) fn network_limits(network: &[NetworkGrant]) -> Vec<String> {
    let mut limits = Vec::new();
    if network.contains(&NetworkGrant::Loopback) {
        limits.push(
            "network `loopback` is not confined to this machine (the server shares the host's network: \
             Landlock restricts TCP by port, not by address)"
                .to_owned(),
        );
    }
    if network.iter().any(|g| matches!(g, NetworkGrant::Endpoint { .. })) && !network.contains(&NetworkGrant::Any) {
        limits.push(
            "network HOST:PORT grants are enforced as ports only (any host on those TCP ports; UDP is not restricted)"
                .to_owned(),
        );
    }
    limits
}
