//! Newline-delimited messages read asynchronously with a size limit: the async twin of
//! `clawai_protocol::LineReader`, for the child servers of the HTTP front and the stdin
//! of the `--upstream` front. Memory stays bounded by the limit however long a line is.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt};

/// How much of an oversize message is kept to find its id.
pub const OVERSIZE_PREFIX: usize = 4096;

/// One line read.
pub enum Frame {
    /// A message (with its newline, when it had one).
    Line(Vec<u8>),
    /// A line over the limit, skipped: its first bytes and its length.
    Oversize {
        /// Its first bytes.
        prefix: Vec<u8>,
        /// Its length.
        length: usize,
    },
}

/// The next line, or `None` at end of input.
pub async fn next_frame<R: AsyncBufRead + Unpin>(reader: &mut R, limit: usize) -> io::Result<Option<Frame>> {
    let mut line = Vec::new();
    if (&mut *reader).take(limit as u64 + 1).read_until(b'\n', &mut line).await? == 0 {
        return Ok(None);
    }
    if line.len() <= limit || line.ends_with(b"\n") {
        return Ok(Some(Frame::Line(line)));
    }
    let prefix = line[..line.len().min(OVERSIZE_PREFIX)].to_vec();
    let mut length = line.len();
    let mut rest = Vec::new();
    loop {
        rest.clear();
        let read = (&mut *reader).take(1 << 20).read_until(b'\n', &mut rest).await?;
        length += read;
        if read == 0 || rest.ends_with(b"\n") {
            return Ok(Some(Frame::Oversize { prefix, length }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_and_oversize_lines() {
        let mut input: &[u8] = b"{\"a\":1}\n0123456789abcdef\n{}";
        assert!(matches!(next_frame(&mut input, 10).await.unwrap(), Some(Frame::Line(l)) if l == b"{\"a\":1}\n"));
        assert!(matches!(
            next_frame(&mut input, 10).await.unwrap(),
            Some(Frame::Oversize { prefix, length: 17 }) if prefix == b"0123456789a"
        ));
        assert!(matches!(next_frame(&mut input, 10).await.unwrap(), Some(Frame::Line(l)) if l == b"{}"));
        assert!(next_frame(&mut input, 10).await.unwrap().is_none());
    }
}
