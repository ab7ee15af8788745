//! The policy in force, swapped atomically when its file changes.
//!
//! The file's directory is watched (editors and tools replace files by rename), and so is
//! the directory of the file it leads to when it is a symbolic link. A new
//! version is read once the file has been quiet for a moment (on Linux, once its writer
//! has closed it), and used only if it was not written while being read, is not empty,
//! and loads completely; otherwise the old policy stays and the reason is logged.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use clawai_policy::{Format, Policy, load_str};
use notify::EventKind;
use notify::event::{AccessKind, AccessMode, ModifyKind};
use notify::{RecursiveMode, Watcher};

/// How long after the start the watch is set up: inotify, notify's thread and their
/// code would otherwise compete with the proxy's own start for the CPU. An edit made
/// in the meantime is loaded as soon as the watch is up.
const WATCH_AFTER: Duration = Duration::from_millis(200);

/// A shared handle on the current policy.
#[derive(Clone)]
pub struct PolicyHandle {
    current: Arc<ArcSwap<Policy>>,
    /// Decided before the policy, whatever it says: no tool call writes clawai's own
    /// files or the clients' configurations.
    protection: Option<Arc<crate::self_protection::SelfProtection>>,
    /// Told after each replacement (the gateway tells its clients what their lists lost
    /// or gained).
    listeners: Arc<std::sync::Mutex<Vec<Listener>>>,
}

/// Called after the policy was replaced.
pub type Listener = Box<dyn Fn() + Send + Sync>;

impl PolicyHandle {
    /// A handle on a fixed policy.
    pub fn new(policy: Policy) -> Self {
        PolicyHandle { current: Arc::new(ArcSwap::from_pointee(policy)), listeners: Arc::default(), protection: None }
    }

    /// The same handle, with clawai's self-protection decided before the policy by every
    /// guard that holds it.
    pub fn with_self_protection(mut self, protection: crate::self_protection::SelfProtection) -> Self {
        self.protection = Some(Arc::new(protection));
        self
    }

    /// The self-protection in force, if any.
    pub fn self_protection(&self) -> Option<&crate::self_protection::SelfProtection> {
        self.protection.as_deref()
    }

    /// Calls `listener` after every later replacement of the policy (on the thread that
    /// replaced it).
    pub fn on_replace(&self, listener: Listener) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).push(listener);
    }

    /// The policy in force now.
    pub fn current(&self) -> Arc<Policy> {
        self.current.load_full()
    }

    /// True when the policy in force decides `method` (see [`Policy::names_method`]).
    pub fn names_method(&self, method: &str) -> bool {
        self.current.load().names_method(method)
    }

    /// Replaces the policy.
    pub fn replace(&self, policy: Policy) {
        self.current.store(Arc::new(policy));
        for listener in self.listeners.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            listener();
        }
    }

    /// Reloads from `path` whenever it changes, for the life of the process, from a
    /// thread of its own: setting up the watcher is kept off the start of the proxy.
    /// `read` is the file as it was when the policy in force was loaded (taken before
    /// reading it); an edit made before the watch began is caught by comparing it once
    /// the watch is up. A watch that cannot be set up is logged, and edits then need a
    /// restart.
    pub fn watch_in_background(&self, path: &Path, read: Option<FileStamp>) -> std::io::Result<()> {
        let path: PathBuf = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let handle = self.clone();
        std::thread::Builder::new().name("policy-reload".into()).spawn(move || {
            std::thread::sleep(WATCH_AFTER);
            let (tx, rx) = mpsc::channel();
            // The watch lives as long as this thread, which is the life of the process.
            let mut watch = match PolicyWatch::new(&path, tx) {
                Ok(watcher) => watcher,
                Err(e) => {
                    tracing::warn!("cannot watch {} for changes ({e}); edits need a restart", path.display());
                    return;
                }
            };
            // Edited between the load and the watch: reloaded like any edit.
            let mut changed = FileStamp::of(&path) != read;
            loop {
                if !changed && rx.recv().is_err() {
                    return;
                }
                // Read only once no event about the file came for SETTLE: a save is often
                // several events in a row, and a file rewritten in place is empty or
                // partial until its writer is done.
                loop {
                    match rx.recv_timeout(SETTLE) {
                        Ok(()) => continue,
                        Err(mpsc::RecvTimeoutError::Timeout) => break,
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
                changed = handle.reload(&path) == Reload::Unsettled;
                if let Err(e) = watch.follow(&path) {
                    tracing::warn!("cannot watch where {} leads now ({e}); its edits need a restart", path.display());
                }
            }
        })?;
        Ok(())
    }

    /// Loads `path` and puts it in force, or keeps the policy in force and says why.
    fn reload(&self, path: &Path) -> Reload {
        let Some(before) = FileStamp::of(path) else {
            tracing::warn!("policy {} was removed; keeping the policy in force", path.display());
            return Reload::Kept;
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                tracing::error!(
                    "policy {} changed but cannot be read ({e}); keeping the policy in force",
                    path.display()
                );
                return Reload::Kept;
            }
        };
        if FileStamp::of(path) != Some(before) {
            // Written while it was read: read again once it is quiet.
            return Reload::Unsettled;
        }
        if text.trim().is_empty() {
            // What a file being rewritten in place looks like between truncation and
            // the write; a policy is never meant to be emptied this way.
            tracing::warn!("policy {} is empty; keeping the policy in force", path.display());
            return Reload::Kept;
        }
        match load_str(&text, Format::from_path(path), &path.display().to_string()) {
            Ok(policy) => {
                let rules = policy.rules().len();
                for note in policy.notes() {
                    tracing::warn!("{}: {note}", path.display());
                }
                self.replace(policy);
                tracing::info!("policy {} reloaded ({rules} rules)", path.display());
                Reload::Replaced
            }
            Err(e) => {
                tracing::error!("policy {} changed but is invalid; keeping the previous policy:\n{e}", path.display());
                Reload::Kept
            }
        }
    }
}

