use clawai_sdk::prelude::*;

#[claw_tool]
async fn greet<T: ToString>(name: T) -> ToolResult {
    ToolResult::text(name.to_string())
}

fn main() {}
