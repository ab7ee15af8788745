//! Newline-delimited JSON-RPC framing with a size limit.
//!
//! A line longer than the limit is not kept: its first bytes are kept (so the reply can
//! name the request's id when it comes early) and the rest is discarded up to the next
//! newline. Memory stays bounded by the limit however long the session.

use std::io::{self, BufRead, BufReader, Read};

/// Bytes of an oversize line kept to find its id.
pub const OVERSIZE_PREFIX: usize = 64 * 1024;

/// One frame read from the stream.
#[derive(Debug, PartialEq, Eq)]
pub enum Frame {
    /// A complete line, with its trailing newline when it had one.
    Line(Vec<u8>),
    /// A line over the limit: its first bytes and its full length.
    Oversize {
        /// The first [`OVERSIZE_PREFIX`] bytes.
        prefix: Vec<u8>,
        /// The length of the line, newline excluded.
        length: usize,
    },
}

/// One frame, lent by the reader until its next call: a line that arrived whole in the
/// read buffer is not copied at all.
#[derive(Debug, PartialEq, Eq)]
pub enum FrameRef<'a> {
    /// A complete line, with its trailing newline when it had one.
    Line(&'a [u8]),
    /// A line over the limit: its first bytes and its full length.
    Oversize {
        /// The first [`OVERSIZE_PREFIX`] bytes.
        prefix: &'a [u8],
        /// The length of the line, newline excluded.
        length: usize,
    },
}

impl FrameRef<'_> {
    /// An owned copy.
    pub fn to_owned(&self) -> Frame {
        match self {
            FrameRef::Line(line) => Frame::Line(line.to_vec()),
            FrameRef::Oversize { prefix, length } => Frame::Oversize { prefix: prefix.to_vec(), length: *length },
        }
    }
}

/// Bytes read from the stream at a time.
const READ_CHUNK: usize = 64 * 1024;

/// A line longer than one read is assembled in a buffer that is kept for the next one
/// (large results come one after another), unless it grew past this.
const KEEP_ASSEMBLY: usize = 4 * 1024 * 1024;

/// Reads frames from a stream.
pub struct LineReader<R> {
    inner: BufReader<R>,
    max: usize,
    /// Where a line that spans reads is assembled.
    assembly: Vec<u8>,
    /// Bytes of the read buffer lent out as the last frame, consumed at the next call.
    lent: usize,
}

impl<R: Read> LineReader<R> {
    /// A reader refusing lines longer than `max` bytes (newline excluded).
    pub fn new(inner: R, max: usize) -> Self {
        Self::with_capacity(READ_CHUNK, inner, max)
    }

    /// The same, reading `capacity` bytes at a time.
    pub fn with_capacity(capacity: usize, inner: R, max: usize) -> Self {
        LineReader { inner: BufReader::with_capacity(capacity, inner), max, assembly: Vec::new(), lent: 0 }
    }

    /// True when a whole line after the last frame is already buffered, so the next frame
    /// comes without waiting. Writers batch their output while this holds and flush when
    /// it does not.
    pub fn has_buffered_line(&self) -> bool {
        memchr::memchr(b'\n', &self.inner.buffer()[self.lent..]).is_some()
    }

