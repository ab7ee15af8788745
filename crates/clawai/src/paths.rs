//! Where clawai keeps its files by default (XDG base directories).

use std::path::{Path, PathBuf};

fn home() -> PathBuf {
    std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from("."))
}

fn xdg(var: &str, fallback: &[&str]) -> PathBuf {
    match std::env::var_os(var) {
        Some(dir) if !dir.is_empty() && PathBuf::from(&dir).is_absolute() => PathBuf::from(dir),
        _ => fallback.iter().fold(home(), |p, part| p.join(part)),
    }
}

/// `$XDG_CONFIG_HOME/clawai/policy.toml` (`~/.config/clawai/policy.toml`).
pub(crate) fn default_policy() -> PathBuf {
    xdg("XDG_CONFIG_HOME", &[".config"]).join("clawai").join("policy.toml")
}

/// The standing approvals to read: the flag (or `CLAWAI_APPROVALS`, which clap folds
/// into it; empty counts as unset), else `$XDG_CONFIG_HOME/clawai/approvals.toml`, where
/// `clawai ui` and `clawai approve --always` write them.
pub(crate) fn approvals_path(flag: Option<&PathBuf>) -> PathBuf {
    flag.filter(|p| !p.as_os_str().is_empty()).cloned().unwrap_or_else(clawai_approvals::approvals_file)
}

/// `$XDG_STATE_HOME/clawai/` (`~/.local/state/clawai/`).
pub(crate) fn state_dir() -> PathBuf {
    xdg("XDG_STATE_HOME", &[".local", "state"]).join("clawai")
}

/// The policy to use: the flag (or `CLAWAI_POLICY`, which clap folds into the flag),
/// else the default path.
pub(crate) fn policy_path(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(default_policy)
}

/// The command that writes a starter policy at `path`: `clawai policy init`, with
/// `--path` when `path` is not where clawai looks by default.
pub(crate) fn init_command(path: &std::path::Path) -> String {
    if path == default_policy() {
        "clawai policy init".to_owned()
    } else {
        format!("clawai policy init --path {}", shell_word(&path.display().to_string()))
    }
}

/// `text` as one shell word: as it is when it needs no quoting, else in single quotes.
pub(crate) fn shell_word(text: &str) -> String {
    let plain = !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@%".contains(c));
    if plain { text.to_owned() } else { format!("'{}'", text.replace('\'', "'\\''")) }
}

/// The pin store: the flag (or `CLAWAI_PINS`, which clap folds into it; empty counts as
/// unset), else `$XDG_STATE_HOME/clawai/pins/`.
pub(crate) fn pins_dir(flag: Option<&PathBuf>) -> PathBuf {
    flag.filter(|p| !p.as_os_str().is_empty()).cloned().unwrap_or_else(|| state_dir().join("pins"))
}

/// `path` with the home directory written `~`, for people to read.
pub(crate) fn home_relative(path: &Path) -> String {
    match std::env::var_os("HOME").map(PathBuf::from) {
        Some(home) if path.starts_with(&home) => format!("~/{}", path.strip_prefix(&home).unwrap().display()),
        _ => path.display().to_string(),
    }
}
