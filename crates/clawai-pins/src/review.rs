//! What a person does with the pin store, from `clawai pins` or the `clawai ui` page:
//! the rows to list, the pins of one server, and approving the reviewed version of an
//! item by its hash.
//!
//! An approval reaches running proxies and gateways through the store file alone:
//! [`approve`] rewrites the server's file (atomically, [`store::save`]); each running
//! [`crate::Tracker`] notices the new file (at its next call, or within half a second
//! by its watcher), re-reads it, and tells its clients to list again
//! (`notifications/tools/list_changed`). Both front ends call [`approve`], so an
//! approval means the same from either.

use std::path::{Path, PathBuf};

use crate::canonical::Kind;
use crate::diff::escape_invisible;
use crate::error::PinError;
use crate::screen::Flag;
use crate::store::{Entry, PinFile, PinStore, State};

/// One row of what is pinned for a server: the instructions, then tools, prompts and
/// resource templates, each by name.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    /// `instructions`, or [`Kind::as_str`] of the item's kind.
    pub kind: &'static str,
    /// The item's name (`instructions` for the server's instructions).
    pub name: &'a str,
    /// What the store knows of it.
    pub entry: &'a Entry,
}

/// The kind word of the server's instructions, in rows and in approvals.
pub const INSTRUCTIONS: &str = "instructions";

/// Every row of `file`, the instructions first.
pub fn rows(file: &PinFile) -> Vec<Row<'_>> {
    let mut out = Vec::new();
    if let Some(entry) = &file.instructions {
        out.push(Row { kind: INSTRUCTIONS, name: INSTRUCTIONS, entry });
    }
    for kind in Kind::ALL {
        out.extend(file.items(kind).iter().map(|(name, entry)| Row { kind: kind.as_str(), name, entry }));
    }
    out
}

/// The state shown for a row (`pinned`, `changed`, …; the instructions say when they
/// hold the whole server).
pub fn state_word(kind: &str, entry: &Entry) -> &'static str {
    let none_given = entry.pinned.as_ref().is_some_and(|p| p.value.is_null());
    match (kind, entry.state()) {
        (INSTRUCTIONS, State::Changed) => "changed (server held)",
        (INSTRUCTIONS, State::Quarantined) => "quarantined (server held)",
        // A server that gave none is pinned so: instructions that appear later are a change.
        (INSTRUCTIONS, State::Pinned) if none_given => "pinned (none given)",
        (_, state) => state.as_str(),
    }
}

/// The scan's findings in the version a person reviews: the live one when one waits,
/// else the pinned one (findings below `quarantine_on`, or ones a person approved).
pub fn reviewed_findings(entry: &Entry) -> &[Flag] {
    let version = entry.live.as_ref().or(entry.pinned.as_ref());
    version.and_then(|v| v.findings.as_deref()).unwrap_or_default()
}

/// Why a review or an approval could not be done. The messages are meant for the
/// person who asked: they say what to do next.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No store file is of a server by that name.
    #[error(
        "no pins for a server named `{server}` in {} (pinned servers: {}); `clawai pins list` shows them",
        dir.display(),
        if known.is_empty() { "none".to_owned() } else { known.join(", ") }
    )]
    NoServer {
        /// The name asked for.
        server: String,
        /// The store.
        dir: PathBuf,
        /// The servers it has pins of.
        known: Vec<String>,
    },
    /// The server has nothing pinned by that name (of that kind, when one was given).
    #[error("server `{server}` has nothing pinned named `{}`; `clawai pins list` shows what is", escape_invisible(.name))]
    NoItem {
        /// The server.
        server: String,
        /// The name asked for.
        name: String,
    },
    /// The item is known, and nothing of it waits for approval.
    #[error(
        "nothing of `{}` of server `{server}` waits for approval (`clawai pins list` shows its state)",
        escape_invisible(.name)
    )]
    NothingWaits {
        /// The server.
        server: String,
        /// The item.
        name: String,
    },
    /// A version waits under another hash: what was reviewed is not what the server
    /// lists now. Nothing was changed.
    #[error(
        "`{n}` of server `{server}` waits for approval under hash {current}, not {hash}: the version reviewed is \
         not the one the server lists now (it changed again, or the hash was mistyped), so nothing was approved. \
         Review it with `clawai pins diff {server} {n}` and approve the hash shown there",
        n = escape_invisible(.name)
    )]
    Stale {
        /// The server.
        server: String,
        /// The item.
        name: String,
        /// The hash given.
        hash: String,
        /// The hash of the version that waits now.
        current: String,
    },
    /// The store could not be read or written.
    #[error(transparent)]
    Store(#[from] PinError),
}

