//! `clawai pins list|diff|approve|reset`: review and approve what servers list that
//! changed since it was first seen (the pins the proxy keeps; see `clawai_pins`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use clawai_proxy::pins::review::{self, ReviewError, Row, state_word};
use clawai_proxy::pins::store::PinStore;
use clawai_proxy::pins::{Entry, Kind, PinFile, diff, store};
use serde_json::json;

use crate::exit::ExitCode;
use crate::paths;
use crate::scan_cmd::one_line;

/// Where the pins are: `--pins DIR` (or `CLAWAI_PINS`).
#[derive(Debug, Clone, Args)]
pub(crate) struct PinsDirArg {
    /// The pin store [default: $XDG_STATE_HOME/clawai/pins].
    #[arg(long = "pins", env = "CLAWAI_PINS", value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
    /// Where the pins replicas share live in cluster mode (instead of the directory).
    #[command(flatten)]
    pub(crate) cluster: crate::cluster::ClusterArg,
}

impl PinsDirArg {
    /// The directory to use.
    pub(crate) fn resolve(&self) -> PathBuf {
        paths::pins_dir(self.dir.as_ref())
    }
}

/// `clawai pins …`.
#[derive(Debug, Subcommand)]
pub(crate) enum PinsCommand {
    /// Every pinned tool, prompt and resource template, and where it stands.
    List {
        /// Print a JSON list of {server, kind, name, state, hash, live_hash, findings}.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        pins: PinsDirArg,
    },
    /// What changed: the approved and the live version of what a server holds back,
    /// and what the poisoning scan found in it.
    Diff {
        /// The server's name.
        server: String,
        /// One tool, prompt or resource template (`instructions` for the server's
        /// instructions); every held item when left out.
        name: Option<String>,
        #[command(flatten)]
        pins: PinsDirArg,
    },
    /// Approve the live version that `clawai pins diff` showed.
    Approve {
        /// The server's name.
        server: String,
        /// The tool, prompt or resource template (`instructions` for the server's
        /// instructions).
        name: String,
        /// The hash `clawai pins diff` showed for the live version: a version that
        /// changed again after the review is not approved.
        #[arg(long, value_name = "HASH")]
        hash: String,
        #[command(flatten)]
        pins: PinsDirArg,
    },
    /// Forget the pins of a server (every server when none is named): its next listing
    /// is pinned anew.
    Reset {
        /// The server's name.
        server: Option<String>,
        #[command(flatten)]
        pins: PinsDirArg,
    },
}

impl PinsCommand {
    /// Whether the command works on the pins in Redis (`--cluster`): it then runs in the
    /// `clawai-http` binary, which has the Redis client.
    pub(crate) fn in_cluster(&self) -> bool {
        self.pins().cluster.url.is_some()
    }

    fn pins(&self) -> &PinsDirArg {
        let (PinsCommand::List { pins, .. }
        | PinsCommand::Diff { pins, .. }
        | PinsCommand::Approve { pins, .. }
        | PinsCommand::Reset { pins, .. }) = self;
        pins
    }
}

/// Runs a `clawai pins` command on the pins directory.
pub(crate) fn run(cmd: PinsCommand) -> Result<ExitCode> {
    let store = PinStore::dir(&cmd.pins().resolve());
    run_in(&store, cmd)
}

/// Runs a `clawai pins` command on `store`.
pub(crate) fn run_in(store: &PinStore, cmd: PinsCommand) -> Result<ExitCode> {
    match cmd {
        PinsCommand::List { json, .. } => list(store, json),
        PinsCommand::Diff { server, name, .. } => show_diff(store, &server, name.as_deref()),
        PinsCommand::Approve { server, name, hash, .. } => approve(store, &server, &name, &hash),
        PinsCommand::Reset { server, pins } => reset(&pins.resolve(), server.as_deref()),
    }
}

fn load_all(store: &PinStore) -> Result<Vec<(PathBuf, PinFile)>> {
    Ok(store.load_all()?.into_iter().map(|(name, file)| (store.location(&name), file)).collect())
}

