//! The pin store: one JSON document per server identity in the process's
//! [`Documents`] (locally: a file in a private directory, written atomically, mode 0600
//! in a 0700 directory). A file that does not parse is an error naming it: pins are never
//! silently taken anew, or a server could reset its own review by breaking the file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use clawai_store::{DirDocuments, DocumentError, Documents, Version as DocumentVersion};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::canonical::Kind;
use crate::error::PinError;
use crate::identity::{Identity, Source};
use crate::screen::Flag;

/// The store's format version, written in every file.
pub const FORMAT: u32 = 1;

/// One version of an item (or of the instructions): its hash, its pinned view, and
/// when it was first seen so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Version {
    /// SHA-256 of the canonical JSON of `value`.
    pub hash: String,
    /// The pinned view (an object of the pinned members; for instructions, the text or
    /// `null`).
    pub value: Value,
    /// When this version was first seen (RFC 3339).
    pub seen: String,
    /// What the poisoning scan found in it when it was first seen (`None`: it was not
    /// scanned: the scan was off, or it was pinned before clawai scanned). Never scanned
    /// again while it is listed unchanged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings: Option<Vec<Flag>>,
    /// The scan's revision (`clawai_scan::REVISION`) that found `findings`; 0 for a
    /// store written before revisions were kept. An older one scans again.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub scanned_by: u32,
    /// The findings reached `quarantine_on` at the last listing: the version is held
    /// (quarantined) until a person approves it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub quarantined: bool,
}

fn is_zero(revision: &u32) -> bool {
    *revision == 0
}

/// What the store knows of one item.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The approved version (first seen, or approved by a person). `None` for an item
    /// added after the first listing and not approved yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pinned: Option<Version>,
    /// The version the server lists now, when it differs from the pinned one: held
    /// until a person approves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<Version>,
    /// The server's last complete list left it out.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub removed: bool,
    /// It was first seen during the server's first listing of its kind and would have
    /// been pinned then, but the scan quarantined it: if the scan no longer holds that
    /// same version (`scan = false`, a higher `quarantine_on`), it is pinned as trust on
    /// first use would have.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub held_on_sight: bool,
}

/// Where an item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Listed as approved.
    Pinned,
    /// Listed differently from the approved version: held.
    Changed,
    /// Listed after the first listing and never approved: held.
    Added,
    /// Approved, and no longer listed.
    Removed,
    /// Listed with hidden or instruction-like text (a scan finding at or above
    /// `quarantine_on`), new or changed: held.
    Quarantined,
}

impl State {
    /// The word shown by `clawai pins list`.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pinned => "pinned",
            State::Changed => "changed",
            State::Added => "added",
            State::Removed => "removed",
            State::Quarantined => "quarantined",
        }
    }

    /// True when calls are refused and the item is left out of lists.
    pub fn is_held(self) -> bool {
        matches!(self, State::Changed | State::Added | State::Quarantined)
    }
}

impl Version {
    /// True when the scan has not looked at this version, or an older scan did.
    pub fn needs_scan(&self) -> bool {
        self.findings.is_none() || self.scanned_by < clawai_scan::REVISION
    }
}

impl Entry {
    /// Where the item stands.
    pub fn state(&self) -> State {
        match (&self.pinned, &self.live) {
            (_, Some(live)) if live.quarantined => State::Quarantined,
            (Some(_), Some(_)) => State::Changed,
            (None, _) => State::Added,
            (Some(_), None) if self.removed => State::Removed,
            (Some(_), None) => State::Pinned,
        }
    }

    /// The worst finding of the live version, when the scan quarantined it.
    pub fn quarantined_by(&self) -> Option<&Flag> {
        let live = self.live.as_ref().filter(|live| live.quarantined)?;
        crate::screen::worst(live.findings.as_deref()?)
    }

    /// The hash a person reviews: the live version's when one waits, else the pinned one's.
    pub fn current_hash(&self) -> Option<&str> {
        self.live.as_ref().or(self.pinned.as_ref()).map(|v| v.hash.as_str())
    }
}

