//! Where the broker's socket, its URL file and approvals.toml are (XDG base directories).

use std::path::PathBuf;

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."))
}

/// `$VAR` when it is set to an absolute path (the XDG rule), else `~/<fallback>`.
fn xdg(var: &str, fallback: &[&str]) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(dir) if !dir.is_empty() && PathBuf::from(&dir).is_absolute() => Some(PathBuf::from(dir)),
        _ if fallback.is_empty() => None,
        _ => Some(fallback.iter().fold(home(), |p, part| p.join(part))),
    }
}

/// `$XDG_STATE_HOME/clawai/` (`~/.local/state/clawai/`).
pub fn state_dir() -> PathBuf {
    xdg("XDG_STATE_HOME", &[".local", "state"]).unwrap_or_default().join("clawai")
}

/// The broker's socket: `$CLAWAI_BROKER_SOCKET` when set, else
/// `$XDG_RUNTIME_DIR/clawai/broker.sock`, else `$XDG_STATE_HOME/clawai/broker.sock`
/// (`~/.local/state/clawai/broker.sock`). The runtime directory comes first because it
/// is private to the user and emptied at logout, so no stale socket outlives a session.
pub fn socket_path() -> PathBuf {
    if let Some(path) = std::env::var_os("CLAWAI_BROKER_SOCKET").filter(|p| !p.is_empty()) {
        return PathBuf::from(path);
    }
    match xdg("XDG_RUNTIME_DIR", &[]) {
        Some(runtime) => runtime.join("clawai").join("broker.sock"),
        None => state_dir().join("broker.sock"),
    }
}

/// `ui.url` beside the socket: the web page's URL, with its token.
pub fn url_file() -> PathBuf {
    socket_path().with_file_name("ui.url")
}

/// `$XDG_CONFIG_HOME/clawai/approvals.toml` (`~/.config/clawai/approvals.toml`).
pub fn approvals_file() -> PathBuf {
    xdg("XDG_CONFIG_HOME", &[".config"]).unwrap_or_default().join("clawai").join("approvals.toml")
}

/// The default audit trail: `$XDG_STATE_HOME/clawai/audit.jsonl`.
pub fn audit_file() -> PathBuf {
    state_dir().join("audit.jsonl")
}
