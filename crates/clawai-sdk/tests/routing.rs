//! JSON-RPC routing and error codes of `SdkMcpServerImpl` (seed 002 §8, §9).

use std::sync::Arc;

use clawai_sdk::prelude::*;
use serde_json::{Value, json};

#[claw_tool(description = "Adds two integers")]
async fn add(a: i64, b: i64) -> ToolResult {
    ToolResult::text(format!("{}", a + b))
}

#[claw_tool]
async fn always_fails() -> Result<ToolResult, ClawError> {
    Err(ClawError::ToolExecution("the disk is on fire".into()))
}

#[claw_tool]
async fn reports_failure() -> ToolResult {
    ToolResult::error("nothing to do")
}

#[claw_tool]
async fn panics() -> ToolResult {
    panic!("bug in the tool")
}

fn server() -> SdkMcpServerImpl {
    let mut server = SdkMcpServerImpl::new("test-server", "2.1.0");
    for tool in [add(), always_fails(), reports_failure(), panics()] {
        server.register_tool(tool);
    }
    server
}

async fn call(server: &SdkMcpServerImpl, method: &str, params: Value) -> Value {
    server
        .handle_jsonrpc(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .await
        .expect("a request gets a response")
}

fn error_code(response: &Value) -> i64 {
    response["error"]["code"].as_i64().unwrap_or_else(|| panic!("expected an error, got {response}"))
}

#[tokio::test]
async fn initialize_answers_the_clients_version_when_supported_else_the_latest() {
    let server = server();
    for version in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
        let response = call(&server, "initialize", json!({"protocolVersion": version, "capabilities": {}})).await;
        assert_eq!(response["id"], 7);
        assert_eq!(response["result"]["protocolVersion"], version);
        assert_eq!(response["result"]["serverInfo"], json!({"name": "test-server", "version": "2.1.0"}));
        assert!(response["result"]["capabilities"]["tools"].is_object());
    }
    for unknown in [json!("1999-01-01"), json!("2026-07-28"), json!(5)] {
        let response = call(&server, "initialize", json!({"protocolVersion": unknown})).await;
        assert_eq!(response["result"]["protocolVersion"], "2025-11-25", "{unknown}");
    }
}

#[tokio::test]
async fn discover_and_stateless_requests_follow_2026_07_28() {
    let server = server();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let discover = call(&server, "server/discover", json!({"_meta": meta})).await;
    let result = &discover["result"];
    assert_eq!(result["resultType"], "complete");
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2026-07-28")));
    assert!(result["supportedVersions"].as_array().unwrap().contains(&json!("2025-11-25")));
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "test-server");

    // No initialize needed: a stateless request is served as is, and its result says so.
    let listed = call(&server, "tools/list", json!({"_meta": meta})).await;
    assert_eq!(listed["result"]["resultType"], "complete");
    assert_eq!(listed["result"]["ttlMs"], 0);
    assert_eq!(listed["result"]["tools"].as_array().unwrap().len(), 4);
    let called =
        call(&server, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": meta})).await;
    assert_eq!(called["result"]["content"][0]["text"], "3");
    assert_eq!(called["result"]["resultType"], "complete");

    // A handshake-era request carries none of that.
    let legacy = call(&server, "tools/list", json!({})).await;
    assert!(legacy["result"].get("resultType").is_none());

    let unsupported =
        call(&server, "tools/list", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2030-01-01"}})).await;
    assert_eq!(error_code(&unsupported), -32022);
    assert!(unsupported["error"]["data"]["supported"].as_array().unwrap().contains(&json!("2026-07-28")));
}

#[tokio::test]
async fn ping_and_log_level() {
    let server = server();
    assert_eq!(call(&server, "ping", Value::Null).await["result"], json!({}));
    assert_eq!(call(&server, "logging/setLevel", json!({"level": "warning"})).await["result"], json!({}));
    assert_eq!(error_code(&call(&server, "logging/setLevel", json!({"level": "loud"})).await), -32602);
}

#[tokio::test]
async fn unknown_method_is_32601() {
    let response = call(&server(), "resources/list", json!({})).await;
    assert_eq!(error_code(&response), -32601);
    assert_eq!(response["id"], 7);
}

#[tokio::test]
async fn tools_call_errors_have_the_seeds_codes() {
    let server = server();
    let unknown = call(&server, "tools/call", json!({"name": "nope", "arguments": {}})).await;
    assert_eq!(error_code(&unknown), -32602);
    assert!(unknown["error"]["message"].as_str().unwrap().contains("nope"));

    assert_eq!(error_code(&call(&server, "tools/call", json!({"arguments": {}})).await), -32602);
    assert_eq!(error_code(&call(&server, "tools/call", Value::Null).await), -32602);
    assert_eq!(error_code(&call(&server, "tools/call", json!({"name": "add", "arguments": [1, 2]})).await), -32602);

    let missing = call(&server, "tools/call", json!({"name": "add", "arguments": {"a": 1}})).await;
    assert_eq!(error_code(&missing), -32602);
    assert!(missing["error"]["message"].as_str().unwrap().contains("`b`"), "{missing}");

    let mistyped = call(&server, "tools/call", json!({"name": "add", "arguments": {"a": 1, "b": "two"}})).await;
    assert_eq!(error_code(&mistyped), -32602);
    assert!(mistyped["error"]["message"].as_str().unwrap().contains("`b`"), "{mistyped}");

    let fractional = call(&server, "tools/call", json!({"name": "add", "arguments": {"a": 1.5, "b": 1}})).await;
    assert_eq!(error_code(&fractional), -32602, "an i64 parameter refuses 1.5");

    let handler_error = call(&server, "tools/call", json!({"name": "always-fails"})).await;
    assert_eq!(error_code(&handler_error), -32603);
    assert_eq!(handler_error["error"]["message"], "the disk is on fire");

    let panicked = call(&server, "tools/call", json!({"name": "panics"})).await;
    assert_eq!(error_code(&panicked), -32603);

    // A tool that reports failure is a successful response with isError.
    let reported = call(&server, "tools/call", json!({"name": "reports-failure"})).await;
    assert!(reported.get("error").is_none());
    assert_eq!(reported["result"]["isError"], true);
    assert_eq!(reported["result"]["content"][0]["text"], "nothing to do");

    // Missing arguments are an empty object, and a success has no isError.
    let ok = call(&server, "tools/call", json!({"name": "add", "arguments": {"a": -4, "b": 6}})).await;
    assert_eq!(ok["result"], json!({"content": [{"type": "text", "text": "2"}]}));
}

#[tokio::test]
async fn notifications_and_responses_get_no_answer_and_bad_requests_do() {
    let server = server();
    assert_eq!(server.handle_jsonrpc(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await, None);
    assert_eq!(server.handle_jsonrpc(json!({"jsonrpc": "2.0", "id": 3, "result": {}})).await, None);
    for (bad, id) in [
        (json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]), Value::Null),
        (json!({"jsonrpc": "1.0", "id": 1, "method": "ping"}), json!(1)),
        (json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "ping"}), Value::Null),
        (json!({"jsonrpc": "2.0", "id": 9}), json!(9)),
        (json!("ping"), Value::Null),
    ] {
        let response = server.handle_jsonrpc(bad.clone()).await.expect("an answer");
        assert_eq!(error_code(&response), -32600, "{bad}");
        assert_eq!(response["id"], id, "{bad}");
    }
    // String ids are kept as they are.
    let response = server.handle_jsonrpc(json!({"jsonrpc": "2.0", "id": "req-1", "method": "ping"})).await.unwrap();
    assert_eq!(response["id"], "req-1");
}

