//! Responses clawai writes itself, and the error codes it uses.
//!
//! The codes are in [`crate::codes`], the one table; re-exported here for the writers.

use serde_json::{Value, json};

pub use crate::codes::{
    AMBIGUOUS, APPROVAL_REQUIRED, DENIED, INVALID_PARAMS, INVALID_REQUEST, NOT_STARTED, PARSE_ERROR,
    SERVER_UNAVAILABLE, TOO_LARGE,
};

/// A JSON-RPC error response, newline-terminated. `id` is the request's id as written
/// (`None` gives `null`).
pub fn error(id: Option<&str>, code: i64, message: &str, data: Option<Value>) -> Vec<u8> {
    let mut error = json!({"code": code, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    frame(id, "error", &error)
}

/// A JSON-RPC result response, newline-terminated (`id` as written).
pub fn result(id: Option<&str>, result: &Value) -> Vec<u8> {
    frame(id, "result", result)
}

/// A JSON-RPC request, newline-terminated (`id` as written, a JSON value).
pub fn request(id: &str, method: &str, params: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut out, method).expect("a string always serialises");
    out.extend_from_slice(b",\"params\":");
    serde_json::to_writer(&mut out, params).expect("a JSON value always serialises");
    out.extend_from_slice(b"}\n");
    out
}

/// A notification, newline-terminated.
pub fn notification(method: &str, params: &Value) -> Vec<u8> {
    let mut out = serde_json::to_vec(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
        .expect("a JSON value always serialises");
    out.push(b'\n');
    out
}

/// A `tools/call` result with `isError: true` and one text block, newline-terminated.
/// `stateless`: the request was a 2026-07-28 one, whose results must say
/// `resultType: "complete"` (clients of that revision reject a result without it).
pub fn tool_error(id: Option<&str>, text: &str, stateless: bool) -> Vec<u8> {
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": true});
    if stateless {
        result["resultType"] = json!("complete");
    }
    frame(id, "result", &result)
}

/// Whether a request's `params` use the 2026-07-28 per-request envelope (its `_meta`
/// names the protocol version).
pub fn is_stateless_request(params: Option<&crate::Json>) -> bool {
    params.and_then(|params| params.get("_meta")?.get("io.modelcontextprotocol/protocolVersion")).is_some()
}

fn frame(id: Option<&str>, member: &str, body: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(128);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.unwrap_or("null").as_bytes());
    out.extend_from_slice(b",\"");
    out.extend_from_slice(member.as_bytes());
    out.extend_from_slice(b"\":");
    serde_json::to_writer(&mut out, body).expect("a JSON value always serialises");
    out.extend_from_slice(b"}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_echoed_as_written() {
        let line = error(Some("123456789012345678901234567890"), DENIED, "no", None);
        assert!(line.starts_with(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"error":{"#));
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["error"]["code"], DENIED);
        let line = tool_error(Some("\"x\""), "denied", false);
        let v: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(v["id"], "x");
        assert_eq!(v["result"]["isError"], true);
        assert!(v["result"].get("resultType").is_none());
        let v: Value = serde_json::from_slice(&tool_error(Some("1"), "denied", true)).unwrap();
        assert_eq!(v["result"]["resultType"], "complete");
        assert!(error(None, PARSE_ERROR, "p", None).starts_with(br#"{"jsonrpc":"2.0","id":null"#));
    }
}
