#![warn(missing_docs)]
//! clawai's audit trail in PostgreSQL.
//!
//! Every replica of a cluster keeps its own hash-chained JSONL trail, written before a
//! decided message is forwarded (the local file is the record; the database is the
//! copy a team can query, and that a replica's own disk cannot quietly rewrite).
//!
//! * [`ship`]: follows a trail across rotations and inserts every line exactly once:
//!   the lines and the position (the hash of the last line shipped) are written in one
//!   transaction, so a shipper killed at any moment resumes where the database says.
//!   When PostgreSQL is away it waits and resumes; the trail on disk keeps everything
//!   meanwhile.
//! * [`verify`]: checks every writer's chain in the database with the same check as
//!   `clawai audit verify` runs on files ([`clawai_proxy::audit::verify`]), naming the
//!   first row that breaks it.
//! * [`schema`]: the tables, created on first use.

mod postgres;
pub mod schema;
pub mod ship;
mod trail;
pub mod verify;

pub use postgres::{Error, Postgres, redacted};
pub use ship::{ShipOptions, Shipped, ship};
pub use verify::{DatabaseVerdict, verify};
