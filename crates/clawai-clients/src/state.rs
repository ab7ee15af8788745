//! What clawai remembers about its own edits, so that `unwrap` gives back the exact
//! bytes: the original text of each wrapped entry's `command` and `args` (of a remote
//! entry: its whole object).
//!
//! Kept in `$XDG_STATE_HOME/clawai/wraps.json`; losing it only costs byte-exactness
//! (the original command and arguments are always recoverable from the wrapped entry).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The original text of one entry's members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Original {
    /// The text of the `command` value, quotes included.
    pub command: String,
    /// The text of the `args` value, or `None` when the entry had no `args`.
    pub args: Option<String>,
    /// When `args` was added by the wrap: the text inserted before the new value.
    pub inserted: Option<String>,
    /// A remote entry: the text of its whole object, braces included (then `command`
    /// and `args` are empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<String>,
}

/// Originals by file, then by entry key.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct State {
    files: BTreeMap<String, BTreeMap<String, Original>>,
}

impl State {
    /// Reads the state (empty when absent or unreadable).
    pub fn load(path: &Path) -> State {
        std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
    }

    /// Writes the state atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        serde_json::to_writer_pretty(&mut tmp, self)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }

    /// The original of an entry.
    pub fn get(&self, file: &Path, key: &str) -> Option<&Original> {
        self.files.get(&file_key(file))?.get(key)
    }

    /// Remembers an entry's original.
    pub fn put(&mut self, file: &Path, key: &str, original: Original) {
        self.files.entry(file_key(file)).or_default().insert(key.to_owned(), original);
    }

    /// Forgets an entry.
    pub fn forget(&mut self, file: &Path, key: &str) {
        if let Some(entries) = self.files.get_mut(&file_key(file)) {
            entries.remove(key);
            if entries.is_empty() {
                self.files.remove(&file_key(file));
            }
        }
    }
}

fn file_key(file: &Path) -> String {
    std::fs::canonicalize(file).unwrap_or_else(|_| PathBuf::from(file)).display().to_string()
}
