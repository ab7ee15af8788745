//! What can go wrong with a client configuration file. A leaf.

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
