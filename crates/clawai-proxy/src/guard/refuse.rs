//! Messages clawai refuses before any rule is asked: not valid JSON-RPC, ambiguous,
//! too large, or a method that reads as a decided one without being it. The sender
//! gets an error for its id, so that nobody waits for an answer that will not come.

use clawai_policy::Policy;
use clawai_protocol::envelope::EnvelopeError;
use clawai_protocol::reply;
use clawai_protocol::skim::{leading_id, salvage};
use serde_json::value::RawValue;

use super::{Guard, Verdict, raw, utf8};
use crate::audit::{Decision, Direction, EventKind};

impl Guard {
    /// Records that a message was refused (not valid, ambiguous, too large…).
    pub(super) fn record_refusal(
        &self,
        direction: Direction,
        method: Option<&str>,
        id: Option<&RawValue>,
        reason: String,
        size: usize,
    ) {
        let shown = id.map(|id| self.shown_id(id.get()));
        let mut event = self.event(direction, EventKind::Refused);
        event.method = method;
        event.id = shown.as_deref();
        event.decision = Some(Decision::Refused);
        event.reason = Some(reason.into());
        event.size = Some(size);
        self.audit.record_decision(&event);
    }

    /// A client line longer than the limit: refused with an error for its id.
    pub fn oversize_from_client(&self, prefix: &[u8], length: usize, limit: usize) -> Verdict {
        let (why, answer) = oversize_answer(prefix, length, limit);
        self.record_refusal(Direction::ClientToServer, None, None, why, length);
        self.on_disk(Verdict::Reply(answer))
    }

    /// An HTTP request whose headers say something other than its body (2026-07-28
    /// `HeaderMismatch`): recorded, and the error to answer it with. `id`: the body's
    /// id, when it has a usable one.
    pub fn refuse_header_mismatch(&self, id: Option<&str>, why: &str, size: usize) -> Vec<u8> {
        let written = id.and_then(|id| raw(id.as_bytes()));
        self.record_refusal(Direction::ClientToServer, None, written, why.to_owned(), size);
        tracing::warn!("refused an HTTP request: {why}");
        let text = format!("clawai refused the request: {why}");
        self.on_disk(reply::error(id, clawai_protocol::codes::HEADER_MISMATCH, &text, None))
    }

    /// A server line longer than the limit: not forwarded; when it was a response, the
    /// client gets an error for that request instead (`Replace`), and when it answered
    /// clawai's own `tools/list`, the calls waiting for it are decided without it.
    pub fn oversize_from_server(&self, prefix: &[u8], length: usize, limit: usize) -> Verdict {
        self.on_disk(self.refuse_oversize_from_server(prefix, length, limit))
    }

    fn refuse_oversize_from_server(&self, prefix: &[u8], length: usize, limit: usize) -> Verdict {
        let id = leading_id(prefix).and_then(utf8);
        let why = format!("message of {length} bytes is over the {limit}-byte limit");
        self.record_refusal(Direction::ServerToClient, None, None, why, length);
        tracing::warn!("dropped a {length}-byte message from the server (limit {limit} bytes)");
        let Some(id) = id else { return Verdict::Drop };
        if let Some(written) = raw(id.as_bytes())
            && let Some(verdict) =
                self.own_response(written, None, Some("its list is over the --max-message-size limit"))
        {
            return verdict;
        }
        let Some((key, request)) = self.from_client.remove(id) else { return Verdict::Drop };
        let error = reply::error(
            Some(request.id(&key)),
            reply::TOO_LARGE,
            &format!(
                "the server's response of {length} bytes was dropped by clawai: the limit is {limit} bytes (--max-message-size)"
            ),
            None,
        );
        self.gather_answer(error).map_or(Verdict::Drop, Verdict::Replace)
    }

    /// A client message that is not forwarded: the client gets an error, under the
    /// request's id whenever it can be read (read leniently when the strict reading
    /// stopped before it), so that the client does not wait for an answer; id null only
    /// for what is no request at all.
    pub(super) fn refuse_from_client(&self, line: &[u8], error: &EnvelopeError) -> Verdict {
        let (id, answer) = refusal_answer(line, error);
        self.record_refusal(Direction::ClientToServer, None, id, error.to_string(), line.len());
        Verdict::Reply(answer)
    }

