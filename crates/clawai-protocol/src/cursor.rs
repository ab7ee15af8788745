//! A position in a line of bytes and the small steps both hand-written JSON readers
//! take: the skim ([`crate::skim`]) and the one-pass reader ([`crate::quick`]). Each adds
//! its own way of reading values in its own module.

/// A position in `b`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cursor<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) i: usize,
}

impl<'a> Cursor<'a> {
    /// At the start of `b`.
    pub(crate) fn new(b: &'a [u8]) -> Self {
        Cursor { b, i: 0 }
    }

    pub(crate) fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    pub(crate) fn next(&mut self) -> Option<u8> {
        let c = self.peek()?;
        self.i += 1;
        Some(c)
    }

    pub(crate) fn expect(&mut self, c: u8) -> Option<()> {
        (self.next()? == c).then_some(())
    }

    /// Moves past JSON's whitespace (not the form feed or other ASCII whitespace).
    pub(crate) fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    /// True when only whitespace is left.
    pub(crate) fn only_ws_left(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }
}
