//! Reading a trail where shipping left off, across rotations (`audit.jsonl` →
//! `audit.jsonl.1` → … `.9`).
//!
//! The position is a line's hash, not a file offset: rotation renames files, and the
//! hash is what the database stores in the same transaction as the lines. A cursor
//! opened after a hash reads on from the last line with that hash.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use clawai_proxy::audit::chain::line_hash;

/// How long a rotated file must have been left alone before the cursor moves past it:
/// other writers go on appending to it until they notice the rotation (within 200 ms).
const ROTATED_QUIET: Duration = Duration::from_secs(2);

/// The trail's files that exist, oldest first: `path.9` … `path.1`, then `path`.
pub(crate) fn files_oldest_first(path: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        (1..=9).rev().map(|n| PathBuf::from(format!("{}.{n}", path.display()))).filter(|p| p.exists()).collect();
    if path.exists() {
        files.push(path.to_owned());
    }
    files
}

/// A file's identity, which survives its renaming by rotation.
fn identity(metadata: &std::fs::Metadata) -> (u64, u64) {
    (metadata.dev(), metadata.ino())
}

/// Where the cursor started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Start {
    /// At the beginning of the oldest file: nothing was shipped before.
    Beginning,
    /// After the line shipped last.
    AfterLastShipped,
    /// The line shipped last is no longer in the trail (rotated away while no shipper
    /// ran): from the oldest file there is.
    LastShippedGone,
}

/// A position in the trail: a file and the bytes of it already handed out.
pub(crate) struct Cursor {
    path: PathBuf,
    current: Option<(File, (u64, u64))>,
    offset: u64,
}

impl Cursor {
    /// A cursor after the last line whose hash is `after` (lowercase hex), else at the
    /// start of the oldest file.
    pub(crate) fn open(path: &Path, after: Option<&str>) -> io::Result<(Cursor, Start)> {
        let files = files_oldest_first(path);
        let mut cursor = Cursor { path: path.to_owned(), current: None, offset: 0 };
        if let Some(after) = after
            && let Some((file, offset)) = find_after(&files, after.as_bytes())?
        {
            cursor.enter(&file)?;
            cursor.offset = offset;
            return Ok((cursor, Start::AfterLastShipped));
        }
        if let Some(oldest) = files.first() {
            cursor.enter(oldest)?;
        }
        Ok((cursor, if after.is_some() { Start::LastShippedGone } else { Start::Beginning }))
    }

    fn enter(&mut self, file: &Path) -> io::Result<()> {
        let opened = File::open(file)?;
        let id = identity(&opened.metadata()?);
        self.current = Some((opened, id));
        self.offset = 0;
        Ok(())
    }

    /// Up to `max_lines` whole lines (each with its newline) written since the last
    /// call, moving on to the next file when the current one was rotated and is done.
    /// Empty: nothing new for now.
    pub(crate) fn read(&mut self, max_lines: usize) -> io::Result<Vec<Vec<u8>>> {
        loop {
            if self.current.is_none() {
                // No trail yet: it starts when its first writer writes.
                if self.path.exists() {
                    let path = self.path.clone();
                    self.enter(&path)?;
                } else {
                    return Ok(Vec::new());
                }
            }
            let lines = self.read_current(max_lines)?;
            if !lines.is_empty() || !self.move_past_rotated()? {
                return Ok(lines);
            }
        }
    }

    /// Whether the cursor is in the file now at the trail's path, so that no rotated
    /// file has lines waiting: with nothing new read, it has caught up.
    pub(crate) fn at_newest(&self) -> bool {
        let Some((_, id)) = &self.current else { return !self.path.exists() };
        std::fs::metadata(&self.path).is_ok_and(|there| identity(&there) == *id)
    }

