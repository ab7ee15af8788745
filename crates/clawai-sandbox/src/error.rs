//! Why a sandbox could not be set up. A leaf.

use std::path::PathBuf;

/// Why a sandbox could not be set up; each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// `--sandbox require`, and the kernel cannot enforce all of the profile.
    #[error(
        "--sandbox require: this system cannot enforce {}; the server was not started. \
         Use `--sandbox auto` to start it with what is enforced (clawai says what is not), \
         or run it on a kernel with Landlock ABI 4 or later and user namespaces",
        missing.join(", ")
    )]
    NotEnforceable {
        /// What cannot be enforced, in words.
        missing: Vec<String>,
    },
    /// A path granted by hand does not exist.
    #[error("the sandbox grant {} cannot be used ({source}); create it, or remove the grant", path.display())]
    Grant {
        /// The path as given.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A network grant that is not `none`, `loopback`, `any` or `HOST:PORT`.
    #[error(
        "`{0}` is not a network grant; use `none`, `loopback`, `any` or HOST:PORT (`api.github.com:443`, `[::1]:8080`)"
    )]
    Network(String),
    /// `none` given together with other network grants.
    #[error("the network grant `none` cannot be combined with `{0}`; give `none` alone, or only the grants to allow")]
    NoneWithOthers(String),
    /// The system refused a step of setting up (a pipe, the Landlock ruleset).
    #[error("cannot set up the sandbox: {0}")]
    Setup(String),
}
