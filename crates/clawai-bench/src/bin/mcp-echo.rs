//! The fastest MCP server we can write: answers `initialize` and `tools/call` over
//! stdio. A call echoes its arguments back, except to three tools that answer with a
//! large result in the shapes real servers send (`bytes` long, 1 MiB by default):
//!
//! * `big_text`: one text block of source-code-like lines (a file read, a log);
//! * `big_image`: a base64 PNG, as browser-automation servers return screenshots;
//! * `big_json`: `structuredContent` holding an array of records (a query's rows),
//!   with a one-line text summary beside it.
//!
//! `mcp-echo --tools N` also lists N tools (`tool_0` … `tool_{N-1}`, each with a
//! description and a small input schema, in one page); without it `tools/list` gets the
//! echo answer every other method gets.

use std::io::{BufRead, BufWriter, Write};

use clawai_bench::results::BigShape;
use serde_json::Value;

/// The answer to `tools/list` with `count` tools, without its id: `{"tools":[…]}`.
fn tool_list(count: usize) -> String {
    let tools: Vec<Value> = (0..count)
        .map(|n| {
            serde_json::json!({
                "name": format!("tool_{n}"),
                "description": format!("Echoes its arguments back as structured content (tool {n} of {count})."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "A path, echoed back."},
                        "count": {"type": "integer", "description": "A number, echoed back."}
                    },
                    "required": ["path"]
                }
            })
        })
        .collect();
    serde_json::json!({ "tools": tools }).to_string()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let tools = match args.iter().position(|a| a == "--tools") {
        Some(i) => match args.get(i + 1).and_then(|n| n.parse::<usize>().ok()) {
            Some(count) => Some(tool_list(count)),
            None => {
                eprintln!("mcp-echo: --tools needs a number of tools");
                std::process::exit(2);
            }
        },
        None => None,
    };
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut out = BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let mut line = Vec::new();
    let mut big: Option<(BigShape, usize, String)> = None;
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
            "tools/list" if tools.is_some() => {
                let _ =
                    write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{}}}"#, tools.as_deref().unwrap_or_default());
            }
            "tools/call" if BigShape::named(msg["params"]["name"].as_str()).is_some() => {
                let shape = BigShape::named(msg["params"]["name"].as_str()).expect("checked above");
                let bytes = msg["params"]["arguments"]["bytes"].as_u64().unwrap_or(1 << 20) as usize;
                if big.as_ref().is_none_or(|(s, b, _)| *s != shape || *b != bytes) {
                    big = Some((shape, bytes, shape.result(bytes)));
                }
                let result = big.as_ref().map(|(_, _, r)| r.as_str()).unwrap_or_default();
                let _ = write!(out, r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#);
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
