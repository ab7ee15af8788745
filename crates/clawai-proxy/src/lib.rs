#![warn(missing_docs)]
//! clawai's guarded proxy.
//!
//! * [`guard`]: the one decision path, shared by every transport: parse, decide,
//!   audit, and say what to do with the message.
//! * [`stdio`]: the stdio transport (spawn the server, relay lines, lifecycle).
//! * [`audit`]: the JSON Lines audit trail, and [`redact`]: secrets kept out of it.
//! * `in_flight`: requests forwarded and not yet answered, matched to their responses.
//! * [`reload`]: the policy in force, reloaded when its file changes.
//! * [`pipe`]: room in the pipes every transport reads and writes.
//! * [`process_tree`]: nothing a server started outlives it.
//! * [`sandboxed`]: what a sandboxed server had in force, said and recorded.

pub mod ask;
pub mod audit;
pub mod guard;
mod in_flight;
mod json_string;
pub mod links;
pub mod pipe;
pub mod process_tree;
pub mod redact;
pub mod reload;
pub mod sandboxed;
pub mod self_protection;
pub mod stdio;

pub use audit::{AuditLog, AuditObserver};
pub use clawai_pins as pins;
pub use clawai_sandbox as sandbox;
pub use guard::{AskOptions, Guard, Later, ListedAs, Outgoing, Outlet, Verdict, scan_settings};
pub use reload::{FileStamp, PolicyHandle};
pub use stdio::StdioOptions;
