//! The JSON-RPC error codes the SDK's servers answer with: clawai's one table
//! ([`clawai_protocol::codes`]), of which the SDK uses these.

pub use clawai_protocol::codes::{
    HEADER_MISMATCH, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
};
