//! What the child runs between `fork` and `exec`.
//!
//! 1. `unshare` a user, PID and (network `none`) network namespace, and map the
//!    child's own user and group into the user namespace (root, without a user
//!    namespace, still gets the PID and network namespaces).
//! 2. `no_new_privs`, then Landlock (`landlock_restrict_self` with the ruleset built
//!    before the fork): from here on, this process and all it starts are confined.
//! 3. With a PID namespace: `fork` twice. The first child is PID 1 of the namespace, a
//!    small init that reaps orphans and exits with the server's status when the server
//!    exits, whereupon the kernel kills every other process of the namespace. Its
//!    child returns to `exec` the server. The process clawai started stays outside the
//!    namespace as the server's stand-in: it waits for the init and exits with its
//!    status, so clawai's handle on the child still tells when the server ended.
//! 4. The server writes which protections it got to a pipe (closed at `exec`).
//!
//! Everything here is a system call on memory prepared before the fork: nothing
//! allocates, nothing takes a lock (the parent may have had other threads).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::SandboxError;
use crate::report::Protection;
use crate::request::Mode;
use crate::support::Support;

/// The data the child stage works with, copied into the `pre_exec` function.
#[derive(Clone)]
struct ChildPlan {
    namespaces: bool,
    network_namespace: bool,
    root: bool,
    /// `"UID UID 1"` and `"GID GID 1"`: the child is itself in the user namespace.
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    /// The Landlock ruleset; -1 without one.
    ruleset: RawFd,
    /// What the ruleset covers besides files, reported when it is applied.
    ruleset_covers: u16,
    report: RawFd,
    require: bool,
    die_with_parent: bool,
}

/// The child stage of one sandbox, and the parent's ends of what it uses.
pub(crate) struct Stage {
    plan: ChildPlan,
    /// Kept open until the child is started (the child uses it before `exec`).
    _ruleset: Option<OwnedFd>,
    report_read: OwnedFd,
    report_write: OwnedFd,
}

impl Stage {
    pub(crate) fn new(
        profile: &crate::profile::Profile,
        support: &Support,
        wanted: &[Protection],
        mode: Mode,
        die_with_parent: bool,
    ) -> Result<Stage, SandboxError> {
        let ruleset = super::ruleset(profile, support, wanted)?;
        let (report_read, report_write) = pipe().map_err(|e| SandboxError::Setup(format!("a pipe: {e}")))?;
        let mut covers = Protection::Files.bit();
        if wanted.contains(&Protection::TcpPorts) && support.landlock_tcp() {
            covers |= Protection::TcpPorts.bit();
        }
        if support.landlock_scopes() {
            covers |= Protection::Scopes.bit();
        }
        // SAFETY: getuid, getgid and geteuid have no preconditions.
        let (uid, gid, euid) = unsafe { (libc::getuid(), libc::getgid(), libc::geteuid()) };
        let plan = ChildPlan {
            namespaces: support.namespaces,
            network_namespace: wanted.contains(&Protection::NetworkNamespace),
            root: euid == 0,
            uid_map: format!("{uid} {uid} 1").into_bytes(),
            gid_map: format!("{gid} {gid} 1").into_bytes(),
            ruleset: ruleset.as_ref().map_or(-1, AsRawFd::as_raw_fd),
            ruleset_covers: covers,
            report: report_write.as_raw_fd(),
            require: mode == Mode::Require,
            die_with_parent,
        };
        Ok(Stage { plan, _ruleset: ruleset, report_read, report_write })
    }

    pub(crate) fn child_function(&self) -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
        let plan = self.plan.clone();
        move || run(&plan)
    }

    /// The protections the child reported; none when it never got that far.
    pub(crate) fn read_report(self) -> u16 {
        drop(self.report_write);
        let mut bytes = [0u8; 2];
        let mut got = 0;
        while got < bytes.len() {
            // SAFETY: reads into the rest of a buffer we own.
            let n = unsafe {
                libc::read(self.report_read.as_raw_fd(), bytes[got..].as_mut_ptr().cast(), bytes.len() - got)
            };
            match n {
                n if n > 0 => got += n as usize,
                -1 if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted => continue,
                _ => return 0,
            }
        }
        u16::from_ne_bytes(bytes)
    }
}

fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 writes two descriptors into the array on success.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just opened and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// The stage, in the child.
fn run(plan: &ChildPlan) -> io::Result<()> {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    let mut applied: u16 = 0;
    if plan.namespaces {
        applied |= enter_namespaces(plan)?;
    } else if plan.require {
        return Err(io::Error::from_raw_os_error(libc::EPERM));
    }
    // SAFETY: prctl with these arguments only sets a flag of this process.
    if unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) } == 0 {
        applied |= Protection::NoNewPrivs.bit();
    } else if plan.require {
        return Err(io::Error::last_os_error());
    }
    if plan.ruleset >= 0 {
        // SAFETY: the ruleset descriptor is open (the parent keeps it until the spawn).
        if unsafe { libc::syscall(libc::SYS_landlock_restrict_self, plan.ruleset, 0u32) } == 0 {
            applied |= plan.ruleset_covers;
        } else if plan.require {
            return Err(io::Error::last_os_error());
        }
    }
    if applied & Protection::PidNamespace.bit() != 0 {
        become_init(plan, parent)?;
    }
    let bytes = applied.to_ne_bytes();
    // SAFETY: writes two bytes of a local array to the report pipe.
    unsafe { libc::write(plan.report, bytes.as_ptr().cast(), bytes.len()) };
    Ok(())
}

