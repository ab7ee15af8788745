#![warn(missing_docs)]
//! clawai's built-in tools, written with `clawai-sdk` and `#[claw_tool]`:
//!
//! * `read_file`, `list_directory`: read what is on this machine;
//! * `write_file`: replace a file atomically (or append to it);
//! * `exec_shell`: run a program (a shell only when asked), with a timeout and an
//!   output cap, in a minimal environment;
//! * `web_fetch`: an http(s) GET with size and time caps that follows no redirect to
//!   another origin (that takes a call of its own, so the policy decides the new URL).
//!
//! The tools do no checking of their own beyond their caps: they run behind clawai's
//! guards (`clawai mcp-server`, or a gateway server of `"type": "builtin"`), where the
//! policy decides every call like any other server's (`builtin__write_file`, …). Their
//! annotations tell the policy what they do: the reads are read-only, `write_file` and
//! `exec_shell` are destructive, `exec_shell` and `web_fetch` reach the open world.

mod exec_shell;
mod files;
mod text;
mod web_fetch;

use clawai_sdk::{SdkMcpServerImpl, SdkMcpTool};
use serde_json::json;

/// The name of the built-in server, as `serverInfo` shows it.
pub const SERVER_NAME: &str = "clawai-builtin";

/// The built-in tools as one SDK server.
pub fn server() -> SdkMcpServerImpl {
    let mut server = SdkMcpServerImpl::new(SERVER_NAME, env!("CARGO_PKG_VERSION"));
    for tool in tools() {
        server.register_tool(tool);
    }
    server
}

/// The built-in tools with their annotations.
pub fn tools() -> Vec<SdkMcpTool> {
    let reads = json!({"readOnlyHint": true, "openWorldHint": false});
    vec![
        files::read_file().with_annotations(reads.clone()),
        files::write_file().with_annotations(json!({
            "readOnlyHint": false, "destructiveHint": true, "idempotentHint": true, "openWorldHint": false
        })),
        files::list_directory().with_annotations(reads),
        exec_shell::exec_shell().with_annotations(json!({
            "readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true
        })),
        web_fetch::web_fetch().with_annotations(json!({"readOnlyHint": true, "openWorldHint": true})),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_listed_with_annotations() {
        let server = server();
        let listed = server.list_tools();
        let names: Vec<&str> = listed.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["read_file", "write_file", "list_directory", "exec_shell", "web_fetch"]);
        for tool in &listed {
            assert!(tool["annotations"]["readOnlyHint"].is_boolean(), "{tool}");
            assert!(tool["description"].as_str().is_some_and(|d| d.len() > 20), "{tool}");
        }
    }
}
