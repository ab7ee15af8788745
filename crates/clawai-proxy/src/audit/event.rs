//! One audit event and its JSON line, written by hand: every message pays for it.

use clawai_protocol::words;

use crate::json_string::json_str;

/// Which way a message was going.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the MCP client to the server.
    ClientToServer,
    /// From the server to the client.
    ServerToClient,
}

impl Direction {
    /// As written in the trail.
    pub fn as_str(self) -> &'static str {
        match self {
            Direction::ClientToServer => "client->server",
            Direction::ServerToClient => "server->client",
        }
    }
}

/// One line of the audit trail. Absent fields are left out. Written by
/// [`Event::write_json`] (every message writes one, so it is written by hand, not derived).
#[derive(Debug, Default)]
pub struct Event<'a> {
    /// The time, written as RFC 3339 UTC.
    pub time: jiff::Timestamp,
    /// The proxy session (one per `clawai proxy` process).
    pub session: &'a str,
    /// The server name (`--server`).
    pub server: Option<&'a str>,
    /// Which way the message went.
    pub direction: Option<Direction>,
    /// `request`, `notification`, `response` or `refused`: a fixed word, written as is.
    pub kind: super::EventKind,
    /// The method (for a response: the method of its request, when known).
    pub method: Option<&'a str>,
    /// The JSON-RPC id exactly as written in the message (JSON text: `7`, `"a"`).
    pub id: Option<&'a str>,
    /// Tool name of a `tools/call`.
    pub tool: Option<&'a str>,
    /// URI of a `resources/read`.
    pub resource: Option<&'a str>,
    /// Name of a `prompts/get`.
    pub prompt: Option<&'a str>,
    /// Through the gateway: the name the client used for the tool, prompt or resource
    /// (`github__create_issue`), beside the server's own name in `tool`, `prompt` or
    /// `resource`.
    pub listed_as: Option<&'a str>,
    /// The arguments, secrets redacted.
    pub arguments: Option<crate::redact::Redacted<'a>>,
    /// Of a `tools/call`: what the server's list said of the tool when the call was
    /// decided (`readOnlyHint`, `destructiveHint`), so that `clawai policy replay` decides
    /// rules that read them as the guard did. Absent when the list said nothing.
    pub annotations: Option<clawai_policy::ToolAnnotations>,
    /// `allow`, `deny`, `prompt`, `audit` for decided messages; `pass` for messages no
    /// rule applies to; `refused` for messages that were not valid. A fixed word, written
    /// as is.
    pub decision: Option<super::Decision>,
    /// The deciding rule's id.
    pub rule: Option<&'a str>,
    /// Why, in words.
    pub reason: Option<std::borrow::Cow<'a, str>>,
    /// For responses: milliseconds since the request was forwarded.
    pub duration_ms: Option<f64>,
    /// For responses: a JSON-RPC error, or a tool result with `isError: true`.
    pub is_error: Option<bool>,
    /// Size of the message in bytes.
    pub size: Option<usize>,
    /// For a call a rule asked about: the step of asking a person (`asked`,
    /// `answered`, `timed_out`, `cancelled`, `allowed_without_asking`).
    pub step: Option<super::Step>,
    /// How the person was asked (`client`, `client_retry`, `broker`) or why nobody was
    /// (`approvals_file`, `session_grant`, `none`).
    pub channel: Option<super::Channel>,
    /// What the person allowed: `once`, `session`, `always`.
    pub scope: Option<super::Scope>,
    /// The approval's id (the broker's, or clawai's own request to the client).
    pub approval: Option<&'a str>,
    /// Whether the call a rule asked about went on.
    pub approved: Option<bool>,
    /// Who answered (`client`, `ui`, `cli`, `grant`, an approvals file entry).
    pub by: Option<&'a str>,
    /// The labels this call put on the session (rules with `taint`), when it added any.
    pub tainted: Option<&'a [String]>,
    /// The protections of the server's sandbox (`landlock-files,pid-ns,…`), when it runs
    /// in one: written on the events of `tools/call` requests and their responses, so
    /// that a call the server failed is seen with the sandbox it ran in.
    pub sandbox: Option<&'a str>,
    /// Of a `checkpoint`: the other writers' chain heads this writer saw.
    pub heads: Option<&'a [super::chain::ChainHead]>,
}

