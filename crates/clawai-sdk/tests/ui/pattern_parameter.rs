use clawai_sdk::prelude::*;

#[claw_tool]
async fn add((a, b): (i32, i32)) -> ToolResult {
    ToolResult::text(format!("{}", a + b))
}

fn main() {}
