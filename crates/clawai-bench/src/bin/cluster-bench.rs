//! The cluster benchmark (design §12): `clawai proxy --listen --upstream` alone and the
//! same with `--cluster` (a real `redis-server`), in front of the SDK's calculator
//! example over Streamable HTTP, measured in the same run, rounds interleaved:
//!
//! * calls no rate rule counts (`calculator`), flat out: cluster throughput as a ratio
//!   of single-node throughput (target ≥ ×0.95);
//! * calls a `rate` rule counts (`echo`), at a fixed rate: what `--cluster` adds to
//!   their p50 and p99 (targets ≤ 150 µs and ≤ 1 ms);
//! * three `--cluster` replicas behind HAProxy (`deploy/haproxy.cfg`): the first
//!   successful answer after `kill -9` of a session's replica (target ≤ the
//!   health-check interval, 1 s, + 100 ms).
//!
//! ```text
//! cluster-bench [--rate 300] [--seconds 3]   (from the workspace root, after building)
//! ```
//!
//! Needs `redis-server` (and `haproxy` for the takeover) on the PATH, as the tests do;
//! without them it says what it skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clawai_bench::http::{
    Call, Endpoint, Killed, closed_loop, fixed_rate, free_port, start_calculator, wait_listening,
};
use clawai_bench::stats::median;
use serde_json::json;

const CONCURRENCY: usize = 16;
const ROUNDS: usize = 5;
/// `inter 1s` in deploy/haproxy.cfg.
const HEALTH_CHECK: Duration = Duration::from_secs(1);
const POLICY: &str = r#"
[[rule]]
id = "counted"
action = "deny"
tool = "echo"
rate = "100000/sec"

[[rule]]
id = "allow-all"
action = "allow"
method = "**"
"#;

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        || Path::new("/usr/sbin").join(program).is_file()
}

/// What every replica is started with.
struct Setup {
    bins: PathBuf,
    dir: tempfile::TempDir,
    upstream: String,
    redis: String,
}

impl Setup {
    /// `clawai proxy --listen PORT --upstream …`, with `--cluster` when `replica` is given.
    async fn proxy(&self, port: u16, replica: Option<&str>) -> Result<Killed> {
        let name = replica.unwrap_or("single");
        let mut command = Command::new(self.bins.join("clawai"));
        command
            .args(["proxy", "--listen", &format!("127.0.0.1:{port}"), "--upstream", &self.upstream])
            .arg("--policy")
            .arg(self.dir.path().join("policy.toml"))
            .arg("--audit")
            .arg(self.dir.path().join(format!("audit-{name}.jsonl")))
            .env_remove("CLAWAI_CLUSTER")
            .stderr(Stdio::null());
        if let Some(replica) = replica {
            command.args(["--cluster", &self.redis, "--replica-id", replica]);
        }
        let child = Killed(command.spawn().context("build it first: cargo build --release -p clawai")?);
        wait_listening(port).await?;
        Ok(child)
    }
}

/// A `tools/call` of `echo` (counted by the rate rule) or of `calculator` (counted by
/// none), whose answer must be a text and no error.
fn call(counted: bool) -> Call {
    let params = if counted {
        json!({"name": "echo", "arguments": {"text": "hi"}})
    } else {
        json!({"name": "calculator", "arguments": {"operation": "add", "a": 2, "b": 3}})
    };
    Call {
        params,
        answered: |answer| answer["result"]["isError"] != true && answer["result"]["content"][0]["text"].is_string(),
    }
}

/// The figures of one round: single-node and cluster, interleaved.
#[derive(Default)]
struct Figures {
    single_rps: Vec<f64>,
    cluster_rps: Vec<f64>,
    single_counted: Vec<(f64, f64)>,
    cluster_counted: Vec<(f64, f64)>,
    cluster_uncounted: Vec<(f64, f64)>,
}

