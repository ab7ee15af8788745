//! Wrap, unwrap and status on one file: read, plan, show or write, retry on conflict.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::document::{self, Entry};
use crate::edit::{self, NotWrappable, Splice};
use crate::error::ClientError;
use crate::known::KnownFile;
use crate::state::State;
use crate::wrapping::{self, Wrap};
use crate::write::{self, Outcome};

/// How many times a conflicting write is retried on fresh content.
const ATTEMPTS: usize = 500;

/// Which servers a command applies to.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every server.
    All,
    /// These names.
    Names(Vec<String>),
}

impl Selection {
    fn includes(&self, name: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Names(names) => names.iter().any(|n| n == name),
        }
    }
}

/// Settings shared by every file.
#[derive(Debug, Clone)]
pub struct Options {
    /// The clawai binary written into wrapped entries (absolute).
    pub clawai: PathBuf,
    /// A policy to pin in wrapped entries (`--policy`), if any.
    pub policy: Option<PathBuf>,
    /// Options of `clawai proxy` written into wrapped stdio entries before `--`
    /// (`--sandbox auto`…).
    pub proxy_flags: Vec<String>,
    /// Show the change, write nothing.
    pub dry_run: bool,
    /// Where state and backups live (`$XDG_STATE_HOME/clawai`).
    pub state_dir: PathBuf,
}

/// What happened to one file.
#[derive(Debug, Default, Serialize)]
pub struct FileReport {
    /// The file.
    pub path: PathBuf,
    /// Servers changed (wrapped or unwrapped).
    pub changed: Vec<String>,
    /// Servers left alone, and why.
    pub skipped: Vec<(String, String)>,
    /// Layout problems (skipped parts of the file).
    pub warnings: Vec<String>,
    /// The unified diff of the change (also for dry runs).
    pub diff: Option<String>,
    /// Where the original was backed up, when this was the first change.
    pub backup: Option<PathBuf>,
}

/// One server as `status` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct EntryStatus {
    /// The server's name.
    pub name: String,
    /// Where in the file (`mcpServers`, `projects["/p"].mcpServers`).
    pub scope: String,
    /// `wrapped`, `not wrapped`, `stale` (wrapped by a clawai that no longer exists),
    /// `remote` or `unsupported`.
    pub state: String,
    /// The clawai binary of a wrapped entry.
    pub clawai: Option<String>,
    /// The policy pinned in a wrapped entry (`default` lookup otherwise).
    pub policy: Option<String>,
    /// The server command (the original one for wrapped entries).
    pub command: Option<String>,
    /// The arguments of that command.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// A wrapped entry's options of `clawai proxy` (before `--`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub proxy_options: Vec<String>,
    /// Why the entry is not wrapped, when it cannot be.
    pub note: Option<String>,
    /// `clawai wrap` would wrap it (a stdio server, or a remote one in a JSON file).
    pub wrappable: bool,
}

fn io_error(path: &Path, what: &str, e: std::io::Error) -> ClientError {
    ClientError::Io { path: path.display().to_string(), message: format!("{what}: {e}") }
}

fn read(file: &KnownFile) -> Result<(String, Vec<Entry>, Vec<String>), ClientError> {
    let text = std::fs::read_to_string(&file.path).map_err(|e| io_error(&file.path, "cannot read", e))?;
    let (entries, warnings) = document::entries(&text, file.syntax, file.servers_at).map_err(|e| {
        ClientError::Parse { path: file.path.display().to_string(), line: e.line, column: e.column, message: e.message }
    })?;
    Ok((text, entries, warnings.into_iter().map(|w| w.0).collect()))
}

/// Lists a file's servers and their state.
pub fn status(file: &KnownFile) -> Result<(Vec<EntryStatus>, Vec<String>), ClientError> {
    let (_, entries, warnings) = read(file)?;
    let statuses = entries
        .iter()
        .map(|e| {
            let mut s = EntryStatus {
                name: e.name.clone(),
                scope: e.scope_display(),
                state: String::new(),
                clawai: None,
                policy: None,
                command: None,
                args: Vec::new(),
                proxy_options: Vec::new(),
                note: None,
                wrappable: false,
            };
            match (&e.command, &e.remote) {
                (None, Some((_, url))) => {
                    s.state = "remote".into();
                    s.command = Some(url.clone());
                    s.wrappable = e.layout.is_some() && !matches!(e.headers, Some(Err(_)));
                    s.note = Some(match e.layout {
                        Some(_) => "remote server, not wrapped: `clawai wrap` makes it run through `clawai proxy --upstream`".to_owned(),
                        None => NotWrappable::Remote(url.clone(), "`clawai wrap` rewrites remote entries of JSON files only".into()).to_string(),
                    });
                }
                (None, None) => {
                    s.state = "unsupported".into();
                    s.note = Some(NotWrappable::NoCommand.to_string());
                }
                (Some(command), _) => {
                    let args = e.args.as_ref().map(|a| a.value.clone()).unwrap_or_default();
                    match wrapping::read(&command.value, &args) {
                        Wrap::Wrapped { clawai, policy, options, command, args } => {
                            let alive = Path::new(&clawai).is_absolute() && Path::new(&clawai).exists()
                                || !Path::new(&clawai).is_absolute();
                            s.state = if alive { "wrapped" } else { "stale" }.into();
                            if !alive {
                                s.note = Some(format!(
                                    "{clawai} no longer exists: the client cannot start this server; run `clawai wrap` again to point it at this clawai, or `clawai unwrap`"
                                ));
                            }
                            s.clawai = Some(clawai);
                            s.policy = Some(policy.unwrap_or_else(|| "default".into()));
                            s.command = Some(command);
                            s.args = args;
                            s.proxy_options = options;
                        }
                        Wrap::Upstream { clawai, policy, url, .. } => {
                            let alive = !Path::new(&clawai).is_absolute() || Path::new(&clawai).exists();
                            s.state = if alive { "wrapped" } else { "stale" }.into();
                            if !alive {
                                s.note = Some(format!(
                                    "{clawai} no longer exists: the client cannot reach this server; run `clawai wrap` again to point it at this clawai, or `clawai unwrap`"
                                ));
                            }
                            s.clawai = Some(clawai);
                            s.policy = Some(policy.unwrap_or_else(|| "default".into()));
                            s.command = Some(url);
                        }
                        Wrap::Plain { command, .. } => {
                            s.state = if e.args_unusable { "unsupported" } else { "not wrapped" }.into();
                            s.wrappable = !e.args_unusable;
                            if e.args_unusable {
                                s.note = Some(NotWrappable::UnusableArgs.to_string());
                            }
                            s.command = Some(command);
                        }
                    }
                }
            }
            s
        })
        .collect();
    Ok((statuses, warnings))
}

