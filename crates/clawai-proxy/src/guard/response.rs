//! Responses: matched to their requests, recorded after they left (off the path of the
//! response), and the few whose content matters for later decisions (the tool list, the
//! negotiated revision, 2026-07-28 `input_required` results).

use clawai_protocol::methods;
use std::borrow::Cow;

use clawai_protocol::skim::{member, members_named};
use compact_str::CompactString;
use serde_json::value::RawValue;

use super::{Guard, Verdict};
use crate::audit::{Direction, EventKind, Stamp};
use crate::in_flight::InFlightTable;

/// Audit events of responses that a transport forwards first and records after its
/// output is flushed ([`Guard::queued_from_server`], [`Guard::record_deferred`]), so
/// that encoding them is not on the response's way to the client. Nothing is decided
/// from them, and whatever a response changes for later decisions (the tools a
/// `tools/list` lists) is applied before it is forwarded.
#[derive(Default)]
pub struct Deferred {
    responses: Vec<ResponseRecord>,
}

impl Deferred {
    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.responses.is_empty()
    }
}

/// What the audit event of one response says, owned so that it can wait.
pub(super) struct ResponseRecord {
    time: jiff::Timestamp,
    direction: Direction,
    method: Option<Cow<'static, str>>,
    /// The id as written (valid JSON: it was read from the message).
    id: Option<CompactString>,
    is_error: bool,
    size: usize,
    duration_ms: Option<f64>,
}

/// A response's `result` and the two of its members the guard reads.
#[derive(Clone, Copy)]
pub(super) struct ResultOf<'a> {
    pub(super) bytes: &'a [u8],
    /// `isError`, as written.
    pub(super) is_error: Option<&'a [u8]>,
    /// `resultType`, as written.
    pub(super) result_type: Option<&'a [u8]>,
}

impl<'a> ResultOf<'a> {
    /// Reads the members from the result (the skim reads them in its own pass).
    pub(super) fn read(bytes: Option<&'a [u8]>) -> Option<Self> {
        let bytes = bytes?;
        let [is_error, result_type] = members_named(bytes, [&b"isError"[..], b"resultType"]);
        Some(ResultOf { bytes, is_error, result_type })
    }
}

impl Guard {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn response(
        &self,
        direction: Direction,
        table: &InFlightTable,
        id: Option<&RawValue>,
        result: Option<ResultOf<'_>>,
        is_error: bool,
        size: usize,
        at: Stamp,
        deferred: &mut Deferred,
    ) -> Verdict {
        let Stamp { wall: time, instant: now } = at;
        if direction == Direction::ServerToClient
            && let Some(id) = id
            && let Some(verdict) = self.own_response(
                id,
                result.filter(|_| !is_error).map(|r| r.bytes),
                is_error.then_some("the server answered with an error"),
            )
        {
            return verdict;
        }
        let flight = id.and_then(|i| table.remove(i.get()));
        let result_type = result.and_then(|r| r.result_type);
        let is_error = is_error || result.and_then(|r| r.is_error) == Some(&b"true"[..]);
        let result = result.map(|r| r.bytes);
        if let (Some((_, flight)), Some(result)) = (&flight, result)
            && flight.method == methods::TOOLS_LIST
            && direction == Direction::ServerToClient
            && self.listing.policy_reads_annotations(&self.policy.current())
        {
            // Before the result is forwarded: the client's next call may depend on it.
            // Only a policy that reads annotations needs them: reading a list costs a
            // parse of every page (a policy reloaded to read them lists the tools anew).
            self.listing.record(result);
        }
        if let (Some((_, flight)), Some(result)) = (&flight, result)
            && flight.method == methods::INITIALIZE
            && direction == Direction::ServerToClient
        {
            self.batches.negotiated(member(result, b"protocolVersion"));
        }
        // The pinning stage: lists and instructions compared with what was approved.
        // Then the results stage: secrets redacted, hidden text recorded, size bounded.
        // (a tool's failed result is a result too: its secrets are redacted all the same).
        let pinned = match (&flight, result, id) {
            (Some((_, flight)), Some(result), Some(id)) if direction == Direction::ServerToClient => (!is_error)
                .then(|| self.pinning_filters(&flight.method, id, result))
                .flatten()
                .or_else(|| self.results_filter(&flight.method, id, result)),
            _ => None,
        };
        // The listing stage, on what pinning left: tools the policy always denies.
        let pinned = match (&flight, result, id) {
            (Some((_, flight)), Some(result), Some(id))
                if direction == Direction::ServerToClient && !is_error && flight.method == methods::TOOLS_LIST =>
            {
                self.hide_denied(id, pinned.as_deref(), result).or(pinned)
            }
            _ => pinned,
        };
        let (key, flight) = flight.unzip();
        // The response's id as it wrote it (the key saves a copy when that is the same).
        let record_id = match (key, id) {
            (_, Some(written)) if let Cow::Owned(sent) = self.shown_id(written.get()) => {
                Some(CompactString::from(sent))
            }
            (Some(key), Some(written)) if key == written.get() => Some(key),
            (_, written) => written.map(|w| CompactString::new(w.get())),
        };
        deferred.responses.push(ResponseRecord {
            time,
            direction,
            id: record_id,
            duration_ms: flight.as_ref().map(|f| now.saturating_duration_since(f.started).as_secs_f64() * 1000.0),
            method: flight.map(|f| f.method),
            is_error,
            size,
        });
        // 2026-07-28: server-to-client requests travel inside `input_required` results.
        match (result, id) {
            (Some(result), Some(id))
                if direction == Direction::ServerToClient && result_type == Some(&b"\"input_required\""[..]) =>
            {
                match self.decide_input_requests(Some(id), result, size) {
                    // Allowed, and to a call a person allowed: the server's state goes
                    // inside clawai's, so that the retry is not asked about again.
                    Verdict::Forward => self.reseal(id, result).unwrap_or(Verdict::Forward),
                    refused => {
                        self.forget_approved(id);
                        refused
                    }
                }
            }
            (_, Some(id)) if direction == Direction::ServerToClient => {
                self.forget_approved(id);
                pinned.map_or(Verdict::Forward, Verdict::Replace)
            }
            _ => Verdict::Forward,
        }
    }

    /// Records the audit events left in `deferred` (see [`Guard::queued_from_server`]).
    pub fn record_deferred(&self, deferred: &mut Deferred) {
        self.audit.record_all(deferred.responses.iter().map(|record| {
            let mut event = self.event_at(record.time, record.direction, EventKind::Response);
            event.method = record.method.as_deref();
            event.id = record.id.as_deref();
            event.is_error = Some(record.is_error);
            event.size = Some(record.size);
            event.duration_ms = record.duration_ms;
            event
        }));
        deferred.responses.clear();
    }
}
