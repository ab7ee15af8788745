//! Times the embedding of one short query, as `search_tools` does for a new query, and
//! the same text through the catalog's path, taking turns:
//! `cargo run --release -p clawai-embed --example query_cost -- MODEL_DIR [ROUNDS]`.

use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args.next().expect("usage: query_cost MODEL_DIR [ROUNDS]");
    let rounds: usize = args.next().map_or(200, |r| r.parse().expect("ROUNDS is a number"));
    let embedder = clawai_embed::Embedder::load(dir.as_ref()).expect("the model loads");
    let queries: Vec<String> = match std::env::var("QUERY") {
        Ok(q) => vec![q],
        Err(_) => ["run a shell command in the project", "What is 17 plus 25?", "store a memory about the user"]
            .map(String::from)
            .to_vec(),
    };
    // The two paths take turns, so that the machine's load falls on both alike.
    let mut query_path = Timing::default();
    let mut catalog_path = Timing::default();
    for round in 0..rounds {
        let query = queries[round % queries.len()].as_str();
        let vector = query_path.time(|| embedder.embed_query(query).expect("the query embeds"));
        assert_eq!(vector.len(), embedder.dimension());
        // `ONLY_QUERY=1`: the query path alone, for a profiler.
        if std::env::var_os("ONLY_QUERY").is_none() {
            catalog_path.time(|| embedder.embed(&[query]).expect("the text embeds"));
        }
    }
    query_path.report("embed_query (the query path)");
    if !catalog_path.wall_ms.is_empty() {
        catalog_path.report("embed (the catalog's path, gemm)");
    }
}

#[derive(Default)]
struct Timing {
    wall_ms: Vec<f64>,
    cpu_seconds: f64,
}

impl Timing {
    fn time<T>(&mut self, work: impl FnOnce() -> T) -> T {
        let (cpu, start) = (cpu_seconds(), Instant::now());
        let out = work();
        self.wall_ms.push(start.elapsed().as_secs_f64() * 1e3);
        self.cpu_seconds += cpu_seconds() - cpu;
        out
    }

    fn report(mut self, what: &str) {
        self.wall_ms.sort_by(f64::total_cmp);
        let at = |q: f64| self.wall_ms[((self.wall_ms.len() - 1) as f64 * q) as usize];
        let cpu = self.cpu_seconds * 1e3 / self.wall_ms.len() as f64;
        println!(
            "{what}, {} rounds: p50 {:.2} ms, p99 {:.2} ms, CPU {cpu:.2} ms a query",
            self.wall_ms.len(),
            at(0.5),
            at(0.99)
        );
    }
}

/// The CPU time this process used so far (all threads), from /proc: the figure that the
/// other processes of a busy machine do not inflate.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}
