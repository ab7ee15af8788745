#![warn(missing_docs)]
//! clawai's policy language and decision engine.
//!
//! A policy is an ordered list of rules; the first rule that matches a message decides
//! (allow, deny, prompt or audit), and when none does the policy's default decides
//! (`deny` unless the policy says otherwise).
//!
//! ```
//! use clawai_policy::{Action, Call, Format, load_str};
//! use clawai_protocol::strict;
//!
//! let policy = load_str(r#"
//!     [[rule]]
//!     id = "no-ssh"
//!     action = "deny"
//!     tool = "**"
//!     any_arg = "**/.ssh/**"
//!
//!     [[rule]]
//!     action = "allow"
//!     tool = "read_file"
//!     args.path = "/home/u/**"
//! "#, Format::Toml, "example.toml").unwrap();
//!
//! // The `params` of a `tools/call`, read as the proxy reads them.
//! let params = strict::parse(br#"{"name":"read_file","arguments":{"path":"/home/u/p/../.ssh/id_rsa"}}"#).unwrap();
//! let decision = policy.decide(&Call::from_params("tools/call", Some(&params)));
//! assert_eq!(decision.action, Action::Deny);
//! assert_eq!(decision.rule_id(), Some("no-ssh"));
//! ```
//!
//! Modules, from the bottom up: [`glob`] (patterns), [`normalize`] (how argument
//! strings are read), [`operation`] (what a tool name says it does), [`call`] (the
//! input, read from a [`clawai_protocol::Json`] value), `rule` and `engine` (matching
//! and deciding), [`session`] (what `rate`, `taint` and `tainted` remember), `load` (files and errors),
//! [`formats`] (AgentShield and mcp-gov), [`fixture`] (policy tests) and [`starter`].

pub mod approvals;
pub mod call;
mod engine;
pub mod fixture;
pub mod formats;
pub mod glob;
mod load;
pub mod normalize;
pub mod operation;
mod rule;
pub mod session;
pub mod starter;
mod urls;
mod value;
pub mod wire;

pub use approvals::{Approvals, ApprovalsDocument, ApprovalsFile, StandingApprovals};
pub use call::{Call, FollowLinks, ToolAnnotations};
pub use engine::{Decision, Explanation, Guards, Policy, ResultsGuard, ScanSeverity, Step};
pub use formats::Converted;
pub use load::{Diagnostic, Format, PolicyError, convert, load_file, load_str, to_toml};
pub use rule::{Action, Miss, Rule, loose_name};
pub use session::{Rate, Session};

#[cfg(test)]
mod tests;
