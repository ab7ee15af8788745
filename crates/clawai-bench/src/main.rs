//! Measures `clawai proxy` against a direct connection and a bare byte relay, in one
//! run, on the same echo server, and prints a table of ratios.
//!
//! Build and run: `./scripts/bench` (builds release binaries first).
//!
//! Environment: `CLAWAI_BENCH_POLICY=FILE` replaces the 100-rule policy,
//! `CLAWAI_BENCH_AUDIT=FILE` moves the audit trail (e.g. `/dev/null` to leave it out of
//! the figures), `CLAWAI_BENCH_PROFILE=1` runs clawai's measurements only, once, for a
//! profiler attached to the run, `CLAWAI_BENCH_SELF=1` puts a second `clawai proxy` (its
//! own trail beside the first) in the bare relay's place: the ratios then compare
//! clawai with itself, and show how far this machine's noise moves them.
//! `CLAWAI_BENCH_BASELINE=PATH` does the same with another clawai binary (an earlier
//! build), so that a change is measured against the code before it in one run.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Result;
use clawai_bench::scaled;
use clawai_bench::stats::{median as mid, percentile};
use clawai_bench::stdio::Session;

/// Per mode and round. The p99 is the 100th slowest; with 2,000 (the 20th) runs of one
/// binary put clawai's p99 anywhere from ×1.06 to ×1.54 of the relay's.
const ROUND_TRIPS: usize = 10_000;
/// Pipelined calls per mode and round, sent in [`BURSTS`] bursts.
const PIPELINED: usize = 50_000;
const BURSTS: usize = 10;
const BIG_RESULTS: usize = 100;
const BIG_BYTES: usize = 1 << 20;
const STARTS: usize = 10;
/// Modes are measured in turn, this many times, and each figure is the median of the
/// rounds: this machine's noise moves single runs by tens of percent.
/// `CLAWAI_BENCH_ROUNDS` changes it (fewer for a quick look while working).
const ROUNDS: usize = 7;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Direct,
    Relay,
    Clawai,
}

struct Bins {
    echo: PathBuf,
    relay: PathBuf,
    clawai: PathBuf,
    policy: PathBuf,
    audit: PathBuf,
    /// `CLAWAI_BENCH_SELF`: the relay's place goes to a second clawai writing this trail.
    self_check: Option<PathBuf>,
    /// `CLAWAI_BENCH_BASELINE`: the binary that second clawai runs (else this build's).
    baseline: Option<PathBuf>,
}

fn clawai_command(bins: &Bins, audit: &std::path::Path) -> Command {
    clawai_binary_command(bins, &bins.clawai, audit)
}

fn clawai_binary_command(bins: &Bins, binary: &std::path::Path, audit: &std::path::Path) -> Command {
    let mut c = Command::new(binary);
    c.args(["proxy", "--server", "bench", "--policy"])
        .arg(&bins.policy)
        .arg("--audit")
        .arg(audit)
        .arg("--")
        .arg(&bins.echo);
    c.env("CLAWAI_LOG", "error");
    c
}

fn command(bins: &Bins, mode: Mode) -> Command {
    let mut c = match mode {
        Mode::Direct => Command::new(&bins.echo),
        Mode::Relay => match &bins.self_check {
            Some(audit) => clawai_binary_command(bins, bins.baseline.as_deref().unwrap_or(&bins.clawai), audit),
            None => {
                let mut c = Command::new(&bins.relay);
                c.arg("--").arg(&bins.echo);
                c
            }
        },
        Mode::Clawai => clawai_command(bins, &bins.audit),
    };
    c.stderr(Stdio::inherit());
    c
}

/// A session with `mode`'s process.
fn start(bins: &Bins, mode: Mode) -> Result<Session> {
    Session::spawn(command(bins, mode))
}

/// Started, initialized, and 300 calls in (caches and buffers warm).
fn warmed_up(bins: &Bins, mode: Mode) -> Result<Session> {
    let mut s = start(bins, mode)?;
    s.initialize();
    for i in 0..300 {
        s.send(&call(i));
        s.recv();
    }
    Ok(s)
}

fn peak_rss_kib(s: &Session, mode: Mode) -> Option<u64> {
    if mode == Mode::Direct {
        return None;
    }
    s.status_kib("VmHWM")
}

