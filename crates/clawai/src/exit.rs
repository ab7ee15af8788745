//! How a command ends, shared by every command and by the root that exits with it. A
//! leaf: it uses no other module of the CLI.

/// How the process ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Success.
    Ok,
    /// The command ran and found a problem (a failed check or fixture).
    Failure,
    /// A specific code (the proxied server's, for example).
    Code(i32),
}