    /// A method that reads as a decided one (see [`reads_as_decided`]): refused with an
    /// error to the side that sent it (a notification is dropped).
    pub(super) fn refuse_look_alike(
        &self,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        size: usize,
    ) -> Verdict {
        let why = format!(
            "method `{}` differs from a method clawai decides only in case or in the blanks around it; \
             send the method exactly as the protocol spells it",
            method.escape_debug()
        );
        self.refuse_request(direction, method, id, size, reply::AMBIGUOUS, why)
    }

    /// Records a request (or notification) refused before any rule was asked, and
    /// answers it with a JSON-RPC error to the side that sent it; a notification is
    /// dropped.
    pub(super) fn refuse_request(
        &self,
        direction: Direction,
        method: &str,
        id: Option<&RawValue>,
        size: usize,
        code: i64,
        why: String,
    ) -> Verdict {
        self.record_refusal(direction, Some(method), id, why.clone(), size);
        let method = method.escape_debug();
        tracing::warn!("refused {method}: {why}");
        match id {
            Some(id) => {
                Verdict::Reply(reply::error(Some(id.get()), code, &format!("clawai refused {method}: {why}"), None))
            }
            None => Verdict::Drop,
        }
    }

    /// A message from the server that is not forwarded. So that nobody waits for an
    /// answer that will not come, a request is answered to the server with an error
    /// (`code`), and a response to a client request still waiting becomes an error for
    /// that request; a message that reads as neither, or has no usable id, is dropped.
    pub(super) fn refuse_from_server(&self, line: &[u8], code: i64, why: &str) -> Verdict {
        let salvage = salvage(line);
        let id = salvage.id.and_then(raw);
        self.record_refusal(Direction::ServerToClient, None, id, why.to_owned(), line.len());
        match (salvage.request, salvage.response, id.map(RawValue::get)) {
            (true, false, Some(id)) => {
                tracing::warn!("refused a request from the server: {why}");
                Verdict::Reply(reply::error(Some(id), code, &format!("clawai refused the request: {why}"), None))
            }
            (false, true, Some(written))
                if let Some(verdict) = self.own_response(
                    raw(written.as_bytes()).expect("read from the message"),
                    None,
                    Some("its answer was not valid"),
                ) =>
            {
                verdict
            }
            (false, true, Some(id)) if let Some((key, request)) = self.from_client.remove(id) => {
                let id = request.id(&key);
                tracing::warn!("dropped the server's response to request {id}: {why}");
                Verdict::Replace(reply::error(
                    Some(id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai dropped the server's response: {why}"),
                    None,
                ))
            }
            _ => {
                tracing::warn!("dropped a message from the server: {why}");
                Verdict::Drop
            }
        }
    }
}

/// True when `method` reads as a decided method without being one (see
/// [`Policy::reads_as_decided`], shared with `clawai policy test`).
pub(super) fn reads_as_decided(method: &str, fixed: &[&str], policy: &Policy) -> bool {
    policy.reads_as_decided(method, fixed)
}

/// Why a client line over `limit` is refused, and the error it gets (under its id, when
/// the part read holds one).
pub(super) fn oversize_answer(prefix: &[u8], length: usize, limit: usize) -> (String, Vec<u8>) {
    let id = leading_id(prefix).and_then(utf8);
    tracing::warn!("refused a {length}-byte message from the client (limit {limit} bytes)");
    let answer = reply::error(
        id,
        reply::TOO_LARGE,
        &format!("message of {length} bytes refused by clawai: the limit is {limit} bytes (--max-message-size)"),
        None,
    );
    (format!("message of {length} bytes is over the {limit}-byte limit"), answer)
}

/// The id and the error a client line that is not one valid message gets: under the
/// request's id whenever it can be read (leniently, when the strict reading stopped
/// before it), so that the client does not wait for an answer; id null only for what is
/// no request at all.
pub(super) fn refusal_answer<'l>(line: &'l [u8], error: &'l EnvelopeError) -> (Option<&'l RawValue>, Vec<u8>) {
    let id = error.answer_id(line).and_then(|id| raw(id.as_bytes()));
    tracing::warn!("refused a message from the client: {error}");
    let answer =
        reply::error(id.map(RawValue::get), error.code(), &format!("clawai refused the message: {error}"), None);
    (id, answer)
}