/// Unshares the namespaces and maps the user; returns what was made. Without a user
/// namespace, root still gets the others; under `require`, not getting them is an error.
fn enter_namespaces(plan: &ChildPlan) -> io::Result<u16> {
    let mut flags = libc::CLONE_NEWPID;
    let mut made = Protection::PidNamespace.bit();
    if plan.network_namespace {
        flags |= libc::CLONE_NEWNET;
        made |= Protection::NetworkNamespace.bit();
    }
    // SAFETY: unshare changes only this (single-threaded, forked) process.
    if unsafe { libc::unshare(flags | libc::CLONE_NEWUSER) } == 0 {
        write_file(c"/proc/self/setgroups", b"deny")?;
        write_file(c"/proc/self/uid_map", &plan.uid_map)?;
        write_file(c"/proc/self/gid_map", &plan.gid_map)?;
        return Ok(made | Protection::UserNamespace.bit());
    }
    let refused = io::Error::last_os_error();
    // SAFETY: as above.
    if plan.root && unsafe { libc::unshare(flags) } == 0 {
        return Ok(made);
    }
    if plan.require { Err(refused) } else { Ok(0) }
}

fn write_file(path: &std::ffi::CStr, content: &[u8]) -> io::Result<()> {
    // SAFETY: a NUL-terminated path; the descriptor is closed below.
    let fd = unsafe { libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: writes `content`, which we borrow, to the descriptor we opened.
    let written = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    // SAFETY: closes the descriptor we opened.
    unsafe { libc::close(fd) };
    if written != content.len() as isize {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Forks the namespace's init and, below it, the server; returns in the server only.
fn become_init(plan: &ChildPlan, parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: fork in a single-threaded child; both sides only make system calls.
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(io::Error::last_os_error());
    }
    if init > 0 {
        stand_in(init, plan, parent);
    }
    // PID 1 of the namespace: killed with its stand-in, which takes the namespace along.
    // SAFETY: prctl sets this process's parent-death signal.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    // SAFETY: as above.
    let server = unsafe { libc::fork() };
    if server < 0 {
        return Err(io::Error::last_os_error());
    }
    if server == 0 {
        return Ok(());
    }
    init_loop(server)
}

/// Keeps only stderr open: the server's pipes and the parent's descriptors are the
/// server's, and a process that holds them keeps them from closing.
fn keep_only_stderr() {
    // SAFETY: closes descriptors of this process, which uses none of them any more.
    unsafe {
        libc::close(0);
        libc::close(1);
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..4096 {
                libc::close(fd);
            }
        }
    }
}

/// Ignores the signals that ask a process to stop: the server gets them (it is in the
/// same process group), and these processes end when it does.
fn ignore_stop_signals() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
        // SAFETY: setting a signal to be ignored is async-signal-safe.
        unsafe { libc::signal(signal, libc::SIG_IGN) };
    }
}

/// The process clawai started, outside the namespace: waits for the init, exits with
/// its status.
fn stand_in(init: libc::pid_t, plan: &ChildPlan, parent: libc::pid_t) -> ! {
    keep_only_stderr();
    ignore_stop_signals();
    if plan.die_with_parent {
        // SAFETY: prctl and getppid only concern this process.
        unsafe {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
            if libc::getppid() != parent {
                libc::_exit(128 + libc::SIGKILL);
            }
        }
    }
    exit_like(wait_for(init))
}

/// PID 1 of the namespace: reaps every process that ends in it; when the server ends,
/// exits with its status (the kernel then kills the rest of the namespace).
fn init_loop(server: libc::pid_t) -> ! {
    keep_only_stderr();
    ignore_stop_signals();
    loop {
        let mut status = 0;
        // SAFETY: waits for any child of this process.
        let pid = unsafe { libc::waitpid(-1, &mut status, 0) };
        if pid == server {
            exit_like(status);
        }
        if pid < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: ends this process.
            unsafe { libc::_exit(1) };
        }
    }
}

fn wait_for(pid: libc::pid_t) -> libc::c_int {
    loop {
        let mut status = 0;
        // SAFETY: waits for our own child.
        let got = unsafe { libc::waitpid(pid, &mut status, 0) };
        if got == pid {
            return status;
        }
        if got < 0 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return 1 << 8;
        }
    }
}

/// Exits with the code of a wait status: its exit code, or 128 + the signal that
/// killed it.
fn exit_like(status: libc::c_int) -> ! {
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        1
    };
    // SAFETY: ends this process without running anything of the parent's.
    unsafe { libc::_exit(code) }
}
