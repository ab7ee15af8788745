//! What the HTTP benchmarks share: ports, children, and an MCP session over Streamable
//! HTTP that times `tools/call`.

use std::process::Child;
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
