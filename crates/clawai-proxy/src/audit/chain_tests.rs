//! Tests of the hash chain: what the writer adds, and what the check finds when a
//! trail is changed.

use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;

use super::chain::{Chain, GENESIS, line_hash};
use super::verify::{Place, Tamper, Verdict, Verifier};
use super::*;

/// A trail's files, oldest first: each a name and its lines (newlines kept).
type Files = Vec<(String, Vec<Vec<u8>>)>;

fn lines_of(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect()
}

/// The files of the trail at `path`, rotated ones first, named as in the directory.
fn read_trail(path: &Path) -> Files {
    let mut files: Vec<PathBuf> =
        (1..=9).rev().map(|n| PathBuf::from(format!("{}.{n}", path.display()))).filter(|p| p.exists()).collect();
    files.push(path.to_owned());
    files
        .iter()
        .map(|f| (f.file_name().unwrap().to_string_lossy().into_owned(), lines_of(&fs::read(f).unwrap())))
        .collect()
}

fn verify(files: &Files) -> Verdict {
    let mut verifier = Verifier::new();
    for (name, lines) in files {
        verifier.add_file(name, &lines.concat()[..]).unwrap();
    }
    verifier.finish(false)
}

fn event(id: &str) -> Event<'_> {
    Event {
        time: stamp().wall,
        session: "s-1",
        server: Some("fs"),
        direction: Some(Direction::ClientToServer),
        kind: EventKind::Request,
        method: Some("tools/call"),
        id: Some(id),
        tool: Some("read_file"),
        decision: Some(Decision::Allow),
        ..Default::default()
    }
}

/// A trail of `count` decided calls, one write each, rotated every `max_bytes`.
fn written_trail(dir: &Path, max_bytes: u64, count: usize) -> PathBuf {
    let path = dir.join("audit.jsonl");
    let log = AuditLog::open(&path, max_bytes, 5).unwrap();
    for i in 0..count {
        log.record_decision(&event(&i.to_string()));
        log.flush();
    }
    path
}

#[test]
fn each_line_names_its_writer_its_number_and_the_hash_of_the_line_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, u64::MAX, 0).unwrap();
    let writer = log.writer_id();
    assert_eq!(writer.len(), 16);
    log.record_decision(&event("1"));
    log.record(&Event { session: "s-1", kind: EventKind::Response, id: Some("1"), ..Default::default() });
    log.flush();
    log.record_all([event("2"), event("3")]);
    log.flush();
    let bytes = fs::read(&path).unwrap();
    let lines = lines_of(&bytes);
    assert_eq!(lines.len(), 4);
    let mut prev = GENESIS.to_owned();
    for (seq, line) in lines.iter().enumerate() {
        let v: Value = serde_json::from_slice(line).unwrap();
        assert_eq!(
            (v["writer"].as_str(), v["seq"].as_u64(), v["prev"].as_str()),
            (Some(&*writer), Some(seq as u64), Some(&*prev))
        );
        // The members are added at the end: the event reads as before.
        assert!(line.starts_with(b"{\"time\":\""), "{}", String::from_utf8_lossy(line));
        prev = String::from_utf8(line_hash(line).to_vec()).unwrap();
    }
    // Another log (another process) is another writer, starting from the genesis value.
    let other = AuditLog::open(&path, u64::MAX, 0).unwrap();
    assert_ne!(other.writer_id(), writer);
    other.record_decision(&event("4"));
    other.flush();
    let last: Value = serde_json::from_slice(lines_of(&fs::read(&path).unwrap()).last().unwrap()).unwrap();
    assert_eq!((last["seq"].as_u64(), last["prev"].as_str()), (Some(0), Some(GENESIS)));
    let verdict = verify(&read_trail(&path));
    assert_eq!(verdict.problem, None);
    assert_eq!((verdict.checked, verdict.writers.len()), (5, 2));
}

#[test]
fn the_chain_goes_on_across_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_trail(dir.path(), 1000, 12);
    let files = read_trail(&path);
    assert!(files.len() >= 3, "rotated into {} files", files.len());
    for pair in files.windows(2) {
        let last_before = pair[0].1.last().unwrap();
        let first: Value = serde_json::from_slice(&pair[1].1[0]).unwrap();
        assert_eq!(first["prev"].as_str().unwrap().as_bytes(), line_hash(last_before), "{} → {}", pair[0].0, pair[1].0);
    }
    let verdict = verify(&files);
    assert_eq!(verdict.problem, None);
    assert_eq!(verdict.checked, 12);
    assert_eq!(verdict.writers[0].events, 12);
    // Only the newest files, the older ones rotated away: the writer begins past its
    // first event, which is said, not counted as a deletion.
    let newest = files[files.len() - 2..].to_vec();
    let mut verifier = Verifier::new();
    for (name, lines) in &newest {
        verifier.add_file(name, &lines.concat()[..]).unwrap();
    }
    let verdict = verifier.finish(true);
    assert_eq!(verdict.problem, None);
    assert!(verdict.writers[0].first_seq > 0);
    assert_eq!(verify(&newest).problem.map(|p| p.tamper), Some(Tamper::Deleted), "unless older files may exist");
}

