#![warn(missing_docs)]
//! clawai over HTTP.
//!
//! * [`listen`]: `clawai proxy --listen`, a guarded Streamable HTTP endpoint in front of
//!   a stdio server (one child per session, [`child`]) or a remote one.
//! * [`remote`]: the client side of Streamable HTTP (and legacy HTTP+SSE), for
//!   `clawai proxy --upstream`.
//! * [`stdio_front`]: a stdio client in front of a remote server.
//!
//! Whatever the transports, every message goes through the one decision path,
//! [`clawai_proxy::Guard`], with the same audit trail as the stdio proxy. A front and a
//! server are connected by a [`link::Link`]: two channels of whole messages.

mod batch;
pub mod child;
pub mod framing;
mod json_response;
pub mod link;
pub mod listen;
pub mod remote;
mod route;
mod session;
pub mod stdio_front;

pub use listen::{Front, ListenOptions, Upstream};
pub use remote::{RemoteOptions, error_chain};
