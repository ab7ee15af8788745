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

mod error;
mod grant;
mod plan;
mod profile;
mod report;
mod request;
mod support;

#[cfg(target_os = "linux")]
mod linux;

pub use error::SandboxError;
pub use grant::{Access, Grant, NetworkGrant};
pub use plan::{Prepared, on_this_system, prepare};
pub use profile::{Profile, ServerContext};
pub use report::{Protection, Report};
pub use request::{Mode, Request};
pub use support::{PRETEND_MISSING_VARIABLE, Support};
