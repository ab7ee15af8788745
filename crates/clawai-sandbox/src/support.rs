//! What this system offers a sandbox: the Landlock ABI, and whether namespaces can be
//! made. A cheap look (one system call, a few small files), taken before every start.

use crate::PRETEND_MISSING_VARIABLE;

/// What the kernel offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version; 0 without Landlock (or on another OS).
    pub landlock_abi: u32,
    /// Whether user, PID and network namespaces can likely be made (the child tries,
    /// and reports what it got).
    pub namespaces: bool,
    /// Whether the system is Linux at all.
    pub linux: bool,
}

/// The first Landlock ABI that restricts TCP bind and connect by port.
pub(crate) const LANDLOCK_TCP_ABI: u32 = 4;
/// The first Landlock ABI that scopes signals and abstract Unix sockets.
pub(crate) const LANDLOCK_SCOPE_ABI: u32 = 6;

impl Support {
    /// Looks at this system (and at [`PRETEND_MISSING_VARIABLE`], which can only take
    /// features away).
    pub fn probe() -> Support {
        let mut support = Support::system();
        let pretend = std::env::var(PRETEND_MISSING_VARIABLE).unwrap_or_default();
        for feature in pretend.split(',').map(str::trim) {
            match feature {
                "landlock" => support.landlock_abi = 0,
                "landlock-tcp" => support.landlock_abi = support.landlock_abi.min(LANDLOCK_TCP_ABI - 1),
                "namespaces" => support.namespaces = false,
                _ => {}
            }
        }
        support
    }

    #[cfg(target_os = "linux")]
    fn system() -> Support {
        Support { landlock_abi: crate::linux::landlock_abi(), namespaces: namespaces_allowed(), linux: true }
    }

    #[cfg(not(target_os = "linux"))]
    fn system() -> Support {
        Support { landlock_abi: 0, namespaces: false, linux: false }
    }

    /// Landlock restricts files.
    pub fn landlock(&self) -> bool {
        self.landlock_abi >= 1
    }

    /// Landlock restricts TCP ports.
    pub fn landlock_tcp(&self) -> bool {
        self.landlock_abi >= LANDLOCK_TCP_ABI
    }

    /// Landlock keeps signals and abstract Unix sockets inside the sandbox.
    pub fn landlock_scopes(&self) -> bool {
        self.landlock_abi >= LANDLOCK_SCOPE_ABI
    }
}

/// Whether this process may make namespaces: root may; others need unprivileged user
/// namespaces, which `max_user_namespaces`, Debian's `unprivileged_userns_clone` and
/// Ubuntu's AppArmor restriction can turn off.
#[cfg(target_os = "linux")]
fn namespaces_allowed() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    let read = |path: &str| std::fs::read_to_string(path).ok().map(|text| text.trim().to_owned());
    let off = |path: &str, value: &str| read(path).is_some_and(|v| v == value);
    !off("/proc/sys/user/max_user_namespaces", "0")
        && !off("/proc/sys/kernel/unprivileged_userns_clone", "0")
        && !off("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", "1")
}