/// Every pin of one server identity: the store file's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PinFile {
    /// [`FORMAT`].
    pub format: u32,
    /// The server's name.
    pub server: String,
    /// What starts or reaches it.
    pub source: Source,
    /// The server's `instructions` (from its `initialize` result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Entry>,
    /// Tools by name.
    #[serde(default)]
    pub tools: BTreeMap<String, Entry>,
    /// Prompts by name.
    #[serde(default)]
    pub prompts: BTreeMap<String, Entry>,
    /// Resource templates by name.
    #[serde(default)]
    pub resource_templates: BTreeMap<String, Entry>,
    /// The kinds whose first complete listing was seen: from then on a new item is held
    /// instead of pinned.
    #[serde(default)]
    pub listed: Vec<String>,
}

impl PinFile {
    /// An empty store for `identity`.
    pub fn new(identity: &Identity) -> PinFile {
        PinFile {
            format: FORMAT,
            server: identity.server.clone(),
            source: identity.source.clone(),
            instructions: None,
            tools: BTreeMap::new(),
            prompts: BTreeMap::new(),
            resource_templates: BTreeMap::new(),
            listed: Vec::new(),
        }
    }

    /// The items of one kind.
    pub fn items(&self, kind: Kind) -> &BTreeMap<String, Entry> {
        match kind {
            Kind::Tool => &self.tools,
            Kind::Prompt => &self.prompts,
            Kind::ResourceTemplate => &self.resource_templates,
        }
    }

    /// The items of one kind, to change.
    pub fn items_mut(&mut self, kind: Kind) -> &mut BTreeMap<String, Entry> {
        match kind {
            Kind::Tool => &mut self.tools,
            Kind::Prompt => &mut self.prompts,
            Kind::ResourceTemplate => &mut self.resource_templates,
        }
    }

    /// True once the first complete listing of `kind` was seen.
    pub fn was_listed(&self, kind: Kind) -> bool {
        self.listed.iter().any(|k| k == kind.as_str())
    }

    /// True when the server's instructions changed since they were approved: nothing
    /// of it is listed and every call is refused.
    pub fn blocked(&self) -> bool {
        self.instructions.as_ref().is_some_and(|e| e.live.is_some())
    }

    /// True when something is held (a changed or added item, changed instructions).
    pub fn holds_anything(&self) -> bool {
        self.blocked() || Kind::ALL.iter().any(|&k| self.items(k).values().any(|e| e.state().is_held()))
    }
}

/// `$XDG_STATE_HOME/clawai/pins` (`~/.local/state/clawai/pins`).
pub fn default_dir() -> PathBuf {
    let state = match std::env::var_os("XDG_STATE_HOME") {
        Some(dir) if !dir.is_empty() && Path::new(&dir).is_absolute() => PathBuf::from(dir),
        _ => std::env::var_os("HOME").map(PathBuf::from).unwrap_or_else(|| PathBuf::from(".")).join(".local/state"),
    };
    state.join("clawai").join("pins")
}

/// The name of `identity`'s pins in a store.
pub fn name_of(identity: &Identity) -> String {
    format!("{}.json", identity.file_stem())
}

/// The file of `identity` in `dir` (the local store's location of its pins).
pub fn path_of(dir: &Path, identity: &Identity) -> PathBuf {
    dir.join(name_of(identity))
}

/// Where pins are kept: one document per server identity in the [`Documents`] the
/// process chose at start-up (locally: one file per server in a private directory).
#[derive(Debug, Clone)]
pub struct PinStore {
    documents: Arc<dyn Documents>,
}

impl PinStore {
    /// The pins kept as files in `dir`.
    pub fn dir(dir: &Path) -> PinStore {
        PinStore::in_documents(Arc::new(DirDocuments::new(dir)))
    }

    /// The pins kept in `documents`.
    pub fn in_documents(documents: Arc<dyn Documents>) -> PinStore {
        PinStore { documents }
    }

    /// Where the pins `name` are, for messages.
    pub fn location(&self, name: &str) -> PathBuf {
        self.documents.location(name)
    }