const CALL: &str = r#"{"jsonrpc":"2.0","id":ID,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/u/projects/app/src/main.rs"}}}"#;

fn call(id: usize) -> String {
    CALL.replace("ID", &id.to_string())
}

/// The large results measured, as `mcp-echo` names their tools, and as the table does.
const BIG_SHAPES: [(&str, &str); 3] =
    [("big_text", "text"), ("big_image", "base64 PNG image"), ("big_json", "JSON structuredContent")];

struct Figures {
    p50: Duration,
    p99: Duration,
    calls_per_s: f64,
    /// MiB/s of 1 MiB `tools/call` results, one figure per [`BIG_SHAPES`].
    mib_per_s: [f64; 3],
    start: Duration,
    rss_kib: Option<u64>,
}

/// The median of each figure over the rounds.
fn median(rounds: &[Figures]) -> Figures {
    Figures {
        p50: mid(rounds.iter().map(|f| f.p50).collect()),
        p99: mid(rounds.iter().map(|f| f.p99).collect()),
        calls_per_s: mid(rounds.iter().map(|f| f.calls_per_s).collect()),
        mib_per_s: [0, 1, 2].map(|shape| mid(rounds.iter().map(|f| f.mib_per_s[shape]).collect())),
        start: mid(rounds.iter().map(|f| f.start).collect()),
        rss_kib: rounds.iter().filter_map(|f| f.rss_kib).max(),
    }
}

/// Lines in the audit trail and the files it was rotated to (`audit.jsonl.1`, …).
fn audit_lines(trail: &std::path::Path) -> usize {
    let (Some(dir), Some(name)) = (trail.parent(), trail.file_name().and_then(|n| n.to_str())) else { return 0 };
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|f| f == name || f.starts_with(&format!("{name}."))))
        .map(|e| std::fs::read(e.path()).map(|bytes| bytes.iter().filter(|b| **b == b'\n').count()).unwrap_or(0))
        .sum()
}

/// Sequential round trips, the modes taking turns request by request (each in its own
/// session, the first to go rotating), so that all of them meet the same state of the
/// machine: on this VM the cost of waking a process drifts by tens of µs within
/// seconds, which measuring the modes one after the other turned into differences
/// between them. Then pipelined bursts in the same sessions, the modes taking turns
/// burst by burst for the same reason. Returns each mode's round-trip times, sorted,
/// and its pipelined calls per second.
fn interleaved(bins: &Bins, modes: &[Mode]) -> Result<Vec<(Vec<Duration>, f64)>> {
    let mut sessions = modes.iter().map(|m| warmed_up(bins, *m)).collect::<Result<Vec<_>>>()?;
    let mut rtts = vec![Vec::new(); modes.len()];
    for i in 0..scaled(ROUND_TRIPS, 200) {
        let msg = call(i + 1000);
        for turn in 0..modes.len() {
            let m = (i + turn) % modes.len();
            let t = Instant::now();
            sessions[m].send(&msg);
            sessions[m].recv();
            rtts[m].push(t.elapsed());
        }
    }
    let mut pipelined = vec![Duration::ZERO; modes.len()];
    let per_burst = scaled(PIPELINED, 1_000) / BURSTS;
    for burst in 0..BURSTS {
        let lines: String = (0..per_burst).map(|i| call(100_000 + burst * PIPELINED + i) + "\n").collect();
        for turn in 0..modes.len() {
            let m = (burst + turn) % modes.len();
            pipelined[m] += sessions[m].burst(lines.as_bytes(), per_burst);
        }
    }
    for s in sessions {
        s.finish();
    }
    Ok(rtts
        .into_iter()
        .zip(pipelined)
        .map(|(mut times, burst_time)| {
            times.sort();
            (times, (per_burst * BURSTS) as f64 / burst_time.as_secs_f64())
        })
        .collect())
}

