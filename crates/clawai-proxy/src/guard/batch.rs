//! JSON-RPC batches from the client, in sessions that negotiated protocol 2025-03-26
//! (the one revision that allows them; 2025-06-18 removed them, and every other
//! session keeps refusing a batch whole).
//!
//! Every element is decided as if it had come alone, and what is allowed is forwarded
//! one message at a time, each element's bytes exactly as the client wrote them (stdio
//! servers of the later SDKs drop a batch line unanswered). The client gets one answer
//! per request, gathered into one array: denials at once, the server's responses as
//! they come back; the array goes out when the last request of the batch is answered.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};

use clawai_protocol::reply;
use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Guard, Outgoing, Verdict};
use crate::audit::Stamp;
use crate::in_flight::match_key;

/// The revision that allows batches.
const BATCHING_REVISION: &[u8] = b"\"2025-03-26\"";

/// The batches of one session.
#[derive(Default)]
pub(super) struct Batches {
    /// The session negotiated a revision that allows batches.
    allowed: AtomicBool,
    /// A batch waits for responses: responses are compared with it only then.
    open: AtomicBool,
    pending: Mutex<Vec<Pending>>,
}

/// A batch some of whose requests are not answered yet.
struct Pending {
    /// The ids (matched as [`match_key`] does) of the requests still unanswered.
    waiting: Vec<String>,
    /// The answers gathered so far, one message each, without newline.
    answers: Vec<Vec<u8>>,
}

/// Where an answer to the client goes.
enum Gathered {
    /// It answers no batch: it goes out alone.
    Alone(Vec<u8>),
    /// Kept: its batch waits for more.
    Kept,
    /// It completed its batch: the whole answer.
    Batch(Vec<u8>),
}

/// The members of a message that say whether it is a request and which.
#[derive(Deserialize)]
struct Shape<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<&'a RawValue>,
}

fn shape(message: &[u8]) -> Option<Shape<'_>> {
    serde_json::from_slice(message).ok()
}

impl Batches {
    fn pending(&self) -> MutexGuard<'_, Vec<Pending>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The server's answer to `initialize` named the session's revision (`protocolVersion`
    /// as written).
    pub(super) fn negotiated(&self, version: Option<&[u8]>) {
        self.allowed.store(version == Some(BATCHING_REVISION), Ordering::SeqCst);
    }

    /// True when a line that is a batch is taken element by element.
    pub(super) fn allowed(&self) -> bool {
        self.allowed.load(Ordering::Relaxed)
    }

    /// True while a batch waits for answers.
    pub(super) fn open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    /// Takes an answer to the client into the batch of its request, if any.
    fn gather(&self, answer: Vec<u8>) -> Gathered {
        if !self.open() {
            return Gathered::Alone(answer);
        }
        let Some(key) =
            shape(&answer).filter(|s| s.method.is_none()).and_then(|s| s.id).map(|id| match_key(id.get()).into_owned())
        else {
            return Gathered::Alone(answer);
        };
        let mut pending = self.pending();
        let Some(index) = pending.iter().position(|batch| batch.waiting.contains(&key)) else {
            return Gathered::Alone(answer);
        };
        let batch = &mut pending[index];
        let at = batch.waiting.iter().position(|waiting| *waiting == key).expect("found above");
        batch.waiting.swap_remove(at);
        batch.answers.push(trimmed(answer));
        if !batch.waiting.is_empty() {
            return Gathered::Kept;
        }
        let done = pending.swap_remove(index);
        self.open.store(!pending.is_empty(), Ordering::SeqCst);
        Gathered::Batch(array(done.answers))
    }
}

fn trimmed(mut message: Vec<u8>) -> Vec<u8> {
    while message.last().is_some_and(|b| b.is_ascii_whitespace()) {
        message.pop();
    }
    message
}

/// The answers as one batch response, newline-terminated.
fn array(answers: Vec<Vec<u8>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(answers.iter().map(|a| a.len() + 1).sum::<usize>() + 2);
    out.push(b'[');
    for (n, answer) in answers.into_iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&answer);
    }
    out.extend_from_slice(b"]\n");
    out
}

