//! Checking a trail's hash chains ([`super::chain`]): every writer's lines must follow
//! each other in file order, each naming the hash of the one before, numbered without
//! gaps or repeats. The first line that breaks this is named with what is wrong with it.

use std::collections::HashMap;
use std::fmt;
use std::io::{self, BufRead};

use serde::Deserialize;

use super::chain::{GENESIS, line_hash};

/// Where a line is: the file as given and the line's number in it, from 1 (or the
/// source and the number it gave the line, [`Verifier::add_line`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The file, as its name was given.
    pub file: String,
    /// The line number, from 1.
    pub line: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

/// What was done to the trail, as far as the chain tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// A line's bytes changed after it was written.
    Edited,
    /// Lines are missing.
    Deleted,
    /// A line that its writer did not write there.
    Inserted,
    /// Lines are in another order than written.
    Reordered,
    /// The last line of a file is cut short (a partial write, or a cut file).
    Truncated,
    /// A line that is not a JSON object.
    NotAnEvent,
    /// A line without the chain's members among lines with them.
    Unchained,
}

impl Tamper {
    /// One word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            Tamper::Edited => "edited",
            Tamper::Deleted => "deleted",
            Tamper::Inserted => "inserted",
            Tamper::Reordered => "reordered",
            Tamper::Truncated => "truncated",
            Tamper::NotAnEvent => "not an event",
            Tamper::Unchained => "unchained",
        }
    }
}

/// The first break in a chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The line that is wrong (for a deletion: the line after the gap).
    pub at: Place,
    /// What is wrong.
    pub tamper: Tamper,
    /// In words, naming the other lines involved.
    pub detail: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {}", self.at, self.tamper.as_str(), self.detail)
    }
}

/// One writer's chain, as found.
#[derive(Debug, Clone)]
pub struct WriterSummary {
    /// The writer id.
    pub writer: String,
    /// The session and server of its first line.
    pub session: Option<String>,
    /// The server name of its first line.
    pub server: Option<String>,
    /// How many of its events were checked.
    pub events: usize,
    /// The number of its first line found (above 0: its first lines are in files not
    /// given, rotated away).
    pub first_seq: u64,
    /// Its last line, and that line's hash: the head to keep elsewhere.
    pub last: Option<(Place, String)>,
}

/// What a check found.
#[derive(Debug, Clone)]
pub struct Verdict {
    /// The first break, if any.
    pub problem: Option<Problem>,
    /// Chained events checked (up to the problem, if any).
    pub checked: usize,
    /// Every writer seen, in the order of their first lines.
    pub writers: Vec<WriterSummary>,
    /// Lines before the first chained one that carry no chain (written before clawai
    /// chained its trail): not verified.
    pub unchained: usize,
    /// The first and last of those lines.
    pub unchained_span: Option<(Place, Place)>,
    /// The heads asked about ([`Verifier::finish_with_heads`]) that are not the hash
    /// of any line checked.
    pub heads_missing: Vec<String>,
}

/// Reads the files of a trail in order (oldest first) and checks its chains.
#[derive(Debug, Default)]
pub struct Verifier {
    files: Vec<String>,
    records: Vec<Record>,
    writers: Vec<WriterInfo>,
    writer_ids: HashMap<String, u32>,
}

#[derive(Debug)]
struct WriterInfo {
    id: String,
    session: Option<String>,
    server: Option<String>,
}

#[derive(Debug)]
struct Record {
    file: u32,
    line: u64,
    kind: Kind,
}

/// A place lines were added from ([`Verifier::add_source`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SourceId(u32);

#[derive(Debug)]
enum Kind {
    Chained { writer: u32, seq: u64, prev: [u8; 64], hash: [u8; 64] },
    Unchained,
    NotAnEvent(String),
    Truncated,
}

/// The members the check reads; the others are parsed only to see that the line is JSON.
#[derive(Deserialize)]
struct Fields<'a> {
    #[serde(borrow)]
    writer: Option<std::borrow::Cow<'a, str>>,
    seq: Option<u64>,
    #[serde(borrow)]
    prev: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    session: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    server: Option<std::borrow::Cow<'a, str>>,
}

