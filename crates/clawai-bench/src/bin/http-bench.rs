//! The HTTP benchmark: `tools/call` requests at a fixed rate, then as fast as possible,
//! against an MCP server over Streamable HTTP directly and through
//! `clawai proxy --listen --upstream` in front of the same server. The server is the
//! SDK's calculator example (`cargo build --release -p clawai-sdk --examples`).
//!
//! ```text
//! http-bench [--rate 500] [--seconds 3]      (run from the workspace root, after building)
//! ```

use std::process::{Command, Stdio};
use std::sync::Arc;

use anyhow::{Context, Result};
use clawai_bench::http::{
    Call, Endpoint, Killed, closed_loop, fixed_rate, free_port, start_calculator, wait_listening,
};
use serde_json::json;

const CONCURRENCY: usize = 16;
const ROUNDS: usize = 3;

/// The calculator's `add`, whose answer says `Result: 5`.
fn add() -> Call {
    Call {
        params: json!({"name": "calculator", "arguments": {"operation": "add", "a": 2, "b": 3}}),
        answered: |answer| answer["result"]["content"][0]["text"] == "Result: 5",
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let option = |name: &str, default: u32| -> Result<u32> {
        match args.iter().position(|a| a == name) {
            Some(i) => args.get(i + 1).context("missing value")?.parse().context("not a number"),
            None => Ok(default),
        }
    };
    let quick = clawai_bench::quick();
    let (rate, seconds) =
        (option("--rate", if quick { 100 } else { 500 })?, option("--seconds", if quick { 1 } else { 3 })?);
    let round_count = clawai_bench::rounds(ROUNDS);
    // Beside this binary: target/release, or target/debug for a quick run.
    let release = std::env::current_exe()?.parent().context("no directory")?.to_path_buf();
    let policy = std::env::temp_dir().join("clawai-http-bench-policy.toml");
    std::fs::write(&policy, "[[rule]]\nid = \"allow-all\"\naction = \"allow\"\nmethod = \"**\"\n")?;
    let audit = std::env::temp_dir().join("clawai-http-bench-audit.jsonl");

    let (_server, server_port) = start_calculator(&release).await?;
    let proxy_port = free_port()?;
    let _proxy = Killed(
        Command::new(release.join("clawai"))
            .args(["proxy", "--listen", &format!("127.0.0.1:{proxy_port}"), "--upstream"])
            .arg(format!("http://127.0.0.1:{server_port}/mcp"))
            .arg("--policy")
            .arg(&policy)
            .arg("--audit")
            .arg(&audit)
            .stderr(Stdio::null())
            .spawn()
            .context("build it first: cargo build --release -p clawai")?,
    );
    wait_listening(proxy_port).await?;

    let direct = Arc::new(Endpoint::open(format!("http://127.0.0.1:{server_port}/mcp")).await?);
    let guarded = Arc::new(Endpoint::open(format!("http://127.0.0.1:{proxy_port}/mcp")).await?);
    for endpoint in [&direct, &guarded] {
        fixed_rate(endpoint, &add(), 200, 1).await?; // warm up
    }
    // Interleaved rounds, medians reported: this machine's noise moves single runs a lot.
    let mut rounds: [Vec<f64>; 6] = Default::default();
    for round in 1..=round_count {
        eprintln!("round {round}/{round_count}");
        let (p50, p99) = fixed_rate(&direct, &add(), rate, seconds).await?;
        rounds[0].push(p50);
        rounds[1].push(p99);
        let (p50, p99) = fixed_rate(&guarded, &add(), rate, seconds).await?;
        rounds[2].push(p50);
        rounds[3].push(p99);
        rounds[4].push(closed_loop(&direct, &add(), CONCURRENCY, seconds).await?);
        rounds[5].push(closed_loop(&guarded, &add(), CONCURRENCY, seconds).await?);
    }
    let [direct_p50, direct_p99, guarded_p50, guarded_p99, direct_rps, guarded_rps] = rounds.map(|mut values| {
        values.sort_by(f64::total_cmp);
        values[values.len() / 2]
    });

    println!(
        "HTTP tools/call, {rate} req/s for {seconds} s (open loop), then {CONCURRENCY} callers flat out for {seconds} s; medians of {round_count} interleaved rounds"
    );
    println!("| measure | direct | through clawai --listen | added |");
    println!("|---|---|---|---|");
    println!(
        "| p50 latency (µs) | {direct_p50:.0} | {guarded_p50:.0} | +{:.0} µs (×{:.2}) |",
        guarded_p50 - direct_p50,
        guarded_p50 / direct_p50
    );
    println!(
        "| p99 latency (µs) | {direct_p99:.0} | {guarded_p99:.0} | +{:.0} µs (×{:.2}) |",
        guarded_p99 - direct_p99,
        guarded_p99 / direct_p99
    );
    println!(
        "| requests/s ({CONCURRENCY} callers) | {direct_rps:.0} | {guarded_rps:.0} | ×{:.2} |",
        guarded_rps / direct_rps
    );
    Ok(())
}