/// Every figure but the interleaved ones (see [`interleaved`]) for one mode.
fn measure(bins: &Bins, mode: Mode, rtts: &[Duration], calls_per_s: f64) -> Result<Figures> {
    // Start-up: spawn to the initialize result.
    let mut starts = Vec::new();
    for _ in 0..scaled(STARTS, 2) {
        let t = Instant::now();
        let mut s = start(bins, mode)?;
        s.initialize();
        starts.push(t.elapsed());
        s.finish();
    }
    starts.sort();

    let mut s = warmed_up(bins, mode)?;

    let mib_per_s = BIG_SHAPES.map(|(tool, _)| big_results(&mut s, tool));
    let rss_kib = peak_rss_kib(&s, mode);
    s.finish();
    Ok(Figures {
        p50: percentile(rtts, 0.5),
        p99: percentile(rtts, 0.99),
        calls_per_s,
        mib_per_s,
        start: percentile(&starts, 0.5),
        rss_kib,
    })
}

/// MiB/s of [`BIG_RESULTS`] calls to `tool` (a 1 MiB result each), two in flight, as a
/// client that pipelines does. The results guard reads each: they answer `tools/call`.
fn big_results(s: &mut Session, tool: &str) -> f64 {
    let big = |id: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{{"bytes":{BIG_BYTES}}}}}}}"#
        )
    };
    s.send(&big(1));
    let first = s.recv();
    assert!(first > BIG_BYTES / 2, "{tool} was not answered in full: {}", String::from_utf8_lossy(&s.line));
    let t = Instant::now();
    let mut bytes = 0usize;
    s.send(&big(2));
    let count = scaled(BIG_RESULTS, 4);
    for i in 0..count {
        if i + 1 < count {
            s.send(&big(3 + i));
        }
        bytes += s.recv();
    }
    bytes as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64()
}

/// 100 rules in the shape of a real policy; the benchmark call is decided by the last.
fn policy_text() -> String {
    let mut text = String::from(
        "[defaults]\naction = \"deny\"\n[[rule]]\nid = \"no-credentials\"\naction = \"deny\"\ntool = \"**\"\nany_arg = [\"**/.ssh/**\", \"**/.aws/**\", \"**/.env\"]\n",
    );
    for i in 0..98 {
        text.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\naction = \"{}\"\ntool = \"svc{i}_*\"\nargs.path = \"/data/{i}/**\"\n",
            ["deny", "prompt", "audit"][i % 3]
        ));
    }
    text.push_str(
        "[[rule]]\nid = \"project\"\naction = \"allow\"\ntool = \"read_*\"\nargs.path = \"/home/u/projects/**\"\n",
    );
    // The large results' calls: no rule above matches `big_*`.
    text.push_str("[[rule]]\nid = \"results\"\naction = \"allow\"\ntool = \"big_*\"\n");
    text
}

