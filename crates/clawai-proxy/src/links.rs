//! Where a path leads once symbolic links are followed (`[defaults] follow_links`).
//!
//! The policy matches paths as spelled; a server opens them through the filesystem, so
//! `/srv/site/docs/id_rsa`, with `docs` a link to `~/.ssh`, is the SSH key. For servers
//! on this machine the guard hands [`follow`] to the engine: a deny-like condition then
//! holds when the path or where it leads matches, an allow only when both do. The
//! answer holds when the call is decided: a link made or changed between the decision
//! and the server's `open` is not seen, so deny the tools that create links.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use clawai_policy::normalize::normalize_path;
use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};

/// How many missing trailing components are looked past to find the existing directory
/// a path would be created in (`/srv/link/new/dir/file`).
const MAX_MISSING: usize = 16;

/// How many dangling links in a row are followed (the kernel stops at 40 links).
const MAX_DANGLING: usize = 8;

/// Where the absolute path `path` leads once every symbolic link on the way is
/// followed, when that differs from `path`; `None` when no link is on the way, when
/// nothing of the path exists, or when it cannot be known (no permission). A path that
/// does not exist yet is resolved through the deepest of its parents that does, and a
/// link to a file that does not exist yet through where it points: what a server
/// creating the file would write.
pub fn follow(path: &str) -> Option<String> {
    // Longer than any path the kernel opens (PATH_MAX): text, not a path.
    if !path.starts_with('/') || path.len() >= 4096 {
        return None;
    }
    let real = resolve(Path::new(path), 0)?;
    let real = std::str::from_utf8(real.as_os_str().as_bytes()).ok()?;
    (real != path && real != normalize_path(path)).then(|| real.to_owned())
}

/// The physical path of `path`: its links followed, `.` and `..` resolved.
fn resolve(path: &Path, dangling: usize) -> Option<PathBuf> {
    // The deepest part of the path that exists, and the names after it.
    let mut existing = path;
    let mut missing: Vec<&OsStr> = Vec::new();
    loop {
        match has_link_on_the_way(existing) {
            // No link on the way: `..` means what it says.
            Ok(false) => return Some(PathBuf::from(normalize_path(path.to_str()?))),
            Ok(true) => break,
            Err(Errno::ENOENT) if missing.len() < MAX_MISSING => {
                missing.push(existing.file_name()?);
                existing = existing.parent()?;
            }
            Err(_) => return None,
        }
    }
    let mut real = loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => break real,
            Err(_) => match std::fs::read_link(existing) {
                // A link to something that does not exist (yet): where it points.
                Ok(target) if dangling < MAX_DANGLING => {
                    break resolve(&existing.parent()?.join(target), dangling + 1)?;
                }
                Err(_) if missing.len() < MAX_MISSING => {
                    missing.push(existing.file_name()?);
                    existing = existing.parent()?;
                }
                _ => return None,
            },
        }
    };
    real.extend(missing.iter().rev());
    Some(real)
}

/// Whether opening `path` crosses a symbolic link: one `openat2` that refuses links
/// (`ELOOP` when there is one), so that the usual path without links costs one system
/// call whatever its depth. Kernels before 5.6 lack `openat2`: there the path is
/// compared with its canonical form instead.
fn has_link_on_the_way(path: &Path) -> Result<bool, Errno> {
    let how = OpenHow::new().flags(OFlag::O_PATH | OFlag::O_CLOEXEC).resolve(ResolveFlag::RESOLVE_NO_SYMLINKS);
    match openat2(nix::fcntl::AT_FDCWD, path, how) {
        Ok(_closed_on_drop) => Ok(false),
        Err(Errno::ELOOP) => Ok(true),
        Err(Errno::ENOSYS) => match std::fs::canonicalize(path) {
            Ok(real) => Ok(real != path),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Errno::ENOENT),
            Err(_) => Err(Errno::EACCES),
        },
        Err(other) => Err(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_on_the_way_are_followed_and_plain_paths_are_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let root = root.to_str().unwrap();
        std::fs::create_dir_all(format!("{root}/keys")).unwrap();
        std::fs::write(format!("{root}/keys/id_rsa"), "k").unwrap();
        std::fs::create_dir_all(format!("{root}/site")).unwrap();
        std::os::unix::fs::symlink(format!("{root}/keys"), format!("{root}/site/docs")).unwrap();
        std::os::unix::fs::symlink(format!("{root}/keys/id_rsa"), format!("{root}/site/readme")).unwrap();
        std::os::unix::fs::symlink("../keys", format!("{root}/site/relative")).unwrap();

        let keys = format!("{root}/keys/id_rsa");
        assert_eq!(follow(&format!("{root}/site/docs/id_rsa")).as_deref(), Some(keys.as_str()));
        assert_eq!(follow(&format!("{root}/site/readme")).as_deref(), Some(keys.as_str()));
        assert_eq!(follow(&format!("{root}/site/relative/id_rsa")).as_deref(), Some(keys.as_str()));
        // Not there yet: resolved through the deepest parent that is.
        assert_eq!(follow(&format!("{root}/site/docs/new/key")), Some(format!("{root}/keys/new/key")));
        // A link to a file not written yet (`ln -s ~/.ssh/authorized_keys notes.txt`).
        std::os::unix::fs::symlink(format!("{root}/keys/authorized_keys"), format!("{root}/site/notes.txt")).unwrap();
        assert_eq!(follow(&format!("{root}/site/notes.txt")), Some(format!("{root}/keys/authorized_keys")));
        std::os::unix::fs::symlink("../site/notes.txt", format!("{root}/site/chain")).unwrap();
        assert_eq!(follow(&format!("{root}/site/chain")), Some(format!("{root}/keys/authorized_keys")));
        std::os::unix::fs::symlink("loop", format!("{root}/site/loop")).unwrap();
        assert_eq!(follow(&format!("{root}/site/loop")), None);
        // `..` after a link is taken from where the link leads, as the kernel does.
        assert_eq!(follow(&format!("{root}/site/docs/../keys/id_rsa")), Some(keys.clone()));
        // No link on the way, nothing there, or not a path.
        assert_eq!(follow(&keys), None);
        assert_eq!(follow(&format!("{root}/site/index.html")), None);
        assert_eq!(follow("/no/such/place/at/all"), None);
        assert_eq!(follow("relative/path"), None);
    }
}