fn list(store: &PinStore, as_json: bool) -> Result<ExitCode> {
    let files = load_all(store)?;
    if as_json {
        let mut out = Vec::new();
        for (_, file) in &files {
            for Row { kind, name, entry } in review::rows(file) {
                out.push(json!({
                    "server": file.server,
                    "kind": kind,
                    "name": name,
                    "state": state_word(kind, entry),
                    "hash": entry.pinned.as_ref().map(|v| &v.hash),
                    "live_hash": entry.live.as_ref().map(|v| &v.hash),
                    "findings": findings_json(entry),
                }));
            }
        }
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(ExitCode::Ok);
    }
    if files.is_empty() {
        println!(
            "nothing pinned yet in {} (servers are pinned the first time a proxy lists them)",
            store.location("").display()
        );
        return Ok(ExitCode::Ok);
    }
    println!("{:<20} {:<18} {:<28} {:<22} HASH", "SERVER", "KIND", "NAME", "STATE");
    for (_, file) in &files {
        for Row { kind, name, entry } in review::rows(file) {
            let hash = entry.current_hash().map_or("-", |h| &h[..16.min(h.len())]);
            let name = one_line(name);
            println!("{:<20} {:<18} {:<28} {:<22} {hash}", one_line(&file.server), kind, name, state_word(kind, entry));
        }
    }
    Ok(ExitCode::Ok)
}

/// The scan's findings in the version a person reviews (the live one when one waits,
/// else the pinned one), for `list --json`.
fn findings_json(entry: &Entry) -> serde_json::Value {
    review::reviewed_findings(entry)
        .iter()
        .map(|f| json!({"class": f.class, "severity": f.severity.as_str(), "field": f.field, "evidence": f.evidence}))
        .collect()
}

/// The files of the server named `server`, or the message saying which servers exist.
fn files_of(store: &PinStore, server: &str) -> Result<std::result::Result<Vec<(PathBuf, PinFile)>, String>> {
    match review::files_in(store, server) {
        Ok(files) => Ok(Ok(files.into_iter().map(|(name, file)| (store.location(&name), file)).collect())),
        Err(ReviewError::Store(e)) => Err(e.into()),
        Err(other) => Ok(Err(other.to_string())),
    }
}

fn show_diff(store: &PinStore, server: &str, name: Option<&str>) -> Result<ExitCode> {
    let files = match files_of(store, server)? {
        Ok(files) => files,
        Err(message) => {
            eprintln!("clawai: {message}");
            return Ok(ExitCode::Failure);
        }
    };
    let mut shown = 0;
    for (path, file) in &files {
        for Row { kind, name: item, entry } in review::rows(file) {
            let wanted = match name {
                Some(name) => item == name,
                None => entry.state().is_held(),
            };
            if !wanted {
                continue;
            }
            shown += 1;
            let (title, shown_server) = (one_line(item), one_line(server));
            println!("{kind} `{title}` of server `{shown_server}`: {} ({})", state_word(kind, entry), path.display());
            if let Some(pinned) = &entry.pinned {
                println!("  approved  {}  (first seen {})", pinned.hash, pinned.seen);
            }
            match &entry.live {
                Some(live) => {
                    println!("  live      {}  (seen {})", live.hash, live.seen);
                    print!("{}", diff::review(entry));
                    println!(
                        "approve this version with: clawai pins approve {} {} --hash {}",
                        paths::shell_word(server),
                        paths::shell_word(item),
                        live.hash
                    );
                }
                None => {
                    println!("  nothing waits for approval");
                    // Findings below `quarantine_on`, or ones a person approved.
                    for line in entry.pinned.iter().flat_map(diff::findings) {
                        println!("{line}");
                    }
                }
            }
            println!();
        }
    }
    if shown == 0 {
        match name {
            Some(name) => {
                eprintln!(
                    "clawai: server `{server}` has nothing pinned named `{name}`; `clawai pins list` shows what is"
                );
                return Ok(ExitCode::Failure);
            }
            None => println!("nothing of server `{server}` waits for approval"),
        }
    }
    Ok(ExitCode::Ok)
}

