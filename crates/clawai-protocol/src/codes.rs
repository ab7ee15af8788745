//! Every JSON-RPC error code clawai answers with, in one table.
//!
//! JSON-RPC defines -32700 and -32600..-32603. MCP leaves -32000..-32019 to each
//! implementation and reserves -32020..-32099 for the protocol (2026-07-28), and it
//! names -32002 for a resource that does not exist. clawai's own codes are
//! -32001 and -32003..-32007: none of them means what the protocol gives another code,
//! so a client can tell a refusal from a missing resource. docs/wire.md lists the same
//! table; a test keeps the two equal.

/// JSON-RPC: the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: JSON, but not a valid request (includes batches where none is allowed).
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: the receiver has no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: the method's params are not usable (e.g. `tools/call` without a name).
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: the receiver failed (the SDK's answer to a handler's `Err`).
pub const INTERNAL_ERROR: i64 = -32603;
/// clawai: the policy denied the request.
pub const DENIED: i64 = -32001;
/// MCP: `resources/read` (or subscribe) of a URI nobody serves.
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// clawai: the message is ambiguous (duplicate or case-variant keys) and was refused.
pub const AMBIGUOUS: i64 = -32003;
/// clawai: the message is larger than the configured limit.
pub const TOO_LARGE: i64 = -32004;
/// clawai: the server exited or cannot be reached; the request got no answer.
pub const SERVER_UNAVAILABLE: i64 = -32005;
/// clawai: clawai did not start the server, because its policy or configuration does
/// not load; the message says where and what to do.
pub const NOT_STARTED: i64 = -32006;
/// clawai: the policy asks for a person's approval, and none was given.
pub const APPROVAL_REQUIRED: i64 = -32007;
/// MCP 2026-07-28: HTTP headers that disagree with the body (`HeaderMismatch`).
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28: the request names a protocol version the receiver does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// Every code above with what it means, in the order docs/wire.md lists them.
pub const TABLE: [(i64, &str); 14] = [
    (PARSE_ERROR, "parse error"),
    (INVALID_REQUEST, "invalid request"),
    (METHOD_NOT_FOUND, "method not found"),
    (INVALID_PARAMS, "invalid params"),
    (INTERNAL_ERROR, "internal error"),
    (DENIED, "denied by the policy"),
    (RESOURCE_NOT_FOUND, "resource not found"),
    (AMBIGUOUS, "ambiguous message refused"),
    (TOO_LARGE, "message over the size limit"),
    (SERVER_UNAVAILABLE, "the server is unavailable"),
    (NOT_STARTED, "the server was not started"),
    (APPROVAL_REQUIRED, "approval required and not given"),
    (HEADER_MISMATCH, "headers disagree with the body"),
    (UNSUPPORTED_PROTOCOL_VERSION, "unsupported protocol version"),
];

#[cfg(test)]
mod tests {
    use super::TABLE;

    #[test]
    fn no_two_meanings_share_a_code() {
        let mut codes: Vec<i64> = TABLE.iter().map(|(code, _)| *code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), TABLE.len(), "a code is used for two meanings: {TABLE:?}");
    }

    #[test]
    fn clawais_own_codes_stay_in_the_range_left_to_implementations() {
        for (code, meaning) in TABLE {
            let standard = (-32603..=-32600).contains(&code) || code == -32700;
            let protocols = code == super::RESOURCE_NOT_FOUND || (-32099..=-32020).contains(&code);
            assert!(standard || protocols || (-32019..=-32000).contains(&code), "{code} ({meaning})");
        }
    }

    #[test]
    fn docs_wire_lists_every_code() {
        let wire = include_str!("../../../docs/wire.md");
        for (code, meaning) in TABLE {
            assert!(wire.contains(&format!("| {code} |")), "docs/wire.md has no row for {code} ({meaning})");
        }
    }
}
