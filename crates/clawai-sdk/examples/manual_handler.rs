//! A tool written by hand with `ToolHandler` (seed 002 §5), for when the macro is not
//! enough: here the handler keeps state (a call counter) shared through `Arc`.
//!
//! ```text
//! cargo run -p clawai-sdk --example manual_handler     # serves over stdio
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use clawai_sdk::prelude::*;
use serde_json::{Value, json};

struct CalculatorHandler {
    calls: AtomicU64,
}

#[async_trait]
impl ToolHandler for CalculatorHandler {
    async fn call(&self, args: Value) -> Result<ToolResult, ClawError> {
        let number = |name: &str| {
            args[name].as_f64().ok_or_else(|| ClawError::InvalidParams(format!("argument `{name}` must be a number")))
        };
        let (a, b) = (number("a")?, number("b")?);
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        Ok(ToolResult::text(format!("Result: {} (call {call})", a + b)))
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let tool = SdkMcpTool::new(
        "add",
        "Add two numbers",
        json!({
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"]
        }),
        Arc::new(CalculatorHandler { calls: AtomicU64::new(0) }),
    )
    .with_annotations(json!({"readOnlyHint": true}));
    let mut server = SdkMcpServerImpl::new("calculator", "1.0.0");
    server.register_tool(tool);
    server.serve_stdio().await
}