/// Wraps the selected servers of a file.
pub fn wrap(file: &KnownFile, selection: &Selection, options: &Options) -> Result<FileReport, ClientError> {
    change(file, selection, options, Direction::Wrap)
}

/// Unwraps the selected servers of a file.
pub fn unwrap(file: &KnownFile, selection: &Selection, options: &Options) -> Result<FileReport, ClientError> {
    change(file, selection, options, Direction::Unwrap)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Direction {
    Wrap,
    Unwrap,
}

fn change(
    file: &KnownFile,
    selection: &Selection,
    options: &Options,
    direction: Direction,
) -> Result<FileReport, ClientError> {
    let state_path = options.state_dir.join("wraps.json");
    for _ in 0..ATTEMPTS {
        let (text, entries, warnings) = read(file)?;
        let mut state = State::load(&state_path);
        let mut report = FileReport { path: file.path.clone(), warnings, ..Default::default() };
        let mut splices: Vec<Splice> = Vec::new();
        for entry in entries.iter().filter(|e| selection.includes(&e.name)) {
            let label = if entry.scope.len() > 1 {
                format!("{} ({})", entry.name, entry.scope_display())
            } else {
                entry.name.clone()
            };
            match direction {
                Direction::Wrap => {
                    match edit::wrap(entry, &text, &options.clawai, options.policy.as_deref(), &options.proxy_flags) {
                        Ok((s, original)) => {
                            splices.extend(s);
                            state.put(&file.path, &entry.key(), original);
                            report.changed.push(label);
                        }
                        Err(NotWrappable::AlreadyWrapped) => {}
                        Err(why) => report.skipped.push((label, why.to_string())),
                    }
                }
                Direction::Unwrap => {
                    if let Some(s) = edit::unwrap(entry, &text, file.syntax, state.get(&file.path, &entry.key())) {
                        splices.extend(s);
                        state.forget(&file.path, &entry.key());
                        report.changed.push(label);
                    }
                }
            }
        }
        if let Selection::Names(names) = selection {
            for name in names.iter().filter(|n| !entries.iter().any(|e| &e.name == *n)) {
                report.skipped.push((name.clone(), "no server of that name in this file".into()));
            }
        }
        if splices.is_empty() {
            return Ok(report);
        }
        let new_text = edit::apply(&text, splices);
        // Never write what the client could not read back.
        if let Err(e) = document::entries(&new_text, file.syntax, file.servers_at) {
            return Err(ClientError::Io {
                path: file.path.display().to_string(),
                message: format!(
                    "internal error: the edited file would not parse ({}); nothing was changed",
                    e.message
                ),
            });
        }
        report.diff = Some(diff(&file.path, &text, &new_text));
        if options.dry_run {
            return Ok(report);
        }
        if direction == Direction::Wrap {
            report.backup = write::backup(&options.state_dir.join("backups"), &file.path, text.as_bytes())
                .map_err(|e| io_error(&file.path, "cannot back up the original", e))?;
        }
        match write::replace(&file.path, text.as_bytes(), new_text.as_bytes())
            .map_err(|e| io_error(&file.path, "cannot write", e))?
        {
            Outcome::Written => {
                state.save(&state_path).map_err(|e| io_error(&state_path, "cannot save clawai's state", e))?;
                return Ok(report);
            }
            Outcome::Conflict => {
                // Let the other writer finish its burst before reading again.
                std::thread::sleep(std::time::Duration::from_micros(200 + u64::from(std::process::id() % 7) * 100));
                continue;
            }
        }
    }
    Err(ClientError::Busy { path: file.path.display().to_string(), attempts: ATTEMPTS })
}

fn diff(path: &Path, old: &str, new: &str) -> String {
    let name = path.display().to_string();
    similar::TextDiff::from_lines(old, new).unified_diff().context_radius(2).header(&name, &name).to_string()
}