    /// The pins `name`; `Ok(None)` when there are none yet. A document that does not
    /// parse is an error naming it.
    pub fn load(&self, name: &str) -> Result<Option<PinFile>, PinError> {
        let Some(bytes) = self.documents.load(name).map_err(io_error)? else { return Ok(None) };
        let corrupt = |why: String| PinError::Corrupt { path: self.location(name), why };
        let file: PinFile = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
        if file.format != FORMAT {
            return Err(corrupt(format!("format {} is not the {FORMAT} this clawai reads", file.format)));
        }
        Ok(Some(file))
    }

    /// The pins `name` as stored, unread (`None`: none, or not readable now).
    pub fn load_bytes(&self, name: &str) -> Option<Vec<u8>> {
        self.documents.load(name).ok().flatten()
    }

    /// Writes the pins `name` whole: a reader sees the old pins or the new ones, never
    /// half of them (locally: a temporary file, mode 0600, synced, renamed over the old
    /// one, in a directory created 0700).
    pub fn save(&self, name: &str, file: &PinFile) -> Result<(), PinError> {
        let mut bytes = serde_json::to_vec_pretty(file).expect("pins encode");
        bytes.push(b'\n');
        self.documents.save(name, &bytes).map_err(io_error)
    }

    /// Writes the pins `name` unless their version is no longer `expected` (someone
    /// else wrote them since they were read): false then, nothing written.
    pub fn save_if(&self, name: &str, file: &PinFile, expected: Option<DocumentVersion>) -> Result<bool, PinError> {
        let mut bytes = serde_json::to_vec_pretty(file).expect("pins encode");
        bytes.push(b'\n');
        self.documents.save_if(name, &bytes, expected).map_err(io_error)
    }

    /// The version of the pins `name` now: it moves whenever anyone writes them.
    pub fn version(&self, name: &str) -> Option<DocumentVersion> {
        self.documents.version(name)
    }

    /// The names of every server's pins (`*.json`, not hidden), sorted.
    pub fn names(&self) -> Result<Vec<String>, PinError> {
        let names = self.documents.names().map_err(io_error)?;
        Ok(names.into_iter().filter(|name| name.ends_with(".json")).collect())
    }

    /// Every server's pins, with their names, sorted by server name; a document that
    /// does not parse is an error naming it.
    pub fn load_all(&self) -> Result<Vec<(String, PinFile)>, PinError> {
        let mut out = Vec::new();
        for name in self.names()? {
            if let Some(file) = self.load(&name)? {
                out.push((name, file));
            }
        }
        out.sort_by(|a, b| (&a.1.server, &a.0).cmp(&(&b.1.server, &b.0)));
        Ok(out)
    }
}

fn io_error(error: DocumentError) -> PinError {
    PinError::Io { path: PathBuf::from(error.location), source: error.source }
}

/// Reads the store file at `path`; `Ok(None)` when there is none yet.
pub fn load(path: &Path) -> Result<Option<PinFile>, PinError> {
    let (dir, name) = split(path);
    PinStore::dir(dir).load(name)
}

/// Writes the store file at `path` atomically ([`PinStore::save`]).
pub fn save(path: &Path, file: &PinFile) -> Result<(), PinError> {
    let (dir, name) = split(path);
    PinStore::dir(dir).save(name, file)
}

/// Every store file in `dir`, with its content, sorted by server name.
pub fn load_all(dir: &Path) -> Result<Vec<(PathBuf, PinFile)>, PinError> {
    let store = PinStore::dir(dir);
    Ok(store.load_all()?.into_iter().map(|(name, file)| (store.location(&name), file)).collect())
}

fn split(path: &Path) -> (&Path, &str) {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    (dir, path.file_name().and_then(|name| name.to_str()).unwrap_or_default())
}