async fn single_vs_cluster(setup: &Setup, rounds: usize, rate: u32, seconds: u32) -> Result<Figures> {
    let (single_port, cluster_port) = (free_port()?, free_port()?);
    let _single = setup.proxy(single_port, None).await?;
    let _cluster = setup.proxy(cluster_port, Some("r0")).await?;
    let single = Arc::new(Endpoint::open(format!("http://127.0.0.1:{single_port}/mcp")).await?);
    let cluster = Arc::new(Endpoint::open(format!("http://127.0.0.1:{cluster_port}/mcp")).await?);
    for endpoint in [&single, &cluster] {
        fixed_rate(endpoint, &call(false), 200, 1).await?; // warm up
        fixed_rate(endpoint, &call(true), 200, 1).await?;
    }
    let mut figures = Figures::default();
    for round in 1..=rounds {
        eprintln!("single node vs --cluster: round {round}/{rounds}");
        figures.single_rps.push(closed_loop(&single, &call(false), CONCURRENCY, seconds).await?);
        figures.cluster_rps.push(closed_loop(&cluster, &call(false), CONCURRENCY, seconds).await?);
        figures.single_counted.push(fixed_rate(&single, &call(true), rate, seconds).await?);
        figures.cluster_counted.push(fixed_rate(&cluster, &call(true), rate, seconds).await?);
        figures.cluster_uncounted.push(fixed_rate(&cluster, &call(false), rate, seconds).await?);
    }
    Ok(figures)
}

/// deploy/haproxy.cfg with the test's ports for its example ones.
fn haproxy_config(front: u16, replicas: &[u16; 3]) -> Result<String> {
    let mut text = std::fs::read_to_string("deploy/haproxy.cfg").context("run from the workspace root")?;
    text = text.replace("127.0.0.1:8080", &format!("127.0.0.1:{front}"));
    for (index, port) in replicas.iter().enumerate() {
        text = text.replace(&format!("127.0.0.1:{}", 8081 + index), &format!("127.0.0.1:{port}"));
    }
    Ok(text)
}

/// Three replicas behind HAProxy; each round kills a session's replica and times the
/// first successful answer to that session's next call (then starts it again).
async fn takeovers(setup: &Setup, rounds: usize) -> Result<Vec<Duration>> {
    let ports = [free_port()?, free_port()?, free_port()?];
    let names = ["r1", "r2", "r3"];
    let mut replicas = Vec::new();
    for (name, port) in names.iter().zip(ports) {
        replicas.push(Some(setup.proxy(port, Some(name)).await?));
    }
    let front = free_port()?;
    let config = setup.dir.path().join("haproxy.cfg");
    std::fs::write(&config, haproxy_config(front, &ports)?)?;
    let haproxy = if on_path("haproxy") { "haproxy" } else { "/usr/sbin/haproxy" };
    let _balancer = Killed(
        Command::new(haproxy).arg("-db").arg("-f").arg(&config).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?,
    );
    wait_listening(front).await?;
    // Every replica marked up (`rise 2`).
    tokio::time::sleep(HEALTH_CHECK * 3).await;
    let mut firsts = Vec::new();
    for round in 1..=rounds {
        eprintln!("takeover after kill -9: round {round}/{rounds}");
        let endpoint = Endpoint::open(format!("http://127.0.0.1:{front}/mcp")).await?;
        call(false).once(&endpoint, 1).await?;
        let owner = names.iter().position(|name| endpoint.session().starts_with(&format!("{name}.")));
        let owner = owner.context("the session id names no replica")?;
        drop(replicas[owner].take()); // SIGKILL
        let killed = Instant::now();
        let mut id = 2;
        while call(false).once(&endpoint, id).await.is_err() {
            id += 1;
            anyhow::ensure!(killed.elapsed() < Duration::from_secs(30), "no answer within 30 s of the kill");
        }
        firsts.push(killed.elapsed());
        replicas[owner] = Some(setup.proxy(ports[owner], Some(names[owner])).await?);
        tokio::time::sleep(HEALTH_CHECK * 3).await;
    }
    Ok(firsts)
}

fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "not met" }
}

