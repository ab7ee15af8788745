//! JSON string literals written straight into a buffer: for audit lines, redacted
//! arguments and the keys of calls in flight. A leaf: it uses no other module.

use clawai_protocol::words;

/// Appends `text` as a JSON string. Runs of bytes that need no escape are copied whole;
/// `"`, `\\` and control characters are escaped as serde_json escapes them.
pub(crate) fn json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    while let Some(offset) = words::first_to_escape(&bytes[start..]) {
        let at = start + offset;
        out.extend_from_slice(&bytes[start..at]);
        let escaped: &[u8] = match bytes[at] {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            control => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(control >> 4)]);
                out.push(HEX[usize::from(control & 0xf)]);
                start = at + 1;
                continue;
            }
        };
        out.extend_from_slice(escaped);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}
