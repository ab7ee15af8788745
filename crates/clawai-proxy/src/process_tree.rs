//! Nothing outlives a server: ending everything a stdio server started, including what
//! left its process tree and process group (`setsid`, a double fork, Claude Code's
//! `Bash` tool).
//!
//! On Linux:
//! * [`adopt_orphans`] makes clawai a child subreaper, so that a process orphaned
//!   anywhere below it is reparented to clawai instead of init (and stays findable),
//!   and reaps, on a slow timer, the adopted ones that exit on their own.
//! * Every server is started with [`TAG_VARIABLE`] set to a [`ServerTag`] of its own in
//!   its environment; its descendants inherit it.
//! * [`ServerTree`] ends a server's tree: the server, its process group, every
//!   descendant (by the parent links in /proc), and every process below clawai whose
//!   environment carries the tag, with its descendants. SIGTERM, a grace period, then
//!   SIGKILL to what is left; then the adopted processes that became zombies are reaped.
//! * [`end_adopted`], at shutdown, ends every process clawai adopted.
//!
//! Reaping is always targeted (`waitpid(pid)`, never `waitpid(-1)`) and only of adopted
//! processes: std and tokio reap the children they started, and a status taken from
//! under them breaks them. So every child clawai starts itself is registered while it
//! runs ([`spawn_own`]).
//!
//! A process that empties its environment and leaves its server's tree is no longer
//! told apart from other adopted ones: it is ended at shutdown, not with its server.
//!
//! Elsewhere, a server's tree is its process group, as before.

#[cfg(target_os = "linux")]
mod procfs;
#[cfg(all(test, target_os = "linux"))]
mod tests;

use std::collections::BTreeSet;
use std::io;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;

/// The environment variable that marks every process of one server's tree.
pub const TAG_VARIABLE: &str = "CLAWAI_SERVER_TAG";

/// How often adopted processes that exited on their own are reaped.
#[cfg(target_os = "linux")]
const REAP_EVERY: Duration = Duration::from_secs(5);

/// After SIGKILL, how long members get to vanish before the tree is looked at again.
#[cfg(target_os = "linux")]
const AFTER_KILL: Duration = Duration::from_millis(300);

/// How many times what is left of a tree is looked for and killed: a process forking
/// while it is being ended leaves a child that the next look finds.
#[cfg(target_os = "linux")]
const KILL_ROUNDS: usize = 5;

/// The children clawai started itself, while they run: their owners (std, tokio) reap
/// them, so the reaper never does.
static OWN_CHILDREN: Mutex<BTreeSet<i32>> = Mutex::new(BTreeSet::new());

fn own_children() -> std::sync::MutexGuard<'static, BTreeSet<i32>> {
    OWN_CHILDREN.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The mark one server and everything it starts carry in their environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerTag(String);

impl ServerTag {
    /// A tag no other server has.
    pub fn new() -> ServerTag {
        ServerTag(uuid::Uuid::now_v7().simple().to_string())
    }

    /// The variable's value.
    pub fn value(&self) -> &str {
        &self.0
    }

    /// `CLAWAI_SERVER_TAG=value`, as one entry of an environment block.
    #[cfg(target_os = "linux")]
    fn entry(&self) -> Vec<u8> {
        format!("{TAG_VARIABLE}={}", self.0).into_bytes()
    }
}

impl Default for ServerTag {
    fn default() -> Self {
        ServerTag::new()
    }
}

/// A child clawai started and will reap itself; registered until dropped (drop it once
/// the child was waited for).
#[derive(Debug)]
pub struct OwnChild(i32);

impl Drop for OwnChild {
    fn drop(&mut self) {
        own_children().remove(&self.0);
    }
}

/// Runs `spawn` (which starts one child) and registers the child as clawai's own, so
/// that the reaper never takes its exit status from its owner. The registry is held
/// while it starts: the child cannot be mistaken for an adopted zombie in between.
pub fn spawn_own<C>(
    spawn: impl FnOnce() -> io::Result<C>,
    pid_of: impl FnOnce(&C) -> Option<u32>,
) -> io::Result<(C, Option<OwnChild>)> {
    let mut own = own_children();
    let child = spawn()?;
    let registered = pid_of(&child).and_then(|pid| i32::try_from(pid).ok()).map(|pid| {
        own.insert(pid);
        OwnChild(pid)
    });
    Ok((child, registered))
}

/// Makes this process the reaper of its descendants' orphans (Linux; elsewhere nothing
/// happens), and reaps those that exit on their own every few seconds.
pub fn adopt_orphans() -> io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        nix::sys::prctl::set_child_subreaper(true).map_err(io::Error::from)?;
        static REAPER: std::sync::Once = std::sync::Once::new();
        let mut started = Ok(());
        REAPER.call_once(|| {
            started = std::thread::Builder::new()
                .name("reaper".into())
                .stack_size(64 * 1024)
                .spawn(|| {
                    loop {
                        std::thread::sleep(REAP_EVERY);
                        reap_adopted();
                    }
                })
                .map(drop);
        });
        started?;
    }
    Ok(())
}