impl Verifier {
    /// A check with no file read yet.
    pub fn new() -> Verifier {
        Verifier::default()
    }

    /// Reads the next file of the trail (files are given oldest first).
    pub fn add_file(&mut self, name: &str, mut reader: impl BufRead) -> io::Result<()> {
        let file = self.add_source(name);
        let mut line = Vec::new();
        let mut number = 0u64;
        loop {
            line.clear();
            if reader.read_until(b'\n', &mut line)? == 0 {
                return Ok(());
            }
            number += 1;
            self.add_line(file, number, &line);
        }
    }

    /// Starts a place lines come from that is not a file read whole (a database table):
    /// its lines follow with [`Verifier::add_line`], each under the number that finds it
    /// there. Sources are given oldest first, like files.
    pub fn add_source(&mut self, name: &str) -> SourceId {
        self.files.push(name.to_owned());
        SourceId(self.files.len() as u32 - 1)
    }

    /// The next line of `source`, with its newline (without one it counts as cut
    /// short), named by `number` in what is reported.
    pub fn add_line(&mut self, source: SourceId, number: u64, line: &[u8]) {
        let kind = if line.last() != Some(&b'\n') { Kind::Truncated } else { self.classify(line) };
        self.records.push(Record { file: source.0, line: number, kind });
    }

    fn classify(&mut self, line: &[u8]) -> Kind {
        let fields = match serde_json::from_slice::<Fields>(line) {
            Ok(fields) => fields,
            Err(e) => return Kind::NotAnEvent(e.to_string()),
        };
        let (Some(writer), Some(seq), Some(prev)) = (fields.writer, fields.seq, fields.prev) else {
            return Kind::Unchained;
        };
        let Ok(prev) = <[u8; 64]>::try_from(prev.as_bytes()) else {
            return Kind::NotAnEvent(format!("`prev` is not a SHA-256 in hex: {prev:?}"));
        };
        let next = self.writers.len() as u32;
        let writer = *self.writer_ids.entry(writer.to_string()).or_insert_with(|| {
            self.writers.push(WriterInfo {
                id: writer.to_string(),
                session: fields.session.map(Into::into),
                server: fields.server.map(Into::into),
            });
            next
        });
        Kind::Chained { writer, seq, prev, hash: line_hash(line) }
    }

    /// Checks the chains of everything read. `older_files_missing`: the trail goes on
    /// in older files not given (rotated away), so a writer may begin past its first
    /// line.
    pub fn finish(self, older_files_missing: bool) -> Verdict {
        self.finish_with_heads(older_files_missing, &[])
    }

    /// [`Verifier::finish`], and also whether each of `heads` (hex SHA-256 of lines
    /// noted earlier, as a check prints them) is still the hash of a line that checks
    /// out: the one thing that vouches for a writer's newest lines.
    pub fn finish_with_heads(self, older_files_missing: bool, heads: &[String]) -> Verdict {
        Walk::new(&self, older_files_missing).run(heads)
    }

    fn place(&self, index: usize) -> Place {
        let record = &self.records[index];
        Place { file: self.files[record.file as usize].clone(), line: record.line as usize }
    }
}

/// The last line of a writer seen so far.
#[derive(Clone, Copy)]
struct Last {
    seq: u64,
    hash: [u8; 64],
    index: usize,
}

struct Walk<'v> {
    v: &'v Verifier,
    older_files_missing: bool,
    /// Where each (writer, number) occurs, in file order.
    by_number: HashMap<(u32, u64), Vec<usize>>,
    /// Where a line with each hash first occurs.
    by_hash: HashMap<[u8; 64], usize>,
    last: Vec<Option<Last>>,
    summaries: Vec<WriterSummary>,
    order: Vec<u32>,
}