    fn read_current(&mut self, max_lines: usize) -> io::Result<Vec<Vec<u8>>> {
        let Some((file, _)) = &mut self.current else { return Ok(Vec::new()) };
        if file.metadata()?.len() < self.offset {
            // Cut in place (copytruncate): its lines from the top are new ones.
            self.offset = 0;
        }
        file.seek(SeekFrom::Start(self.offset))?;
        let mut reader = BufReader::new(&*file);
        let mut lines = Vec::new();
        while lines.len() < max_lines {
            let mut line = Vec::new();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 || line.last() != Some(&b'\n') {
                break; // the end, or a line still being written
            }
            self.offset += read as u64;
            lines.push(line);
        }
        Ok(lines)
    }

    /// At the end of a rotated file that writers have left: on to the next newer file.
    fn move_past_rotated(&mut self) -> io::Result<bool> {
        let Some((file, id)) = &self.current else { return Ok(false) };
        if self.at_newest() {
            return Ok(false);
        }
        let modified = file.metadata()?.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if modified.elapsed().unwrap_or_default() < ROTATED_QUIET {
            return Ok(false);
        }
        let files = files_oldest_first(&self.path);
        let ids: Vec<(u64, u64)> =
            files.iter().map(|f| std::fs::metadata(f).map(|m| identity(&m)).unwrap_or_default()).collect();
        // The file after this one; if this one was deleted by rotation, the oldest left.
        let next = match ids.iter().position(|candidate| candidate == id) {
            Some(index) => files.get(index + 1),
            None => files.first(),
        };
        match next {
            Some(next) => {
                let next = next.clone();
                self.enter(&next)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}

/// The file holding the last line whose hash is `hash`, and the offset just after it.
fn find_after(files: &[PathBuf], hash: &[u8]) -> io::Result<Option<(PathBuf, u64)>> {
    let mut found = None;
    for file in files {
        let mut reader = BufReader::new(File::open(file)?);
        let mut offset = 0u64;
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = reader.read_until(b'\n', &mut line)?;
            if read == 0 || line.last() != Some(&b'\n') {
                break;
            }
            offset += read as u64;
            if line_hash(&line).as_slice() == hash {
                found = Some((file.clone(), offset));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn hash_text(line: &[u8]) -> String {
        String::from_utf8(line_hash(line).to_vec()).expect("hex")
    }

    #[test]
    fn a_cursor_resumes_after_the_line_last_shipped_across_a_rotation() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.jsonl");
        std::fs::write(dir.path().join("audit.jsonl.1"), "{\"n\":1}\n{\"n\":2}\n").expect("write");
        std::fs::write(&path, "{\"n\":3}\n{\"n\":4}").expect("write"); // the last line is unfinished
        let (mut cursor, start) = Cursor::open(&path, Some(&hash_text(b"{\"n\":2}\n"))).expect("open");
        assert_eq!(start, Start::AfterLastShipped);
        // The rotated file is done, but was written just now: the cursor waits for it.
        assert_eq!(cursor.read(10).expect("read"), Vec::<Vec<u8>>::new());
        let old = SystemTime::now() - Duration::from_secs(10);
        File::options()
            .append(true)
            .open(dir.path().join("audit.jsonl.1"))
            .and_then(|f| f.set_modified(old))
            .expect("age the rotated file");
        assert_eq!(cursor.read(10).expect("read"), vec![b"{\"n\":3}\n".to_vec()]);
        assert!(cursor.at_newest());
        File::options().append(true).open(&path).and_then(|mut f| f.write_all(b"\n")).expect("finish the line");
        assert_eq!(cursor.read(10).expect("read"), vec![b"{\"n\":4}\n".to_vec()]);
    }

    #[test]
    fn a_hash_no_longer_in_the_trail_starts_from_the_oldest_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"n\":1}\n").expect("write");
        let (mut cursor, start) = Cursor::open(&path, Some(&"0".repeat(64))).expect("open");
        assert_eq!(start, Start::LastShippedGone);
        assert_eq!(cursor.read(10).expect("read"), vec![b"{\"n\":1}\n".to_vec()]);
    }
}
