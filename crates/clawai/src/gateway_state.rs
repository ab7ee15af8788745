//! What a running gateway has, for `clawai status`: each gateway writes
//! `STATE/clawai/gateways/PID.json` (its configuration, how it serves, and each server's
//! state, tools listed and held) when that changes, looked at every second, and removes
//! it when it stops. `clawai status` reads the files of the gateways still running.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use clawai_gateway::Gateway;
use clawai_gateway::check::Report;
use serde::{Deserialize, Serialize};

/// What one running gateway publishes.
#[derive(Debug, Serialize, Deserialize)]
struct Published {
    pid: u32,
    config: PathBuf,
    /// `stdio`, or the URL it listens on.
    serving: String,
    report: Report,
}

/// The directory of the published states.
fn dir() -> PathBuf {
    crate::paths::state_dir().join("gateways")
}

/// The published state of this gateway; removed when dropped (the gateway stopping).
pub(crate) struct Publication {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Publication {
    fn drop(&mut self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Publishes `gateway`'s state until the returned value is dropped (inside a runtime).
pub(crate) fn publish(gateway: Arc<Gateway>, config: &Path, serving: String) -> Publication {
    let path = dir().join(format!("{}.json", std::process::id()));
    let config = std::fs::canonicalize(config).unwrap_or_else(|_| config.to_owned());
    let target = path.clone();
    let task = tokio::spawn(async move {
        let mut written = String::new();
        loop {
            let published = Published {
                pid: std::process::id(),
                config: config.clone(),
                serving: serving.clone(),
                report: gateway.report(),
            };
            let text = serde_json::to_string_pretty(&published).unwrap_or_default();
            if text != written {
                match write_atomically(&target, &text) {
                    Ok(()) => written = text,
                    Err(error) => tracing::debug!("cannot write {}: {error}", target.display()),
                }
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    });
    Publication { path, task }
}

/// Writes `text` to `path` through a temporary file beside it: a reader never sees half.
fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(path.parent().expect("a file in a directory"))?;
    // Named by the process: only this gateway writes it.
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

/// Whether process `pid` is running.
fn running(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // Signal 0 checks the process exists; EPERM: it exists, as another user's.
    matches!(nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None), Ok(()) | Err(nix::errno::Errno::EPERM))
}

/// The gateways running now and their servers, for `clawai status` (empty when none).
pub(crate) fn report() -> String {
    let Ok(entries) = std::fs::read_dir(dir()) else { return String::new() };
    let mut gateways: Vec<Published> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "json"))
        .filter_map(|entry| serde_json::from_str(&std::fs::read_to_string(entry.path()).ok()?).ok())
        .filter(|published: &Published| running(published.pid))
        .collect();
    gateways.sort_by_key(|published| published.pid);
    let mut out = String::new();
    for gateway in gateways {
        let _ = writeln!(
            out,
            "\nclawai gateway (pid {}, {}) — {}",
            gateway.pid,
            gateway.serving,
            crate::paths::home_relative(&gateway.config)
        );
        for server in &gateway.report.servers {
            let held = if server.held > 0 { format!(", {} held by pinning", server.held) } else { String::new() };
            let internal = if server.internal { ", internal" } else { "" };
            let _ = writeln!(out, "  {}: {}, {} tools listed{held}{internal}", server.name, server.state, server.tools);
            if let Some(why) = &server.failure {
                // Why, and the last two lines of its stderr (`clawai gateway --check`
                // shows more).
                let lines: Vec<&str> = why.lines().collect();
                let _ = writeln!(out, "    {}", lines.first().copied().unwrap_or_default());
                for line in lines.iter().skip(1).skip(lines.len().saturating_sub(3)) {
                    let _ = writeln!(out, "      {line}");
                }
            }
        }
    }
    out
}