impl Guard {
    /// True when the session negotiated the revision that allows batches (2025-03-26):
    /// a transport that reads whole messages hands a batch to [`Guard::from_client`].
    pub fn takes_batches(&self) -> bool {
        self.batches.allowed()
    }

    /// A batch from the client (the session allows them): each element decided alone,
    /// the allowed ones forwarded one by one, the answers gathered into one array. `None`
    /// when the line is not a JSON array of values (refused as any invalid line is).
    pub(super) fn batch_from_client(&self, line: &[u8], at: Stamp) -> Option<Verdict> {
        let elements: Vec<&RawValue> = serde_json::from_str(std::str::from_utf8(line).ok()?).ok()?;
        if elements.is_empty() {
            self.record_refusal(
                crate::audit::Direction::ClientToServer,
                None,
                None,
                "an empty batch".into(),
                line.len(),
            );
            return Some(Verdict::Reply(reply::error(
                None,
                reply::INVALID_REQUEST,
                "clawai refused the message: an empty batch",
                None,
            )));
        }
        let mut to_server = Vec::new();
        let mut answers = Vec::new();
        let mut waiting = Vec::new();
        for element in elements {
            let bytes = element.get().as_bytes();
            let request_id = shape(bytes).filter(|s| s.method.is_some()).and_then(|s| s.id);
            match self.client_line(bytes, at, super::ListWait::MayWait, super::Asking::InBatch) {
                Verdict::Forward => {
                    waiting.extend(request_id.map(|id| match_key(id.get()).into_owned()));
                    to_server.push(Outgoing::ToServer(bytes.to_vec()));
                }
                Verdict::Replace(instead) => to_server.push(Outgoing::ToServer(instead)),
                Verdict::Reply(answer) => answers.push(trimmed(answer)),
                Verdict::Dispatch(more) => {
                    // Held until the server's tool list is in; answered later.
                    waiting.extend(request_id.map(|id| match_key(id.get()).into_owned()));
                    to_server.extend(more);
                }
                Verdict::Drop => {}
            }
        }
        if waiting.is_empty() {
            if !answers.is_empty() {
                to_server.push(Outgoing::ToClient(array(answers)));
            }
        } else {
            // Before anything is forwarded, so that no answer can come back unexpected.
            self.batches.pending().push(Pending { waiting, answers });
            self.batches.open.store(true, Ordering::SeqCst);
        }
        Some(Verdict::Dispatch(to_server))
    }

    /// Messages for each side, with the answers to the client that belong to a batch
    /// gathered into it.
    pub(super) fn gather_batches(&self, out: Vec<Outgoing>) -> Vec<Outgoing> {
        if !self.batches.open() {
            return out;
        }
        out.into_iter()
            .filter_map(|message| match message {
                Outgoing::ToClient(answer) => self.gather_answer(answer).map(Outgoing::ToClient),
                to_server => Some(to_server),
            })
            .collect()
    }

    /// An answer to the client, alone or as the batch it completes; `None` while its
    /// batch waits for more.
    pub(super) fn gather_answer(&self, answer: Vec<u8>) -> Option<Vec<u8>> {
        match self.batches.gather(answer) {
            Gathered::Alone(answer) | Gathered::Batch(answer) => Some(answer),
            Gathered::Kept => None,
        }
    }

    /// A verdict on a server message, with an answer that belongs to a batch gathered
    /// into it.
    pub(super) fn gather_verdict(&self, line: &[u8], verdict: Verdict) -> Verdict {
        if !self.batches.open() {
            return verdict;
        }
        let (answer, as_written) = match verdict {
            Verdict::Forward => (line.to_vec(), true),
            Verdict::Replace(instead) => (instead, false),
            other => return other,
        };
        match self.batches.gather(answer) {
            Gathered::Alone(_) if as_written => Verdict::Forward,
            Gathered::Alone(answer) => Verdict::Replace(answer),
            Gathered::Kept => Verdict::Drop,
            Gathered::Batch(answer) => Verdict::Replace(answer),
        }
    }
}
