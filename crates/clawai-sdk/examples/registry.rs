//! Seed 002's end-to-end example: tools defined with the macro, a server, and a registry
//! that routes JSON-RPC messages to servers by name, as a host does for in-process
//! servers. Prints each exchange and exits.
//!
//! ```text
//! cargo run -p clawai-sdk --example registry
//! ```

use clawai_sdk::prelude::*;
use serde_json::json;

#[claw_tool(name = "calculator", description = "Perform arithmetic")]
async fn calculator(operation: String, a: i32, b: i32) -> ToolResult {
    match operation.as_str() {
        "add" => ToolResult::text(format!("{}", a + b)),
        "multiply" => ToolResult::text(format!("{}", a * b)),
        _ => ToolResult::error(format!("Unknown operation: {operation}")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut server = SdkMcpServerImpl::new("math-tools", "1.0.0");
    server.register_tool(calculator());

    let mut registry = SdkMcpServerRegistry::new();
    registry.register(server);

    let exchanges = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "demo", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "calculator", "arguments": {"operation": "multiply", "a": 6, "b": 7}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "calculator", "arguments": {"operation": "divide", "a": 1, "b": 0}}}),
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "calculator", "arguments": {"a": 1}}}),
    ];
    for request in exchanges {
        let response = registry.handle("math-tools", request.clone()).await?;
        println!("→ {request}\n← {}\n", response.map(|r| r.to_string()).unwrap_or_default());
    }
    match registry.handle("no-such-server", json!({"jsonrpc": "2.0", "id": 6, "method": "ping"})).await {
        Err(error) => println!("unknown server: {error}"),
        Ok(_) => anyhow::bail!("the registry routed to a server it does not have"),
    }
    Ok(())
}
