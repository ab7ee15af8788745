//! The tables the trail is shipped to, created if missing (docs/cluster.md shows them).
//!
//! * `clawai_audit_events`: one row per line of a trail, in the order shipped (`id`).
//!   `line` is the line exactly as written, without its newline: its SHA-256 with the
//!   newline is what the next line of its writer names as `prev`. `writer` and `seq`
//!   are copied out of the line for lookups; a writer's line is stored once (a unique
//!   index), so a line changed on disk after it was shipped never replaces the copy.
//! * `clawai_audit_sources`: per trail shipped (`source`: host and path unless named),
//!   the hash of the last line shipped, written in the same transaction as the lines.
//! * `clawai_audit_writers`: the first line number of each writer shipped (above 0 when
//!   its first lines were rotated away before shipping), so that rows deleted from the
//!   start of a chain are noticed.

/// Creates what is missing; safe to run by every shipper at every start.
pub const CREATE: &str = "
CREATE TABLE IF NOT EXISTS clawai_audit_events (
    id         bigserial   PRIMARY KEY,
    source     text        NOT NULL,
    writer     text,
    seq        bigint,
    line       text        NOT NULL,
    shipped_at timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX IF NOT EXISTS clawai_audit_events_writer_seq ON clawai_audit_events (writer, seq);
CREATE TABLE IF NOT EXISTS clawai_audit_sources (
    source     text        PRIMARY KEY,
    last_hash  text        NOT NULL,
    lines      bigint      NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS clawai_audit_writers (
    writer     text        PRIMARY KEY,
    first_seq  bigint      NOT NULL
);
";

/// Whether every table is there (in the role's search path).
pub(crate) const PRESENT: &str = "SELECT to_regclass('clawai_audit_events') IS NOT NULL \
     AND to_regclass('clawai_audit_sources') IS NOT NULL AND to_regclass('clawai_audit_writers') IS NOT NULL";

/// The least a shipper's role needs once the tables exist, `{role}` being its name: it
/// can add lines and move its position, never change or delete a line shipped.
pub const SHIPPER_GRANTS: &str = "
GRANT SELECT, INSERT ON clawai_audit_events, clawai_audit_writers TO {role};
GRANT SELECT, INSERT, UPDATE ON clawai_audit_sources TO {role};
GRANT USAGE ON SEQUENCE clawai_audit_events_id_seq TO {role};
";

/// Two shippers starting at once may both create the tables: PostgreSQL's
/// `IF NOT EXISTS` is not safe against that race, so creation runs under this
/// transaction-level advisory lock.
pub(crate) const LOCK: &str = "SELECT pg_advisory_xact_lock(7310434297364836)";
