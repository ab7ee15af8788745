//! The policy in force, swapped atomically when its file changes.
//!
//! The file's directory is watched (editors and tools replace files by rename), events
//! are debounced, and a new version is used only if it loads completely; otherwise the
//! old policy stays and the reason is logged.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use clawai_policy::{Policy, load_file};
use notify::{RecursiveMode, Watcher};

/// How long after the start the watch is set up: inotify, notify's thread and their
/// code would otherwise compete with the proxy's own start for the CPU. An edit made
/// in the meantime is loaded as soon as the watch is up.
const WATCH_AFTER: Duration = Duration::from_millis(200);

/// A shared handle on the current policy.
#[derive(Clone)]
pub struct PolicyHandle {
    current: Arc<ArcSwap<Policy>>,
}

impl PolicyHandle {
    /// A handle on a fixed policy.
    pub fn new(policy: Policy) -> Self {
        PolicyHandle { current: Arc::new(ArcSwap::from_pointee(policy)) }
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
            // The watcher lives as long as this thread, which is the life of the process.
            let _watcher = match watch(&path, tx) {
                Ok(watcher) => watcher,
                Err(e) => {
                    tracing::warn!("cannot watch {} for changes ({e}); edits need a restart", path.display());
                    return;
                }
            };
            if FileStamp::of(&path) != read {
                // Edited between the load and the watch.
                handle.reload(&path);
            }
            while let Ok(()) = rx.recv() {
                // Debounce: a save is often several events in a row.
                std::thread::sleep(Duration::from_millis(100));
                while rx.try_recv().is_ok() {}
                handle.reload(&path);
            }
        })?;
        Ok(())
    }

    /// Loads `path` and puts it in force, or keeps the policy in force and says why.
    fn reload(&self, path: &Path) {
        if !path.exists() {
            tracing::warn!("policy {} was removed; keeping the policy in force", path.display());
            return;
        }
        match load_file(path) {
            Ok(policy) => {
                let rules = policy.rules().len();
                self.replace(policy);
                tracing::info!("policy {} reloaded ({rules} rules)", path.display());
            }
            Err(e) => {
                tracing::error!("policy {} changed but is invalid; keeping the previous policy:\n{e}", path.display())
            }
        }
    }
}

/// Watches the directory of `path` and sends on `changed` whenever an event concerns
/// the file itself (editors and tools replace files by rename, so the file alone
/// cannot be watched).
fn watch(path: &Path, changed: mpsc::Sender<()>) -> notify::Result<notify::RecommendedWatcher> {
    let dir = path.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from("."));
    let file_name = path.file_name().map(|n| n.to_owned());
    // Events about other files of the directory (an audit trail written beside the
    // policy: one per write) are dropped here, without waking the reload thread.
    let concerns = move |e: &notify::Event| e.paths.iter().any(|p| p.file_name() == file_name.as_deref());
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && concerns(&event)
        {
            let _ = changed.send(());
        }
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    Ok(watcher)
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

    #[test]
    fn an_edit_made_before_the_watch_began_is_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, DENY).unwrap();
        let read = FileStamp::of(&path);
        let handle = PolicyHandle::new(load_file(&path).unwrap());
        // Written (and replaced, as editors do) after the load, before the watch.
        std::fs::write(dir.path().join("new.toml"), ALLOW).unwrap();
        std::fs::rename(dir.path().join("new.toml"), &path).unwrap();
        handle.watch_in_background(&path, read).unwrap();
        assert!(wait_for(&handle, "yes"), "still {:?}", rule_ids(&handle));
    }

    #[test]
    fn edits_after_the_watch_began_are_loaded_and_invalid_ones_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("policy.toml");
        std::fs::write(&path, DENY).unwrap();
        let read = FileStamp::of(&path);
        let handle = PolicyHandle::new(load_file(&path).unwrap());
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
}
