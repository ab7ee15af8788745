//! Serving over stdio: one JSON-RPC message per line on stdin and stdout.
//!
//! stdout carries only protocol messages, so a server must log to stderr (the SDK itself
//! prints nothing). Requests run concurrently; `notifications/cancelled` aborts the one it
//! names, which then gets no answer. On end of input the server finishes the requests it
//! has, writes their answers and returns.

use clawai_protocol::methods;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader, BufWriter};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};

use crate::SdkMcpServerImpl;
use crate::codes::PARSE_ERROR;

/// The largest message the stdio transport reads (64 MiB); a longer line is refused with
/// a parse error.
pub const MAX_MESSAGE_SIZE: usize = 64 << 20;

impl SdkMcpServerImpl {
    /// Serves this server on stdin/stdout until stdin closes.
    ///
    /// ```no_run
    /// # async fn run() -> std::io::Result<()> {
    /// clawai_sdk::SdkMcpServerImpl::new("my-server", "1.0.0").serve_stdio().await
    /// # }
    /// ```
    pub async fn serve_stdio(self) -> std::io::Result<()> {
        serve_io(Arc::new(self), tokio::io::stdin(), tokio::io::stdout()).await
    }
}

/// Serves `server` over any byte streams (stdin/stdout, a pipe, a socket).
pub async fn serve_io<R, W>(server: Arc<SdkMcpServerImpl>, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (outgoing, mut to_write) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(async move {
        let mut output = BufWriter::new(output);
        while let Some(message) = to_write.recv().await {
            let mut line = serde_json::to_vec(&message).map_err(std::io::Error::other)?;
            line.push(b'\n');
            output.write_all(&line).await?;
            if to_write.is_empty() {
                output.flush().await?;
            }
        }
        output.flush().await
    });

    let in_flight: Arc<Mutex<HashMap<String, AbortHandle>>> = Arc::default();
    let mut calls = JoinSet::new();
    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = (&mut input).take(MAX_MESSAGE_SIZE as u64 + 1).read_until(b'\n', &mut line).await?;
        if read == 0 {
            break;
        }
        if line.len() > MAX_MESSAGE_SIZE && !line.ends_with(b"\n") {
            // Skip the rest of the oversize line before going on.
            let mut rest = Vec::new();
            input.read_until(b'\n', &mut rest).await?;
            let _ = outgoing.send(parse_error(&format!("message larger than {MAX_MESSAGE_SIZE} bytes")));
            continue;
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let message: Value = match serde_json::from_slice(&line) {
            Ok(message) => message,
            Err(error) => {
                let _ = outgoing.send(parse_error(&error.to_string()));
                continue;
            }
        };
        if message.get("method").and_then(Value::as_str) == Some(methods::CANCELLED) {
            let target = message.pointer("/params/requestId").map(Value::to_string);
            if let Some(call) = target.and_then(|key| in_flight.lock().expect("in-flight map").remove(&key)) {
                call.abort();
            }
            continue;
        }
        let key = match (message.get("method"), message.get("id")) {
            (Some(_), Some(id)) => Some(id.to_string()),
            _ => None,
        };
        let key_for_cancel = key.clone();
        let server = Arc::clone(&server);
        let sink = outgoing.clone();
        let registry = Arc::clone(&in_flight);
        // Hold the map while spawning: the call removes its own entry when it ends,
        // which must come after the entry is in.
        let mut registered = in_flight.lock().expect("in-flight map");
        let call = calls.spawn(async move {
            let response = server.handle_message(message, Some(sink.clone())).await;
            if let Some(key) = &key {
                registry.lock().expect("in-flight map").remove(key);
            }
            if let Some(response) = response {
                let _ = sink.send(response);
            }
        });
        if let Some(key) = key_for_cancel {
            registered.insert(key, call);
        }
    }
    while calls.join_next().await.is_some() {}
    drop(outgoing);
    writer.await.map_err(std::io::Error::other)?
}

fn parse_error(detail: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": null, "error": {"code": PARSE_ERROR, "message": format!("parse error: {detail}")}})
}
