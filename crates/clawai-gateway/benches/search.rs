//! Latency of `Index::search` over 5,000 tools: the 200 fixture tools on 25 servers.
//!
//! Every golden query is run many times; each call is timed on its own and the p50, p99
//! and maximum over all calls are printed, with everything admitted and with an `admit`
//! that rejects every other server (the gateway's filter). Target: p99 ≤ 1 ms.
//!
//! `cargo bench -p clawai-gateway --bench search` (optimised build).

#[path = "../tests/search_support/mod.rs"]
mod search_support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use clawai_gateway::search::Index;
use search_support::{golden, replicated};

const SERVERS: usize = 25;
const ROUNDS: usize = 200;

fn percentile(sorted: &[Duration], fraction: f64) -> Duration {
    let rank = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[rank]
}

fn measure(label: &str, index: &Index, queries: &[String], admit: impl Fn(usize) -> bool) {
    for query in queries {
        black_box(index.search(query, 5, &admit));
    }
    let mut samples = Vec::with_capacity(queries.len() * ROUNDS);
    let mut per_query = vec![Vec::with_capacity(ROUNDS); queries.len()];
    for _ in 0..ROUNDS {
        for (query, times) in queries.iter().zip(&mut per_query) {
            let start = Instant::now();
            black_box(index.search(black_box(query), 5, &admit));
            let elapsed = start.elapsed();
            samples.push(elapsed);
            times.push(elapsed);
        }
    }
    samples.sort_unstable();
    let mut medians: Vec<(Duration, &String)> = per_query
        .iter_mut()
        .zip(queries)
        .map(|(times, query)| {
            times.sort_unstable();
            (percentile(times, 0.50), query)
        })
        .collect();
    medians.sort_unstable_by(|a, b| b.cmp(a));
    println!(
        "{label}: {} calls, p50 {:?}, p99 {:?}, max {:?}",
        samples.len(),
        percentile(&samples, 0.50),
        percentile(&samples, 0.99),
        samples[samples.len() - 1],
    );
    for (median, query) in medians.iter().take(3) {
        println!("  slowest by median: {query:?} {median:?}");
    }
}

fn main() {
    // `cargo test --benches` runs this with `--bench` absent; keep that quick.
    let full = std::env::args().any(|arg| arg == "--bench");
    let docs = replicated(SERVERS);
    let per_server = docs.len() / SERVERS;
    let count = docs.len();
    let start = Instant::now();
    let index = Index::new(docs);
    println!("index of {count} tools built in {:?}", start.elapsed());
    let queries: Vec<String> = golden().into_iter().map(|g| g.query).collect();
    if !full {
        for query in &queries {
            assert!(!index.search(query, 5, |_| true).is_empty() || query.is_empty());
        }
        return;
    }
    measure("all admitted", &index, &queries, |_| true);
    measure("every other server admitted", &index, &queries, |id| (id / per_server).is_multiple_of(2));
}
