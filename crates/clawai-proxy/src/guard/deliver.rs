//! From a verdict to the messages a transport sends: the one place that says where the
//! bytes of each verdict go. A transport reads a message from one side, hands it to the
//! guard, and sends each [`Delivery`] of the verdict to the side it names; it never
//! decides where a verdict's bytes go itself.

use std::borrow::Cow;
use std::io::{self, BufWriter, Write};

use super::{Guard, Outgoing, Verdict};

/// A side of the conversation the guard stands in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The MCP client.
    Client,
    /// The MCP server.
    Server,
}

impl Side {
    /// The side a message from this one goes to.
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// One message to send.
#[derive(Debug, PartialEq, Eq)]
pub struct Delivery<'m> {
    /// Where it goes.
    pub to: Side,
    /// The message (newline-terminated or not, as the verdict gave it).
    pub bytes: Cow<'m, [u8]>,
    /// True when the guard wrote these bytes (an answer, a replacement, a message it
    /// released or asks itself); false for the message that arrived, passed on.
    pub from_guard: bool,
}

/// The messages of one verdict, in the order they are sent.
#[must_use = "the messages of a verdict must be sent"]
#[derive(Debug)]
pub struct Deliveries<'m>(Inner<'m>);

#[derive(Debug)]
enum Inner<'m> {
    /// Nothing, or one message: no allocation on the path of every message.
    One(Option<Delivery<'m>>),
    /// The messages of a dispatch.
    Many(std::vec::IntoIter<Outgoing>),
}

impl Verdict {
    /// What to send for a message that came from `from`, whose bytes were `original`:
    /// a forwarded or replaced message goes to the other side, a reply back to `from`,
    /// a dispatch's messages each where they say.
    /// `original` is borrowed or owned, as the transport holds it: a forwarded message is
    /// never copied.
    pub fn deliveries<'m>(self, original: impl Into<Cow<'m, [u8]>>, from: Side) -> Deliveries<'m> {
        let one = |to: Side, bytes: Cow<'m, [u8]>, from_guard: bool| {
            Deliveries(Inner::One(Some(Delivery { to, bytes, from_guard })))
        };
        match self {
            Verdict::Forward => one(from.other(), original.into(), false),
            Verdict::Replace(instead) => one(from.other(), Cow::Owned(instead), true),
            Verdict::Reply(answer) => one(from, Cow::Owned(answer), true),
            Verdict::Drop => Deliveries(Inner::One(None)),
            Verdict::Dispatch(messages) => Deliveries(Inner::Many(messages.into_iter())),
        }
    }
}

/// The messages the guard decided off the path of any message ([`super::Guard::settle`],
/// [`super::Guard::server_gone`]), as deliveries.
pub fn dispatched(messages: Vec<Outgoing>) -> Deliveries<'static> {
    Deliveries(Inner::Many(messages.into_iter()))
}

impl<'m> Iterator for Deliveries<'m> {
    type Item = Delivery<'m>;

    fn next(&mut self) -> Option<Delivery<'m>> {
        match &mut self.0 {
            Inner::One(one) => one.take(),
            Inner::Many(messages) => messages.next().map(|message| match message {
                Outgoing::ToServer(bytes) => Delivery { to: Side::Server, bytes: Cow::Owned(bytes), from_guard: true },
                Outgoing::ToClient(bytes) => Delivery { to: Side::Client, bytes: Cow::Owned(bytes), from_guard: true },
            }),
        }
    }
}

/// Bytes batched towards one side before a write. As large as a read from the other
/// side: a burst of pipelined calls read at once then leaves in one write, after one
/// write of the audit trail for all of them. (At 16 KiB the trail was written four times
/// as often, in pieces that cost ext4 more per byte: 13% more CPU per pipelined call.)
const OUT_BUFFER: usize = 64 * 1024;

/// Buffered output towards one side, for the stdio relay: verdicts it takes from the
/// guard's `*_queued` entry points may not be on disk yet, so before anything it holds
/// leaves, it writes the trail through the decisions that let it through. This and
/// [`Guard::on_disk`](super::Guard) are the two places that keep "the audit line is on
/// disk before bytes leave"; no transport writes the trail for that itself.
pub(crate) struct Outbox<W: Write> {
    writer: BufWriter<W>,
    /// The highest [`Guard::decision_mark`] among the messages queued.
    decisions: u64,
}

impl<W: Write> Outbox<W> {
    pub(crate) fn new(inner: W) -> Self {
        Outbox { writer: BufWriter::with_capacity(OUT_BUFFER, inner), decisions: 0 }
    }

    /// Queues one message (newline added when missing), decided (if at all) on the
    /// calling thread.
    pub(crate) fn send(&mut self, guard: &Guard, bytes: &[u8]) -> io::Result<()> {
        self.decisions = self.decisions.max(guard.decision_mark());
        if self.writer.buffer().len() + bytes.len() + 1 > self.writer.capacity() {
            // The buffer is about to go out (or the message bypasses it).
            guard.write_decisions_through(self.decisions);
        }
        self.writer.write_all(bytes)?;
        if !bytes.ends_with(b"\n") {
            self.writer.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Sends what is queued, after the decisions that let it through are on disk. Other
    /// events (responses, messages no rule decides, decisions the other direction has
    /// not sent yet) are left for a later write of the trail, off the message's path.
    pub(crate) fn flush(&mut self, guard: &Guard) -> io::Result<()> {
        if self.writer.buffer().is_empty() {
            return Ok(());
        }
        guard.write_decisions_through(self.decisions);
        self.writer.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(verdict: Verdict, from: Side) -> Vec<(Side, Vec<u8>)> {
        let deliveries: Vec<Delivery> = verdict.deliveries(&b"original"[..], from).collect();
        for delivery in &deliveries {
            assert_eq!(delivery.from_guard, delivery.bytes != &b"original"[..], "{delivery:?}");
        }
        deliveries.into_iter().map(|d| (d.to, d.bytes.into_owned())).collect()
    }

    #[test]
    fn each_verdict_goes_where_it_says_from_either_side() {
        for from in [Side::Client, Side::Server] {
            assert_eq!(sent(Verdict::Forward, from), [(from.other(), b"original".to_vec())]);
            assert_eq!(sent(Verdict::Replace(b"instead".to_vec()), from), [(from.other(), b"instead".to_vec())]);
            assert_eq!(sent(Verdict::Reply(b"answer".to_vec()), from), [(from, b"answer".to_vec())]);
            assert_eq!(sent(Verdict::Drop, from), []);
            let dispatch =
                Verdict::Dispatch(vec![Outgoing::ToClient(b"c".to_vec()), Outgoing::ToServer(b"s".to_vec())]);
            assert_eq!(sent(dispatch, from), [(Side::Client, b"c".to_vec()), (Side::Server, b"s".to_vec())]);
        }
    }
}