/// Two processes on one trail: when one rotates it, the other moves to the new file
/// (its flusher looks every 200 ms) instead of writing on into the renamed one, which
/// later rotations would delete under it; both chains still check out.
#[test]
fn a_writer_follows_a_rotation_made_by_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let rotating = AuditLog::open(&path, 1500, 5).unwrap();
    let other = AuditLog::open(&path, u64::MAX - 1, 5).unwrap();
    other.record_decision(&event("101"));
    other.flush();
    for i in 0..6 {
        rotating.record_decision(&event(&i.to_string()));
        rotating.flush();
    }
    assert!(dir.path().join("audit.jsonl.1").exists(), "the first writer rotated the trail");
    other.shared.follow_other_writers();
    other.record_decision(&event("102"));
    other.flush();
    let newest = fs::read_to_string(&path).unwrap();
    assert!(newest.contains("\"id\":102,"), "the second writer writes to the new file: {newest}");
    let verdict = verify(&read_trail(&path));
    assert_eq!(verdict.problem, None);
    assert_eq!(verdict.checked, 8);
}

/// Two writers with the same size limit, taking turns: each counts the other's lines
/// too (the file's end after each write), so every file rotates near the limit instead
/// of at twice it, and a writer leaves a file the other rotated after one batch, without
/// waiting for its flusher to look.
#[test]
fn writers_sharing_a_trail_rotate_it_at_its_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let limit = 1500;
    let (first, second) = (AuditLog::open(&path, limit, 9).unwrap(), AuditLog::open(&path, limit, 9).unwrap());
    let mut longest_line = 0;
    for i in 0..20 {
        for (writer, id) in [(&first, i), (&second, 1000 + i)] {
            writer.record_decision(&event(&id.to_string()));
            writer.flush();
        }
        let newest = fs::read_to_string(&path).unwrap();
        longest_line = longest_line.max(newest.lines().map(str::len).max().unwrap_or(0) as u64 + 1);
    }
    let rotated: Vec<u64> = (1..=9)
        .filter_map(|n| fs::metadata(dir.path().join(format!("audit.jsonl.{n}"))).ok())
        .map(|m| m.len())
        .collect();
    assert!(rotated.len() >= 3, "the trail rotated: {rotated:?}");
    for size in &rotated {
        // At most one batch of each writer past the limit.
        assert!(*size <= limit + 2 * longest_line, "a file of {size} bytes, limit {limit}: {rotated:?}");
    }
    let verdict = verify(&read_trail(&path));
    assert_eq!(verdict.problem, None);
    assert_eq!(verdict.checked, 40);
}

/// Writers rotating one trail at the same time, as four proxies on one trail do: each
/// rotation waits for the others (a lock beside the trail), so no rotation renames a
/// file over one another writer just moved, and every line is in some file. Without the
/// lock, a CI run's proxy lost 19 of its 25 calls this way.
#[test]
fn writers_rotating_a_trail_at_once_lose_no_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    // A small limit and many files kept: rotations come often, and each shifts dozens of
    // numbered files, so two writers' rotations overlap unless they take turns.
    let (writers, lines, keep) = (4, 150, 1000);
    std::thread::scope(|scope| {
        for w in 0..writers {
            let path = &path;
            scope.spawn(move || {
                // Each its own log, as each process has: its own file, its own lock.
                let log = AuditLog::open(path, 2_000, keep).unwrap();
                for i in 0..lines {
                    log.record_decision(&event(&(w * 1000 + i).to_string()));
                    log.flush();
                }
            });
        }
    });
    let files: Vec<String> = (1..=keep)
        .filter_map(|n| fs::read_to_string(dir.path().join(format!("audit.jsonl.{n}"))).ok())
        .chain(fs::read_to_string(&path).ok())
        .collect();
    assert!(files.len() > 20, "the trail rotated often: {} files", files.len());
    let written: usize = files.iter().map(|f| f.lines().count()).sum();
    assert_eq!(written, writers * lines, "lines lost to concurrent rotations");
}

/// A change to a trail and where the check must find it.
struct Case {
    name: &'static str,
    change: fn(&mut Files),
    /// (file index from the oldest, line number from 1) and what is wrong.
    expected: (usize, usize, Tamper),
}

