//! The JSON-RPC error codes the SDK's servers answer with (seed 002 §9).

/// The message is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// The message is JSON but not a JSON-RPC request.
pub const INVALID_REQUEST: i64 = -32600;
/// The server has no such method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// Unknown tool, missing or mistyped argument, bad cursor.
pub const INVALID_PARAMS: i64 = -32602;
/// The tool's handler failed (returned `Err`, or panicked).
pub const INTERNAL_ERROR: i64 = -32603;
/// HTTP headers that disagree with the body (2026-07-28 `HeaderMismatch`).
pub const HEADER_MISMATCH: i64 = -32020;
/// A 2026-07-28 request names a protocol version the server does not speak.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
