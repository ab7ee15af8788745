#![warn(missing_docs)]
//! MCP client configuration files: find them, put clawai in front of their servers, and
//! take it out again, without losing a byte the person or the client wrote.
//!
//! * [`known`]: which clients exist, where their files are, and how servers are laid out.
//! * [`document`]: reading a file (JSON, JSONC or TOML) into server entries that know
//!   where in the text they are.
//! * [`wrapping`]: what a wrapped entry looks like, and how to recognise one.
//! * [`edit`]: turning a wrap or unwrap into text splices, so everything else in the
//!   file (comments, order, indentation, unknown keys) stays as it was.
//! * [`write`]: atomic replacement that never loses a concurrent change, keeps the mode,
//!   follows symlinks and keeps a backup of the original.
//! * [`ops`]: wrap, unwrap and status on one file, with retries on conflicts.

pub mod document;
pub mod edit;
mod error;
pub mod known;
pub mod ops;
pub mod state;
pub mod wrapping;
pub mod write;

pub use error::ClientError;
pub use known::{Client, KnownFile, Scope};
pub use ops::{EntryStatus, FileReport, Options, Selection};
