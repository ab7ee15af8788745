#![warn(missing_docs)]
//! JSON-RPC 2.0 framing for MCP, as a guard needs it.
//!
//! A guard must decide on exactly what the receiver will read, and forward exactly what
//! it decided on. So this crate never re-encodes a message: it reads one line, looks at
//! it in place, and hands back the original bytes.
//!
//! * [`framing`]: newline-delimited messages with a size limit that keeps memory bounded.
//! * [`envelope`]: the strict reading of a message from the client (fails closed: bad
//!   JSON, a BOM, a batch, a wrong `jsonrpc`, a duplicate or case-variant key).
//! * [`quick`]: the usual decided request read in one pass, without serde (anything
//!   else goes to the envelope's full reader).
//! * [`json`]: the value a strict parse builds, borrowing its strings from the message.
//! * [`strict`]: a full parse that refuses duplicate and case-variant keys at any depth,
//!   for the messages a policy decides on.
//! * [`skim`]: a fast look at the top-level members of a message (for large results
//!   from the server), without building it.
//! * [`mirror`]: the 2026-07-28 HTTP headers that must agree with the body.
//! * [`origin`]: the `Host`/`Origin` check of an HTTP endpoint (DNS rebinding).
//! * [`reply`]: the responses a guard writes itself.
//! * [`methods`]: the names of MCP's methods, written once.
//! * [`codes`]: every JSON-RPC error code clawai answers with, in one table.
//! * [`words`]: finding bytes eight at a time, for the short strings every message has.

pub mod codes;
mod cursor;
pub mod envelope;
pub mod framing;
pub mod json;
pub mod methods;
pub mod mirror;
pub mod origin;
pub mod quick;
pub mod reply;
pub mod skim;
pub mod strict;
pub mod words;

pub use envelope::{Envelope, EnvelopeError, Kind};
pub use framing::{Frame, FrameRef, LineReader};
pub use json::Json;
