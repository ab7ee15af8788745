//! Ending a server's whole tree, on real processes: what it started with `setsid` or a
//! double fork is found by its tag and ended, and reaped; clawai's own children are
//! never reaped from under their owners. This test process is a child subreaper, as
//! `clawai proxy` and `clawai gateway` are.
#![cfg(target_os = "linux")]

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use clawai_proxy::process_tree::{
    OwnChild, ServerTag, ServerTree, TAG_VARIABLE, adopt_orphans, end_adopted, reap_adopted, spawn_own,
};

/// One test at a time: ending "every adopted process" would end another test's.
static SERIAL: Mutex<()> = Mutex::new(());

/// A started "server" (`sh -c SCRIPT`): its stdin open, the pids it printed.
struct Started {
    child: Child,
    stdin: Option<ChildStdin>,
    pids: Vec<i32>,
    tree: ServerTree,
    _own: Option<OwnChild>,
}

/// Starts `script` as clawai starts a server (own group, tag, registered) and reads the
/// `count` pids it prints.
fn start(script: &str, count: usize) -> Started {
    adopt_orphans().expect("this test process becomes a subreaper");
    let tag = ServerTag::new();
    let mut command = Command::new("sh");
    command.arg("-c").arg(script).env(TAG_VARIABLE, tag.value()).process_group(0);
    command.stdin(Stdio::piped()).stdout(Stdio::piped());
    let (mut child, own) = spawn_own(|| command.spawn(), |child| Some(child.id())).unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let pids: Vec<i32> = (0..count)
        .map(|_| {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            line.trim().parse().unwrap_or_else(|_| panic!("a pid, not {line:?}"))
        })
        .collect();
    let tree = ServerTree::new(child.id(), tag);
    // The pids are printed as the shell forks: each is `sleep` (a trap set, an
    // environment changed) only once it has started it.
    let started = |pid: &i32| std::fs::read_to_string(format!("/proc/{pid}/comm")).is_ok_and(|c| c.trim() == "sleep");
    assert!(wait_until(Duration::from_secs(3), || pids.iter().all(started)), "every stray runs `sleep`");
    Started { stdin: child.stdin.take(), child, pids, tree, _own: own }
}

/// What a server that leaves processes behind does: one with `setsid`, one through a
/// double fork (its parent, a subshell, exits at once), then it waits for its input.
const STRAYS: &str = "setsid sleep 300 & echo $!; (sleep 301 & echo $!); read line";

/// Exists (alive or a zombie not reaped).
fn exists(pid: i32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.trim_start().chars().next()
}

fn parent(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

fn wait_until(limit: Duration, condition: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    while !condition() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn kill_leftovers(pids: &[i32]) {
    for &pid in pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

#[test]
fn what_a_server_started_with_setsid_or_a_double_fork_ends_with_it_and_is_reaped() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut server = start(STRAYS, 2);
    let me = std::process::id() as i32;
    assert!(wait_until(Duration::from_secs(2), || parent(server.pids[1]) == Some(me)), "the orphan is adopted");
    drop(server.stdin.take()); // EOF: the server exits
    server.child.wait().unwrap();
    assert!(server.pids.iter().all(|&pid| state(pid).is_some_and(|s| s != 'Z')), "they outlive the server");
    let started = Instant::now();
    server.tree.end_left(Duration::from_secs(2));
    let gone = server.pids.iter().all(|&pid| !exists(pid));
    kill_leftovers(&server.pids);
    assert!(gone, "ended and reaped (no zombie left)");
    assert!(started.elapsed() < Duration::from_secs(1), "SIGTERM was enough: no grace waited out");
}

#[test]
fn a_stray_that_ignores_sigterm_is_killed_after_the_grace_period() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut server = start("(trap '' TERM; exec sleep 302) & echo $!; read line", 1);
    let pid = server.pids[0];
    drop(server.stdin.take());
    server.child.wait().unwrap();
    let started = Instant::now();
    server.tree.end_left(Duration::from_millis(300));
    let gone = !exists(pid);
    kill_leftovers(&[pid]);
    assert!(gone);
    assert!(started.elapsed() >= Duration::from_millis(300), "it got its grace period");
}

#[test]
fn a_running_server_and_its_strays_get_the_signal() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut server = start(STRAYS, 2);
    server.tree.signal_all(nix::sys::signal::Signal::SIGKILL);
    server.child.wait().unwrap();
    server.tree.end_left(Duration::from_secs(1));
    let gone = server.pids.iter().all(|&pid| !exists(pid));
    kill_leftovers(&server.pids);
    assert!(gone);
}

#[test]
fn another_servers_strays_are_left_alone() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut ours = start(STRAYS, 2);
    let mut other = start(STRAYS, 2);
    drop(ours.stdin.take());
    ours.child.wait().unwrap();
    ours.tree.end_left(Duration::from_secs(1));
    let other_alive = other.pids.iter().all(|&pid| state(pid).is_some_and(|s| s != 'Z'));
    drop(other.stdin.take());
    other.child.wait().unwrap();
    other.tree.end_left(Duration::from_secs(1));
    kill_leftovers(&[ours.pids.clone(), other.pids.clone()].concat());
    assert!(other_alive, "only the stopped server's tree is ended");
    assert!(other.pids.iter().all(|&pid| !exists(pid)));
}

#[test]
fn an_adopted_orphan_that_exits_on_its_own_is_reaped() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let mut server = start("(sleep 0.2 & echo $!); read line", 1);
    let pid = server.pids[0];
    assert!(wait_until(Duration::from_secs(3), || state(pid) == Some('Z')), "a zombie of this process");
    reap_adopted();
    assert!(!exists(pid), "reaped");
    drop(server.stdin.take());
    server.child.wait().unwrap();
}

#[test]
fn clawais_own_children_are_never_reaped_from_under_their_owner() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    adopt_orphans().unwrap();
    let (mut child, _own) = spawn_own(|| Command::new("sh").arg("-c").arg("exit 7").spawn(), |c| Some(c.id())).unwrap();
    let pid = child.id() as i32;
    assert!(wait_until(Duration::from_secs(3), || state(pid) == Some('Z')));
    reap_adopted();
    end_adopted(Duration::from_millis(100));
    assert_eq!(child.wait().unwrap().code(), Some(7), "its owner still gets its status");
}

#[test]
fn at_shutdown_every_adopted_process_is_ended() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    // Out of the server's group and without its tag, then orphaned: only shutdown can
    // tell it is clawai's.
    let script = "(setsid env -u CLAWAI_SERVER_TAG sleep 303 & echo $!); read line";
    let mut server = start(script, 1);
    let pid = server.pids[0];
    drop(server.stdin.take());
    server.child.wait().unwrap();
    server.tree.end_left(Duration::from_millis(200));
    let survived_its_server = state(pid).is_some_and(|s| s != 'Z');
    end_adopted(Duration::from_secs(1));
    let gone = !exists(pid);
    kill_leftovers(&[pid]);
    assert!(survived_its_server, "no tag, left the tree: not found with its server");
    assert!(gone, "ended at shutdown");
}
