//! The tools the official MCP conformance suite calls (`test_simple_text`, …), written
//! with the SDK and served over Streamable HTTP. CI runs the suite's tool scenarios
//! against it (tests/e2e/test_sdk.py).
//!
//! ```text
//! cargo run -p clawai-sdk --example conformance_server -- 127.0.0.1:3001
//! ```

use std::time::Duration;

use clawai_sdk::context::{self, LogLevel};
use clawai_sdk::prelude::*;
use serde_json::{Value, json};

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

/// Returns simple text.
#[claw_tool(name = "test_simple_text")]
async fn simple_text() -> ToolResult {
    ToolResult::text("This is a simple text response for testing.")
}

/// Returns an image.
#[claw_tool(name = "test_image_content")]
async fn image_content() -> ToolResult {
    ToolResult::new(vec![ToolContent::image(PNG, "image/png")])
}

/// Returns audio.
#[claw_tool(name = "test_audio_content")]
async fn audio_content() -> ToolResult {
    ToolResult::new(vec![ToolContent::audio(WAV, "audio/wav")])
}

/// Returns an embedded resource.
#[claw_tool(name = "test_embedded_resource")]
async fn embedded_resource() -> ToolResult {
    ToolResult::new(vec![ToolContent::resource_text(
        "test://embedded-resource",
        "text/plain",
        "This is an embedded resource content.",
    )])
}

/// Returns mixed content.
#[claw_tool(name = "test_multiple_content_types")]
async fn multiple_content_types() -> ToolResult {
    ToolResult::new(vec![
        ToolContent::text("Multiple content types test:"),
        ToolContent::image(PNG, "image/png"),
        ToolContent::resource_text(
            "test://mixed-content-resource",
            "application/json",
            json!({"test": "data", "value": 123}).to_string(),
        ),
    ])
}

/// Logs while running.
#[claw_tool(name = "test_tool_with_logging")]
async fn tool_with_logging() -> ToolResult {
    for (step, message) in
        ["Tool execution started", "Tool processing data", "Tool execution completed"].iter().enumerate()
    {
        if step > 0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        context::log(LogLevel::Info, message);
    }
    ToolResult::text("Tool with logging executed successfully")
}

/// Reports progress.
#[claw_tool(name = "test_tool_with_progress")]
async fn tool_with_progress() -> ToolResult {
    for progress in [0.0, 50.0, 100.0] {
        context::report_progress(progress, Some(100.0), Some(&format!("Completed step {progress}")));
        if progress < 100.0 {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    ToolResult::text("Tool with progress executed successfully")
}

/// Always fails.
#[claw_tool(name = "test_error_handling")]
async fn error_handling() -> ToolResult {
    ToolResult::error("This tool intentionally returns an error for testing")
}

/// A tool whose input schema uses JSON Schema 2020-12 features, given by hand.
struct EchoArguments;

#[async_trait]
impl ToolHandler for EchoArguments {
    async fn call(&self, args: Value) -> Result<ToolResult, ClawError> {
        Ok(ToolResult::text(format!("Received: {args}")))
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let addr = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3001".into()).parse()?;
    let mut server = SdkMcpServerImpl::new("clawai-sdk-conformance", "1.0.0");
    for tool in [
        simple_text(),
        image_content(),
        audio_content(),
        embedded_resource(),
        multiple_content_types(),
        tool_with_logging(),
        tool_with_progress(),
        error_handling(),
    ] {
        server.register_tool(tool);
    }
    server.register_tool(SdkMcpTool::new(
        "json_schema_2020_12_tool",
        "Tool with JSON Schema 2020-12 features",
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {"address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
            "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
            "additionalProperties": false
        }),
        std::sync::Arc::new(EchoArguments),
    ));
    eprintln!("conformance server on http://{addr}/mcp");
    server.serve_http(addr).await?;
    Ok(())
}
