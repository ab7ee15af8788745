use clawai_sdk::prelude::*;

#[claw_tool]
async fn greet(name: &str) -> ToolResult {
    ToolResult::text(name)
}

fn main() {}