fn main() -> Result<()> {
    let find = clawai_bench::sibling;
    // Removed when `main` returns, whichever way it does.
    let work_dir = tempfile::Builder::new().prefix("clawai-bench-").tempdir()?;
    let work = work_dir.path();
    let policy = work.join("policy.toml");
    match std::env::var_os("CLAWAI_BENCH_POLICY") {
        Some(custom) => std::fs::copy(custom, &policy).map(drop)?,
        None => std::fs::write(&policy, policy_text())?,
    }
    // The trail in its own directory, as by default: the policy's directory is watched
    // for edits, and a trail written beside the policy would wake the watcher at every
    // write.
    let audit = std::env::var_os("CLAWAI_BENCH_AUDIT")
        .map(PathBuf::from)
        .unwrap_or_else(|| work.join("state").join("audit.jsonl"));
    // Beside the first trail; a device such as /dev/null serves both.
    let baseline = std::env::var_os("CLAWAI_BENCH_BASELINE").filter(|p| !p.is_empty()).map(PathBuf::from);
    let self_check = (std::env::var_os("CLAWAI_BENCH_SELF").is_some() || baseline.is_some())
        .then(|| if audit.exists() && !audit.is_file() { audit.clone() } else { audit.with_extension("self.jsonl") });
    let bins = Bins {
        echo: find("mcp-echo")?,
        relay: find("byte-relay")?,
        clawai: find("clawai")?,
        policy,
        audit,
        self_check,
        baseline,
    };
    let status =
        Command::new(&bins.clawai).args(["policy", "check"]).arg(&bins.policy).stdout(Stdio::null()).status()?;
    anyhow::ensure!(status.success(), "the benchmark policy does not load");

    let modes = [Mode::Direct, Mode::Relay, Mode::Clawai];
    if std::env::var_os("CLAWAI_BENCH_PROFILE").is_some() {
        // Only clawai, for a profiler attached to this run.
        let [(rtts, calls_per_s)] = <[_; 1]>::try_from(interleaved(&bins, &[Mode::Clawai])?).expect("one mode");
        measure(&bins, Mode::Clawai, &rtts, calls_per_s)?;
        return Ok(());
    }
    let mut rounds: Vec<Vec<Figures>> = modes.iter().map(|_| Vec::new()).collect();
    let rounds_wanted = clawai_bench::rounds(ROUNDS);
    for round in 0..rounds_wanted {
        eprintln!("round {}/{rounds_wanted}: round trips and pipelined bursts, the modes taking turns…", round + 1);
        let sequential = interleaved(&bins, &modes)?;
        for (m, mode) in modes.iter().enumerate() {
            eprintln!("round {}/{rounds_wanted}: measuring {mode:?}…", round + 1);
            let (rtts, calls_per_s) = &sequential[m];
            rounds[m].push(measure(&bins, *mode, rtts, *calls_per_s)?);
        }
    }
    let results: Vec<Figures> = rounds.iter().map(|r| median(r)).collect();
    let audit_lines = audit_lines(&bins.audit);
    let [direct, relay, clawai] = [&results[0], &results[1], &results[2]];
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let added = |f: &Figures, p: fn(&Figures) -> Duration| us(p(f)) - us(p(direct));
    println!(
        "clawai proxy benchmark: echo server over stdio, 100-rule policy, audit on ({audit_lines} audit lines written); each figure is the median of {rounds_wanted} interleaved rounds\n"
    );
    if let Some(baseline) = &bins.baseline {
        println!(
            "CLAWAI_BENCH_BASELINE: the \"bare relay\" column is clawai as built at {}, so each ratio compares this build with that one\n",
            baseline.display()
        );
    } else if bins.self_check.is_some() {
        println!(
            "CLAWAI_BENCH_SELF: the \"bare relay\" column is a second clawai proxy, so each ratio compares clawai with itself\n"
        );
    }
    println!("| measure | direct | bare relay | clawai | clawai vs relay | target |");
    println!("|---|---|---|---|---|---|");
    let ratio = |a: f64, b: f64| if b.abs() < 1e-9 { f64::NAN } else { a / b };
    let latency_row = |label: &str, pick: fn(&Figures) -> Duration| {
        println!(
            "| round trip {label} (µs) | {:.1} | {:.1} (+{:.1}) | {:.1} (+{:.1}) | added ×{:.2} | ≤ ×1.25 |",
            us(pick(direct)),
            us(pick(relay)),
            added(relay, pick),
            us(pick(clawai)),
            added(clawai, pick),
            ratio(added(clawai, pick), added(relay, pick))
        );
    };
    latency_row("p50", |f| f.p50);
    latency_row("p99", |f| f.p99);
    println!(
        "| pipelined calls/s | {:.0} | {:.0} | {:.0} | ×{:.2} | ≥ ×0.9 |",
        direct.calls_per_s,
        relay.calls_per_s,
        clawai.calls_per_s,
        clawai.calls_per_s / relay.calls_per_s
    );
    for (shape, (_, label)) in BIG_SHAPES.iter().enumerate() {
        println!(
            "| 1 MiB `tools/call` results, {label}, MiB/s | {:.0} | {:.0} | {:.0} | ×{:.2} | ≥ ×0.9 |",
            direct.mib_per_s[shape],
            relay.mib_per_s[shape],
            clawai.mib_per_s[shape],
            clawai.mib_per_s[shape] / relay.mib_per_s[shape]
        );
    }
    println!(
        "| spawn to initialize result (ms) | {:.2} | {:.2} | {:.2} | +{:.2} ms | ≤ relay + 2 ms |",
        direct.start.as_secs_f64() * 1e3,
        relay.start.as_secs_f64() * 1e3,
        clawai.start.as_secs_f64() * 1e3,
        (clawai.start.as_secs_f64() - relay.start.as_secs_f64()) * 1e3
    );
    let mib = |k: Option<u64>| k.map_or("-".into(), |k| format!("{:.2}", k as f64 / 1024.0));
    println!("| proxy peak RSS (MiB) | - | {} | {} | | ≤ 8 MiB |", mib(relay.rss_kib), mib(clawai.rss_kib));
    Ok(())
}
