use clawai_sdk::prelude::*;

#[claw_tool]
async fn greet(name: String) {
    println!("{name}");
}

fn main() {}
