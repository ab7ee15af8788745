//! The hash chain: every line names the process that wrote it (`writer`), its number in
//! that writer's sequence (`seq`, from 0) and the SHA-256 of that writer's previous line
//! (`prev`, lowercase hex, over the line's exact bytes with its newline).
//!
//! Several `clawai proxy` processes append to one trail at once (one per MCP server),
//! each with its own `write`s: lines of different writers interleave in the file, and
//! no process knows what the others wrote without reading the file back or locking it,
//! both on the path of every decided call. So each writer chains its own lines, and a
//! reader checks every writer's chain in file order (rotated files oldest first). A
//! writer's first line names [`GENESIS`] as `prev`; its line after a rotation names its
//! last line in the file before.
//!
//! The chain members are added when the lines are written, not when the events are
//! recorded: the numbering and hashing happen under the lock of the file, in the order
//! the lines reach it, while the other relay thread records its events meanwhile.

use ring::digest::{Context, SHA256};
use ring::rand::{SecureRandom, SystemRandom};

/// The `prev` of a writer's first line: 64 zeros.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// How long a writer id is, in hex digits (64 random bits).
pub const WRITER_DIGITS: usize = 16;

/// One writer's chain: who it is, how many lines it wrote, the hash of the last one.
#[derive(Debug, Clone)]
pub(super) struct Chain {
    writer: [u8; WRITER_DIGITS],
    /// The number the next line gets.
    seq: u64,
    /// The hex SHA-256 of the last line written ([`GENESIS`] before the first).
    prev: [u8; 64],
}

impl Chain {
    /// A new writer, with a random id.
    pub(super) fn new() -> Chain {
        let mut random = [0u8; WRITER_DIGITS / 2];
        if SystemRandom::new().fill(&mut random).is_err() {
            // No system randomness: the time and process id still tell writers apart.
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let mixed = nanos.as_nanos() as u64 ^ (u64::from(std::process::id()) << 40);
            random = mixed.to_be_bytes();
        }
        let mut writer = [0u8; WRITER_DIGITS];
        hex_into(&random, &mut writer);
        let mut prev = [0u8; 64];
        prev.copy_from_slice(GENESIS.as_bytes());
        Chain { writer, seq: 0, prev }
    }

    /// This writer's id, as written in its lines.
    pub(super) fn writer(&self) -> &str {
        std::str::from_utf8(&self.writer).expect("hex digits")
    }

    /// The last line written: `None` before the first.
    pub(super) fn head(&self) -> Option<ChainHead> {
        let seq = self.seq.checked_sub(1)?;
        let hash = std::str::from_utf8(&self.prev).expect("hex digits").to_owned();
        Some(ChainHead { writer: self.writer().to_owned(), seq, hash })
    }

    /// Appends `lines` (JSON objects, each ending `}\n`, as [`super::Event::write_json`]
    /// and a newline make them) to `out`, each with `,"writer":…,"seq":…,"prev":…` added
    /// before its closing brace, and moves the chain past them.
    pub(super) fn seal(&mut self, lines: &[u8], out: &mut Vec<u8>) {
        out.reserve(lines.len() + lines.len() / 4);
        let mut rest = lines;
        while !rest.is_empty() {
            let end = memchr::memchr(b'\n', rest).unwrap_or(rest.len());
            let (line, after) = rest.split_at(end);
            rest = after.get(1..).unwrap_or_default();
            let start = out.len();
            debug_assert_eq!(line.last(), Some(&b'}'), "an event line ends with its closing brace");
            out.extend_from_slice(line.strip_suffix(b"}").unwrap_or(line));
            out.extend_from_slice(b",\"writer\":\"");
            out.extend_from_slice(&self.writer);
            out.extend_from_slice(b"\",\"seq\":");
            out.extend_from_slice(itoa::Buffer::new().format(self.seq).as_bytes());
            out.extend_from_slice(b",\"prev\":\"");
            out.extend_from_slice(&self.prev);
            out.extend_from_slice(b"\"}\n");
            let mut hash = Context::new(&SHA256);
            hash.update(&out[start..]);
            hex_into(hash.finish().as_ref(), &mut self.prev);
            self.seq += 1;
        }
    }
}

/// The lowercase hex SHA-256 of `line` (its exact bytes, newline included).
pub fn line_hash(line: &[u8]) -> [u8; 64] {
    let mut hex = [0u8; 64];
    hex_into(ring::digest::digest(&SHA256, line).as_ref(), &mut hex);
    hex
}

/// Writes `bytes` as lowercase hex into `out` (twice as long).
fn hex_into(bytes: &[u8], out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for (byte, pair) in bytes.iter().zip(out.chunks_exact_mut(2)) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0xf)];
    }
}

/// A writer's newest line as another writer saw it: its id, its `seq` and the hex
/// SHA-256 of the line (what the writer's next line would name as `prev`). In cluster
/// mode each writer publishes its own and records the others' in `checkpoint` events,
/// so that a verifier can tell when one writer's newest lines were cut (design §12).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainHead {
    /// The writer's id ([`WRITER_DIGITS`] hex digits).
    pub writer: String,
    /// The line's number in that writer's chain.
    pub seq: u64,
    /// The hex SHA-256 of the line, newline included.
    pub hash: String,
}

impl ChainHead {
    /// A head read from elsewhere (the shared store, a trail line), if its members have
    /// the shapes a writer gives them: what is written back into the trail must need no
    /// escaping.
    pub fn checked(writer: &str, seq: u64, hash: &str) -> Option<ChainHead> {
        let hex =
            |text: &str, len: usize| text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        (hex(writer, WRITER_DIGITS) && hex(hash, 64)).then(|| ChainHead {
            writer: writer.to_owned(),
            seq,
            hash: hash.to_owned(),
        })
    }
}

/// Appends `,"heads":[{"writer":…,"seq":…,"hash":…},…]`.
pub(super) fn write_heads(out: &mut Vec<u8>, heads: &[ChainHead]) {
    out.extend_from_slice(b",\"heads\":[");
    for (n, head) in heads.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        // Checked shapes ([`ChainHead::checked`], or made by [`Chain::head`]): hex only.
        out.extend_from_slice(b"{\"writer\":\"");
        out.extend_from_slice(head.writer.as_bytes());
        out.extend_from_slice(b"\",\"seq\":");
        out.extend_from_slice(itoa::Buffer::new().format(head.seq).as_bytes());
        out.extend_from_slice(b",\"hash\":\"");
        out.extend_from_slice(head.hash.as_bytes());
        out.extend_from_slice(b"\"}");
    }
    out.push(b']');
}

/// The heads a `checkpoint` line records, with the line's own writer; `None` for any
/// other line (or a checkpoint whose heads are not in the shape a writer writes).
pub fn checkpoint_heads(line: &str) -> Option<(String, Vec<ChainHead>)> {
    // Most lines are not checkpoints: a substring test spares parsing them.
    if !line.contains("\"checkpoint\"") {
        return None;
    }
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    if value.get("kind")?.as_str()? != super::EventKind::Checkpoint.as_str() {
        return None;
    }
    let writer = value.get("writer")?.as_str()?.to_owned();
    let heads = value
        .get("heads")?
        .as_array()?
        .iter()
        .map(|head| {
            ChainHead::checked(head.get("writer")?.as_str()?, head.get("seq")?.as_u64()?, head.get("hash")?.as_str()?)
        })
        .collect::<Option<Vec<_>>>()?;
    Some((writer, heads))
}
