//! The audit trail's hash chain as the page shows it: "verified up to event N", or why not.
//!
//! Checking the chain is not this crate's job: whoever runs the page plugs a
//! [`ChainCheck`] into [`crate::UiOptions::chain`]. Until one is plugged in,
//! [`ChainFields`] tells a trail without a chain (events lack `writer`, `seq` and
//! `prev`) from one that has a chain nobody here can check.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Serialize;

/// How many rotated files (`FILE.1` newest … `FILE.9` oldest) are looked for.
const MAX_ROTATED: usize = 9;

/// What a check of the trail found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChainStatus {
    /// Every chained event checked out.
    Verified,
    /// A line breaks the chain; [`ChainState::first_problem`] names it.
    Broken,
    /// No event carries a chain: nothing can be verified.
    NoChain,
    /// Events carry a chain, but no checker was plugged in.
    NotChecked,
    /// The trail could not be read.
    Unreadable,
}

/// The first line that breaks the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainProblem {
    /// The file, as named by [`trail_files`].
    pub file: String,
    /// The line number in it, from 1.
    pub line: usize,
    /// What is wrong, in a word or two ("edited", "deleted", "truncated"…).
    pub what: String,
    /// In words, naming the other lines involved.
    pub detail: String,
}

/// The chain's state, as `GET /api/audit/chain` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainState {
    /// What was found.
    pub state: ChainStatus,
    /// Chained events that checked out (up to the problem, if any).
    pub checked: usize,
    /// The first break, for [`ChainStatus::Broken`].
    pub first_problem: Option<ChainProblem>,
    /// Older lines without a chain (written before the trail was chained): not verified.
    pub unchained: usize,
    /// The line the page shows.
    pub summary: String,
}

impl ChainState {
    /// `checked` chained events are whole; `unchained` older lines carry no chain.
    pub fn verified(checked: usize, unchained: usize) -> ChainState {
        let mut summary = format!("verified up to event {checked}");
        if unchained > 0 {
            summary.push_str(&format!("; {unchained} older line(s) without a hash chain are not verified"));
        }
        ChainState { state: ChainStatus::Verified, checked, first_problem: None, unchained, summary }
    }

    /// The chain breaks at `problem`, after `checked` events that check out.
    pub fn broken(checked: usize, unchained: usize, problem: ChainProblem) -> ChainState {
        let summary = format!(
            "not verified: line {} of {}: {}: {}; the {checked} event(s) before it check out; run clawai audit verify for the details",
            problem.line, problem.file, problem.what, problem.detail
        );
        ChainState { state: ChainStatus::Broken, checked, first_problem: Some(problem), unchained, summary }
    }

    /// No line of the trail carries a chain.
    pub fn no_chain(lines: usize) -> ChainState {
        ChainState {
            state: ChainStatus::NoChain,
            checked: 0,
            first_problem: None,
            unchained: lines,
            summary: format!("not verified: the trail has no hash chain yet ({lines} line(s))"),
        }
    }

    /// The trail could not be read.
    pub fn unreadable(file: &Path, error: &std::io::Error) -> ChainState {
        ChainState {
            state: ChainStatus::Unreadable,
            checked: 0,
            first_problem: None,
            unchained: 0,
            summary: format!("not verified: cannot read {}: {error}", file.display()),
        }
    }
}

/// Checks the chain of the trail whose current file is `trail`.
pub trait ChainCheck: Send + Sync {
    /// Reads the trail (its rotated files too: see [`trail_files`]) and says how much of
    /// it checks out. Runs on a blocking thread; may read every file whole.
    fn check(&self, trail: &Path) -> ChainState;
}

impl std::fmt::Debug for dyn ChainCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ChainCheck")
    }
}

