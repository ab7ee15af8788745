//! Replacing a configuration file without ever losing a change.
//!
//! The new content goes to a temporary file in the same directory (same mode), which
//! then takes the file's place atomically. Clients such as Claude Code rewrite their
//! files constantly, so the replacement is a compare-and-swap: the file must still hold
//! exactly the bytes the edit was made from. On Linux the swap is `renameat2` with
//! `RENAME_EXCHANGE`, which hands back the file it replaced: if that is not what the
//! edit was based on, the two are swapped back at once and the caller retries on the
//! new content. Symlinks are followed: the link stays a link, its target is replaced.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

/// What happened to a replacement.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The file now holds the new content.
    Written,
    /// The file changed since it was read; nothing was written. Read it again.
    Conflict,
}

/// The file a path really names (a symlink's target).
pub fn real_path(path: &Path) -> std::io::Result<PathBuf> {
    fs::canonicalize(path)
}

/// Replaces `path` with `new` if it still holds `expected`.
///
/// The window in which a concurrent writer can slip in unnoticed is kept to the two
/// system calls between the last comparison and the swap; the swap itself reports a
/// writer that got in anyway, and is then undone.
pub fn replace(path: &Path, expected: &[u8], new: &[u8]) -> std::io::Result<Outcome> {
    let real = real_path(path)?;
    let metadata = fs::metadata(&real)?;
    if metadata.permissions().readonly() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "the file is read-only; make it writable (chmod u+w) if clawai should change it",
        ));
    }
    let dir = real.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::Builder::new().prefix(".clawai-").tempfile_in(dir)?;
    tmp.write_all(new)?;
    tmp.as_file().set_permissions(metadata.permissions())?;
    // The file must still hold what the edit was based on...
    let before = fs::metadata(&real)?;
    if fs::read(&real)? != expected {
        return Ok(Outcome::Conflict);
    }
    // ...and still be that same file at the moment of the swap. Start a fresh time
    // slice first, so that the few system calls from the check to the swap (and to the
    // undo, should a writer slip in anyway) are not stretched by a preemption.
    let _ = nix::sched::sched_yield();
    if !same_file(&before, &fs::metadata(&real)?) {
        return Ok(Outcome::Conflict);
    }
    #[cfg(target_os = "linux")]
    {
        use nix::fcntl::{AT_FDCWD, RenameFlags, renameat2};
        match renameat2(AT_FDCWD, tmp.path(), AT_FDCWD, &real, RenameFlags::RENAME_EXCHANGE) {
            Ok(()) => {
                // `tmp` now names the file that was in place: it must be the one compared.
                if same_file(&before, &fs::metadata(tmp.path())?) {
                    tmp.as_file().sync_all()?;
                    return Ok(Outcome::Written);
                }

                renameat2(AT_FDCWD, tmp.path(), AT_FDCWD, &real, RenameFlags::RENAME_EXCHANGE)
                    .map_err(std::io::Error::from)?;
                return Ok(Outcome::Conflict);
            }
            Err(nix::errno::Errno::EINVAL | nix::errno::Errno::ENOSYS | nix::errno::Errno::EOPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let file = tmp.persist(&real).map_err(|e| e.error)?;
    file.sync_all()?;
    Ok(Outcome::Written)
}

fn same_file(a: &fs::Metadata, b: &fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev()
        && a.ino() == b.ino()
        && a.size() == b.size()
        && a.mtime() == b.mtime()
        && a.mtime_nsec() == b.mtime_nsec()
}

/// Keeps a copy of a file's original content, once: the first change wins.
pub fn backup(backups: &Path, path: &Path, content: &[u8]) -> std::io::Result<Option<PathBuf>> {
    let real = real_path(path)?;
    let name: String = real
        .display()
        .to_string()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' })
        .collect();
    let target = backups.join(name);
    if target.exists() {
        return Ok(None);
    }
    fs::create_dir_all(backups)?;
    let mut tmp = tempfile::NamedTempFile::new_in(backups)?;
    tmp.write_all(content)?;
    tmp.persist(&target).map_err(|e| e.error)?;
    Ok(Some(target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn replaces_keeps_mode_and_follows_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, b"old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        assert_eq!(replace(&link, b"old", b"new").unwrap(), Outcome::Written);
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read(&real).unwrap(), b"new");
        assert_eq!(fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(replace(&link, b"old", b"newer").unwrap(), Outcome::Conflict);
        assert_eq!(fs::read(&real).unwrap(), b"new");
        let leftovers: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().starts_with(".clawai-"))
            .collect();
        assert!(leftovers.is_empty(), "no temporary files left behind");
    }

    #[test]
    fn read_only_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ro.json");
        fs::write(&path, b"x").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o444)).unwrap();
        let err = replace(&path, b"x", b"y").unwrap_err();
        assert!(err.to_string().contains("read-only"));
        assert_eq!(fs::read(&path).unwrap(), b"x");
    }
}
