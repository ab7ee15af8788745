#![warn(missing_docs)]
//! Tool pinning for clawai: trust on first use of what an MCP server lists.
//!
//! A policy decides calls by a tool's name and arguments, and trusts what the server
//! says the tool is (its description, schema, annotations). A server can change that
//! after a person looked (a "rug pull"). Pinning records, per server identity, a hash of
//! each tool, prompt and resource template, and of the server's instructions, the first
//! time they are listed; later lists are compared, and what changed or appeared is held
//! (left out of lists, its calls refused) until a person reviews and approves it.
//!
//! What is new or changed is also scanned for poisoning (hidden characters,
//! instruction-like text: `clawai_scan`); an item with a finding at or above the
//! policy's `quarantine_on` is quarantined: held like a changed item, also on first
//! sight, until a person approves it.
//!
//! Modules, from the bottom up: [`canonical`] (what is hashed, as RFC 8785 canonical
//! JSON under SHA-256), [`identity`] (which server), [`store`] (the files), `screen`
//! (the scan of new and changed versions), `compare` (lists against pins, approvals),
//! [`template`] (which URIs a resource template stands for),
//! [`diff`] (what a person reviews), [`review`] (listing and approving, for `clawai
//! pins` and `clawai ui`) and `tracker` (the pins of a running server, as the proxy and
//! the gateway use them).

pub mod canonical;
mod compare;
pub mod diff;
mod error;
pub mod identity;
pub mod review;
mod screen;
mod shadowing;
pub mod store;
pub mod template;
mod tracker;

pub use canonical::Kind;
pub use compare::{Approval, Compared, Seen};
pub use error::PinError;
pub use identity::{Identity, Source};
pub use screen::{Flag, ScanSettings, Screen, Severity};
pub use store::{Entry, PinFile, State, Version};
pub use tracker::{Filtered, Listener, Refusal, Tracker};
