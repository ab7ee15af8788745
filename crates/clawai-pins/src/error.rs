//! A pin store that cannot be used. A leaf.

use std::path::PathBuf;

/// A pin store that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PinError {
    /// The file or directory could not be read or written.
    #[error("cannot use the pin store {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a pin store clawai can read. It is never replaced silently: a
    /// server could otherwise have its changes pinned anew by breaking the file.
    #[error(
        "the pin store {} cannot be read ({why}); fix it, or remove it to pin that server anew (`clawai pins reset SERVER`)",
        path.display()
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// Someone else (a replica) kept writing the same pins while they were being
    /// approved: nothing was approved.
    #[error("the pins kept changing while they were being approved, so nothing was approved; try again")]
    Raced,
}
