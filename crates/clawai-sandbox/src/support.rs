//! What this system offers a sandbox: the Landlock ABI, and whether namespaces can be
//! made. A cheap look (one system call, a few small files), taken before every start.

/// The environment variable a test sets to make clawai behave as on a kernel without
/// some features (comma-separated: `landlock`, `landlock-tcp`, `namespaces`), so that
/// the degradation and `require` paths can be tested on a machine that has them all.
/// It can only take protections away, and every protection it takes away is reported
/// as missing like a missing kernel feature.
pub const PRETEND_MISSING_VARIABLE: &str = "CLAWAI_SANDBOX_TEST_WITHOUT";

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
        Support { landlock_abi: landlock_abi(), namespaces: namespaces_allowed(), linux: true }
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

/// The Landlock ABI this kernel offers; 0 without Landlock.
#[cfg(target_os = "linux")]
fn landlock_abi() -> u32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a null attribute, size 0 and the VERSION flag, the call only returns
    // the ABI version (or fails); it touches no memory.
    let abi = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    u32::try_from(abi).unwrap_or(0)
}
