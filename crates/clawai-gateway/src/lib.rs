#![warn(missing_docs)]
//! `clawai gateway`: many MCP servers behind one guarded endpoint.
//!
//! * [`config`]: the gateway's configuration file (servers, `agent.allowedTools`).

pub mod config;
