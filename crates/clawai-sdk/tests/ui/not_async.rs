use clawai_sdk::prelude::*;

#[claw_tool]
fn greet(name: String) -> ToolResult {
    ToolResult::text(name)
}

fn main() {}
