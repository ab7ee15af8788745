//! Request ids that are numbers JSON parsing would change (an integer beyond 64 bits
//! becomes a float, `1e3` becomes `1000.0`) come back to the client byte for byte.
//!
//! The session works on parsed messages; such an id is carried through it as a string of
//! a mark of this process and the id as written, and the mark is taken off, quotes and
//! all, from each message as it leaves for the client.

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

/// The id to work with for a message whose id was written `raw`: the parsed `id` when it
/// writes back as it was written, else the marked string.
pub(crate) fn carried(id: &Value, raw: &[u8]) -> Option<Value> {
    if !id.is_number() || id.to_string().as_bytes() == raw {
        return None;
    }
    let raw = std::str::from_utf8(raw).ok()?;
    // A number as written: digits, sign, point and exponent only.
    raw.bytes()
        .all(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        .then(|| Value::String(format!("{}{raw}", mark())))
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
        for raw in ["1", "0", "-5", "18446744073709551615"] {
            let id: Value = serde_json::from_str(raw).unwrap();
            assert_eq!(carried(&id, raw.as_bytes()), None, "{raw}");
        }
        assert_eq!(carried(&Value::String("1e3".into()), b"\"1e3\""), None);
    }

    #[test]
    fn other_numbers_come_back_as_written() {
        for raw in ["123456789012345678901234567890", "1e3", "1.50", "-0"] {
            let id: Value = serde_json::from_str(raw).unwrap();
            let carried = carried(&id, raw.as_bytes()).expect(raw);
            let answer =
                serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "id": carried, "result": {}})).unwrap();
            assert_eq!(restored(answer), format!(r#"{{"id":{raw},"jsonrpc":"2.0","result":{{}}}}"#).into_bytes());
        }
    }
}
