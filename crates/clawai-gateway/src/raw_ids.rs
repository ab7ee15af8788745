//! Request ids that are numbers JSON parsing would change (an integer beyond 64 bits
//! becomes a float, `1e3` becomes `1000.0`) come back to the client byte for byte.
//!
//! The session works on parsed messages; such an id is carried through it as a string of
//! a mark of this process and the id as written, and the mark is taken off, quotes and
//! all, from each message as it leaves for the client. A client's `notifications/cancelled`
//! naming such an id carries it the same way, so that it finds the request it cancels.
//!
//! The audit trail shows the id as written ([`trail_text`]): the trail's `id` is JSON
//! text written as is, so the number goes in unchanged whenever the trail's readers
//! (`clawai audit`, `policy replay`, `ui`: serde_json without arbitrary precision) can
//! read it back, which is every number but one beyond the range of a double (`1e400`),
//! which they refuse, making the whole line unreadable. Only that one is written as a
//! string: `"clawai-number:1e400"`.

use std::sync::OnceLock;

use serde_json::Value;

/// `clawai-number-<64 random bits>:`, the same for the life of the process.
fn mark() -> &'static str {
    static MARK: OnceLock<String> = OnceLock::new();
    MARK.get_or_init(|| {
        let mut bytes = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
            .expect("the system has randomness");
        format!("clawai-number-{:016x}:", u64::from_le_bytes(bytes))
    })
}

/// Prefix of the trail's string for a number its readers cannot read.
const TRAIL_MARK: &str = "clawai-number:";

/// The id as written, when `id` is one carried as a marked string.
fn written(id: &Value) -> Option<&str> {
    id.as_str()?.strip_prefix(mark())
}

/// The id as the audit trail shows it (JSON text): as the client wrote it, except a
/// number beyond the range of a double (see the module's notes).
pub(crate) fn trail_text(id: &Value) -> String {
    match written(id) {
        Some(raw) if serde_json::from_str::<Value>(raw).is_ok() => raw.to_owned(),
        Some(raw) => Value::String(format!("{TRAIL_MARK}{raw}")).to_string(),
        None => id.to_string(),
    }
}

/// The client's message with each number parsing would change (or refuse: `1e400`)
/// written as a marked string instead, where the session reads ids: the message's id,
/// and the `requestId` of a cancellation (which must find the request it names).
pub(crate) fn carry(message: Vec<u8>) -> Vec<u8> {
    let Some(skimmed) = clawai_protocol::skim::skim(&message) else { return message };
    let base = message.as_ptr() as usize;
    let at = |raw: &[u8]| raw.as_ptr() as usize - base..raw.as_ptr() as usize - base + raw.len();
    let mut spans = Vec::with_capacity(2);
    spans.extend(skimmed.id.map(at));
    if skimmed.method == Some(clawai_protocol::methods::CANCELLED)
        && let Some(raw) = skimmed.params.and_then(|params| clawai_protocol::skim::member(params, b"requestId"))
    {
        spans.push(at(raw));
    }
    let marked: Vec<(std::ops::Range<usize>, String)> =
        spans.into_iter().filter_map(|span| marked_text(&message[span.clone()]).map(|text| (span, text))).collect();
    if marked.is_empty() {
        return message;
    }
    let mut out = Vec::with_capacity(message.len() + 64);
    let mut from = 0;
    let mut marked = marked;
    marked.sort_by_key(|(span, _)| span.start);
    for (span, text) in marked {
        out.extend_from_slice(&message[from..span.start]);
        out.extend_from_slice(text.as_bytes());
        from = span.end;
    }
    out.extend_from_slice(&message[from..]);
    out
}

/// The marked string (JSON text) for a number written `raw` that does not parse back as
/// written; `None` for anything else.
fn marked_text(raw: &[u8]) -> Option<String> {
    let number = |b: &u8| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E');
    if raw.is_empty() || !raw.iter().all(number) {
        return None;
    }
    if serde_json::from_slice::<Value>(raw).is_ok_and(|parsed| parsed.to_string().as_bytes() == raw) {
        return None;
    }
    let raw = std::str::from_utf8(raw).ok()?;
    Some(Value::String(format!("{}{raw}", mark())).to_string())
}

/// `message` with every marked id put back as the number it was written as.
pub(crate) fn restored(message: Vec<u8>) -> Vec<u8> {
    let quoted_mark = format!("\"{}", mark());
    if memchr::memmem::find(&message, quoted_mark.as_bytes()).is_none() {
        return message;
    }
    let mut out = Vec::with_capacity(message.len());
    let mut rest = &message[..];
    while let Some(at) = memchr::memmem::find(rest, quoted_mark.as_bytes()) {
        out.extend_from_slice(&rest[..at]);
        let number = &rest[at + quoted_mark.len()..];
        let Some(end) = memchr::memchr(b'"', number) else { break };
        out.extend_from_slice(&number[..end]);
        rest = &number[end + 1..];
    }
    out.extend_from_slice(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_that_parse_back_the_same_are_left_alone() {
        for raw in ["1", "0", "-5", "18446744073709551615", "\"1e3\""] {
            assert_eq!(marked_text(raw.as_bytes()), None, "{raw}");
        }
    }

    #[test]
    fn the_trail_shows_numbers_as_written_but_those_its_readers_refuse() {
        for raw in ["123456789012345678901234567890", "1e3", "2.50", "-0"] {
            let id: Value = serde_json::from_str(&marked_text(raw.as_bytes()).unwrap()).unwrap();
            assert_eq!(trail_text(&id), raw);
        }
        // serde_json refuses `1e400` outright: the id itself cannot be parsed either.
        let id = Value::String(format!("{}1e400", mark()));
        assert_eq!(trail_text(&id), r#""clawai-number:1e400""#);
        assert_eq!(trail_text(&Value::String("s".into())), r#""s""#);
    }

    #[test]
    fn ids_and_cancelled_requests_are_carried_even_those_json_refuses() {
        let raw = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1e400,"reason":"x"}}"#;
        let message: Value = serde_json::from_slice(&carry(raw.to_vec())).unwrap();
        assert_eq!(message["params"]["requestId"], Value::String(format!("{}1e400", mark())));
        let raw = br#"{"jsonrpc":"2.0","id":-0,"method":"tools/call","params":{"_meta":{"n":1e3}}}"#;
        let message: Value = serde_json::from_slice(&carry(raw.to_vec())).unwrap();
        assert_eq!(message["id"], Value::String(format!("{}-0", mark())));
        assert_eq!(restored(serde_json::to_vec(&serde_json::json!({"id": message["id"]})).unwrap()), br#"{"id":-0}"#);
        let plain = br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#.to_vec();
        assert_eq!(carry(plain.clone()), plain);
    }

    #[test]
    fn other_numbers_come_back_as_written() {
        for raw in ["123456789012345678901234567890", "1e3", "1.50", "-0"] {
            let carried: Value = serde_json::from_str(&marked_text(raw.as_bytes()).expect(raw)).unwrap();
            let answer =
                serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": carried, "result": {}})).unwrap();
            assert_eq!(restored(answer), format!(r#"{{"id":{raw},"jsonrpc":"2.0","result":{{}}}}"#).into_bytes());
        }
    }
}
