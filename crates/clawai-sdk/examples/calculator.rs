//! Seed 002's tools served as one MCP server: `calculator`, `echo` (an optional
//! parameter) and `fetch` (a `Result` return).
//!
//! ```text
//! cargo run -p clawai-sdk --example calculator                       # stdio
//! cargo run -p clawai-sdk --example calculator -- --http 127.0.0.1:8080   # http://127.0.0.1:8080/mcp
//! ```

use clawai_sdk::prelude::*;

#[claw_tool(name = "calculator", description = "Perform basic arithmetic operations (add or multiply)")]
async fn calculator(operation: String, a: i32, b: i32) -> ToolResult {
    match operation.as_str() {
        "add" => ToolResult::text(format!("Result: {}", a + b)),
        "multiply" => ToolResult::text(format!("Result: {}", a * b)),
        _ => ToolResult::error(format!("Unknown operation: {operation}")),
    }
}

#[claw_tool(name = "echo", description = "Echo text back, optionally repeated multiple times")]
async fn echo(
    /// The text to echo.
    text: String,
    /// How many times (default 1).
    repeat: Option<i32>,
) -> ToolResult {
    let times = repeat.unwrap_or(1);
    let result = (0..times).map(|_| text.clone()).collect::<Vec<_>>().join("\n");
    ToolResult::text(result)
}

#[claw_tool(name = "fetch", description = "Fetch a URL")]
async fn fetch_url(url: String) -> Result<ToolResult, ClawError> {
    if url.is_empty() {
        return Err(ClawError::ToolExecution("URL cannot be empty".into()));
    }
    Ok(ToolResult::text(format!("Fetched: {url}")))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut server = SdkMcpServerImpl::new("math-tools", "1.0.0");
    server.register_tool(calculator());
    server.register_tool(echo());
    server.register_tool(fetch_url());
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => server.serve_stdio().await?,
        [flag, addr] if flag == "--http" => {
            let addr = addr.parse()?;
            eprintln!("serving math-tools on http://{addr}/mcp");
            server.serve_http(addr).await?
        }
        _ => anyhow::bail!("usage: calculator [--http ADDR]"),
    }
    Ok(())
}
