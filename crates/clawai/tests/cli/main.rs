//! The `clawai` command line, tested as a person and a client use it: one test binary
//! (a link of the whole CLI per file made the suite slow to build), one module per
//! command or concern. `cargo test -p clawai --test cli proxy_lifecycle` runs one of them.

mod postgres_support;
mod support;
mod ui_support;

mod audit_chain;
mod audit_cli;
mod audit_postgres;
mod clients_cli;
mod cluster_cli;
mod help_text;
mod imported_policies;
mod pins_cli;
mod policy_cli;
mod proxy_approvals;
mod proxy_batch;
mod proxy_broker;
mod proxy_lifecycle;
mod proxy_unlisted;
mod proxy_upstream;
mod proxy_wire;
mod sandbox_cli;
mod scan_cli;
mod ui_broker;
mod ui_http;
mod url_spellings;
