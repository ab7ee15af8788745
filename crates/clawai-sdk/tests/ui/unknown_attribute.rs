use clawai_sdk::prelude::*;

#[claw_tool(title = "Greeter")]
async fn greet(name: String) -> ToolResult {
    ToolResult::text(name)
}

fn main() {}