impl Event<'_> {
    /// Appends the event as one JSON object (no newline).
    pub fn write_json(&self, out: &mut Vec<u8>, encoder: &mut Encoder) {
        out.extend_from_slice(b"{\"time\":\"");
        encoder.write_time(self.time, out);
        out.push(b'"');
        encoder.write_origin(self.session, self.server, out);
        if let Some(direction) = self.direction {
            // One of two fixed words: no escaping to look for.
            out.extend_from_slice(b",\"direction\":\"");
            out.extend_from_slice(direction.as_str().as_bytes());
            out.push(b'"');
        }
        word_field(out, b",\"kind\":\"", self.kind.as_str());
        str_field(out, b",\"method\":", self.method);
        if let Some(id) = self.id {
            out.extend_from_slice(b",\"id\":");
            out.extend_from_slice(id.as_bytes());
        }
        str_field(out, b",\"tool\":", self.tool);
        str_field(out, b",\"resource\":", self.resource);
        str_field(out, b",\"prompt\":", self.prompt);
        str_field(out, b",\"listed_as\":", self.listed_as);
        if let Some(arguments) = &self.arguments {
            out.extend_from_slice(b",\"arguments\":");
            arguments.write_json(out);
        }
        if let Some(annotations) = self.annotations {
            write_annotations(out, annotations);
        }
        if let Some(decision) = self.decision {
            word_field(out, b",\"decision\":\"", decision.as_str());
        }
        str_field(out, b",\"rule\":", self.rule);
        str_field(out, b",\"reason\":", self.reason.as_deref());
        if let Some(labels) = self.tainted {
            out.extend_from_slice(b",\"tainted\":[");
            for (n, label) in labels.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                json_str(out, label);
            }
            out.push(b']');
        }
        if let Some(ms) = self.duration_ms.filter(|ms| ms.is_finite()) {
            out.extend_from_slice(b",\"duration_ms\":");
            write_millis(out, ms);
        }
        if let Some(is_error) = self.is_error {
            out.extend_from_slice(if is_error { b",\"is_error\":true" } else { b",\"is_error\":false" });
        }
        if let Some(size) = self.size {
            out.extend_from_slice(b",\"size\":");
            out.extend_from_slice(itoa::Buffer::new().format(size).as_bytes());
        }
        if self.step.is_some() || self.approved.is_some() {
            self.write_approval(out);
        }
        if self.method == Some("tools/call") || self.kind == super::EventKind::Sandbox {
            str_field(out, b",\"sandbox\":", self.sandbox);
        }
        if let Some(heads) = self.heads {
            super::chain::write_heads(out, heads);
        }
        out.push(b'}');
    }
}

impl Event<'_> {
    /// The members about asking a person (rare: not on the path of ordinary messages).
    fn write_approval(&self, out: &mut Vec<u8>) {
        if let Some(step) = self.step {
            word_field(out, b",\"step\":\"", step.as_str());
        }
        if let Some(channel) = self.channel {
            word_field(out, b",\"channel\":\"", channel.as_str());
        }
        if let Some(scope) = self.scope {
            word_field(out, b",\"scope\":\"", scope.as_str());
        }
        str_field(out, b",\"approval\":", self.approval);
        if let Some(approved) = self.approved {
            out.extend_from_slice(if approved { b",\"approved\":true" } else { b",\"approved\":false" });
        }
        str_field(out, b",\"by\":", self.by);
    }
}

