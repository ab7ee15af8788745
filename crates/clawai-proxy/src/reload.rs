//! The policy in force, swapped atomically when its file changes.
//!
//! The file's directory is watched (editors and tools replace files by rename), events
//! are debounced, and a new version is used only if it loads completely; otherwise the
//! old policy stays and the reason is logged.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use arc_swap::ArcSwap;
use clawai_policy::{Policy, load_file};
use notify::{RecursiveMode, Watcher};

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

    /// Reloads from `path` whenever it changes, for the life of the process. The
    /// returned watcher must be kept alive.
    pub fn watch(&self, path: &Path) -> notify::Result<notify::RecommendedWatcher> {
        let path: PathBuf = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let dir = path.parent().map(Path::to_owned).unwrap_or_else(|| PathBuf::from("."));
        let (tx, rx) = mpsc::channel();
        let file_name = path.file_name().map(|n| n.to_owned());
        // Events about other files of the directory (an audit trail written beside the
        // policy: one per write) are dropped here, without waking the reload thread.
        let concerns = move |e: &notify::Event| e.paths.iter().any(|p| p.file_name() == file_name.as_deref());
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Ok(event) = event
                && concerns(&event)
            {
                let _ = tx.send(());
            }
        })?;
        watcher.watch(&dir, RecursiveMode::NonRecursive)?;
        let handle = self.clone();
        std::thread::Builder::new().name("policy-reload".into()).spawn(move || {
            while let Ok(()) = rx.recv() {
                // Debounce: a save is often several events in a row.
                std::thread::sleep(Duration::from_millis(100));
                while rx.try_recv().is_ok() {}
                if !path.exists() {
                    tracing::warn!("policy {} was removed; keeping the policy in force", path.display());
                    continue;
                }
                match load_file(&path) {
                    Ok(policy) => {
                        let rules = policy.rules().len();
                        handle.replace(policy);
                        tracing::info!("policy {} reloaded ({rules} rules)", path.display());
                    }
                    Err(e) => tracing::error!(
                        "policy {} changed but is invalid; keeping the previous policy:\n{e}",
                        path.display()
                    ),
                }
            }
        })?;
        Ok(watcher)
    }
}