/// The store files of the server named `server` (a name can be configured with more
/// than one command: one file each), or [`ReviewError::NoServer`].
pub fn files_of(dir: &Path, server: &str) -> Result<Vec<(PathBuf, PinFile)>, ReviewError> {
    let store = PinStore::dir(dir);
    let files = files_in(&store, server)?;
    Ok(files.into_iter().map(|(name, file)| (store.location(&name), file)).collect())
}

/// [`files_of`] in any pin store (the one in Redis, in cluster mode): each with its
/// name in the store.
pub fn files_in(store: &PinStore, server: &str) -> Result<Vec<(String, PinFile)>, ReviewError> {
    let files = store.load_all()?;
    let known: Vec<String> = files.iter().map(|(_, f)| f.server.clone()).collect();
    let mine: Vec<_> = files.into_iter().filter(|(_, f)| f.server == server).collect();
    if mine.is_empty() {
        return Err(ReviewError::NoServer { server: server.to_owned(), dir: store.location(""), known });
    }
    Ok(mine)
}

/// How many times an approval is tried again when a replica wrote the same pins between
/// its reading and its writing them.
const APPROVE_ATTEMPTS: usize = 3;

/// What [`approve`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approved {
    /// The kind approved (`None`: the server's instructions).
    pub kind: Option<Kind>,
    /// The store file written.
    pub path: PathBuf,
    /// Its name in the store.
    pub name: String,
}

/// True when `file` has something of `kind` (a [`Kind::as_str`] word, or
/// [`INSTRUCTIONS`]) named `name`.
fn has(file: &PinFile, kind: &str, name: &str) -> bool {
    if kind == INSTRUCTIONS {
        return name == INSTRUCTIONS && file.instructions.is_some();
    }
    Kind::ALL.iter().any(|&k| k.as_str() == kind && file.items(k).contains_key(name))
}

/// Approves the version of `name` (of `kind`, when given: a [`Kind::as_str`] word or
/// [`INSTRUCTIONS`]) of server `server` whose live hash is `hash`, the hash of the
/// version a person reviewed: it becomes the pinned version, and the store file is
/// written, which running proxies and gateways pick up (see the module's docs). A hash
/// that is not the live one is refused ([`ReviewError::Stale`]) and nothing changes.
pub fn approve(dir: &Path, server: &str, kind: Option<&str>, name: &str, hash: &str) -> Result<Approved, ReviewError> {
    approve_in(&PinStore::dir(dir), server, kind, name, hash)
}

/// [`approve`] in any pin store (the one in Redis, in cluster mode): written only over
/// the version it read, so that a tracker's write in between is not lost (the approval
/// is tried again on it).
pub fn approve_in(
    store: &PinStore,
    server: &str,
    kind: Option<&str>,
    name: &str,
    hash: &str,
) -> Result<Approved, ReviewError> {
    for _ in 1..APPROVE_ATTEMPTS {
        match approve_once(store, server, kind, name, hash) {
            Err(ReviewError::Store(PinError::Raced)) => continue,
            done => return done,
        }
    }
    approve_once(store, server, kind, name, hash)
}

