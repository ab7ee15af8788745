//! The configuration file, watched: an edit is read and applied within a second; an
//! edit that does not read keeps what runs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use crate::Gateway;
use crate::config::GatewayConfig;

/// Reads the configuration again (with the environment and leniency it was first read
/// with).
pub type Reader = Box<dyn Fn(&Path) -> Result<GatewayConfig, String> + Send + Sync>;

/// Watches `path` and applies each edit to `gateway` until the gateway is dropped. The
/// watcher lives as long as the returned handle.
pub fn watch(gateway: &Arc<Gateway>, path: &Path, read: Reader) -> notify::Result<notify::RecommendedWatcher> {
    let path: PathBuf = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let directory = path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let file_name = path.file_name().map(ToOwned::to_owned);
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event
            && event.paths.iter().any(|p| p.file_name() == file_name.as_deref())
        {
            let _ = tx.send(());
        }
    })?;
    watcher.watch(&directory, RecursiveMode::NonRecursive)?;
    let gateway = Arc::downgrade(gateway);
    tokio::spawn(async move {
        let mut last = std::fs::read(&path).ok();
        while rx.recv().await.is_some() {
            // Editors write in steps: wait for the writes to settle.
            tokio::time::sleep(Duration::from_millis(150)).await;
            while rx.try_recv().is_ok() {}
            let Some(gateway) = gateway.upgrade() else { return };
            let now = std::fs::read(&path).ok();
            if now == last {
                continue;
            }
            last = now;
            match read(&path) {
                Ok(config) => match gateway.apply(&config) {
                    Ok(()) => tracing::info!("{}: configuration reloaded", path.display()),
                    Err(error) => tracing::warn!("{}: {error}; keeping the servers that run", path.display()),
                },
                Err(error) => tracing::warn!("{error}; keeping the servers that run"),
            }
        }
    });
    Ok(watcher)
}

/// Reads the skills again from their directories.
pub type SkillReader = Box<dyn Fn(&[PathBuf]) -> crate::skills::Loaded + Send + Sync>;

/// Looks at the skill directories every half second and serves the skills anew when a
/// `SKILL.md` was added, removed or changed (directories may not exist yet, so they are
/// looked at, not watched).
/// `seen` is what the directories held when the skills in service were read (from
/// [`skill_files_now`], taken before reading them): an edit made since is caught.
pub fn watch_skills(gateway: &Arc<Gateway>, dirs: Vec<PathBuf>, seen: SkillFiles, read: SkillReader) {
    let gateway = Arc::downgrade(gateway);
    tokio::spawn(async move {
        let mut last = seen;
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let Some(gateway) = gateway.upgrade() else { return };
            let now = skill_files(&dirs);
            if now != last {
                last = now;
                gateway.set_skills(read(&dirs));
                tracing::info!("skills reloaded");
            }
        }
    });
}

/// What the skill directories hold: every `SKILL.md`, its size and modification time.
pub type SkillFiles = Vec<(PathBuf, u64, Option<std::time::SystemTime>)>;

/// What the skill directories hold now.
pub fn skill_files_now(dirs: &[PathBuf]) -> SkillFiles {
    skill_files(dirs)
}

fn skill_files(dirs: &[PathBuf]) -> SkillFiles {
    let mut files = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(dir) else { continue };
        for entry in entries.flatten() {
            let file = entry.path().join(crate::skills::load::SKILL_FILE);
            if let Ok(meta) = std::fs::metadata(&file) {
                files.push((file, meta.len(), meta.modified().ok()));
            }
        }
    }
    files.sort();
    files
}