/// The files of the trail at `trail` that exist, oldest first: `FILE.9` … `FILE.1`,
/// then `FILE` itself (even if missing, so that a checker can say it cannot read it).
pub fn trail_files(trail: &Path) -> Vec<PathBuf> {
    let numbered = |n: usize| PathBuf::from(format!("{}.{n}", trail.display()));
    let mut files: Vec<PathBuf> = (1..=MAX_ROTATED).rev().map(numbered).filter(|p| p.exists()).collect();
    files.push(trail.to_owned());
    files
}

/// The checker used until a real one is plugged in: it only looks for the chain's
/// members (`writer`, `seq`, `prev`) and never claims a trail is whole.
pub struct ChainFields;

impl ChainCheck for ChainFields {
    fn check(&self, trail: &Path) -> ChainState {
        let mut lines = 0;
        for file in trail_files(trail) {
            let opened = match std::fs::File::open(&file) {
                Ok(opened) => opened,
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
                Err(error) => return ChainState::unreadable(&file, &error),
            };
            for line in std::io::BufReader::new(opened).split(b'\n') {
                let line = match line {
                    Ok(line) => line,
                    Err(error) => return ChainState::unreadable(&file, &error),
                };
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                lines += 1;
                if has_chain_fields(&line) {
                    return ChainState {
                        state: ChainStatus::NotChecked,
                        checked: 0,
                        first_problem: None,
                        unchained: 0,
                        summary: "not verified: the trail carries a hash chain that this page cannot check; run clawai audit verify".into(),
                    };
                }
            }
        }
        ChainState::no_chain(lines)
    }
}

/// Whether `line` is an event carrying the chain's members.
fn has_chain_fields(line: &[u8]) -> bool {
    let Ok(serde_json::Value::Object(event)) = serde_json::from_slice::<serde_json::Value>(line) else {
        return false;
    };
    ["writer", "seq", "prev"].iter().all(|key| event.contains_key(*key))
}

/// A checker and the trail it checks, with the last answer kept while no file of the
/// trail changed: the page asks again whenever events arrive.
pub(crate) struct ChainWatch {
    checker: Arc<dyn ChainCheck>,
    trail: PathBuf,
    /// Held across a check, so that pages asking at once share one read of the trail.
    last: tokio::sync::Mutex<Option<(Vec<FileMark>, ChainState)>>,
}

/// What tells that a file changed: its name, inode, length and modification time.
#[derive(Debug, PartialEq, Eq)]
struct FileMark(PathBuf, u64, u64, Option<std::time::SystemTime>);

fn marks(trail: &Path) -> Vec<FileMark> {
    use std::os::unix::fs::MetadataExt;
    trail_files(trail)
        .into_iter()
        .filter_map(|file| {
            let meta = std::fs::metadata(&file).ok()?;
            Some(FileMark(file, meta.ino(), meta.len(), meta.modified().ok()))
        })
        .collect()
}

impl ChainWatch {
    /// Checks `trail` with `checker`.
    pub(crate) fn new(checker: Arc<dyn ChainCheck>, trail: PathBuf) -> ChainWatch {
        ChainWatch { checker, trail, last: tokio::sync::Mutex::new(None) }
    }