/// The tool names in the store's pins of servers not named `server`, less those the
/// pins `own` have. Pins that cannot be read are skipped: this only adds names to look
/// for.
pub(crate) fn other_servers_tool_names(store: &PinStore, own: &str, server: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct ToolNames {
        server: String,
        #[serde(default)]
        tools: std::collections::BTreeMap<String, serde::de::IgnoredAny>,
    }
    let (mut names, mut own_names) = (std::collections::BTreeSet::new(), std::collections::BTreeSet::new());
    for name in store.names().unwrap_or_default() {
        // Only the names are read, not the pins.
        let Some(bytes) = store.load_bytes(&name) else { continue };
        let Ok(listed) = serde_json::from_slice::<ToolNames>(&bytes) else { continue };
        if name == own {
            own_names.extend(listed.tools.into_keys());
        } else if listed.server != server {
            names.extend(listed.tools.into_keys());
        }
    }
    names.difference(&own_names).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn identity() -> Identity {
        Identity::command("files", &["npx".to_owned(), "server".to_owned()])
    }

    #[test]
    fn a_saved_file_reads_back_and_is_private() {
        let dir = tempfile::tempdir().unwrap();
        let pins = dir.path().join("state/clawai/pins");
        let path = path_of(&pins, &identity());
        let mut file = PinFile::new(&identity());
        file.tools.insert(
            "t".into(),
            Entry {
                pinned: Some(Version {
                    hash: "h".into(),
                    value: Value::Null,
                    seen: "now".into(),
                    findings: None,
                    scanned_by: 0,
                    quarantined: false,
                }),
                ..Entry::default()
            },
        );
        save(&path, &file).unwrap();
        assert_eq!(load(&path).unwrap(), Some(file));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(&pins).unwrap().permissions().mode() & 0o777, 0o700);
        let left: Vec<_> = std::fs::read_dir(&pins).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "no temporary file left behind: {left:?}");
    }

    #[test]
    fn a_rewrite_replaces_the_file_by_rename_not_in_place() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = path_of(dir.path(), &identity());
        save(&path, &PinFile::new(&identity())).unwrap();
        let before = std::fs::metadata(&path).unwrap().ino();
        // A reader that opened the old file keeps reading the old content whole.
        let old = std::fs::File::open(&path).unwrap();
        let mut file = PinFile::new(&identity());
        file.listed.push("tool".into());
        save(&path, &file).unwrap();
        assert_ne!(std::fs::metadata(&path).unwrap().ino(), before, "a new file took the old one's name");
        let old: PinFile = serde_json::from_reader(old).unwrap();
        assert!(old.listed.is_empty());
        assert_eq!(load(&path).unwrap().unwrap().listed, ["tool"]);
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = path_of(dir.path(), &identity());
        std::fs::write(&path, "{\"format\": 1, \"server\": ").unwrap();
        let error = load(&path).unwrap_err().to_string();
        assert!(error.contains(&path.display().to_string()), "{error}");
        assert!(load_all(dir.path()).is_err());
        assert_eq!(load(&dir.path().join("none.json")).unwrap(), None);
    }

    #[test]
    fn the_default_directory_follows_xdg_state_home() {
        // Read from the environment the tests run in: only the shape is checked.
        let dir = default_dir();
        assert!(dir.ends_with("clawai/pins"), "{}", dir.display());
    }

    #[test]
    fn states_of_entries() {
        let v = || {
            Some(Version {
                hash: "h".into(),
                value: Value::Null,
                seen: String::new(),
                findings: None,
                scanned_by: 0,
                quarantined: false,
            })
        };
        assert_eq!(Entry { pinned: v(), ..Entry::default() }.state(), State::Pinned);
        assert_eq!(Entry { pinned: v(), live: v(), ..Entry::default() }.state(), State::Changed);
        assert_eq!(Entry { pinned: None, live: v(), ..Entry::default() }.state(), State::Added);
        assert_eq!(Entry { pinned: v(), live: None, removed: true, ..Entry::default() }.state(), State::Removed);
        let quarantined = || Some(Version { quarantined: true, ..v().unwrap() });
        assert_eq!(Entry { pinned: None, live: quarantined(), ..Entry::default() }.state(), State::Quarantined);
        assert_eq!(Entry { pinned: v(), live: quarantined(), ..Entry::default() }.state(), State::Quarantined);
        assert!(State::Quarantined.is_held());
    }
}
