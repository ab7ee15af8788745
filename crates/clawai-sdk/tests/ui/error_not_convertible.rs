use clawai_sdk::prelude::*;

struct MyError;

#[claw_tool]
async fn greet(name: String) -> Result<ToolResult, MyError> {
    if name.is_empty() { Err(MyError) } else { Ok(ToolResult::text(name)) }
}

fn main() {}
