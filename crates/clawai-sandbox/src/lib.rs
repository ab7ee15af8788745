#![warn(missing_docs)]
//! A sandbox for the stdio servers clawai starts, enforced by the kernel.
//!
//! One job: from what a server was asked to do (its command line, and the grants a person
//! added), build a [`Profile`] of what it may touch, and apply that profile to the child
//! between `fork` and `exec`. On Linux:
//!
//! * **Landlock** refuses every file access outside the profile's grants (and, on ABI 4
//!   and later, every TCP bind and connect outside its ports; on ABI 6 and later, signals
//!   and abstract Unix sockets towards processes outside the sandbox).
//! * A **user namespace** lets an unprivileged clawai create the others; a **PID
//!   namespace** with a small init of clawai's own as PID 1 means that when the server
//!   exits, the kernel kills everything it started (`setsid`, double forks included);
//!   a **network namespace** (network `none`) leaves the server no network at all.
//! * `no_new_privs`: nothing the server executes gains privileges (setuid programs).
//!
//! What the kernel cannot enforce is said, never assumed: [`Report`] lists what was in
//! force for a started server and what was not; [`Mode::Require`] refuses to start
//! instead of starting with less.
//!
//! The crate sits below the proxy (which starts servers) and depends on nothing of
//! clawai's.

mod grant;
mod plan;
mod profile;
mod report;
mod support;

#[cfg(target_os = "linux")]
mod linux;

pub use grant::{Access, Grant, NetworkGrant};
pub use plan::{Prepared, on_this_system, prepare};
pub use profile::{Profile, ServerContext};
pub use report::{Protection, Report};
pub use support::Support;

use std::path::PathBuf;

/// The environment variable a test sets to make clawai behave as on a kernel without
/// some features (comma-separated: `landlock`, `landlock-tcp`, `namespaces`), so that
/// the degradation and `require` paths can be tested on a machine that has them all.
/// It can only take protections away, and every protection it takes away is reported
/// as missing like a missing kernel feature.
pub const PRETEND_MISSING_VARIABLE: &str = "CLAWAI_SANDBOX_TEST_WITHOUT";

/// Whether, and how strictly, a server is sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Not sandboxed.
    #[default]
    Off,
    /// Sandboxed with everything this kernel can enforce; what it cannot is said.
    Auto,
    /// Sandboxed with everything the profile asks, or not started.
    Require,
}

impl Mode {
    /// The spellings accepted (`--sandbox`, a gateway server's `"sandbox"`).
    pub const NAMES: [(&'static str, Mode); 3] = [("auto", Mode::Auto), ("require", Mode::Require), ("off", Mode::Off)];

    /// The mode spelled `text`, if it is one.
    pub fn parse(text: &str) -> Option<Mode> {
        Mode::NAMES.iter().find(|(name, _)| *name == text).map(|(_, mode)| *mode)
    }

    /// As spelled on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Off => "off",
            Mode::Auto => "auto",
            Mode::Require => "require",
        }
    }
}

/// What a person asked for one server: the mode, and grants added to the `auto` profile.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Off, auto or require.
    pub mode: Mode,
    /// Paths the server may read (and execute), besides the profile's.
    pub read: Vec<PathBuf>,
    /// Paths the server may read and write, besides the profile's.
    pub write: Vec<PathBuf>,
    /// The network the server may reach; empty: the profile's default (`none` unless
    /// the server is known to need more). Given, it replaces that default.
    pub network: Vec<NetworkGrant>,
}

impl Request {
    /// True when the server is to be sandboxed.
    pub fn is_on(&self) -> bool {
        self.mode != Mode::Off
    }

    /// The arguments of `clawai proxy` that ask for this sandbox (`--sandbox auto
    /// --sandbox-read P …`): what `clawai wrap --sandbox` writes into an entry.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec!["--sandbox".to_owned(), self.mode.as_str().to_owned()];
        for path in &self.read {
            args.extend(["--sandbox-read".to_owned(), path.display().to_string()]);
        }
        for path in &self.write {
            args.extend(["--sandbox-write".to_owned(), path.display().to_string()]);
        }
        for grant in &self.network {
            args.extend(["--sandbox-network".to_owned(), grant.to_string()]);
        }
        args
    }
}

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