fn approve(store: &PinStore, server: &str, name: &str, hash: &str) -> Result<ExitCode> {
    // The same approval as the `clawai ui` page's: running proxies pick up the file
    // (in cluster mode: every replica, within a second).
    match review::approve_in(store, server, None, name, hash) {
        Ok(approved) => {
            let what = approved.kind.map_or("the instructions", Kind::as_str);
            println!(
                "approved {what} `{}` of server `{server}` at {hash}; running proxies pass it on from now on",
                diff::escape_invisible(name)
            );
            Ok(ExitCode::Ok)
        }
        Err(ReviewError::Store(e)) => Err(anyhow::Error::new(e).context("cannot approve")),
        Err(refused) => {
            eprintln!("clawai: {refused}");
            Ok(ExitCode::Failure)
        }
    }
}

fn reset(dir: &Path, server: Option<&str>) -> Result<ExitCode> {
    // Read leniently: a file that does not parse is what a reset is for.
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            println!("nothing pinned in {}", dir.display());
            return Ok(ExitCode::Ok);
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("cannot read {}", dir.display()))),
    };
    let mut forgotten = 0;
    for entry in entries {
        let path = entry?.path();
        let Some(stem) = path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".json")) else {
            continue;
        };
        if stem.starts_with('.') {
            continue;
        }
        let (named, whose) = match store::load(&path) {
            Ok(Some(file)) => (server.is_none_or(|s| s == file.server), file.server),
            Ok(None) => continue,
            // Unreadable: matched by the name its file was given.
            Err(_) => {
                let prefix = server.map(|s| clawai_proxy::pins::Identity::command(s, &[]).file_stem());
                let prefix = prefix.as_deref().and_then(|p| p.rsplit_once('-')).map(|(safe, _)| format!("{safe}-"));
                (prefix.is_none_or(|p| stem.starts_with(&p)), format!("(unreadable) {stem}"))
            }
        };
        if named {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
            println!("forgot the pins of server `{whose}` ({}); its next listing is pinned anew", path.display());
            forgotten += 1;
        }
    }
    if forgotten == 0 {
        match server {
            Some(server) => println!("nothing pinned for a server named `{server}` in {}", dir.display()),
            None => println!("nothing pinned in {}", dir.display()),
        }
    }
    Ok(ExitCode::Ok)
}

/// `clawai pins reset --cluster`: removes the shared pins of `server` (every server's
/// without one) with `forget`, which counts their version on, so that every replica
/// releases what it held of them within a second and pins its next listing anew.
pub(crate) fn reset_shared(
    store: &PinStore,
    server: Option<&str>,
    forget: impl Fn(&str) -> Result<bool>,
) -> Result<ExitCode> {
    let mut forgotten = 0;
    for name in store.names()? {
        let whose = match store.load(&name) {
            Ok(Some(file)) => file.server,
            Ok(None) => continue,
            // Unreadable: matched by the name it was stored under, as a file is.
            Err(_) => format!("(unreadable) {name}"),
        };
        let named = match server {
            None => true,
            Some(server) if whose.starts_with("(unreadable)") => {
                let stem = clawai_proxy::pins::Identity::command(server, &[]).file_stem();
                stem.rsplit_once('-').is_some_and(|(safe, _)| name.starts_with(&format!("{safe}-")))
            }
            Some(server) => server == whose,
        };
        if named && forget(&name)? {
            println!(
                "forgot the shared pins of server `{whose}` ({}); every replica pins its next listing anew",
                store.location(&name).display()
            );
            forgotten += 1;
        }
    }
    if forgotten == 0 {
        match server {
            Some(server) => println!("nothing pinned for a server named `{server}` in the cluster"),
            None => println!("nothing pinned in the cluster"),
        }
    }
    Ok(ExitCode::Ok)
}
