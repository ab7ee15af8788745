#![warn(missing_docs)]
//! The approval broker, as the proxy and the terminal commands see it.
//!
//! A `prompt` decision can be answered out of band: `clawai ui` runs a broker that
//! listens on a Unix socket ([`socket_path`]); a proxy holding a call asks it with
//! [`Client::ask`], and a person answers in the broker's web page or with
//! `clawai approve` / `clawai deny`, which use [`Client::approve`] and [`Client::deny`].
//! "Always" answers are kept in `approvals.toml` ([`append_always`]).
//!
//! Blocking I/O only: the stdio proxy binary links this crate and has no async runtime.

mod always;
mod always_scope;
mod client;
mod held;
mod paths;
mod protocol;

pub use always::{
    AlwaysEntry, AlwaysError, AlwaysFile, AlwaysWriter, AskedVia, append_always, append_always_to, with_always,
};
pub use always_scope::Covered;
pub use client::{Canceller, Client, Error, Pending};
pub use held::{HeldApprovals, HeldCall, LocalBroker, Withdraw, approval_id};
pub use paths::{approvals_file, audit_file, socket_path, state_dir, url_file};
pub use protocol::{Answer, Ask, By, Outcome, PendingItem, Reply, Request, Scope, State};
