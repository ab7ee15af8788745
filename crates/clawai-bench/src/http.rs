//! What the HTTP benchmarks share: ports, children, and an MCP session over Streamable
//! HTTP that times `tools/call`.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// A port nothing listens on now.
pub fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A child killed (SIGKILL) when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits up to 10 s for something to listen on `port`.
pub async fn wait_listening(port: u16) -> Result<()> {
    for _ in 0..400 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    bail!("nothing listens on port {port}")
}

/// Starts the SDK's calculator example (in `bins`/examples) serving Streamable HTTP on
/// a free port, once it listens: the child and its port.
pub async fn start_calculator(bins: &Path) -> Result<(Killed, u16)> {
    let port = free_port()?;
    let child = Killed(
        Command::new(bins.join("examples/calculator"))
            .args(["--http", &format!("127.0.0.1:{port}")])
            .stderr(Stdio::null())
            .spawn()
            .context("build it first: cargo build --release -p clawai-sdk --examples")?,
    );
    wait_listening(port).await?;
    Ok((child, port))
}

/// An initialized MCP session at `url`.
pub struct Endpoint {
    client: reqwest::Client,
    url: String,
    session: String,
}

impl Endpoint {
    /// `initialize`s a session at `url` (a request that takes over 5 s fails).
    pub async fn open(url: String) -> Result<Endpoint> {
        let client = reqwest::Client::builder().pool_max_idle_per_host(64).timeout(Duration::from_secs(5)).build()?;
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                          "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}});
        let response = client
            .post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(init.to_string())
            .send()
            .await?;
        let session = response.headers().get("mcp-session-id").context("no session id")?.to_str()?.to_string();
        response.bytes().await?;
        Ok(Endpoint { client, url, session })
    }

    /// The session's id (`Mcp-Session-Id`).
    pub fn session(&self) -> &str {
        &self.session
    }

    /// One `tools/call` with `params`: how long the answer took, and the answer.
    pub async fn call(&self, id: u64, params: Value) -> Result<(Duration, Value)> {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
        let started = Instant::now();
        let response = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-session-id", &self.session)
            .header("mcp-protocol-version", "2025-11-25")
            .body(body.to_string())
            .send()
            .await?;
        let answer: Value = serde_json::from_slice(&response.bytes().await?)?;
        Ok((started.elapsed(), answer))
    }
}

/// The `tools/call` a loop sends, and what its answer must say.
#[derive(Clone)]
pub struct Call {
    /// The request's params.
    pub params: Value,
    /// Whether the answer is the one expected (an error fails the benchmark).
    pub answered: fn(&Value) -> bool,
}

impl Call {
    /// One call: how long it took.
    pub async fn once(&self, endpoint: &Endpoint, id: u64) -> Result<Duration> {
        let (elapsed, answer) = endpoint.call(id, self.params.clone()).await?;
        if !(self.answered)(&answer) {
            bail!("unexpected answer {answer}");
        }
        Ok(elapsed)
    }
}

/// Open loop: one call every 1/`rate` s for `seconds`, whatever the previous ones do;
/// p50 and p99 in µs.
pub async fn fixed_rate(endpoint: &Arc<Endpoint>, call: &Call, rate: u32, seconds: u32) -> Result<(f64, f64)> {
    let total = u64::from(rate * seconds);
    let interval = Duration::from_secs_f64(1.0 / f64::from(rate));
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for id in 0..total {
        tokio::time::sleep_until((start + interval * id as u32).into()).await;
        let (endpoint, call) = (Arc::clone(endpoint), call.clone());
        tasks.push(tokio::spawn(async move { call.once(&endpoint, id + 1).await }));
    }
    let mut latencies = Vec::with_capacity(tasks.len());
    for task in tasks {
        latencies.push(task.await??);
    }
    latencies.sort();
    let micros = |p| crate::stats::percentile(&latencies, p).as_secs_f64() * 1e6;
    Ok((micros(0.5), micros(0.99)))
}

/// Closed loop: `callers` callers as fast as they can for `seconds`; calls per second.
pub async fn closed_loop(endpoint: &Arc<Endpoint>, call: &Call, callers: usize, seconds: u32) -> Result<f64> {
    let deadline = Instant::now() + Duration::from_secs(u64::from(seconds));
    let mut workers = Vec::new();
    for worker in 0..callers {
        let (endpoint, call) = (Arc::clone(endpoint), call.clone());
        workers.push(tokio::spawn(async move {
            let mut done = 0u64;
            while Instant::now() < deadline {
                call.once(&endpoint, worker as u64 * 1_000_000 + done).await?;
                done += 1;
            }
            anyhow::Ok(done)
        }));
    }
    let mut total = 0;
    for worker in workers {
        total += worker.await??;
    }
    Ok(total as f64 / f64::from(seconds))
}
