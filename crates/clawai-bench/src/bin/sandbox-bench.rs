//! What the sandbox costs: `clawai proxy -- mcp-echo` against `clawai proxy --sandbox
//! auto -- mcp-echo`, started in turn, [`STARTS`] times each: the time from spawn to
//! the `initialize` result (the median of each, and the difference, whose budget is
//! [`BUDGET`]), then the median round trip of [`CALLS`] calls in each (the sandbox is
//! applied once, before `exec`: nothing per message).
//!
//! Run: `./scripts/bench` (or `cargo build --release -p clawai -p clawai-bench` and
//! `./target/release/sandbox-bench`). Exits non-zero when the start-up cost is over
//! the budget.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::Result;
use clawai_bench::stats::median;
use clawai_bench::stdio::Session;

const STARTS: usize = 10;
const CALLS: usize = 2_000;
const BUDGET: Duration = Duration::from_millis(10);
const CALL: &str =
    r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;

fn proxy(clawai: &Path, echo: &Path, work: &Path, sandboxed: bool) -> Command {
    let mut command = Command::new(clawai);
    command.args(["proxy", "--server", "bench", "--policy"]).arg(work.join("policy.toml"));
    command.arg("--audit").arg(work.join("audit.jsonl"));
    if sandboxed {
        command.args(["--sandbox", "auto"]);
    }
    command.arg("--").arg(echo).env("CLAWAI_LOG", "error");
    command
}

fn start(command: Command) -> Result<(Duration, Session)> {
    let began = Instant::now();
    let mut session = Session::spawn(command)?;
    session.initialize();
    Ok((began.elapsed(), session))
}

fn round_trips(session: &mut Session) -> Duration {
    let mut times = Vec::with_capacity(CALLS);
    for id in 1..=clawai_bench::scaled(CALLS, 50) {
        let began = Instant::now();
        session.send(&CALL.replace("ID", &id.to_string()));
        session.recv();
        times.push(began.elapsed());
    }
    median(times)
}

fn main() -> Result<()> {
    let clawai = clawai_bench::sibling("clawai")?;
    let echo = clawai_bench::sibling("mcp-echo")?;
    let work = tempfile::Builder::new().prefix("clawai-sandbox-bench-").tempdir()?;
    std::fs::write(work.path().join("policy.toml"), "[[rule]]\nid = \"all\"\naction = \"allow\"\nmethod = \"**\"\n")?;
    let (mut plain, mut sandboxed) = (Vec::new(), Vec::new());
    let (mut plain_calls, mut sandboxed_calls) = (Vec::new(), Vec::new());
    for round in 0..clawai_bench::scaled(STARTS, 2) {
        // In turn, so that the machine's load falls on both alike.
        for boxed in [round % 2 == 0, round % 2 != 0] {
            let (took, mut session) = start(proxy(&clawai, &echo, work.path(), boxed))?;
            let calls = if round == 0 { Some(round_trips(&mut session)) } else { None };
            session.finish();
            let (starts, trips) =
                if boxed { (&mut sandboxed, &mut sandboxed_calls) } else { (&mut plain, &mut plain_calls) };
            starts.push(took);
            trips.extend(calls);
        }
    }
    let (plain, sandboxed) = (median(plain), median(sandboxed));
    let cost = sandboxed.saturating_sub(plain);
    println!("sandbox start-up (spawn to initialize result, median of {})", clawai_bench::scaled(STARTS, 2));
    println!("  clawai proxy                  {:>8.2} ms", plain.as_secs_f64() * 1e3);
    println!("  clawai proxy --sandbox auto   {:>8.2} ms", sandboxed.as_secs_f64() * 1e3);
    println!("  cost                          {:>8.2} ms (budget {} ms)", cost.as_secs_f64() * 1e3, BUDGET.as_millis());
    println!("round trip, median of {} calls", clawai_bench::scaled(CALLS, 50));
    println!("  clawai proxy                  {:>8.1} µs", median(plain_calls).as_secs_f64() * 1e6);
    println!("  clawai proxy --sandbox auto   {:>8.1} µs", median(sandboxed_calls).as_secs_f64() * 1e6);
    // A quick run only checks that the benchmark runs (a debug build, one start).
    anyhow::ensure!(
        clawai_bench::quick() || cost <= BUDGET,
        "the sandbox costs {cost:?} at start-up, over the budget of {BUDGET:?}"
    );
    Ok(())
}
