//! Messages from the server: responses (matched to their requests, then the response
//! stages), the server's own requests and notifications, and the server going away.

use clawai_protocol::reply;

use super::*;

impl Guard {
    /// A message from the server. The event that decided it is on disk when this
    /// returns.
    pub fn from_server(&self, line: &[u8]) -> Verdict {
        let mut deferred = Deferred::default();
        let verdict = self.queued_from_server(line, stamp(), &mut deferred);
        self.record_deferred(&mut deferred);
        self.on_disk(verdict)
    }

    /// A message from the server that arrived `at`, for the stdio relay's batched outbox
    /// (see [`Guard::queued_from_client`]); the audit event of a response is left in
    /// `deferred` for [`Guard::record_deferred`], which the relay calls once the response
    /// is on its way (and before it exits).
    pub(crate) fn queued_from_server(&self, line: &[u8], at: Stamp, deferred: &mut Deferred) -> Verdict {
        let verdict = self.server_line(line, at, deferred);
        self.gather_verdict(line, verdict)
    }

    fn server_line(&self, line: &[u8], at: Stamp, deferred: &mut Deferred) -> Verdict {
        if line.iter().all(u8::is_ascii_whitespace) {
            return Verdict::Drop;
        }
        // Large results are skimmed, not parsed; anything unusual takes the strict path.
        if let Some(s) = skim(line) {
            let id = s.id.and_then(|i| raw(i));
            if s.id.is_some() && id.is_none() {
                return self.refuse_from_server(line, reply::INVALID_REQUEST, "unusable id");
            }
            return match s.method {
                Some(method) => self.server_message(method, id, s.params, line.len(), at),
                None if id.is_some() && (s.result.is_some() != s.error.is_some()) => self.response(
                    Direction::ServerToClient,
                    &self.from_client,
                    id,
                    s.result.map(|bytes| ResultOf { bytes, is_error: s.result_is_error, result_type: s.result_type }),
                    s.error.is_some(),
                    line.len(),
                    at,
                    deferred,
                ),
                None => self.refuse_from_server(
                    line,
                    reply::INVALID_REQUEST,
                    "neither a request, a notification nor a response",
                ),
            };
        }
        match Envelope::parse(line) {
            Ok(e) => match e.method.as_deref() {
                Some(method) => self.server_message(method, e.id, e.params.map(|p| p.get().as_bytes()), line.len(), at),
                None => self.response(
                    Direction::ServerToClient,
                    &self.from_client,
                    e.id,
                    ResultOf::read(e.result.map(|r| r.get().as_bytes())),
                    e.error.is_some(),
                    line.len(),
                    at,
                    deferred,
                ),
            },
            Err(e) => self.refuse_from_server(line, e.code(), &e.to_string()),
        }
    }

    fn server_message(
        &self,
        method: &str,
        id: Option<&RawValue>,
        params: Option<&[u8]>,
        size: usize,
        at: Stamp,
    ) -> Verdict {
        if let Some(own) = id.filter(|id| self.asking.claims(id.get())) {
            let why = "ids that begin with `clawai-ask-` followed by this session's key are clawai's own requests to \
                       the client; use another id";
            return self.refuse_request(
                Direction::ServerToClient,
                method,
                Some(own),
                size,
                reply::INVALID_REQUEST,
                why.into(),
            );
        }
        let policy = self.policy.current();
        if SERVER_DECIDED.contains(&method) || policy.names_method(method) {
            let params = params.map(strict::parse);
            return self.decide(
                &policy,
                Direction::ServerToClient,
                method,
                id,
                params,
                pipeline::Arrived { line: None, message: None, size, at },
            );
        }
        if reads_as_decided(method, &SERVER_DECIDED, &policy) {
            return self.refuse_look_alike(Direction::ServerToClient, method, id, size);
        }
        if method == methods::TOOLS_LIST_CHANGED {
            self.listing.changed(self.pins().is_some());
        }
        let kind = if id.is_some() { EventKind::Request } else { EventKind::Notification };
        self.pass(Direction::ServerToClient, kind, method, id, size, at);
        if id.is_some() {
            self.track(&self.from_server, id, method, at.instant);
        }
        Verdict::Forward
    }

    /// The server is gone: an error for every client request still waiting, each
    /// recorded and on disk.
    pub fn server_gone(&self, why: &str) -> Vec<Vec<u8>> {
        self.on_disk(self.fail_waiting_requests(why))
    }

    fn fail_waiting_requests(&self, why: &str) -> Vec<Vec<u8>> {
        let answers: Vec<Vec<u8>> = self
            .from_client
            .drain()
            .into_iter()
            .map(|(key, flight)| {
                let id = flight.id(&key);
                let shown = self.shown_id(id);
                let mut event = self.event(Direction::ServerToClient, EventKind::Response);
                event.method = Some(&flight.method);
                event.id = Some(&shown);
                event.is_error = Some(true);
                event.reason = Some(why.into());
                self.audit.record_decision(&event);
                reply::error(
                    Some(id),
                    reply::SERVER_UNAVAILABLE,
                    &format!("clawai: {why}; the request got no answer"),
                    None,
                )
            })
            .chain(self.held_gone(why))
            .chain(self.asked_gone(why))
            .collect();
        answers.into_iter().filter_map(|answer| self.gather_answer(answer)).collect()
    }
}
