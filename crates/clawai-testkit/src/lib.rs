#![warn(missing_docs)]
//! What clawai's tests share, so that each is written once: the corpus of real MCP
//! servers' listings ([`corpus`]), a reader of the audit trail ([`trail`]) and the
//! policies tests start from ([`policies`]). A dev-dependency only.

pub mod corpus;
pub mod policies;
pub mod trail;
