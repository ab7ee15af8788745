//! A desktop notification for each new ask, where the machine has `notify-send`.

use std::path::PathBuf;

/// `notify-send` on PATH, if any.
fn notify_send() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|dir| dir.join("notify-send")).find(|p| p.is_file())
}

/// Raises "clawai: approval needed" naming the call and the command that approves it.
/// Never fails: without a notifier (a server, CI) the page and `clawai approvals` still
/// show the ask.
pub(crate) fn approval_needed(server: Option<&str>, name: &str, id: &str) {
    let Some(program) = notify_send() else { return };
    let body = match server {
        Some(server) => format!("{server} {name} — clawai approve {id}"),
        None => format!("{name} — clawai approve {id}"),
    };
    let spawned = tokio::process::Command::new(program)
        .arg("clawai: approval needed")
        .arg(body)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(false)
        .spawn();
    if let Ok(mut child) = spawned {
        tokio::spawn(async move {
            let _ = child.wait().await;
        });
    }
}