fn replace_in(line: &mut Vec<u8>, from: &str, to: &str) {
    let at = line.windows(from.len()).position(|w| w == from.as_bytes()).expect("the text is in the line");
    line.splice(at..at + from.len(), to.bytes());
}

#[test]
fn every_tamper_is_found_and_located_within_a_file_and_across_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let path = written_trail(dir.path(), 1000, 15);
    let pristine = read_trail(&path);
    assert!(
        pristine.len() >= 4 && pristine.iter().all(|(_, l)| l.len() >= 3),
        "{:?}",
        pristine.iter().map(|f| f.1.len()).collect::<Vec<_>>()
    );
    // `m`: a middle file; `b`: the boundary between the two newest files.
    let m = 1;
    let b = pristine.len() - 2;
    let last_of_b = pristine[b].1.len();
    let cases = [
        Case {
            name: "edit a byte",
            change: |f| replace_in(&mut f[1].1[1], "read_file", "read_fild"),
            expected: (m, 2, Tamper::Edited),
        },
        Case { name: "delete a line", change: |f| drop(f[1].1.remove(1)), expected: (m, 2, Tamper::Deleted) },
        Case {
            name: "insert a copy",
            change: |f| {
                let copy = f[1].1[0].clone();
                f[1].1.insert(2, copy);
            },
            expected: (m, 3, Tamper::Inserted),
        },
        Case { name: "swap two lines", change: |f| f[1].1.swap(0, 1), expected: (m, 1, Tamper::Reordered) },
        Case {
            name: "truncate the newest file",
            change: |f| {
                let last = f.last_mut().unwrap().1.last_mut().unwrap();
                last.truncate(last.len() / 2);
            },
            expected: (pristine.len() - 1, pristine.last().unwrap().1.len(), Tamper::Truncated),
        },
        Case {
            name: "edit a byte of the last line before a rotation",
            change: |f| {
                let b = f.len() - 2;
                replace_in(f[b].1.last_mut().unwrap(), "allow", "deny!")
            },
            expected: (b, last_of_b, Tamper::Edited),
        },
        Case {
            name: "delete the last line before a rotation",
            change: |f| {
                let b = f.len() - 2;
                f[b].1.pop();
            },
            expected: (b + 1, 1, Tamper::Deleted),
        },
        Case {
            name: "insert a copy after a rotation",
            change: |f| {
                let b = f.len() - 2;
                let copy = f[b].1.last().unwrap().clone();
                f[b + 1].1.insert(0, copy);
            },
            expected: (b + 1, 1, Tamper::Inserted),
        },
        Case {
            name: "swap the lines on either side of a rotation",
            change: |f| {
                let b = f.len() - 2;
                let (older, newer) = f.split_at_mut(b + 1);
                std::mem::swap(older[b].1.last_mut().unwrap(), &mut newer[0].1[0]);
            },
            expected: (b, last_of_b, Tamper::Reordered),
        },
        Case {
            name: "truncate a rotated file",
            change: |f| {
                let b = f.len() - 2;
                let last = f[b].1.last_mut().unwrap();
                last.truncate(40);
            },
            expected: (b, last_of_b, Tamper::Truncated),
        },
    ];
    assert_eq!(verify(&pristine).problem, None);
    for case in cases {
        let mut files = pristine.clone();
        (case.change)(&mut files);
        let (file, line, tamper) = case.expected;
        let problem = verify(&files).problem.unwrap_or_else(|| panic!("{}: not found", case.name));
        assert_eq!(
            (problem.at.clone(), problem.tamper),
            (Place { file: pristine[file].0.clone(), line }, tamper),
            "{}: {problem}",
            case.name
        );
    }
}

#[test]
fn lines_without_the_chain_are_named_not_verified() {
    let old = "{\"time\":\"2026-01-01T00:00:00Z\",\"session\":\"s\",\"kind\":\"request\"}\n";
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    fs::write(&path, old.repeat(3)).unwrap();
    let log = AuditLog::open(&path, u64::MAX, 0).unwrap();
    log.record_decision(&event("1"));
    log.flush();
    let files = read_trail(&path);
    let verdict = verify(&files);
    assert_eq!(verdict.problem, None);
    assert_eq!((verdict.unchained, verdict.checked), (3, 1));
    let (first, last) = verdict.unchained_span.unwrap();
    assert_eq!((first.line, last.line), (1, 3));
    // Among chained lines, a line without the chain is a problem.
    let mut mixed = files.clone();
    mixed[0].1.push(old.as_bytes().to_vec());
    let problem = verify(&mixed).problem.unwrap();
    assert_eq!((problem.at.line, problem.tamper), (5, Tamper::Unchained));
}

