//! `search_tools` with and without an embedding model: cost and retrieval quality.
//!
//! `search-bench cost MODEL_DIR`: 5,000 tools (the 200 claude-flow fixture tools on 25
//! servers): the time to embed them all (what the gateway does in the background when the
//! catalog changes), the latency of one search (p50, p99) lexical only and with embeddings
//! (the query embedded, uncached, plus both rankings and their fusion), and the
//! process's resident memory before the model, with it, and with the vectors.
//!
//! `search-bench quality DIR MODEL_DIR`: `DIR/tools.json` and `DIR/queries.jsonl` (made by
//! `scripts/search-quality` from BFCL v4) in one catalog; nDCG@10 and Recall@5 of the
//! lexical, embedding and hybrid rankings per task and pooled, and the fusion variants.
//!
//! Build and run: `./scripts/bench` (cost) and `./scripts/search-quality` (quality).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawai_bench::stats::percentile;
use clawai_embed::Embedder;
use clawai_gateway::search::fusion::fuse_with;
use clawai_gateway::search::hybrid::{FUSION_DEPTH, rank};
use clawai_gateway::search::vectors::Vectors;
use clawai_gateway::search::{Document, Hit, Index, embedding_text};
use serde_json::Value;

const SERVERS: usize = 25;
/// Searches timed per query and mode in `cost`.
const ROUNDS: usize = 20;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["cost", model] => cost(Path::new(model)),
        ["quality", dir, model] => quality(Path::new(dir), Path::new(model)),
        _ => bail!("usage: search-bench cost MODEL_DIR | search-bench quality DIR MODEL_DIR"),
    }
}

/// MCP tool objects as search documents of server `server`.
fn documents(tools: &[Value], server: &str) -> Vec<Document> {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    tools
        .iter()
        .enumerate()
        .map(|(id, tool)| Document {
            id,
            name: format!("{server}__{}", text(&tool["name"])),
            server: server.to_owned(),
            description: text(&tool["description"]),
            parameters: tool["inputSchema"]["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, schema)| (name.clone(), text(&schema["description"])))
                .collect(),
        })
        .collect()
}

fn read_json(path: &Path) -> Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(serde_json::from_str(&text)?)
}

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../clawai-gateway/tests/fixtures")
}

/// Embeds every document, in chunks as the gateway does; returns the vectors and the time.
fn embed_all(model: &Embedder, docs: &[Document]) -> Result<(Vectors, Duration)> {
    let texts: Vec<String> = docs.iter().map(embedding_text).collect();
    let started = Instant::now();
    let mut vectors = Vectors::new(docs.len(), model.dimension());
    for (n, chunk) in texts.chunks(64).enumerate() {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        for (i, vector) in model.embed(&refs)?.iter().enumerate() {
            vectors.set(n * 64 + i, vector);
        }
    }
    Ok((vectors, started.elapsed()))
}

/// The CPU time of the whole process so far (every thread): what a run would take on an
/// idle machine, however busy this one is.
fn process_cpu() -> Duration {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_PROCESS_CPUTIME_ID).map(Duration::from).unwrap_or_default()
}

/// The process's resident memory, in MiB.
fn rss_mib() -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let kib = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

