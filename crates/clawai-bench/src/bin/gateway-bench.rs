//! Measures `clawai gateway` over stdio (release build, beside this binary), with an
//! allow-all policy, in front of `mcp-echo --tools N`, and prints a table:
//!
//! * listing: 50 servers × 100 tools, the time of a `tools/list` that follows every
//!   page (100 a page) after `initialize`, once every server is up;
//! * a `tools/call` round trip through the gateway (one server), through
//!   `clawai proxy`, and direct to the echo server, the three taking turns request by
//!   request in the same run; what each adds over direct;
//! * the gateway's resident memory (its own, not its servers') with 50 × 100 tools;
//! * the first `tools/list` answer when one server takes 30 s to start and another
//!   starts at once.
//!
//! * with `--embeddings` (all-MiniLM-L6-v2 of `scripts/setup-test-peers`, or
//!   `CLAWAI_BENCH_EMBEDDINGS=DIR`) on the 50 × 100 tools: spawn to `initialize` answer,
//!   spawn to every tool embedded (in the background), a `search_tools` round trip with a
//!   query never asked before (p50, p99), and the gateway's resident memory with the model
//!   and the vectors.
//!
//! Each figure is the median of several rounds (`CLAWAI_BENCH_ROUNDS`, default 5).
//! Build and run: `cargo build --release -p clawai -p clawai-bench`, then
//! `./target/release/gateway-bench` (or `./scripts/bench`).

#[path = "gateway-bench/embeddings.rs"]
mod embeddings;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clawai_bench::stats::{median, percentile};
use clawai_bench::stdio::Session;
use serde_json::{Value, json};

const ROUNDS: usize = 5;
/// Servers of the listing measure, and of the largest gateway calls go through.
const SERVERS: usize = 50;
/// Servers of the smaller gateway calls go through: the p99 must not grow with them.
const FEWER_SERVERS: usize = 10;
const TOOLS_EACH: usize = 100;
/// Full listings (every page) timed per round.
const LISTINGS: usize = 50;
/// Round trips per mode and round.
const ROUND_TRIPS: usize = 5_000;
/// Tools of each server in the slow-start measure.
const SLOW_START_TOOLS: usize = 10;
/// How long the slow server takes to start (3 s in a quick run).
const SLOW_START_SECONDS: u32 = 30;

/// [`SERVERS`], or 5 in a quick run.
fn server_count() -> usize {
    clawai_bench::scaled(SERVERS, 5)
}

/// [`SLOW_START_SECONDS`], or 3 in a quick run.
fn slow_start_seconds() -> u32 {
    if clawai_bench::quick() { 3 } else { SLOW_START_SECONDS }
}
/// How long to wait for servers that should be up at once.
const UP_WITHIN: Duration = Duration::from_secs(60);

const POLICY: &str = "[[rule]]\nid = \"allow-all\"\naction = \"allow\"\nmethod = \"**\"\n";

/// The binaries, and a directory of the run's own (policy, configs, audit trails, and
/// the state clawai keeps: pins, approvals), removed at the end.
struct Bench {
    clawai: PathBuf,
    echo: PathBuf,
    dir: tempfile::TempDir,
}

impl Bench {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// `clawai` with the run's own state directories, logging errors only.
    fn clawai(&self) -> Command {
        let mut command = Command::new(&self.clawai);
        command
            .env("CLAWAI_LOG", "error")
            .env("XDG_STATE_HOME", self.path("state"))
            .env("XDG_CONFIG_HOME", self.path("config"))
            .env("XDG_RUNTIME_DIR", self.path("run"))
            .stderr(Stdio::inherit());
        command
    }