#[tokio::test]
async fn tools_list_pages_in_registration_order() {
    let mut server = SdkMcpServerImpl::new("many", "1").with_page_size(3);
    let names: Vec<String> = (0..8).map(|i| format!("tool-{i}")).collect();
    for name in &names {
        let mut tool = add();
        tool.name = name.clone();
        server.register_tool(tool);
    }
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..10 {
        let params = if cursor.is_null() { json!({}) } else { json!({"cursor": cursor}) };
        let page = call(&server, "tools/list", params).await;
        let tools = page["result"]["tools"].as_array().unwrap();
        assert!(tools.len() <= 3);
        seen.extend(tools.iter().map(|tool| tool["name"].as_str().unwrap().to_string()));
        cursor = page["result"].get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(seen, names);
    assert_eq!(error_code(&call(&server, "tools/list", json!({"cursor": "banana"})).await), -32602);
    assert_eq!(error_code(&call(&server, "tools/list", json!({"cursor": "99"})).await), -32602);
}

#[tokio::test]
async fn register_get_list_and_replace() {
    let mut server = server();
    assert_eq!(server.get_tool("add").unwrap().description, "Adds two integers");
    assert!(server.get_tool("missing").is_none());
    let before: Vec<Value> = server.list_tools().iter().map(|tool| tool["name"].clone()).collect();
    assert_eq!(before, vec![json!("add"), json!("always-fails"), json!("reports-failure"), json!("panics")]);
    let mut replacement = reports_failure();
    replacement.name = "add".into();
    server.register_tool(replacement);
    let after: Vec<Value> = server.list_tools().iter().map(|tool| tool["name"].clone()).collect();
    assert_eq!(after, before, "a replaced tool keeps its place");
    let response = call(&server, "tools/call", json!({"name": "add", "arguments": {}})).await;
    assert_eq!(response["result"]["isError"], true, "the replacement runs");
}

struct Counter(std::sync::atomic::AtomicUsize);

#[async_trait]
impl ToolHandler for Counter {
    async fn call(&self, _args: Value) -> Result<ToolResult, ClawError> {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        Ok(ToolResult::text(n.to_string()))
    }
}

#[tokio::test]
async fn manual_handlers_keep_state_and_registries_route_by_name() {
    let mut server = SdkMcpServerImpl::new("counter", "1.0.0");
    server.register_tool(SdkMcpTool::new(
        "count",
        "Counts calls",
        json!({"type": "object"}),
        Arc::new(Counter(Default::default())),
    ));
    let mut registry = SdkMcpServerRegistry::new();
    registry.register(server);
    registry.register(self::server());
    assert_eq!(registry.names().collect::<Vec<_>>(), vec!["counter", "test-server"]);
    for expected in ["1", "2"] {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "count"}});
        let response = registry.handle("counter", request).await.unwrap().unwrap();
        assert_eq!(response["result"]["content"][0]["text"], expected);
    }
    let request = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "count"}});
    let other = registry.handle("test-server", request.clone()).await.unwrap().unwrap();
    assert_eq!(error_code(&other), -32602, "each server has its own tools");
    assert!(matches!(registry.handle("ghost", request).await, Err(ClawError::UnknownServer(name)) if name == "ghost"));
}
