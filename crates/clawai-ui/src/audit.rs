//! The live audit stream: follows the audit trail file as proxies append to it.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::broadcast;

/// How many recent events a page that just opened gets.
const RECENT: usize = 500;
/// How much of an existing trail is read at start.
const START_BYTES: u64 = 512 * 1024;
/// How often the file is looked at: proxies write decisions at once and other events
/// within 200 ms, so a quarter second keeps the page live without busy reads.
const POLL: Duration = Duration::from_millis(250);

/// Audit events, one JSON line each: the recent ones and a channel for new ones.
pub(crate) struct AuditFeed {
    recent: Mutex<VecDeque<Arc<str>>>,
    live: broadcast::Sender<Arc<str>>,
}

impl AuditFeed {
    /// An empty feed.
    pub(crate) fn new() -> Arc<AuditFeed> {
        Arc::new(AuditFeed { recent: Mutex::new(VecDeque::new()), live: broadcast::channel(1024).0 })
    }

    /// The recent events and a receiver of the ones after them (no gap, no repeat).
    pub(crate) fn subscribe(&self) -> (Vec<Arc<str>>, broadcast::Receiver<Arc<str>>) {
        let recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        (recent.iter().cloned().collect(), self.live.subscribe())
    }

    fn push(&self, line: &[u8]) {
        let Ok(text) = std::str::from_utf8(line) else { return };
        let text = text.trim();
        // Only whole JSON objects are events; a torn or foreign line is skipped.
        if !text.starts_with('{') || serde_json::from_str::<serde_json::Value>(text).is_err() {
            return;
        }
        let line: Arc<str> = Arc::from(text);
        let mut recent = self.recent.lock().unwrap_or_else(|p| p.into_inner());
        if recent.len() == RECENT {
            recent.pop_front();
        }
        recent.push_back(line.clone());
        let _ = self.live.send(line);
        drop(recent);
    }

    /// Follows `path` on a thread of its own until the process ends: new lines are
    /// events; a rotated or truncated file is read again from its start.
    pub(crate) fn follow(self: &Arc<Self>, path: PathBuf) {
        let feed = self.clone();
        let _ = std::thread::Builder::new().name("audit-follow".into()).spawn(move || feed.follow_loop(&path));
    }

    fn follow_loop(&self, path: &std::path::Path) {
        use std::os::unix::fs::MetadataExt;
        let mut file: Option<(std::fs::File, u64)> = None; // the open file and its inode
        let mut offset = 0u64;
        let mut partial = Vec::new();
        let mut first = true;
        loop {
            if let Ok(meta) = std::fs::metadata(path) {
                let rotated = file.as_ref().is_none_or(|(_, ino)| *ino != meta.ino()) || meta.len() < offset;
                if rotated && let Ok(opened) = std::fs::File::open(path) {
                    offset = if first { meta.len().saturating_sub(START_BYTES) } else { 0 };
                    // Started mid-file: the first line read is a tail, dropped below.
                    let skip_first = offset > 0;
                    partial.clear();
                    file = Some((opened, meta.ino()));
                    if skip_first {
                        partial.extend_from_slice(b"\x00");
                    }
                }
                first = false;
                if let Some((f, _)) = file.as_mut() {
                    self.read_new(f, &mut offset, &mut partial);
                }
            }
            std::thread::sleep(POLL);
        }
    }

    fn read_new(&self, file: &mut std::fs::File, offset: &mut u64, partial: &mut Vec<u8>) {
        if file.seek(SeekFrom::Start(*offset)).is_err() {
            return;
        }
        let mut chunk = Vec::new();
        let Ok(read) = file.take(8 * 1024 * 1024).read_to_end(&mut chunk) else { return };
        *offset += read as u64;
        partial.extend_from_slice(&chunk);
        let Some(last) = partial.iter().rposition(|&b| b == b'\n') else { return };
        let complete: Vec<u8> = partial.drain(..=last).collect();
        for line in complete.split(|&b| b == b'\n') {
            // A line that began before the read started (marked with NUL) is not whole.
            if !line.is_empty() && line[0] != 0 {
                self.push(line);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn follows_appends_and_rotation_skipping_torn_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        std::fs::write(&path, "{\"n\":1}\n").unwrap();
        let feed = AuditFeed::new();
        let (_, mut live) = feed.subscribe();
        feed.follow(path.clone());
        std::thread::sleep(POLL * 2);
        assert_eq!(feed.subscribe().0.iter().map(|l| l.to_string()).collect::<Vec<_>>(), ["{\"n\":1}"]);
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"n\":2}\nnot json\n{\"n\":").unwrap();
        std::thread::sleep(POLL * 2);
        f.write_all(b"3}\n").unwrap();
        std::thread::sleep(POLL * 2);
        std::fs::rename(&path, dir.path().join("audit.1.jsonl")).unwrap();
        std::fs::write(&path, "{\"n\":4}\n").unwrap();
        std::thread::sleep(POLL * 3);
        let mut got = Vec::new();
        while let Ok(line) = live.try_recv() {
            got.push(line.to_string());
        }
        assert_eq!(got, ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}", "{\"n\":4}"]);
    }
}