    /// `clawai gateway` in front of `servers` (name, command, args), each listed.
    fn gateway(&self, label: &str, servers: &[(String, String, Vec<String>)]) -> Result<Session> {
        let mut entries = serde_json::Map::new();
        for (name, command, args) in servers {
            entries.insert(name.clone(), json!({"command": command, "args": args, "internalOnly": false}));
        }
        let config = self.path(&format!("{label}.json"));
        std::fs::write(&config, json!({ "mcpServers": entries }).to_string())?;
        let mut command = self.clawai();
        command
            .args(["gateway", "--no-reload", "--config"])
            .arg(&config)
            .arg("--policy")
            .arg(self.path("policy.toml"))
            .arg("--audit")
            .arg(self.path(&format!("audit-{label}.jsonl")));
        Session::spawn(command)
    }

    fn echo_server(&self, name: &str, tools: usize) -> (String, String, Vec<String>) {
        (name.to_string(), self.echo.display().to_string(), vec!["--tools".into(), tools.to_string()])
    }
}

/// The embedding model for the `--embeddings` rows, if there is one (none with
/// `CLAWAI_BENCH_QUICK`: embedding 5,000 tools on a debug build takes minutes).
fn embedding_model() -> Option<PathBuf> {
    if std::env::var_os("CLAWAI_BENCH_QUICK").is_some() {
        return None;
    }
    let dir = std::env::var_os("CLAWAI_BENCH_EMBEDDINGS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/peers/models/all-MiniLM-L6-v2"));
    dir.join("model.safetensors").is_file().then_some(dir)
}

/// Request ids of one session.
struct Ids(u64);

impl Ids {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn list_request(id: u64, cursor: Option<&str>) -> String {
    match cursor {
        Some(cursor) => {
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{"cursor":{}}}}}"#, json!(cursor))
        }
        None => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/list","params":{{}}}}"#),
    }
}

/// The `nextCursor` of a page, found from the end of the line (where the gateway
/// writes it) rather than by parsing 100 tools: the client's share of the time stays
/// small.
fn next_cursor(page: &[u8]) -> Option<String> {
    const KEY: &[u8] = br#""nextCursor":""#;
    let at = page.windows(KEY.len()).rposition(|w| w == KEY)? + KEY.len();
    let end = page[at..].iter().position(|b| *b == b'"')?;
    Some(String::from_utf8_lossy(&page[at..at + end]).into_owned())
}

/// Every page of `tools/list`, parsed: the tools' names, or `None` when a page was an
/// error (a cursor gone stale as servers came up: list again).
fn tool_names(s: &mut Session, ids: &mut Ids) -> Option<Vec<String>> {
    let mut names = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let id = ids.next();
        s.send(&list_request(id, cursor.as_deref()));
        s.recv_response(&id.to_string());
        let page: Value = serde_json::from_slice(&s.line).expect("a JSON answer");
        let result = page.get("result")?;
        for tool in result["tools"].as_array().expect("a list of tools") {
            names.push(tool["name"].as_str().unwrap_or_default().to_string());
        }
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => cursor = Some(next.to_string()),
            None => return Some(names),
        }
    }
}

