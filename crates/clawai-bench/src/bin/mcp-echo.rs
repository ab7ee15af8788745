//! The fastest MCP server we can write: answers `initialize`, `tools/call` (echoing the
//! arguments) and `bench/big` (a result of `bytes` bytes) over stdio.

use std::io::{BufRead, BufWriter, Write};

use serde_json::Value;

fn main() {
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut line = Vec::new();
    let mut big: Vec<u8> = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).unwrap_or(0) == 0 {
            return;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&line) else { continue };
        let Some(id) = msg.get("id") else { continue };
        let id = id.to_string();
        let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
        match method {
            "initialize" => {
                let _ = write!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{}}}},"serverInfo":{{"name":"mcp-echo","version":"1"}}}}}}"#
                );
            }
            "bench/big" => {
                let bytes = msg["params"]["bytes"].as_u64().unwrap_or(1 << 20) as usize;
                if big.len() != bytes {
                    big = vec![b'x'; bytes];
                }
                let _ = write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":""#);
                let _ = out.write_all(&big);
                let _ = write!(out, r#""}}]}}}}"#);
            }
            _ => {
                let args = msg["params"]["arguments"].to_string();
                let _ = write!(
                    out,
                    r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"ok"}}],"structuredContent":{args}}}}}"#
                );
            }
        }
        let _ = out.write_all(b"\n");
        let _ = out.flush();
    }
}