impl<'v> Walk<'v> {
    fn new(v: &'v Verifier, older_files_missing: bool) -> Walk<'v> {
        let mut by_number: HashMap<(u32, u64), Vec<usize>> = HashMap::new();
        for (index, record) in v.records.iter().enumerate() {
            if let Kind::Chained { writer, seq, .. } = record.kind {
                by_number.entry((writer, seq)).or_default().push(index);
            }
        }
        let summaries = v
            .writers
            .iter()
            .map(|w| WriterSummary {
                writer: w.id.clone(),
                session: w.session.clone(),
                server: w.server.clone(),
                events: 0,
                first_seq: 0,
                last: None,
            })
            .collect();
        Walk {
            v,
            older_files_missing,
            by_number,
            by_hash: HashMap::new(),
            last: vec![None; v.writers.len()],
            summaries,
            order: Vec::new(),
        }
    }

    fn run(mut self, heads: &[String]) -> Verdict {
        let mut checked = 0;
        let mut unchained = 0;
        let mut unchained_span = None;
        let mut chained_seen = false;
        let mut problem = None;
        for (index, record) in self.v.records.iter().enumerate() {
            let found = match &record.kind {
                Kind::Truncated => Some(self.problem(index, Tamper::Truncated, "the line is cut short: a partial write, or the file was cut".into())),
                Kind::NotAnEvent(error) => Some(self.problem(index, Tamper::NotAnEvent, format!("not a JSON event ({error}): edited or corrupt"))),
                Kind::Unchained if chained_seen => Some(self.problem(
                    index,
                    Tamper::Unchained,
                    "the line has no `writer`, `seq` and `prev` among lines that do: added by hand, or written by an older clawai still running".into(),
                )),
                Kind::Unchained => {
                    unchained += 1;
                    let here = self.v.place(index);
                    unchained_span = Some(match unchained_span.take() {
                        Some((first, _)) => (first, here),
                        None => (here.clone(), here),
                    });
                    None
                }
                Kind::Chained { writer, seq, prev, hash } => {
                    chained_seen = true;
                    self.step(index, *writer, *seq, prev, hash)
                }
            };
            if found.is_some() {
                problem = found;
                break;
            }
            if matches!(record.kind, Kind::Chained { .. }) {
                checked += 1;
            }
        }
        let summaries = std::mem::take(&mut self.summaries);
        let writers = self.order.iter().map(|&w| summaries[w as usize].clone()).collect();
        let heads_missing = heads
            .iter()
            .filter(|head| {
                let key = <[u8; 64]>::try_from(head.to_ascii_lowercase().as_bytes()).ok();
                key.is_none_or(|key| !self.by_hash.contains_key(&key))
            })
            .cloned()
            .collect();
        Verdict { problem, checked, writers, unchained, unchained_span, heads_missing }
    }

    fn problem(&self, index: usize, tamper: Tamper, detail: String) -> Problem {
        Problem { at: self.v.place(index), tamper, detail }
    }

    /// The first line after `after` with this writer and number.
    fn later(&self, writer: u32, seq: u64, after: usize) -> Option<usize> {
        self.by_number.get(&(writer, seq))?.iter().copied().find(|&i| i > after)
    }

    fn earlier(&self, writer: u32, seq: u64, before: usize) -> Option<usize> {
        self.by_number.get(&(writer, seq))?.iter().copied().find(|&i| i < before)
    }

    /// Checks one chained line against its writer's previous one.
    fn step(&mut self, index: usize, writer: u32, seq: u64, prev: &[u8; 64], hash: &[u8; 64]) -> Option<Problem> {
        let v = self.v;
        let name = &v.writers[writer as usize].id;
        if let Some(&copy) = self.by_hash.get(hash) {
            return Some(self.problem(index, Tamper::Inserted, format!("a copy of {}", self.place_text(copy))));
        }
        let problem = match self.last[writer as usize] {
            None => self.first(index, writer, seq, prev),
            Some(last) if seq == last.seq + 1 && *prev == last.hash => None,
            Some(last) if *prev == last.hash => Some(self.problem(
                index,
                Tamper::Edited,
                format!(
                    "it follows event #{} of writer {name} ({}) but is numbered #{seq}",
                    last.seq,
                    self.place_text(last.index)
                ),
            )),
            Some(last) if seq == last.seq + 1 => {
                // The link is broken with the numbers in order: one of the two lines changed.
                // If this line's successor still names this line's hash, this line is as
                // written and the one before it changed.
                let successor = self.later(writer, seq + 1, index);
                let this_intact = successor.is_some_and(|next| match &self.v.records[next].kind {
                    Kind::Chained { prev, .. } => prev == hash,
                    _ => false,
                });
                if this_intact {
                    Some(self.problem(
                        last.index,
                        Tamper::Edited,
                        format!(
                            "event #{} of writer {name} changed after it was written: the next line of its writer ({}) names another hash for it",
                            last.seq,
                            self.place_text(index)
                        ),
                    ))
                } else {
                    Some(self.problem(
                        index,
                        Tamper::Edited,
                        format!(
                            "event #{seq} of writer {name} does not name the hash of the line before it ({}): one of the two changed after it was written",
                            self.place_text(last.index)
                        ),
                    ))
                }
            }
            Some(last) if seq > last.seq + 1 => {
                let expected = last.seq + 1;
                Some(match self.later(writer, expected, index) {
                    Some(there) => self.problem(
                        index,
                        Tamper::Reordered,
                        format!(
                            "event #{seq} of writer {name} comes before its event #{expected} ({})",
                            self.place_text(there)
                        ),
                    ),
                    None => self.problem(
                        index,
                        Tamper::Deleted,
                        format!(
                            "{} of writer {name} missing before it (its line before is {})",
                            events(expected, seq - 1),
                            self.place_text(last.index)
                        ),
                    ),
                })
            }
            Some(last) => Some(match self.earlier(writer, seq, index) {
                Some(first) => self.problem(
                    index,
                    Tamper::Inserted,
                    format!("a second event #{seq} of writer {name} (the first is {})", self.place_text(first)),
                ),
                None => self.problem(
                    index,
                    Tamper::Reordered,
                    format!(
                        "event #{seq} of writer {name} comes after its event #{} ({})",
                        last.seq,
                        self.place_text(last.index)
                    ),
                ),
            }),
        };
        if problem.is_none() {
            self.by_hash.insert(*hash, index);
            let summary = &mut self.summaries[writer as usize];
            summary.events += 1;
            summary.last = Some((self.v.place(index), String::from_utf8_lossy(hash).into_owned()));
            self.last[writer as usize] = Some(Last { seq, hash: *hash, index });
        }
        problem
    }

    /// A writer's first line in the files given.
    fn first(&mut self, index: usize, writer: u32, seq: u64, prev: &[u8; 64]) -> Option<Problem> {
        let v = self.v;
        let name = &v.writers[writer as usize].id;
        if seq == 0 && prev != GENESIS.as_bytes() {
            return Some(self.problem(
                index,
                Tamper::Edited,
                format!("the first event of writer {name} names a `prev` other than the genesis value (64 zeros)"),
            ));
        }
        if seq > 0 && !self.older_files_missing {
            return Some(match self.later(writer, 0, index) {
                Some(there) => self.problem(
                    index,
                    Tamper::Reordered,
                    format!("event #{seq} of writer {name} comes before its first event ({})", self.place_text(there)),
                ),
                None => self.problem(
                    index,
                    Tamper::Deleted,
                    format!("{} of writer {name} missing before it, its first", events(0, seq - 1)),
                ),
            });
        }
        self.summaries[writer as usize].first_seq = seq;
        self.order.push(writer);
        None
    }

    fn place_text(&self, index: usize) -> String {
        self.v.place(index).to_string()
    }
}

/// `event #3 is` or `events #3–#5 are` (3 lines).
fn events(first: u64, last: u64) -> String {
    if first == last {
        format!("event #{first} is")
    } else {
        format!("events #{first}–#{last} are ({} lines)", last - first + 1)
    }
}
