use clawai_sdk::prelude::*;

struct Greeter;

impl Greeter {
    #[claw_tool]
    async fn greet(&self, name: String) -> ToolResult {
        ToolResult::text(name)
    }
}

fn main() {}
