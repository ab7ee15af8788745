//! The audit trail: JSON Lines, one event per message or decision.
//!
//! Events are collected in memory and written with a single `write` to a file opened
//! for appending. A decision must be on disk before the message it describes leaves
//! clawai: transports flush the trail before they write forwarded bytes whose decision
//! is still waiting ([`AuditLog::has_decision`], or per thread
//! [`AuditLog::decisions_written`]), so the kernel has the event first and even a
//! SIGKILL of clawai loses nothing already decided. Other events (responses, messages no
//! rule decides) wait for the next write: the next decision's, a full buffer's, or the
//! one [`FLUSH_EVERY`] at the latest, and every one is written when clawai exits (a
//! SIGKILL can lose the last [`FLUSH_EVERY`] of them, never a decision). This keeps the
//! trail to one `write` per batch of decided calls instead of one per message each way.
//! When the file passes its size limit it is rotated (`audit.jsonl` →
//! `audit.jsonl.1` → … up to `keep` files); a trail that is not a regular file (a
//! device such as `/dev/null`, a FIFO) is never rotated. The file a rotation pushes out
//! is freed by the flusher thread, not on the path of the call that filled the trail.
//!
//! Every line is chained to its writer's line before it by SHA-256 ([`chain`]), so that
//! [`verify`] can name a line edited, deleted, inserted, reordered or cut after the fact.
//! Other processes writing the same trail may rotate it: the flusher notices and moves
//! this process's next lines to the new file.
//!
//! Modules: [`event`] (what an event says and its JSON), `log` (the file: buffering,
//! flushing, rotation), `observer` (what else sees each event: [`AuditObserver`]),
//! [`chain`] (the hash chain added as lines are written), [`verify`] (checking a trail's
//! chains) and [`stamp`] (one clock read per message).

pub mod chain;
pub mod event;
mod log;
mod observer;
pub mod stamp;
pub mod verify;
pub mod words;

pub use chain::{ChainHead, checkpoint_heads};
pub use event::{Direction, Encoder, Event};
pub use log::{AuditLog, FLUSH_EVERY};
pub use observer::AuditObserver;
pub use stamp::{Stamp, stamp};
pub use words::{AuditLine, Channel, Decision, EventKind, Scope, Step};

#[cfg(test)]
mod chain_tests;
#[cfg(test)]
mod tests;