/// Reaps the adopted children that exited (zombies not started by clawai itself), each
/// by its pid. Returns how many.
pub fn reap_adopted() -> usize {
    #[cfg(target_os = "linux")]
    {
        use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
        let me = std::process::id() as i32;
        let children = procfs::own_children()
            .unwrap_or_else(|| procfs::all_processes().into_iter().filter(|p| p.ppid == me).map(|p| p.pid).collect());
        // Held while reaping: a child being started now is registered before it is looked at.
        let own = own_children();
        let mut reaped = 0;
        for pid in children {
            if own.contains(&pid) || !procfs::process(pid).is_some_and(|p| p.dead && p.ppid == me) {
                continue;
            }
            if matches!(waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG)), Ok(status) if status != WaitStatus::StillAlive)
            {
                reaped += 1;
            }
        }
        reaped
    }
    #[cfg(not(target_os = "linux"))]
    0
}

/// Ends every process this one adopted, and their descendants (at shutdown: nothing
/// clawai adopted outlives it): SIGTERM, up to `grace`, SIGKILL; then reaps them.
pub fn end_adopted(grace: Duration) {
    #[cfg(target_os = "linux")]
    {
        let me = std::process::id() as i32;
        let look = || {
            let own = own_children().clone();
            procfs::adopted(&procfs::Family::of(&procfs::all_processes()), me, &own)
        };
        end_all(look, grace);
    }
    #[cfg(not(target_os = "linux"))]
    let _ = grace;
}

/// Signals what `look` finds: SIGTERM, up to `grace` for it to go, then SIGKILL until
/// nothing is found; then reaps the adopted zombies.
#[cfg(target_os = "linux")]
fn end_all(look: impl Fn() -> BTreeSet<i32>, grace: Duration) {
    let first = look();
    if !first.is_empty() {
        signal_each(&first, Signal::SIGTERM);
        wait_gone(&first, grace);
        for _ in 0..KILL_ROUNDS {
            let left = look();
            if left.is_empty() {
                break;
            }
            signal_each(&left, Signal::SIGKILL);
            wait_gone(&left, AFTER_KILL);
        }
    }
    reap_adopted();
}

#[cfg(target_os = "linux")]
fn signal_each(pids: &BTreeSet<i32>, signal: Signal) {
    for &pid in pids {
        // Gone meanwhile (ESRCH), or another user's (EPERM): nothing to do.
        let _ = nix::sys::signal::kill(Pid::from_raw(pid), signal);
    }
}

/// Waits until none of `pids` runs (gone, or a zombie), at most `limit`.
#[cfg(target_os = "linux")]
fn wait_gone(pids: &BTreeSet<i32>, limit: Duration) {
    let deadline = std::time::Instant::now() + limit;
    let mut nap = Duration::from_millis(1);
    while pids.iter().any(|&pid| procfs::process(pid).is_some_and(|p| !p.dead)) {
        if std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    }
}

/// A server clawai started (the leader of its own process group) and everything it
/// started.
#[derive(Debug, Clone)]
pub struct ServerTree {
    root: Pid,
    tag: ServerTag,
}

impl ServerTree {
    /// The tree of the server `root`, started with `tag` in its environment.
    pub fn new(root: u32, tag: ServerTag) -> ServerTree {
        ServerTree { root: Pid::from_raw(root as i32), tag }
    }

    /// The server's tag.
    pub fn tag(&self) -> &ServerTag {
        &self.tag
    }

    /// Sends `signal` to the server (not reaped yet: its pid is still its own), its
    /// process group, and every other member of its tree.
    pub fn signal_all(&self, signal: Signal) {
        // ESRCH (nobody left in the group) is the normal case.
        let _ = killpg(self.root, signal);
        #[cfg(target_os = "linux")]
        signal_each(&self.members(true), signal);
    }

    /// Ends what is left of the tree once the server itself was reaped: SIGTERM, up to
    /// `grace` for it to go, SIGKILL to the rest; then reaps the adopted zombies.
    pub fn end_left(&self, grace: Duration) {
        #[cfg(target_os = "linux")]
        end_all(|| self.members(false), grace);
        #[cfg(not(target_os = "linux"))]
        let _ = grace;
        // Members the tag does not show (a grandchild that emptied its environment) and,
        // elsewhere than Linux, the whole tree.
        let _ = killpg(self.root, Signal::SIGKILL);
    }

    /// The living members of the tree; `root_unreaped`: the server's pid may be used
    /// (its descendants found through it).
    #[cfg(target_os = "linux")]
    fn members(&self, root_unreaped: bool) -> BTreeSet<i32> {
        let entry = self.tag.entry();
        let family = procfs::Family::of(&procfs::all_processes());
        let root = root_unreaped.then_some(self.root.as_raw());
        procfs::members(&family, std::process::id() as i32, root, |pid| procfs::started_with(pid, &entry))
    }
}