fn report(figures: &Figures, firsts: Option<&[Duration]>, rate: u32, seconds: u32, rounds: usize) {
    let single_rps = median(figures.single_rps.clone());
    let cluster_rps = median(figures.cluster_rps.clone());
    let ratio = median(figures.single_rps.iter().zip(&figures.cluster_rps).map(|(s, c)| c / s).collect());
    let p = |values: &[(f64, f64)], high: bool| median(values.iter().map(|v| if high { v.1 } else { v.0 }).collect());
    let (single_p50, single_p99) = (p(&figures.single_counted, false), p(&figures.single_counted, true));
    let (cluster_p50, cluster_p99) = (p(&figures.cluster_counted, false), p(&figures.cluster_counted, true));
    let (plain_p50, plain_p99) = (p(&figures.cluster_uncounted, false), p(&figures.cluster_uncounted, true));
    println!(
        "cluster mode: clawai proxy --listen --upstream alone and with --cluster (redis-server on loopback); \
         {CONCURRENCY} callers flat out for {seconds} s, then {rate} calls/s for {seconds} s; medians of {rounds} interleaved rounds"
    );
    println!("| measure | single node | --cluster | added | target |");
    println!("|---|---|---|---|---|");
    println!(
        "| uncounted calls/s ({CONCURRENCY} callers) | {single_rps:.0} | {cluster_rps:.0} | ×{ratio:.3} (median of per-round ratios) | ≥ ×0.95: {} |",
        met(ratio >= 0.95)
    );
    println!(
        "| counted call p50 (µs) | {single_p50:.0} | {cluster_p50:.0} | {:+.0} µs | ≤ 150 µs: {} |",
        cluster_p50 - single_p50,
        met(cluster_p50 - single_p50 <= 150.0)
    );
    println!(
        "| counted call p99 (µs) | {single_p99:.0} | {cluster_p99:.0} | {:+.0} µs | ≤ 1000 µs: {} |",
        cluster_p99 - single_p99,
        met(cluster_p99 - single_p99 <= 1000.0)
    );
    println!(
        "| --cluster: counted vs uncounted call, p50 / p99 (µs) | | {cluster_p50:.0} / {cluster_p99:.0} vs {plain_p50:.0} / {plain_p99:.0} | {:+.0} / {:+.0} µs | |",
        cluster_p50 - plain_p50,
        cluster_p99 - plain_p99
    );
    match firsts {
        Some(firsts) => {
            let first = median(firsts.to_vec());
            let target = HEALTH_CHECK + Duration::from_millis(100);
            println!(
                "| first answer after kill -9 (3 replicas, HAProxy, health check every {} s) | | {:.1} ms (median of {}; max {:.1} ms) | | ≤ {} ms: {} |",
                HEALTH_CHECK.as_secs(),
                first.as_secs_f64() * 1e3,
                firsts.len(),
                firsts.iter().max().unwrap_or(&first).as_secs_f64() * 1e3,
                target.as_millis(),
                met(first <= target)
            );
        }
        None => println!("| first answer after kill -9 | skipped: no haproxy on the PATH | | | |"),
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
    if !on_path("redis-server") {
        println!("cluster-bench: skipped (no redis-server on the PATH: run scripts/setup-test-peers)");
        return Ok(());
    }
    let quick = clawai_bench::quick();
    let (rate, seconds) =
        (option("--rate", if quick { 100 } else { 300 })?, option("--seconds", if quick { 1 } else { 3 })?);
    let rounds = clawai_bench::rounds(ROUNDS);
    let bins = std::env::current_exe()?.parent().context("no directory")?.to_path_buf();
    let dir = tempfile::tempdir()?;
    std::fs::write(dir.path().join("policy.toml"), POLICY)?;

    let redis_port = free_port()?;
    let _redis = Killed(
        Command::new("redis-server")
            .args(["--port", &redis_port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .spawn()?,
    );
    wait_listening(redis_port).await?;
    let (_server, server_port) = start_calculator(&bins).await?;
    let setup = Setup {
        bins,
        dir,
        upstream: format!("http://127.0.0.1:{server_port}/mcp"),
        redis: format!("redis://127.0.0.1:{redis_port}/0"),
    };
    let figures = single_vs_cluster(&setup, rounds, rate, seconds).await?;
    let firsts = if on_path("haproxy") { Some(takeovers(&setup, rounds).await?) } else { None };
    report(&figures, firsts.as_deref(), rate, seconds, rounds);
    if quick {
        println!("(a quick run: it shows that the benchmark runs; its figures and verdicts mean nothing)");
    }
    Ok(())
}