/// What a reload did.
#[derive(Debug, PartialEq, Eq)]
enum Reload {
    /// The file's policy is in force.
    Replaced,
    /// The policy in force stays (the file is gone, unreadable, empty or invalid).
    Kept,
    /// The file changed while it was read; it is read again once it is quiet.
    Unsettled,
}

/// Quiet time, without any event about the policy file, before it is read.
const SETTLE: Duration = Duration::from_millis(100);

/// The watch on a policy file: the directory of `path` and, when `path` is a symbolic
/// link (dotfile managers link policies into place), the directory of the file it leads
/// to, where the edits happen. Sends on `changed` whenever one of those files may have
/// new contents; directories are watched because editors and tools replace files by
/// rename, so a file alone cannot be.
struct PolicyWatch {
    watcher: notify::RecommendedWatcher,
    /// The files whose events count, shared with the watcher's callback.
    files: Arc<Mutex<Vec<PathBuf>>>,
    /// The directories watched now.
    dirs: Vec<PathBuf>,
}

impl PolicyWatch {
    fn new(path: &Path, changed: mpsc::Sender<()>) -> notify::Result<PolicyWatch> {
        let files = Arc::new(Mutex::new(Vec::new()));
        let concerned = Arc::clone(&files);
        // Events about other files of a directory (an audit trail written beside the
        // policy: one per write) are dropped here, without waking the reload thread.
        let concerns = move |e: &notify::Event| {
            let files = concerned.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            e.paths.iter().any(|p| files.contains(p))
        };
        let watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && may_change_contents(&event.kind)
                && concerns(&event)
            {
                let _ = changed.send(());
            }
        })?;
        let mut watch = PolicyWatch { watcher, files, dirs: Vec::new() };
        watch.follow(path)?;
        Ok(watch)
    }

    /// Watches what `path` is now: itself and, if it is a link, where it leads (a link
    /// may be pointed elsewhere; the reload after that calls this again).
    fn follow(&mut self, path: &Path) -> notify::Result<()> {
        let mut files = vec![path.to_owned()];
        if let Ok(target) = std::fs::canonicalize(path)
            && target != path
        {
            files.push(target);
        }
        let dirs: Vec<PathBuf> = files
            .iter()
            .map(|f| f.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from(".")))
            .fold(Vec::new(), |mut dirs, dir| {
                if !dirs.contains(&dir) {
                    dirs.push(dir);
                }
                dirs
            });
        for dir in dirs.iter().filter(|d| !self.dirs.contains(d)) {
            self.watcher.watch(dir, RecursiveMode::NonRecursive)?;
        }
        for dir in self.dirs.iter().filter(|d| !dirs.contains(d)) {
            // Gone or already unwatched: nothing more to stop.
            let _ = self.watcher.unwatch(dir);
        }
        self.dirs = dirs;
        *self.files.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = files;
        Ok(())
    }
}

