use clawai_sdk::prelude::*;

#[claw_tool]
async fn greet(name: String) -> String {
    name
}

fn main() {}