fn cost(model_dir: &Path) -> Result<()> {
    let fixture = read_json(&fixtures().join("claude-flow-tools.json"))?;
    let tools = fixture.as_array().context("the fixture is a list")?;
    let mut docs = Vec::new();
    for server in 0..SERVERS {
        for mut doc in documents(tools, &format!("server-{server}")) {
            doc.id = docs.len();
            docs.push(doc);
        }
    }
    let golden = read_json(&fixtures().join("search-golden.json"))?;
    let queries: Vec<String> = golden
        .as_array()
        .context("the golden file is a list")?
        .iter()
        .filter_map(|entry| entry["query"].as_str().map(str::to_owned))
        .collect();
    let before = rss_mib();
    let index = Index::new(docs.clone());
    let loading = Instant::now();
    let model = Embedder::load(model_dir)?;
    let load_time = loading.elapsed();
    let with_model = rss_mib();
    let cpu_before = process_cpu();
    let (vectors, embed_time) = embed_all(&model, &docs)?;
    let embed_cpu = process_cpu().saturating_sub(cpu_before);
    let with_vectors = rss_mib();

    let lexical = time_searches(&queries, |query| rank(&index, None, query, 5, |_| true));
    let cpu_before = process_cpu();
    let mut distinct = 0usize;
    let hybrid = time_searches(&queries, |query| {
        // A new text each time: the query's embedding is never cached.
        distinct += 1;
        let query_vector = model.embed_query(&format!("{query} {distinct}")).expect("embeds");
        rank(&index, Some((&vectors, &query_vector)), query, 5, |_| true)
    });
    let hybrid_cpu = process_cpu().saturating_sub(cpu_before) / (queries.len() * (ROUNDS + 1)) as u32;
    let query_vectors: Vec<Vec<f32>> = queries.iter().map(|q| model.embed_query(q)).collect::<Result<_, _>>()?;
    let mut next = 0;
    let ranking_only = time_searches(&queries, |query| {
        next = (next + 1) % query_vectors.len();
        rank(&index, Some((&vectors, &query_vectors[next])), query, 5, |_| true)
    });
    println!("search_tools over {} tools ({} servers), {} queries × {ROUNDS}", docs.len(), SERVERS, queries.len());
    println!(
        "  model loaded in {:.2} s; {} tools embedded in {:.1} s ({:.1} s of CPU: {:.1} s on two idle cores)",
        load_time.as_secs_f64(),
        docs.len(),
        embed_time.as_secs_f64(),
        embed_cpu.as_secs_f64(),
        embed_cpu.as_secs_f64() / 2.0
    );
    println!("  {:<38} {:>9} {:>9}", "one search (limit 5)", "p50", "p99");
    for (label, samples) in [
        ("lexical only", &lexical),
        ("embeddings on (query embedded + fused)", &hybrid),
        ("embeddings on, ranking only", &ranking_only),
    ] {
        println!("  {label:<38} {:>7.3}ms {:>7.3}ms", ms(percentile(samples, 0.50)), ms(percentile(samples, 0.99)));
    }
    println!("  embeddings on, CPU time of one search (all threads), mean: {:.3}ms", ms(hybrid_cpu));
    println!(
        "  resident memory: {before:.0} MiB with the index, {with_model:.0} MiB with the model, {with_vectors:.0} MiB with the vectors"
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Every query `ROUNDS` times (after one warm-up pass), each search timed on its own; sorted.
fn time_searches(queries: &[String], mut search: impl FnMut(&str) -> Vec<Hit>) -> Vec<Duration> {
    for query in queries {
        std::hint::black_box(search(query));
    }
    let mut samples = Vec::with_capacity(queries.len() * ROUNDS);
    for _ in 0..ROUNDS {
        for query in queries {
            let started = Instant::now();
            std::hint::black_box(search(std::hint::black_box(query)));
            samples.push(started.elapsed());
        }
    }
    samples.sort_unstable();
    samples
}

/// Fusion variants compared with the shipped one: rank offset, depth, lexical weight.
const VARIANTS: [(f32, usize, f32); 9] = [
    (60.0, 30, 1.0),
    (60.0, 20, 1.0),
    (60.0, 10, 1.0),
    (20.0, 10, 1.0),
    (60.0, 10, 1.25),
    (60.0, 10, 1.5),
    (60.0, 10, 2.0),
    (60.0, 20, 1.5),
    (60.0, 30, 1.5),
];

/// The vectors of the documents, embedded as the gateway embeds its catalog, or read
/// back from `DIR/vectors.bin` when it was written for the same model and texts
/// (embedding the benchmark's tools takes minutes; comparing fusions should not); and the
/// queries', embedded as `search_tools` embeds one (`embed_query`), every run.
fn cached_vectors(
    dir: &Path,
    model_dir: &Path,
    docs: &[Document],
    queries: &[Query],
) -> Result<(Vectors, Vec<Vec<f32>>)> {
    use std::hash::{Hash, Hasher};
    let texts: Vec<String> = docs.iter().map(embedding_text).collect();
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (std::fs::canonicalize(model_dir)?, &texts).hash(&mut hasher);
    let key = hasher.finish().to_le_bytes();
    let cache = dir.join("vectors.bin");
    let model = Embedder::load(model_dir)?;
    let floats: Vec<Vec<f32>> = match std::fs::read(&cache) {
        Ok(bytes) if bytes.len() > 8 && bytes[..8] == key => {
            let all: Vec<f32> =
                bytes[8..].chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            let dimension = all.len() / texts.len();
            all.chunks_exact(dimension).map(<[f32]>::to_vec).collect()
        }
        _ => {
            let started = Instant::now();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            let floats = model.embed(&refs)?;
            eprintln!("{} tools embedded in {:.1} s", docs.len(), started.elapsed().as_secs_f64());
            let mut bytes = key.to_vec();
            for value in floats.iter().flatten() {
                bytes.extend_from_slice(&value.to_le_bytes());
            }
            std::fs::write(&cache, bytes)?;
            floats
        }
    };
    let dimension = floats.first().map_or(0, Vec::len);
    let mut vectors = Vectors::new(docs.len(), dimension);
    for (id, vector) in floats.iter().enumerate() {
        vectors.set(id, vector);
    }
    let started = Instant::now();
    let query_vectors = queries.iter().map(|q| model.embed_query(&q.text)).collect::<Result<Vec<_>, _>>()?;
    eprintln!("{} queries embedded in {:.1} s", queries.len(), started.elapsed().as_secs_f64());
    Ok((vectors, query_vectors))
}

/// A ranking compared: the hits for a question and its vector.
type Ranking<'a> = Box<dyn Fn(&Query, &[f32]) -> Vec<Hit> + 'a>;

/// One question of the benchmark.
struct Query {
    task: String,
    text: String,
    relevant: Vec<usize>,
}

/// nDCG@10 and Recall@5 sums, and the count, of one task.
#[derive(Default, Clone, Copy)]
struct Scores {
    ndcg: f64,
    recall: f64,
    count: usize,
}

impl Scores {
    fn add(&mut self, hits: &[Hit], relevant: &[usize]) {
        let gain: f64 = hits
            .iter()
            .take(10)
            .enumerate()
            .filter(|(_, hit)| relevant.contains(&hit.id))
            .map(|(rank, _)| 1.0 / (rank as f64 + 2.0).log2())
            .sum();
        let ideal: f64 = (0..relevant.len().min(10)).map(|rank| 1.0 / (rank as f64 + 2.0).log2()).sum();
        let found = hits.iter().take(5).filter(|hit| relevant.contains(&hit.id)).count();
        self.ndcg += gain / ideal;
        self.recall += found as f64 / relevant.len() as f64;
        self.count += 1;
    }
}

fn quality(dir: &Path, model_dir: &Path) -> Result<()> {
    let tools = read_json(&dir.join("tools.json"))?;
    let docs = documents(tools.as_array().context("tools.json is a list")?, "bfcl");
    let by_name: BTreeMap<String, usize> =
        docs.iter().map(|d| (d.name.trim_start_matches("bfcl__").to_owned(), d.id)).collect();
    let queries: Vec<Query> = std::fs::read_to_string(dir.join("queries.jsonl"))?
        .lines()
        .map(|line| {
            let entry: Value = serde_json::from_str(line)?;
            let relevant = entry["relevant"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|name| by_name.get(name.as_str().unwrap_or_default()).copied())
                .collect();
            Ok(Query {
                task: entry["task"].as_str().unwrap_or_default().to_owned(),
                text: entry["query"].as_str().unwrap_or_default().to_owned(),
                relevant,
            })
        })
        .collect::<Result<_>>()?;
    let index = Index::new(docs.clone());
    let (vectors, query_vectors) = cached_vectors(dir, model_dir, &docs, &queries)?;

    let mut variants: Vec<(String, Ranking<'_>)> = vec![
        ("lexical (BM25F)".into(), Box::new(|q: &Query, _: &[f32]| index.search(&q.text, 10, |_| true))),
        ("embedding (all-MiniLM-L6-v2)".into(), Box::new(|_: &Query, v: &[f32]| vectors.nearest(v, 10, |_| true))),
        (
            format!("hybrid (shipped: RRF k=60, depth {FUSION_DEPTH})"),
            Box::new(|q: &Query, v: &[f32]| rank(&index, Some((&vectors, v)), &q.text, 10, |_| true)),
        ),
    ];
    for (k, depth, weight) in VARIANTS {
        let (index, vectors) = (&index, &vectors);
        variants.push((
            format!("  variant: k={k}, depth {depth}, lexical weight {weight}"),
            Box::new(move |q: &Query, v: &[f32]| {
                let lexical = index.search(&q.text, depth, |_| true);
                let nearest = vectors.nearest(v, depth, |_| true);
                fuse_with(&lexical, &nearest, 10, k, weight)
            }),
        ));
    }
    let tasks: Vec<String> = {
        let mut seen = Vec::new();
        for q in &queries {
            if !seen.contains(&q.task) {
                seen.push(q.task.clone());
            }
        }
        seen
    };
    print!("{:<44}", "nDCG@10 / Recall@5");
    for task in &tasks {
        print!(" {task:>17}");
    }
    println!(" {:>17}", "pooled");
    for (label, search) in &variants {
        let mut per_task: BTreeMap<&str, Scores> = BTreeMap::new();
        let mut pooled = Scores::default();
        for (query, vector) in queries.iter().zip(&query_vectors).filter(|(q, _)| !q.relevant.is_empty()) {
            let hits = search(query, vector);
            per_task.entry(query.task.as_str()).or_default().add(&hits, &query.relevant);
            pooled.add(&hits, &query.relevant);
        }
        print!("{label:<44}");
        for task in &tasks {
            let s = per_task.get(task.as_str()).copied().unwrap_or_default();
            print!("      {:.3} / {:.3}", s.ndcg / s.count.max(1) as f64, s.recall / s.count.max(1) as f64);
        }
        println!("      {:.3} / {:.3}", pooled.ndcg / pooled.count as f64, pooled.recall / pooled.count as f64);
    }
    Ok(())
}
