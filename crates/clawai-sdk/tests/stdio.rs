//! The stdio transport: concurrency, cancellation, notifications before the response,
//! malformed lines, and draining on end of input.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clawai_sdk::prelude::*;
use common::{STUCK_DROPPED, chatty, stuck};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::Notify;

static RELEASE: Notify = Notify::const_new();

/// Waits until the test releases it.
#[claw_tool]
async fn slow() -> ToolResult {
    RELEASE.notified().await;
    ToolResult::text("slow done")
}

#[claw_tool]
async fn fast() -> ToolResult {
    ToolResult::text("fast done")
}

#[claw_tool]
async fn sleepy() -> ToolResult {
    tokio::time::sleep(Duration::from_millis(50)).await;
    ToolResult::text("slept")
}

struct Session {
    input: DuplexStream,
    output: tokio::io::Lines<BufReader<DuplexStream>>,
    served: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Session {
    fn start() -> Session {
        let mut server = SdkMcpServerImpl::new("stdio-test", "1.0.0");
        for tool in [slow(), fast(), stuck(), chatty(), sleepy()] {
            server.register_tool(tool);
        }
        let (input, server_input) = tokio::io::duplex(1 << 16);
        let (server_output, output) = tokio::io::duplex(1 << 16);
        let served = tokio::spawn(clawai_sdk::serve_io(Arc::new(server), server_input, server_output));
        Session { input, output: BufReader::new(output).lines(), served }
    }

    async fn send(&mut self, line: &str) {
        self.input.write_all(format!("{line}\n").as_bytes()).await.unwrap();
    }

    async fn call(&mut self, id: i64, tool: &str, meta: Value) {
        let request =
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "_meta": meta}});
        self.send(&request.to_string()).await;
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.output.next_line())
            .await
            .expect("an answer within 10 s")
            .unwrap()
            .expect("output still open");
        serde_json::from_str(&line).unwrap()
    }
}

#[tokio::test]
async fn requests_run_concurrently() {
    let mut session = Session::start();
    session.call(1, "slow", json!({})).await;
    session.call(2, "fast", json!({})).await;
    let first = session.next().await;
    assert_eq!(first["id"], 2, "the fast call is not queued behind the slow one");
    RELEASE.notify_one();
    let second = session.next().await;
    assert_eq!(second["id"], 1);
    assert_eq!(second["result"]["content"][0]["text"], "slow done");
}

#[tokio::test]
async fn cancelled_calls_stop_and_get_no_answer() {
    let mut session = Session::start();
    session.call(7, "stuck", json!({})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    session
        .send(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user"}}"#)
        .await;
    session.send(r#"{"jsonrpc":"2.0","id":8,"method":"ping"}"#).await;
    assert_eq!(session.next().await["id"], 8);
    drop(session.input);
    // Returns (the stuck call was aborted, not awaited) and wrote nothing for id 7.
    tokio::time::timeout(Duration::from_secs(5), session.served).await.expect("served ends").unwrap().unwrap();
    assert_eq!(session.output.next_line().await.unwrap(), None);
    assert!(STUCK_DROPPED.load(Ordering::SeqCst), "the tool's future was dropped");
}

#[tokio::test]
async fn notifications_come_before_the_response() {
    let mut session = Session::start();
    session.call(3, "chatty", json!({"progressToken": "tok"})).await;
    let mut progress = Vec::new();
    let mut logs = 0;
    loop {
        let message = session.next().await;
        match message["method"].as_str() {
            Some("notifications/progress") => {
                assert_eq!(message["params"]["progressToken"], "tok");
                progress.push(message["params"]["progress"].as_f64().unwrap());
            }
            Some("notifications/message") => logs += 1,
            _ => {
                assert_eq!(message["id"], 3);
                break;
            }
        }
    }
    assert_eq!(progress, vec![1.0, 2.0, 3.0]);
    assert_eq!(logs, 3);

    // Without a progress token, no progress; a raised log level silences info.
    session.send(r#"{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"error"}}"#).await;
    assert_eq!(session.next().await["id"], 4);
    session.call(5, "chatty", json!({})).await;
    assert_eq!(session.next().await["id"], 5, "nothing before the response");

    // 2026-07-28: log messages only for a request that opts in, at its level.
    let modern = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    session.call(6, "chatty", modern.clone()).await;
    assert_eq!(session.next().await["id"], 6, "no opt-in, no log messages");
    let mut opted_in = modern;
    opted_in["io.modelcontextprotocol/logLevel"] = json!("info");
    session.call(7, "chatty", opted_in).await;
    let first = session.next().await;
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(first["params"]["data"], "step 1");
}

#[tokio::test]
async fn malformed_lines_get_parse_errors_and_the_session_goes_on() {
    let mut session = Session::start();
    session.send("{not json").await;
    let error = session.next().await;
    assert_eq!(error["error"]["code"], -32700);
    assert_eq!(error["id"], Value::Null);
    session.input.write_all(b"\xff\xfe\n").await.unwrap();
    assert_eq!(session.next().await["error"]["code"], -32700);
    session.send("").await;
    session.send(r#"{"jsonrpc":"2.0","id":"after","method":"ping"}"#).await;
    assert_eq!(session.next().await["id"], "after");
}

#[tokio::test]
async fn end_of_input_drains_calls_in_flight() {
    let mut session = Session::start();
    session.call(9, "sleepy", json!({})).await;
    session.input.shutdown().await.unwrap();
    let answer = session.next().await;
    assert_eq!(answer["result"]["content"][0]["text"], "slept");
    session.served.await.unwrap().unwrap();
}
