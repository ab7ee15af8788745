//! `--follow`: new lines of the trail as they are written, across rotations.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Result;

/// How often the trail is looked at.
const POLL: Duration = Duration::from_millis(100);

/// How long a file rotated away is still read: other clawai processes writing the same
/// trail go on appending to it until they notice the rotation (within 200 ms).
const DRAIN_ROTATED: Duration = Duration::from_secs(2);

/// A file being read, and how far.
struct Reading {
    file: File,
    /// Bytes of complete lines read so far.
    position: u64,
}

impl Reading {
    /// Hands every complete line written since the last call to `each`; a line still
    /// being written waits for its newline.
    fn read_new(&mut self, each: &mut impl FnMut(&str) -> io::Result<()>) -> io::Result<bool> {
        let length = self.file.metadata()?.len();
        if length < self.position {
            // Cut in place (copytruncate): start again from the top.
            self.position = 0;
        }
        if length == self.position {
            return Ok(false);
        }
        self.file.seek(SeekFrom::Start(self.position))?;
        let mut bytes = Vec::new();
        (&mut self.file).take(length - self.position).read_to_end(&mut bytes)?;
        let Some(end) = bytes.iter().rposition(|&b| b == b'\n') else { return Ok(false) };
        for line in bytes[..end].split(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(line);
            if !line.trim().is_empty() {
                each(line.trim_end_matches('\r'))?;
            }
        }
        self.position += end as u64 + 1;
        Ok(true)
    }
}

/// Whether `file` is still the file at `path` (false once the trail was rotated).
fn still_at(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), std::fs::metadata(path)) {
            (Ok(ours), Ok(there)) => ours.dev() == there.dev() && ours.ino() == there.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Calls `each` with every line written to the trail at `path` from `position` of
/// `file` on (the file at `path` when the caller read it), forever: when the trail is
/// rotated, the rest of the old file is read, then the new one from its start.
pub(crate) fn follow(
    path: &Path,
    file: File,
    position: u64,
    mut each: impl FnMut(&str) -> io::Result<()>,
) -> Result<()> {
    let mut current = Reading { file, position };
    let mut rotated: Vec<(Reading, Instant)> = Vec::new();
    loop {
        for (old, _) in &mut rotated {
            old.read_new(&mut each)?;
        }
        rotated.retain(|(_, since)| since.elapsed() < DRAIN_ROTATED);
        let fresh = current.read_new(&mut each)?;
        if !fresh && !still_at(&current.file, path) {
            // Rotated: the new file, once it exists, from its start.
            if let Ok(file) = File::open(path) {
                let old = std::mem::replace(&mut current, Reading { file, position: 0 });
                rotated.push((old, Instant::now()));
                continue;
            }
        }
        std::thread::sleep(POLL);
    }
}