fn approve_once(
    store: &PinStore,
    server: &str,
    kind: Option<&str>,
    name: &str,
    hash: &str,
) -> Result<Approved, ReviewError> {
    let mut stale = None;
    let mut nothing_waits = false;
    let names = store.names()?;
    let versions: std::collections::HashMap<String, _> =
        names.iter().map(|document| (document.clone(), store.version(document))).collect();
    for (document, mut file) in files_in(store, server)? {
        if kind.is_some_and(|kind| !has(&file, kind, name)) {
            continue;
        }
        match file.approve(name, hash) {
            crate::Approval::Approved { kind: approved } => {
                let word = approved.map_or(INSTRUCTIONS, Kind::as_str);
                // The same name of another kind, whose live version has that hash: not
                // what was asked for, and not written.
                if kind.is_some_and(|kind| kind != word) {
                    continue;
                }
                let read = versions.get(&document).copied().flatten();
                if !store.save_if(&document, &file, read)? {
                    return Err(ReviewError::Store(PinError::Raced));
                }
                return Ok(Approved { kind: approved, path: store.location(&document), name: document });
            }
            crate::Approval::Stale { current } => stale = Some(current),
            crate::Approval::NothingWaits => nothing_waits = true,
            crate::Approval::Unknown => {}
        }
    }
    let (server, name) = (server.to_owned(), name.to_owned());
    Err(match (stale, nothing_waits) {
        (Some(current), _) => ReviewError::Stale { server, name, hash: hash.to_owned(), current },
        (None, true) => ReviewError::NothingWaits { server, name },
        (None, false) => ReviewError::NoItem { server, name },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::Identity;
    use crate::screen::Screen;
    use serde_json::json;

    /// A store with server `s`: tool `a` pinned then changed (its live hash returned).
    fn store_with_a_change(dir: &Path) -> String {
        let identity = Identity::command("s", &["server".to_owned()]);
        let mut file = PinFile::new(&identity);
        file.observe_items(Kind::Tool, &[json!({"name": "a", "description": "A"})], &Screen::off());
        file.finish_listing(Kind::Tool, None);
        let (compared, _) =
            file.observe_items(Kind::Tool, &[json!({"name": "a", "description": "A2"})], &Screen::off());
        crate::store::save(&crate::store::path_of(dir, &identity), &file).unwrap();
        compared[0].hash.clone()
    }

    fn state_of_a(dir: &Path) -> State {
        files_of(dir, "s").unwrap()[0].1.tools["a"].state()
    }

    #[test]
    fn approving_the_live_hash_pins_it_and_writes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let live = store_with_a_change(dir.path());
        let approved = approve(dir.path(), "s", Some("tool"), "a", &live).unwrap();
        assert_eq!(approved.kind, Some(Kind::Tool));
        assert_eq!(state_of_a(dir.path()), State::Pinned);
        assert!(matches!(approve(dir.path(), "s", None, "a", &live), Err(ReviewError::NothingWaits { .. })));
    }

    #[test]
    fn a_stale_hash_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let live = store_with_a_change(dir.path());
        let path = files_of(dir.path(), "s").unwrap()[0].0.clone();
        let before = std::fs::read(&path).unwrap();
        let error = approve(dir.path(), "s", None, "a", &"0".repeat(64)).unwrap_err();
        assert!(matches!(&error, ReviewError::Stale { current, .. } if *current == live), "{error:?}");
        assert!(error.to_string().contains("not the one the server lists now"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn unknown_servers_items_and_kinds_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let live = store_with_a_change(dir.path());
        let error = approve(dir.path(), "nope", None, "a", &live).unwrap_err();
        assert!(error.to_string().contains("no pins for a server named `nope`") && error.to_string().contains("s"));
        assert!(matches!(approve(dir.path(), "s", None, "b", &live), Err(ReviewError::NoItem { .. })));
        // The right name and hash under another kind: not approved.
        assert!(matches!(approve(dir.path(), "s", Some("prompt"), "a", &live), Err(ReviewError::NoItem { .. })));
        assert_eq!(state_of_a(dir.path()), State::Changed);
    }
}