/// True for the events after which the file may read differently. Opening and reading
/// it are not (the reload's own read would otherwise trigger the next reload, forever),
/// nor a change of its metadata alone. On Linux a write in place is taken when its
/// writer closes the file, not at each `write`: until then the file may be empty or
/// half-written.
fn may_change_contents(kind: &EventKind) -> bool {
    match kind {
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
        EventKind::Access(_) => false,
        EventKind::Modify(ModifyKind::Metadata(_)) => false,
        EventKind::Modify(ModifyKind::Data(_)) => !cfg!(target_os = "linux"),
        _ => true,
    }
}

/// What a file looked like at one moment: its length, modification time and inode.
/// Two stamps that differ mean the file was written or replaced in between.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    inode: u64,
}

impl FileStamp {
    /// The stamp of `path` now, or `None` if it cannot be read.
    pub fn of(path: &Path) -> Option<FileStamp> {
        let meta = std::fs::metadata(path).ok()?;
        Some(FileStamp { len: meta.len(), modified: meta.modified().ok(), inode: inode(&meta) })
    }
}

#[cfg(unix)]
fn inode(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::ino(meta)
}

#[cfg(not(unix))]
fn inode(_: &std::fs::Metadata) -> u64 {
    0
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawai_policy::load_file;
    use std::time::Instant;

    const DENY: &str = "[[rule]]\nid = \"no\"\naction = \"deny\"\ntool = \"wipe\"\n";
    const ALLOW: &str = "[[rule]]\nid = \"yes\"\naction = \"allow\"\ntool = \"wipe\"\n";

    fn rule_ids(handle: &PolicyHandle) -> Vec<String> {
        handle.current().rules().iter().map(|r| r.id.clone().unwrap_or_default()).collect()
    }

    fn wait_for(handle: &PolicyHandle, id: &str) -> bool {
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if rule_ids(handle) == [id] {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// A policy file holding `DENY` in `dir`, its stamp as read, and a handle on it
    /// (not watched yet).
    fn loaded(dir: &Path) -> (PathBuf, Option<FileStamp>, PolicyHandle) {
        let path = dir.join("policy.toml");
        std::fs::write(&path, DENY).unwrap();
        let read = FileStamp::of(&path);
        let handle = PolicyHandle::new(load_file(&path).unwrap());
        (path, read, handle)
    }

    #[test]
    fn an_edit_made_before_the_watch_began_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let (path, read, handle) = loaded(dir.path());
        // Written (and replaced, as editors do) after the load, before the watch.
        std::fs::write(dir.path().join("new.toml"), ALLOW).unwrap();
        std::fs::rename(dir.path().join("new.toml"), &path).unwrap();
        handle.watch_in_background(&path, read).unwrap();
        assert!(wait_for(&handle, "yes"), "still {:?}", rule_ids(&handle));
    }

    #[test]
    fn edits_after_the_watch_began_are_loaded_and_invalid_ones_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let (path, read, handle) = loaded(dir.path());
        handle.watch_in_background(&path, read).unwrap();
        // The watch is up once an edit is seen; keep editing until one is.
        let deadline = Instant::now() + Duration::from_secs(5);
        while rule_ids(&handle) != ["yes"] {
            assert!(Instant::now() < deadline, "the edit was never loaded");
            std::fs::write(&path, ALLOW).unwrap();
            std::thread::sleep(Duration::from_millis(150));
        }
        std::fs::write(&path, "[[rule]]\naction = \"allow\"\ntool = \n").unwrap();
        std::thread::sleep(Duration::from_millis(400));
        assert_eq!(rule_ids(&handle), ["yes"], "an invalid edit keeps the policy in force");
    }

    /// Starts watching a policy file holding `DENY`, with the watch up.
    fn watched(dir: &Path) -> (PathBuf, PolicyHandle) {
        let (path, read, handle) = loaded(dir);
        handle.watch_in_background(&path, read).unwrap();
        std::thread::sleep(WATCH_AFTER + Duration::from_millis(300));
        (path, handle)
    }

    /// Samples the policy in force every 5 ms for `long`: the rule ids seen, in order,
    /// and how many times the policy was replaced.
    fn observe(handle: &PolicyHandle, long: Duration) -> (Vec<Vec<String>>, usize) {
        let (mut seen, mut replaced) = (vec![rule_ids(handle)], 0);
        let mut last = Arc::as_ptr(&handle.current());
        let end = Instant::now() + long;
        while Instant::now() < end {
            let now = handle.current();
            if Arc::as_ptr(&now) != last {
                replaced += 1;
                last = Arc::as_ptr(&now);
                seen.push(rule_ids(handle));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        (seen, replaced)
    }

    #[cfg(unix)]
    #[test]
    fn a_linked_policy_is_reloaded_when_the_file_it_leads_to_is_edited() {
        let (linked, kept, moved) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        // A dotfile manager's layout: the policy lives elsewhere, linked into place.
        let (target, read, handle) = loaded(kept.path());
        let path = linked.path().join("policy.toml");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        handle.watch_in_background(&path, read).unwrap();
        std::thread::sleep(WATCH_AFTER + Duration::from_millis(300));
        // Edited where it lives, by rename as editors do: no event in the link's directory.
        std::fs::write(kept.path().join("new.toml"), ALLOW).unwrap();
        std::fs::rename(kept.path().join("new.toml"), &target).unwrap();
        assert!(wait_for(&handle, "yes"), "an edit of the linked file was missed: {:?}", rule_ids(&handle));
        // The link pointed at another file: that file's edits count from then on.
        let other = moved.path().join("policy.toml");
        std::fs::write(&other, DENY).unwrap();
        std::os::unix::fs::symlink(&other, linked.path().join("link.tmp")).unwrap();
        std::fs::rename(linked.path().join("link.tmp"), &path).unwrap();
        assert!(wait_for(&handle, "no"), "the repointed link was not read: {:?}", rule_ids(&handle));
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(&other, ALLOW).unwrap();
        assert!(wait_for(&handle, "yes"), "an edit of the new target was missed: {:?}", rule_ids(&handle));
    }

    #[test]
    fn one_edit_is_one_reload() {
        let dir = tempfile::tempdir().unwrap();
        let (path, handle) = watched(dir.path());
        std::fs::write(&path, ALLOW).unwrap();
        // The reload reads the file, which the watcher also sees; that must not count
        // as an edit (it did: the policy was reloaded every 100 ms, forever).
        let (seen, replaced) = observe(&handle, Duration::from_millis(1200));
        assert_eq!(replaced, 1, "{seen:?}");
        assert_eq!(rule_ids(&handle), ["yes"]);
    }

    #[test]
    fn an_emptied_policy_file_keeps_the_policy_in_force() {
        let dir = tempfile::tempdir().unwrap();
        let (path, handle) = watched(dir.path());
        // What a rewrite in place looks like between truncation and the write; empty
        // TOML would otherwise load as a policy without rules.
        std::fs::write(&path, "\n").unwrap();
        let (seen, replaced) = observe(&handle, Duration::from_millis(500));
        assert_eq!(replaced, 0, "{seen:?}");
        assert_eq!(rule_ids(&handle), ["no"]);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_file_rewritten_in_place_is_read_once_its_writer_is_done() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let (path, handle) = watched(dir.path());
        let observer = {
            let handle = handle.clone();
            std::thread::spawn(move || observe(&handle, Duration::from_millis(1200)))
        };
        // A slow writer: the first rule, a pause longer than the quiet time, the rest.
        // Half-written, the file is a valid policy of its own.
        let mut file = std::fs::File::create(&path).unwrap();
        file.write_all(ALLOW.as_bytes()).unwrap();
        file.flush().unwrap();
        std::thread::sleep(SETTLE * 3);
        file.write_all(b"[[rule]]\nid = \"more\"\naction = \"deny\"\ntool = \"**\"\n").unwrap();
        drop(file);
        let (seen, _) = observer.join().unwrap();
        assert_eq!(seen.last().unwrap(), &["yes", "more"], "{seen:?}");
        assert!(!seen.iter().any(|ids| ids == &["yes"]), "the half-written file was put in force: {seen:?}");
    }
}