    /// The next frame as an owned copy, or `None` at end of stream.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        Ok(self.next_frame_ref()?.map(|f| f.to_owned()))
    }

    /// The next frame, lent until the next call, or `None` at end of stream. A last line
    /// without a newline is returned as a line.
    pub fn next_frame_ref(&mut self) -> io::Result<Option<FrameRef<'_>>> {
        self.inner.consume(std::mem::take(&mut self.lent));
        if self.assembly.capacity() > KEEP_ASSEMBLY {
            self.assembly = Vec::new();
        }
        self.assembly.clear();
        let mut oversize: Option<usize> = None;
        loop {
            let available = match self.inner.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if available.is_empty() {
                return Ok(match (oversize, self.assembly.is_empty()) {
                    (Some(length), _) => Some(FrameRef::Oversize { prefix: &self.assembly, length }),
                    (None, true) => None,
                    (None, false) => Some(FrameRef::Line(&self.assembly)),
                });
            }
            let newline = memchr::memchr(b'\n', available);
            if let Some(i) = newline
                && oversize.is_none()
                && self.assembly.is_empty()
                && i <= self.max
            {
                // The whole line is in the buffer: lend it.
                self.lent = i + 1;
                return Ok(Some(FrameRef::Line(&self.inner.buffer()[..=i])));
            }
            let (chunk, done) = match newline {
                Some(i) => (&available[..=i], true),
                None => (available, false),
            };
            let used = chunk.len();
            let content = if done { used - 1 } else { used };
            match &mut oversize {
                Some(length) => *length += content,
                None if self.assembly.len() + content > self.max => {
                    let had = self.assembly.len();
                    let keep = OVERSIZE_PREFIX.saturating_sub(had).min(content);
                    self.assembly.extend_from_slice(&chunk[..keep]);
                    self.assembly.truncate(OVERSIZE_PREFIX);
                    oversize = Some(had + content);
                }
                None => self.assembly.extend_from_slice(chunk),
            }
            self.inner.consume(used);
            if done {
                return Ok(Some(match oversize {
                    Some(length) => FrameRef::Oversize { prefix: &self.assembly, length },
                    None => FrameRef::Line(&self.assembly),
                }));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn frames(input: &[u8], max: usize) -> Vec<Frame> {
        let mut r = LineReader::with_capacity(7, Cursor::new(input.to_vec()), max);
        let mut out = Vec::new();
        while let Some(f) = r.next_frame().unwrap() {
            out.push(f);
        }
        out
    }

    #[test]
    fn splits_lines_and_keeps_newlines() {
        assert_eq!(
            frames(b"{\"a\":1}\n{\"b\":2}\r\nlast", 100),
            vec![
                Frame::Line(b"{\"a\":1}\n".to_vec()),
                Frame::Line(b"{\"b\":2}\r\n".to_vec()),
                Frame::Line(b"last".to_vec())
            ]
        );
    }

    #[test]
    fn oversize_lines_are_cut_and_the_stream_goes_on() {
        let mut input = vec![b'x'; 50];
        input.extend_from_slice(b"\nok\n");
        let f = frames(&input, 20);
        assert_eq!(f.len(), 2);
        match &f[0] {
            Frame::Oversize { prefix, length } => {
                assert_eq!(*length, 50);
                assert!(prefix.len() <= 50);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(f[1], Frame::Line(b"ok\n".to_vec()));
    }

    #[test]
    fn knows_when_a_line_is_waiting() {
        let mut r = LineReader::new(Cursor::new(b"a\nb\nc".to_vec()), 100);
        assert!(!r.has_buffered_line(), "nothing read yet");
        r.next_frame().unwrap();
        assert!(r.has_buffered_line());
        r.next_frame().unwrap();
        assert!(!r.has_buffered_line(), "only a partial line is left");
    }

    #[test]
    fn lent_lines_and_assembled_lines_alternate_correctly() {
        // A buffer of 8 bytes: short lines are lent from it, longer ones assembled.
        let input = b"{}\n0123456789abcdef\n[]\nxyz".to_vec();
        let mut r = LineReader::with_capacity(8, Cursor::new(input), 100);
        assert_eq!(r.next_frame_ref().unwrap(), Some(FrameRef::Line(b"{}\n")));
        assert!(!r.has_buffered_line(), "the lent line itself does not count as waiting");
        assert_eq!(r.next_frame_ref().unwrap(), Some(FrameRef::Line(b"0123456789abcdef\n")));
        assert_eq!(r.next_frame_ref().unwrap(), Some(FrameRef::Line(b"[]\n")));
        assert_eq!(r.next_frame_ref().unwrap(), Some(FrameRef::Line(b"xyz")));
        assert_eq!(r.next_frame_ref().unwrap(), None);
    }

    #[test]
    fn a_line_of_exactly_the_limit_passes() {
        let mut input = vec![b'y'; 20];
        input.push(b'\n');
        assert_eq!(frames(&input, 20), vec![Frame::Line(input.clone())]);
    }
}
