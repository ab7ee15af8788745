use clawai_sdk::prelude::*;

#[derive(serde::Deserialize)]
struct Point {
    x: f64,
}

#[claw_tool]
async fn locate(at: Point) -> ToolResult {
    ToolResult::text(format!("{}", at.x))
}

fn main() {}
