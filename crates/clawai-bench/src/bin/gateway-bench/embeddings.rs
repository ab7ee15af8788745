//! The `--embeddings` rows: the gateway of the listing measure with a sentence-embedding
//! model for `search_tools`.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawai_bench::stats::{median, percentile};
use clawai_bench::stdio::Session;
use serde_json::json;

use super::{Bench, Ids, ms, servers_tools, wait_for_tools};

/// Searches timed per round, each with a query not asked before.
const SEARCHES: usize = 300;
/// The longest the background embedding may take before the round is given up.
const EMBEDDED_WITHIN: Duration = Duration::from_secs(600);

pub(crate) struct Round {
    initialize: Duration,
    embedded: Duration,
    search_p50: Duration,
    search_p99: Duration,
    rss_kib: u64,
}

/// One gateway with `servers` × `tools` echo tools and the model in `model`.
pub(crate) fn round(bench: &Bench, model: &Path, servers: usize, tools: usize) -> Result<Round> {
    let mut entries = serde_json::Map::new();
    for n in 0..servers {
        let (name, command, args) = bench.echo_server(&format!("s{n:02}"), tools);
        entries.insert(name, json!({"command": command, "args": args, "internalOnly": false}));
    }
    let config = bench.path("embeddings.json");
    std::fs::write(&config, json!({"mcpServers": entries, "search": {"embeddings": model}}).to_string())?;
    let log = bench.path("embeddings.log");
    let mut command = bench.clawai();
    command
        .env("CLAWAI_LOG", "info")
        .stderr(std::fs::File::create(&log)?)
        .args(["gateway", "--no-reload", "--config"])
        .arg(&config)
        .arg("--policy")
        .arg(bench.path("policy.toml"))
        .arg("--audit")
        .arg(bench.path("audit-embeddings.jsonl"));
    let started = Instant::now();
    let mut s = Session::spawn(command)?;
    s.initialize();
    let initialize = started.elapsed();
    let mut ids = Ids(0);
    wait_for_tools(&mut s, &mut ids, |names| servers_tools(names) >= servers * tools)?;
    // The embedding thread logs each catalog it finished; the last has every tool.
    let embedded = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        let whole = |line: &str| {
            let before = line.split(" documents embedded").next().unwrap_or_default();
            before.rsplit(' ').next().and_then(|n| n.parse::<usize>().ok()).is_some_and(|n| n >= servers * tools)
        };
        if text.lines().any(|line| line.contains(" documents embedded") && whole(line)) {
            break started.elapsed();
        }
        if started.elapsed() > EMBEDDED_WITHIN {
            bail!("the tools were not embedded within {} s; log: {}", EMBEDDED_WITHIN.as_secs(), log.display());
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut searches = Vec::with_capacity(SEARCHES);
    for n in 0..SEARCHES {
        let id = ids.next();
        let query = format!("echo a path back, request {n}");
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": "search_tools", "arguments": {"query": query}}});
        let sent = Instant::now();
        s.send(&request.to_string());
        s.recv_response(&id.to_string());
        searches.push(sent.elapsed());
    }
    anyhow::ensure!(String::from_utf8_lossy(&s.line).contains("s0"), "search_tools found no echo tool");
    searches.sort_unstable();
    let rss_kib = s.status_kib("VmRSS").context("no VmRSS for the gateway")?;
    s.finish();
    Ok(Round {
        initialize,
        embedded,
        search_p50: percentile(&searches, 0.5),
        search_p99: percentile(&searches, 0.99),
        rss_kib,
    })
}

/// The rows of the table.
pub(crate) fn print(rounds: &[Round], tools: usize) {
    let mid = |pick: fn(&Round) -> Duration| median(rounds.iter().map(pick).collect());
    println!(
        "| `--embeddings` (all-MiniLM-L6-v2): spawn to `initialize` answer (ms) | {:.0} | no wait for the model |",
        ms(mid(|r| r.initialize))
    );
    let embedded = mid(|r| r.embedded);
    println!(
        "| … spawn to all {tools} tools embedded in the background (s) | {:.1} | ≤ 60 s {} |",
        embedded.as_secs_f64(),
        super::verdict(embedded <= Duration::from_secs(60))
    );
    let p99 = mid(|r| r.search_p99);
    println!(
        "| … `search_tools` round trip, a new query each time, p50 / p99 (ms) | {:.2} / {:.2} | p99 ≤ 5 ms {} |",
        ms(mid(|r| r.search_p50)),
        ms(p99),
        super::verdict(p99 <= Duration::from_millis(5))
    );
    println!(
        "| … gateway RSS with the model and {tools} vectors (MiB) | {:.1} | reported |",
        median(rounds.iter().map(|r| r.rss_kib).collect()) as f64 / 1024.0
    );
}