/// Lists until `ready` holds of the names listed (servers start in the background).
fn wait_for_tools(s: &mut Session, ids: &mut Ids, ready: impl Fn(&[String]) -> bool) -> Result<Vec<String>> {
    let deadline = Instant::now() + UP_WITHIN;
    loop {
        if let Some(names) = tool_names(s, ids)
            && ready(&names)
        {
            return Ok(names);
        }
        if Instant::now() > deadline {
            bail!("the gateway did not list the expected tools within {UP_WITHIN:?}");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// One full listing (every page), timed; returns the whole and each page's time.
fn timed_listing(s: &mut Session, ids: &mut Ids) -> (Duration, Vec<Duration>, usize) {
    let mut pages = Vec::new();
    let mut bytes = 0;
    let mut cursor: Option<String> = None;
    let start = Instant::now();
    loop {
        let id = ids.next();
        let page_start = Instant::now();
        s.send(&list_request(id, cursor.as_deref()));
        let skipped = s.recv_response(&id.to_string());
        pages.push(page_start.elapsed());
        assert!(skipped.is_empty(), "the lists changed while being timed: {skipped:?}");
        // The error member comes right after the id in the gateway's answers.
        assert!(!contains(&s.line[..s.line.len().min(48)], br#""error""#), "{}", String::from_utf8_lossy(&s.line));
        bytes += s.line.len();
        match next_cursor(&s.line) {
            Some(next) => cursor = Some(next),
            None => return (start.elapsed(), pages, bytes),
        }
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// How many of `names` are the servers' tools: the gateway's own (`search_tools`,
/// `skill__*`) are listed beside them.
fn servers_tools(names: &[String]) -> usize {
    names.iter().filter(|n| n.contains("__") && !n.starts_with("skill__")).count()
}

/// Figures of one round of the 50 × 100 setup.
struct ListingRound {
    /// From spawn to a listing that holds every tool.
    all_up: Duration,
    /// The p50 of the round's full listings.
    listing: Duration,
    first_page: Duration,
    later_page: Duration,
    pages: usize,
    bytes: usize,
    rss_kib: u64,
    peak_kib: u64,
    shutdown: Duration,
}

fn listing_round(bench: &Bench) -> Result<ListingRound> {
    let servers: Vec<_> = (0..server_count()).map(|n| bench.echo_server(&format!("s{n:02}"), TOOLS_EACH)).collect();
    let started = Instant::now();
    let mut s = bench.gateway("many", &servers)?;
    s.initialize();
    let mut ids = Ids(0);
    let names = wait_for_tools(&mut s, &mut ids, |names| servers_tools(names) >= server_count() * TOOLS_EACH)?;
    let all_up = started.elapsed();
    let listed = servers_tools(&names);
    anyhow::ensure!(listed == server_count() * TOOLS_EACH, "listed {listed} of the servers' tools");
    let last = format!("s{:02}__tool_{}", server_count() - 1, TOOLS_EACH - 1);
    anyhow::ensure!(names.contains(&last), "tools are listed as SERVER__tool");
    let mut listings = Vec::new();
    let (mut first_pages, mut later_pages) = (Vec::new(), Vec::new());
    let (mut pages, mut bytes) = (0, 0);
    for _ in 0..clawai_bench::scaled(LISTINGS, 3) {
        let (whole, each, size) = timed_listing(&mut s, &mut ids);
        listings.push(whole);
        first_pages.push(each[0]);
        later_pages.extend_from_slice(&each[1..]);
        (pages, bytes) = (each.len(), size);
    }
    let rss_kib = s.status_kib("VmRSS").context("no VmRSS for the gateway")?;
    let peak_kib = s.status_kib("VmHWM").context("no VmHWM for the gateway")?;
    let shutdown = s.finish();
    listings.sort();
    first_pages.sort();
    later_pages.sort();
    Ok(ListingRound {
        all_up,
        listing: percentile(&listings, 0.5),
        first_page: percentile(&first_pages, 0.5),
        later_page: percentile(&later_pages, 0.5),
        pages,
        bytes,
        rss_kib,
        peak_kib,
        shutdown,
    })
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Direct,
    Proxy,
    /// Through a gateway of this many servers: the called one and others of
    /// [`TOOLS_EACH`] tools each.
    Gateway(usize),
}

fn modes() -> [Mode; 4] {
    use clawai_bench::scaled;
    [Mode::Direct, Mode::Proxy, Mode::Gateway(scaled(FEWER_SERVERS, 2)), Mode::Gateway(scaled(SERVERS, 3))]
}

fn call(id: u64, name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{name}","arguments":{{"path":"/home/u/projects/app/src/main.rs"}}}}}}"#
    )
}

/// A session with `mode`, initialized, its tool listed, and 300 calls in.
fn warmed_up(bench: &Bench, mode: Mode) -> Result<(Session, &'static str)> {
    let (mut s, tool) = match mode {
        Mode::Direct => {
            let mut command = Command::new(&bench.echo);
            command.args(["--tools", "1"]);
            (Session::spawn(command)?, "tool_0")
        }
        Mode::Proxy => {
            let mut command = bench.clawai();
            command
                .args(["proxy", "--no-reload", "--server", "echo", "--policy"])
                .arg(bench.path("policy.toml"))
                .arg("--audit")
                .arg(bench.path("audit-proxy.jsonl"))
                .arg("--")
                .arg(&bench.echo)
                .args(["--tools", "1"]);
            (Session::spawn(command)?, "tool_0")
        }
        Mode::Gateway(count) => {
            let mut servers = vec![bench.echo_server("echo", 1)];
            servers.extend((1..count).map(|n| bench.echo_server(&format!("s{n:02}"), TOOLS_EACH)));
            (bench.gateway(&format!("calls-{count}"), &servers)?, "echo__tool_0")
        }
    };
    s.initialize();
    let mut ids = Ids(0);
    // Every server up first: one still starting would land in the figures.
    let others = match mode {
        Mode::Gateway(count) => (count - 1) * TOOLS_EACH,
        _ => 0,
    };
    wait_for_tools(&mut s, &mut ids, |names| {
        names.iter().any(|n| n == tool) && servers_tools(names).saturating_sub(1) >= others
    })?;
    for _ in 0..300 {
        let id = ids.next();
        s.send(&call(id, tool));
        s.recv_response(&id.to_string());
    }
    anyhow::ensure!(
        contains(&s.line, br#""structuredContent":{"path""#) && !contains(&s.line, br#""isError":true"#),
        "{mode:?}: the call was not answered by the echo server: {}",
        String::from_utf8_lossy(&s.line)
    );
    Ok((s, tool))
}

/// One round of round trips, the modes taking turns request by request (the first to
/// go rotating) so that all meet the same state of the machine; each mode's sorted
/// times.
fn round_trips(bench: &Bench) -> Result<Vec<Vec<Duration>>> {
    let modes = modes();
    let mut sessions = modes.iter().map(|m| warmed_up(bench, *m)).collect::<Result<Vec<_>>>()?;
    let mut times = vec![Vec::new(); modes.len()];
    for i in 0..clawai_bench::scaled(ROUND_TRIPS, 100) {
        let id = 10_000 + i as u64;
        let id_text = id.to_string();
        for turn in 0..modes.len() {
            let m = (i + turn) % modes.len();
            let (s, tool) = &mut sessions[m];
            let msg = call(id, tool);
            let t = Instant::now();
            s.send(&msg);
            s.recv_response(&id_text);
            times[m].push(t.elapsed());
        }
    }
    for (s, _) in sessions {
        s.finish();
    }
    for t in &mut times {
        t.sort();
    }
    Ok(times)
}

/// Figures of one round with a server that takes 30 s to start.
struct SlowStartRound {
    initialize: Duration,
    first_list: Duration,
    fast_in_first: bool,
    fast_listed: Duration,
    shutdown: Duration,
    left_behind: usize,
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> usize {
    let Ok(entries) = std::fs::read_dir("/proc") else { return 0 };
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| std::fs::read(e.path().join("cmdline")).is_ok_and(|cmd| contains(&cmd, marker.as_bytes())))
        .count()
}

fn slow_start_round(bench: &Bench, round: usize) -> Result<SlowStartRound> {
    // A sleep no other process runs, to find it (or not) after the gateway stopped.
    let marker = format!("{}.{:05}{round}", slow_start_seconds(), std::process::id() % 100_000);
    let echo = bench.echo.display();
    let slow = (
        "slow".to_string(),
        "sh".to_string(),
        vec!["-c".into(), format!("sleep {marker}; exec {echo} --tools {SLOW_START_TOOLS}")],
    );
    let started = Instant::now();
    let mut s = bench.gateway("slow-start", &[slow, bench.echo_server("fast", SLOW_START_TOOLS)])?;
    s.initialize();
    let initialize = started.elapsed();
    let mut ids = Ids(0);
    let first = tool_names(&mut s, &mut ids).context("the first tools/list was an error")?;
    let first_list = started.elapsed();
    let fast_in_first = first.iter().any(|n| n == "fast__tool_0");
    wait_for_tools(&mut s, &mut ids, |names| names.iter().any(|n| n == "fast__tool_0"))?;
    let fast_listed = started.elapsed();
    anyhow::ensure!(
        started.elapsed() < Duration::from_secs(slow_start_seconds().into()),
        "the fast server waited for the slow one"
    );
    let shutdown = s.finish();
    std::thread::sleep(Duration::from_millis(100));
    Ok(SlowStartRound {
        initialize,
        first_list,
        fast_in_first,
        fast_listed,
        shutdown,
        left_behind: processes_with(&format!("sleep {marker}")),
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> Result<()> {
    let bench = Bench {
        clawai: clawai_bench::sibling("clawai")?,
        echo: clawai_bench::sibling("mcp-echo")?,
        dir: tempfile::Builder::new().prefix("clawai-gateway-bench-").tempdir()?,
    };
    std::fs::write(bench.path("policy.toml"), POLICY)?;
    let rounds = clawai_bench::rounds(ROUNDS);

    let (mut listing, mut trips, mut slow) = (Vec::new(), Vec::new(), Vec::new());
    let model = embedding_model();
    let mut embedded = Vec::new();
    for round in 0..rounds {
        if let Some(model) = &model {
            eprintln!("round {}/{rounds}: {SERVERS} × {TOOLS_EACH} tools with --embeddings…", round + 1);
            embedded.push(embeddings::round(&bench, model, SERVERS, TOOLS_EACH)?);
        }
        eprintln!("round {}/{rounds}: {} servers × {TOOLS_EACH} tools…", round + 1, server_count());
        listing.push(listing_round(&bench)?);
        eprintln!("round {}/{rounds}: tools/call round trips, direct, proxy and gateways taking turns…", round + 1);
        trips.push(round_trips(&bench)?);
        eprintln!("round {}/{rounds}: a server that takes {} s to start…", round + 1, slow_start_seconds());
        slow.push(slow_start_round(&bench, round)?);
    }
    print_table(rounds, &listing, &trips, &slow);
    match &model {
        Some(_) => embeddings::print(&embedded, SERVERS * TOOLS_EACH),
        None => {
            println!("| `--embeddings`: no model (run scripts/setup-test-peers or set CLAWAI_BENCH_EMBEDDINGS) | | |")
        }
    }
    Ok(())
}

fn print_table(rounds: usize, listing: &[ListingRound], trips: &[Vec<Vec<Duration>>], slow: &[SlowStartRound]) {
    let mid = |pick: fn(&ListingRound) -> Duration| median(listing.iter().map(pick).collect());
    let rtt = |mode: usize, p: f64| median(trips.iter().map(|round| percentile(&round[mode], p)).collect());
    let slow_mid = |pick: fn(&SlowStartRound) -> Duration| median(slow.iter().map(pick).collect());
    let last = &listing[listing.len() - 1];
    println!(
        "clawai gateway benchmark: mcp-echo servers over stdio, allow-all policy, audit on; each figure is the median of {rounds} rounds\n"
    );
    println!("| measure | figure | target |");
    println!("|---|---|---|");
    let listing_p50 = mid(|r| r.listing);
    println!(
        "| `tools/list`, every page, {} servers × {TOOLS_EACH} tools ({} pages, {:.0} KiB), p50 of {} (ms) | {:.2} | ≤ 5 ms {} |",
        server_count(),
        last.pages,
        last.bytes as f64 / 1024.0,
        clawai_bench::scaled(LISTINGS, 3),
        ms(listing_p50),
        verdict(listing_p50 <= Duration::from_millis(5))
    );
    println!(
        "| … one page, the first / a later one, p50 (µs) | {:.0} / {:.0} | |",
        us(mid(|r| r.first_page)),
        us(mid(|r| r.later_page))
    );
    println!("| … spawn to all {} tools listed (ms) | {:.0} | |", server_count() * TOOLS_EACH, ms(mid(|r| r.all_up)));
    let rss = median(listing.iter().map(|r| r.rss_kib).collect()) as f64 / 1024.0;
    println!(
        "| gateway RSS with {} × {TOOLS_EACH}, its servers not counted (MiB) | {rss:.1} (peak {:.1}) | ≤ 30 MiB {} |",
        server_count(),
        median(listing.iter().map(|r| r.peak_kib).collect()) as f64 / 1024.0,
        verdict(rss <= 30.0)
    );
    println!(
        "| … shutdown of the {} servers, stdin closed to exit (ms) | {:.0} | |",
        server_count(),
        ms(mid(|r| r.shutdown))
    );
    let [direct, proxy, fewer, many] = [0, 1, 2, 3].map(|m| (rtt(m, 0.5), rtt(m, 0.99)));
    let added = |d: Duration, base: Duration| us(d) - us(base);
    let [Mode::Gateway(fewer_count), Mode::Gateway(many_count)] = [modes()[2], modes()[3]] else {
        unreachable!("the last two modes are gateways")
    };
    println!(
        "| `tools/call` round trip p50 (µs): direct / proxy | {:.1} / {:.1} (+{:.1}) | |",
        us(direct.0),
        us(proxy.0),
        added(proxy.0, direct.0)
    );
    println!(
        "| … p99 (µs): direct / proxy | {:.1} / {:.1} (+{:.1}) | |",
        us(direct.1),
        us(proxy.1),
        added(proxy.1, direct.1)
    );
    for (count, gateway) in [(fewer_count, fewer), (many_count, many)] {
        let (p50, p99) = (
            added(gateway.0, direct.0) / added(proxy.0, direct.0),
            added(gateway.1, direct.1) / added(proxy.1, direct.1),
        );
        println!(
            "| … through a gateway of {count} servers: p50 / p99 (µs), added ÷ proxy-added | {:.1} (×{p50:.2}) / {:.1} (×{p99:.2}) | ≤ ×1.5 {} |",
            us(gateway.0),
            us(gateway.1),
            verdict(p50 <= 1.5 && p99 <= 1.5)
        );
    }
    let growth = added(many.1, direct.1) / added(fewer.1, direct.1);
    println!(
        "| … gateway-added p99, {many_count} servers ÷ {fewer_count} | ×{growth:.2} | no growth (≤ ×1.1) {} |",
        verdict(growth <= 1.1)
    );
    let first = slow_mid(|r| r.first_list);
    let fast_in_first = slow.iter().filter(|r| r.fast_in_first).count();
    println!(
        "| first `tools/list` answer, one server {} s to start and one fast (ms from spawn) | {:.0}; the fast one's tools in it in {fast_in_first} of {} rounds | < 3 s {} |",
        slow_start_seconds(),
        ms(first),
        slow.len(),
        verdict(first < Duration::from_secs(3) && fast_in_first == slow.len())
    );
    println!(
        "| … spawn to `initialize` answer / to the fast one's tools listed (ms) | {:.0} / {:.0} | |",
        ms(slow_mid(|r| r.initialize)),
        ms(slow_mid(|r| r.fast_listed))
    );
    println!(
        "| … shutdown with the slow one still starting (ms); its processes left behind | {:.0}; {} | |",
        ms(slow_mid(|r| r.shutdown)),
        slow.iter().map(|r| r.left_behind).sum::<usize>()
    );
}

fn verdict(met: bool) -> &'static str {
    if met { "(met)" } else { "(MISSED)" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_cursor_is_read_from_the_end_of_a_page() {
        let page = br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a","description":"\"nextCursor\":\"no\""}],"nextCursor":"c2Vh_-x"}}"#;
        assert_eq!(next_cursor(page).as_deref(), Some("c2Vh_-x"));
        assert_eq!(next_cursor(br#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#), None);
    }
}
