//! The protocol revisions the SDK's servers speak.

/// Revisions negotiated with `initialize`, oldest first.
pub const HANDSHAKE_VERSIONS: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// The newest handshake revision: the answer to an `initialize` that asks for one the
/// server does not know.
pub const LATEST_HANDSHAKE_VERSION: &str = "2025-11-25";
/// Stateless revisions, where every request names its version in `_meta`.
pub const MODERN_VERSIONS: [&str; 1] = ["2026-07-28"];
/// Every revision, as `server/discover` lists them.
pub const ALL_VERSIONS: [&str; 5] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];