/// One change to a trail.
#[derive(Debug, Clone)]
enum Change {
    /// Byte `offset` (modulo the line's length) of line `line` becomes `byte`.
    Edit {
        line: usize,
        offset: usize,
        byte: u8,
    },
    Delete {
        line: usize,
    },
    /// A copy of line `from` put before line `at`.
    Insert {
        from: usize,
        at: usize,
    },
    Swap {
        a: usize,
        b: usize,
    },
}

fn chained_lines(count: usize) -> Vec<Vec<u8>> {
    let mut chain = Chain::new();
    let mut encoder = Encoder::default();
    let mut out = Vec::new();
    for i in 0..count {
        let mut raw = Vec::new();
        let id = i.to_string();
        event(&id).write_json(&mut raw, &mut encoder);
        raw.push(b'\n');
        chain.seal(&raw, &mut out);
    }
    lines_of(&out)
}

proptest! {
    /// Any one change to a whole trail is found, except to its newest line, which only
    /// the next line written (or a head kept elsewhere) vouches for: edits and
    /// deletions touch the lines before it.
    #[test]
    fn any_single_change_is_found(count in 3usize..12, pick in any::<(usize, usize, usize)>(), kind in 0u8..4, byte in any::<u8>()) {
        let pristine = chained_lines(count);
        let (p, q, offset) = pick;
        let mut lines = pristine.clone();
        let change = match kind {
            0 => Change::Edit { line: p % (count - 1), offset, byte },
            1 => Change::Delete { line: p % (count - 1) },
            2 => Change::Insert { from: p % count, at: q % (count + 1) },
            _ => {
                let a = p % count;
                let b = (a + 1 + q % (count - 1)) % count;
                Change::Swap { a: a.min(b), b: a.max(b) }
            }
        };
        let expected_lines: Vec<usize> = match change {
            Change::Edit { line, offset, byte } => {
                let at = offset % lines[line].len();
                prop_assume!(lines[line][at] != byte);
                lines[line][at] = byte;
                vec![line + 1, line + 2]
            }
            Change::Delete { line } => {
                lines.remove(line);
                vec![line + 1]
            }
            Change::Insert { from, at } => {
                lines.insert(at, pristine[from].clone());
                // Two identical lines: the second of them is named, or the copy
                // where it is out of order before the original.
                vec![at + 1, from + 2]
            }
            Change::Swap { a, b } => {
                lines.swap(a, b);
                vec![a + 1]
            }
        };
        let verdict = verify(&vec![("audit.jsonl".to_owned(), lines)]);
        let problem = verdict.problem.expect("the change is found");
        prop_assert!(expected_lines.contains(&problem.at.line), "{change:?}: {problem}");
    }
}

#[test]
fn a_checkpoint_records_other_writers_heads_and_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let (log_a, log_b) = (AuditLog::open(&a, u64::MAX, 0).unwrap(), AuditLog::open(&b, u64::MAX, 0).unwrap());
    assert_eq!(log_b.head(), None, "no line yet, no head");
    log_b.record_decision(&event("1"));
    log_b.record_decision(&event("2"));
    let seen = log_b.head().expect("two lines");
    let last_of_b = fs::read(&b).unwrap();
    let last_of_b = lines_of(&last_of_b).pop().unwrap();
    assert_eq!((seen.seq, seen.hash.as_bytes()), (1, &line_hash(&last_of_b)[..]), "the head is b's newest line");

    let after = log_a.record_checkpoint("r1", std::slice::from_ref(&seen)).expect("a wrote its checkpoint");
    assert_eq!((after.writer.as_str(), after.seq), (log_a.writer_id().as_str(), 0));
    let line = fs::read_to_string(&a).unwrap();
    let (by, heads) = checkpoint_heads(line.trim_end()).expect("a checkpoint line");
    assert_eq!((by, heads), (log_a.writer_id(), vec![seen]));
    let parsed: Value = serde_json::from_str(&line).unwrap();
    assert_eq!((parsed["kind"].as_str(), parsed["session"].as_str()), (Some("checkpoint"), Some("r1")));
    assert_eq!(checkpoint_heads(&String::from_utf8(last_of_b).unwrap()), None, "other lines are no checkpoints");
    let verdict = verify(&read_trail(&a));
    assert!(verdict.problem.is_none(), "a checkpoint is chained like any line: {verdict:?}");
}

#[test]
fn heads_read_from_elsewhere_must_have_the_shapes_a_writer_gives_them() {
    let hash = "ab".repeat(32);
    assert!(chain::ChainHead::checked("0123456789abcdef", 4, &hash).is_some());
    assert!(chain::ChainHead::checked("0123456789abcdeF", 4, &hash).is_none(), "upper case");
    assert!(chain::ChainHead::checked("0123456789abcdef\"", 4, &hash).is_none(), "a quote");
    assert!(chain::ChainHead::checked("0123456789abcdef", 4, &hash[1..]).is_none(), "short hash");
}