    /// The chain's state now: the last answer if no file changed since, else a new check.
    pub(crate) async fn state(&self) -> ChainState {
        let mut last = self.last.lock().await;
        let now = marks(&self.trail);
        if let Some((seen, state)) = last.as_ref()
            && *seen == now
        {
            return state.clone();
        }
        let (checker, trail) = (self.checker.clone(), self.trail.clone());
        let state = tokio::task::spawn_blocking(move || checker.check(&trail)).await.unwrap_or_else(|_| {
            ChainState::unreadable(&self.trail, &std::io::Error::other("the check of the chain failed"))
        });
        *last = Some((now, state.clone()));
        state
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const PLAIN: &str = "{\"server\":\"fs\",\"tool\":\"read_file\",\"decision\":\"allow\"}\n";
    const CHAINED: &str =
        "{\"server\":\"fs\",\"decision\":\"allow\",\"writer\":\"0123456789abcdef\",\"seq\":0,\"prev\":\"00\"}\n";

    #[test]
    fn a_trail_without_chain_members_has_no_chain_yet() {
        let dir = tempfile::tempdir().unwrap();
        let trail = dir.path().join("audit.jsonl");
        std::fs::write(&trail, format!("{PLAIN}{PLAIN}\n")).unwrap();
        std::fs::write(dir.path().join("audit.jsonl.1"), PLAIN).unwrap();
        let state = ChainFields.check(&trail);
        assert_eq!(state.state, ChainStatus::NoChain);
        assert_eq!(state.unchained, 3);
        assert_eq!(state.summary, "not verified: the trail has no hash chain yet (3 line(s))");
    }

    #[test]
    fn a_chained_trail_is_reported_as_not_checked_never_as_verified() {
        let dir = tempfile::tempdir().unwrap();
        let trail = dir.path().join("audit.jsonl");
        std::fs::write(&trail, format!("{PLAIN}{CHAINED}")).unwrap();
        let state = ChainFields.check(&trail);
        assert_eq!(state.state, ChainStatus::NotChecked);
        assert!(state.summary.starts_with("not verified:"), "{}", state.summary);
        // A member named `prev` inside the arguments is not the chain.
        std::fs::write(&trail, "{\"arguments\":{\"writer\":\"w\",\"seq\":1,\"prev\":\"p\"}}\n").unwrap();
        assert_eq!(ChainFields.check(&trail).state, ChainStatus::NoChain);
    }

    #[test]
    fn rotated_files_come_oldest_first_and_the_current_file_last() {
        let dir = tempfile::tempdir().unwrap();
        let trail = dir.path().join("audit.jsonl");
        for n in [1, 2, 5] {
            std::fs::write(dir.path().join(format!("audit.jsonl.{n}")), PLAIN).unwrap();
        }
        let names: Vec<String> =
            trail_files(&trail).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
        assert_eq!(names, ["audit.jsonl.5", "audit.jsonl.2", "audit.jsonl.1", "audit.jsonl"]);
    }

    #[test]
    fn the_summaries_say_how_far_the_trail_checks_out() {
        assert_eq!(ChainState::verified(42, 0).summary, "verified up to event 42");
        assert_eq!(
            ChainState::verified(3, 2).summary,
            "verified up to event 3; 2 older line(s) without a hash chain are not verified"
        );
        let problem =
            ChainProblem { file: "a.jsonl".into(), line: 7, what: "edited".into(), detail: "its hash".into() };
        let broken = ChainState::broken(6, 0, problem.clone());
        assert_eq!(broken.state, ChainStatus::Broken);
        assert_eq!(broken.first_problem, Some(problem));
        assert!(broken.summary.starts_with("not verified: line 7 of a.jsonl: edited: its hash;"), "{}", broken.summary);
        let json = serde_json::to_value(&broken).unwrap();
        assert_eq!(json["state"], "broken");
        assert_eq!(json["checked"], 6);
        assert_eq!(json["first_problem"]["line"], 7);
    }

    struct Counting(AtomicUsize);
    impl ChainCheck for Counting {
        fn check(&self, _: &Path) -> ChainState {
            ChainState::verified(self.0.fetch_add(1, Ordering::SeqCst), 0)
        }
    }

    #[tokio::test]
    async fn the_trail_is_checked_again_only_when_a_file_changed() {
        let dir = tempfile::tempdir().unwrap();
        let trail = dir.path().join("audit.jsonl");
        std::fs::write(&trail, PLAIN).unwrap();
        let counting = Arc::new(Counting(AtomicUsize::new(0)));
        let watch = ChainWatch::new(counting.clone(), trail.clone());
        assert_eq!(watch.state().await.checked, 0);
        assert_eq!(watch.state().await.checked, 0);
        assert_eq!(counting.0.load(Ordering::SeqCst), 1);
        std::fs::write(&trail, format!("{PLAIN}{PLAIN}")).unwrap();
        assert_eq!(watch.state().await.checked, 1);
    }
}
