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
pub mod known;
pub mod ops;
pub mod state;
pub mod wrapping;
pub mod write;

pub use known::{Client, KnownFile, Scope};
pub use ops::{EntryStatus, FileReport, Options, Selection};

/// Something went wrong with a client configuration file. Nothing was changed.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The file is not valid in its format.
    #[error("{path}:{line}:{column}: {message}; the file was not changed")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// Reading or writing failed.
    #[error("{path}: {message}")]
    Io {
        /// The file.
        path: String,
        /// What failed and what to do.
        message: String,
    },
    /// The client kept rewriting the file faster than clawai could edit it.
    #[error(
        "{path}: the file kept changing while clawai edited it ({attempts} attempts); nothing was changed, try again"
    )]
    Busy {
        /// The file.
        path: String,
        /// How many times clawai tried.
        attempts: usize,
    },
}