/// Appends `"annotations":{…}` with the hints the server gave (none: `{}`).
fn write_annotations(out: &mut Vec<u8>, annotations: clawai_policy::ToolAnnotations) {
    out.extend_from_slice(b",\"annotations\":{");
    let hints = [("readOnlyHint", annotations.read_only_hint), ("destructiveHint", annotations.destructive_hint)];
    let mut first = true;
    for (name, hint) in hints {
        let Some(hint) = hint else { continue };
        if !first {
            out.push(b',');
        }
        first = false;
        out.push(b'"');
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(if hint { b"\":true" } else { b"\":false" });
    }
    out.push(b'}');
}

/// Appends a duration in milliseconds to the microsecond (`12.345`): integer digits,
/// cheaper than the shortest float form every response would otherwise pay for.
pub(super) fn write_millis(out: &mut Vec<u8>, ms: f64) {
    if !(0.0..1e12).contains(&ms) {
        out.extend_from_slice(ryu::Buffer::new().format_finite(ms).as_bytes());
        return;
    }
    let micros = (ms * 1000.0).round() as u64;
    out.extend_from_slice(itoa::Buffer::new().format(micros / 1000).as_bytes());
    let fraction = (micros % 1000) as u16;
    out.extend_from_slice(&[
        b'.',
        b'0' + (fraction / 100) as u8,
        b'0' + (fraction / 10 % 10) as u8,
        b'0' + (fraction % 10) as u8,
    ]);
}

/// Appends `member` (`,"name":"`), a word that needs no escaping (the fixed words of
/// `kind` and `decision`), and the closing quote.
fn word_field(out: &mut Vec<u8>, member: &[u8], word: &'static str) {
    debug_assert!(words::first_to_escape(word.as_bytes()).is_none(), "{word:?} needs escaping");
    out.extend_from_slice(member);
    out.extend_from_slice(word.as_bytes());
    out.push(b'"');
}

/// Appends `member` (`,"name":`, written whole) and the value as a JSON string, when
/// there is a value.
fn str_field(out: &mut Vec<u8>, member: &[u8], value: Option<&str>) {
    if let Some(value) = value {
        out.extend_from_slice(member);
        json_str(out, value);
    }
}

/// What a thread keeps between the events it encodes: event times are RFC 3339 UTC with
/// microseconds, the date and time of day formatted once per second; the session and
/// server members, the same in every event of a session, are escaped once.
#[derive(Debug, Default)]
pub struct Encoder {
    second: Option<i64>,
    prefix: String,
    /// The session and server the fragment below was written for.
    origin: (String, Option<String>),
    /// `,"session":"…","server":"…"`.
    origin_json: Vec<u8>,
}

impl Encoder {
    fn write_time(&mut self, time: jiff::Timestamp, out: &mut Vec<u8>) {
        let second = time.as_second();
        let micros = time.subsec_microsecond();
        if second < 0 || micros < 0 {
            // Before 1970: not worth a fast path.
            out.extend_from_slice(time.to_string().as_bytes());
            return;
        }
        if self.second != Some(second) {
            self.prefix = time.strftime("%Y-%m-%dT%H:%M:%S").to_string();
            self.second = Some(second);
        }
        out.extend_from_slice(self.prefix.as_bytes());
        let mut fraction = *b".000000Z";
        let mut rest = micros as u32;
        for digit in fraction[1..7].iter_mut().rev() {
            *digit = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        out.extend_from_slice(&fraction);
    }

    fn write_origin(&mut self, session: &str, server: Option<&str>, out: &mut Vec<u8>) {
        if self.origin.0 != session || self.origin.1.as_deref() != server || self.origin_json.is_empty() {
            self.origin = (session.to_owned(), server.map(str::to_owned));
            self.origin_json.clear();
            self.origin_json.extend_from_slice(b",\"session\":");
            json_str(&mut self.origin_json, session);
            str_field(&mut self.origin_json, b",\"server\":", server);
        }
        out.extend_from_slice(&self.origin_json);
    }
}
