//! What /proc says about processes: each one's parent and whether it is a zombie, the
//! tag in its environment, and from those the members of a server's tree.

use std::collections::{BTreeSet, HashMap};

/// One process as /proc/PID/stat describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Process {
    pub(super) pid: i32,
    pub(super) ppid: i32,
    /// Exited and not reaped yet (`Z`), or being reaped (`X`): nothing left to signal.
    pub(super) dead: bool,
}

/// Reads the content of /proc/PID/stat: `pid (comm) state ppid …`. The command name may
/// hold spaces and parentheses, so the fields are found after its last `)`.
pub(super) fn parse_stat(text: &str) -> Option<Process> {
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once('(')?.0.trim().parse().ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some(Process { pid, ppid, dead: matches!(state, "Z" | "X" | "x") })
}

/// The process `pid`, if it exists.
pub(super) fn process(pid: i32) -> Option<Process> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process of the machine (those that vanish while being read are left out).
pub(super) fn all_processes() -> Vec<Process> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries.flatten().filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok()).filter_map(process).collect()
}

/// This process's children, from /proc/self/task/*/children (cheap: no scan of every
/// process). `None` when the kernel does not offer those files.
pub(super) fn own_children() -> Option<Vec<i32>> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let text = std::fs::read_to_string(task.path().join("children")).ok()?;
        children.extend(text.split_ascii_whitespace().filter_map(|pid| pid.parse::<i32>().ok()));
    }
    Some(children)
}

/// True when the environment block `environ` (NUL-separated `NAME=value` entries, as
/// /proc/PID/environ holds it) has exactly `entry` as one of its entries.
pub(super) fn environ_has(environ: &[u8], entry: &[u8]) -> bool {
    environ.split(|&byte| byte == 0).any(|item| item == entry)
}

/// True when process `pid` started with `entry` in its environment. A process of another
/// user, or a zombie, cannot be read: false.
pub(super) fn started_with(pid: i32, entry: &[u8]) -> bool {
    std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| environ_has(&environ, entry))
}

/// Who is whose child.
pub(super) struct Family {
    children: HashMap<i32, Vec<i32>>,
    living: BTreeSet<i32>,
}

impl Family {
    pub(super) fn of(processes: &[Process]) -> Family {
        let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
        for process in processes {
            children.entry(process.ppid).or_default().push(process.pid);
        }
        let living = processes.iter().filter(|process| !process.dead).map(|process| process.pid).collect();
        Family { children, living }
    }

    /// `roots` and all their descendants.
    pub(super) fn with_descendants(&self, roots: impl IntoIterator<Item = i32>) -> BTreeSet<i32> {
        let mut found = BTreeSet::new();
        let mut next: Vec<i32> = roots.into_iter().collect();
        while let Some(pid) = next.pop() {
            if found.insert(pid)
                && let Some(children) = self.children.get(&pid)
            {
                next.extend(children);
            }
        }
        found
    }

    /// The children of `parent`.
    pub(super) fn children_of(&self, parent: i32) -> &[i32] {
        self.children.get(&parent).map_or(&[], Vec::as_slice)
    }

    /// True when `pid` runs (exists and is no zombie).
    pub(super) fn is_living(&self, pid: i32) -> bool {
        self.living.contains(&pid)
    }
}

/// The living members of a server's tree, as seen from process `me`: the server `root`
/// (when it has not been reaped), every process among `me`'s descendants that `tagged`
/// says carries the server's tag, and every descendant of those. `me`, init and the
/// kernel's processes are never members.
pub(super) fn members(family: &Family, me: i32, root: Option<i32>, tagged: impl Fn(i32) -> bool) -> BTreeSet<i32> {
    let ours = family.with_descendants([me]);
    let marked = ours.iter().copied().filter(|&pid| pid != me && tagged(pid));
    let mut members = family.with_descendants(root.into_iter().chain(marked));
    members.retain(|&pid| pid > 1 && pid != me && family.is_living(pid));
    members
}

/// The living processes `me` adopted (its children that are not in `own`) and all
/// their descendants.
pub(super) fn adopted(family: &Family, me: i32, own: &BTreeSet<i32>) -> BTreeSet<i32> {
    let adopted = family.children_of(me).iter().copied().filter(|pid| !own.contains(pid));
    let mut members = family.with_descendants(adopted);
    members.retain(|&pid| pid > 1 && pid != me && family.is_living(pid));
    members
}
