//! Versioned documents written whole: one server's pins, the standing approvals.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// What a document's version is compared by: it changes whenever anyone writes the
/// document (locally: the file's inode, size and modification time; in a shared store,
/// a number counted up by each write).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Version(Stamp);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    File { modified: Option<std::time::SystemTime>, len: u64, inode: u64 },
    Counted(u64),
}

impl Version {
    /// The `count`-th write of a document in a store that counts them.
    pub fn counted(count: u64) -> Version {
        Version(Stamp::Counted(count))
    }

    /// The number of a counted version (`None` for a file's).
    pub fn count(&self) -> Option<u64> {
        match self.0 {
            Stamp::Counted(count) => Some(count),
            Stamp::File { .. } => None,
        }
    }
}

/// A document store failed.
#[derive(Debug, thiserror::Error)]
#[error("cannot use {location}: {source}")]
pub struct DocumentError {
    /// Where (a path, for the local store).
    pub location: String,
    /// Why.
    pub source: std::io::Error,
}

/// Documents under names, each read and written whole; a writer replaces a document at
/// once (a reader sees the old one or the new one, never half).
pub trait Documents: Send + Sync + std::fmt::Debug {
    /// The document `name`, or `None` when there is none.
    fn load(&self, name: &str) -> Result<Option<Vec<u8>>, DocumentError>;

    /// Writes document `name` whole, readable only by this user.
    fn save(&self, name: &str, bytes: &[u8]) -> Result<(), DocumentError>;

    /// Writes document `name` whole if its version is still `expected` (`None`: there is
    /// none yet): false, writing nothing, when someone else wrote it since. A shared
    /// store checks and writes in one step; the local one checks, then writes.
    fn save_if(&self, name: &str, bytes: &[u8], expected: Option<Version>) -> Result<bool, DocumentError> {
        if self.version(name) != expected {
            return Ok(false);
        }
        self.save(name, bytes).map(|()| true)
    }

    /// The current version of `name` (`None`: there is none). Cheap: callers ask before
    /// they read again.
    fn version(&self, name: &str) -> Option<Version>;

    /// The names of every document, sorted.
    fn names(&self) -> Result<Vec<String>, DocumentError>;

    /// Where document `name` is, for messages (a path for the local store).
    fn location(&self, name: &str) -> PathBuf;
}

/// Documents as files in one directory (created 0700 when first written).
#[derive(Debug, Clone)]
pub struct DirDocuments {
    dir: PathBuf,
}

impl DirDocuments {
    /// The documents in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> DirDocuments {
        DirDocuments { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Documents for DirDocuments {
    fn load(&self, name: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        let path = self.location(name);
        match std::fs::read(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(DocumentError { location: path.display().to_string(), source }),
        }
    }

    /// A temporary file in the same directory, mode 0600, synced, then renamed over the
    /// old one.
    fn save(&self, name: &str, bytes: &[u8]) -> Result<(), DocumentError> {
        let path = self.location(name);
        let io = |source: std::io::Error| DocumentError { location: path.display().to_string(), source };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        if !dir.exists() {
            std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir).map_err(io)?;
        }
        // NamedTempFile is created 0600.
        let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(io)?;
        temp.write_all(bytes).map_err(io)?;
        temp.as_file().sync_all().map_err(io)?;
        temp.as_file().set_permissions(std::fs::Permissions::from_mode(0o600)).map_err(io)?;
        temp.persist(&path).map_err(|e| io(e.error))?;
        Ok(())
    }

    fn version(&self, name: &str) -> Option<Version> {
        let meta = std::fs::metadata(self.location(name)).ok()?;
        Some(Version(Stamp::File { modified: meta.modified().ok(), len: meta.len(), inode: meta.ino() }))
    }

    fn names(&self) -> Result<Vec<String>, DocumentError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(DocumentError { location: self.dir.display().to_string(), source }),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|source| DocumentError { location: self.dir.display().to_string(), source })?;
            if let Some(name) = entry.file_name().to_str().filter(|name| !name.starts_with('.')) {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn location(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_is_replaced_whole_private_and_its_version_moves() {
        let dir = tempfile::tempdir().unwrap();
        let documents = DirDocuments::new(dir.path().join("store"));
        assert_eq!(documents.load("a.json").unwrap(), None);
        assert_eq!(documents.version("a.json"), None);
        documents.save("a.json", b"one").unwrap();
        let first = documents.version("a.json").expect("written");
        documents.save("a.json", b"two!").unwrap();
        assert_ne!(documents.version("a.json"), Some(first));
        assert_eq!(documents.load("a.json").unwrap().as_deref(), Some(&b"two!"[..]));
        assert!(!documents.save_if("a.json", b"stale", Some(first)).unwrap(), "written since: not saved");
        assert_eq!(documents.load("a.json").unwrap().as_deref(), Some(&b"two!"[..]));
        let now = documents.version("a.json");
        assert!(documents.save_if("a.json", b"three", now).unwrap());
        assert!(!documents.save_if("b.json", b"x", now).unwrap(), "b.json does not exist");
        assert!(documents.save_if("b.json", b"x", None).unwrap());
        let mode = std::fs::metadata(documents.location("a.json")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let dir_mode = std::fs::metadata(documents.dir()).unwrap().permissions().mode();
        assert_eq!(dir_mode & 0o777, 0o700);
        std::fs::write(documents.dir().join(".hidden"), b"x").unwrap();
        assert_eq!(documents.names().unwrap(), ["a.json", "b.json"]);
    }
}
