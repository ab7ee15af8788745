//! The Streamable HTTP transport: DNS-rebinding checks, sessions, event streams, the
//! 2026-07-28 header rules, and cancellation on disconnect.

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use clawai_sdk::http::{HttpOptions, router};
use clawai_sdk::prelude::*;
use common::{STUCK_DROPPED, chatty, stuck};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

#[claw_tool]
async fn greet(name: String) -> ToolResult {
    ToolResult::text(format!("hello {name}"))
}

fn app(options: HttpOptions) -> Router {
    let mut server = SdkMcpServerImpl::new("http-test", "1.0.0");
    for tool in [greet(), chatty(), stuck()] {
        server.register_tool(tool);
    }
    router(Arc::new(server), options)
}

fn post() -> axum::http::request::Builder {
    Request::post("/mcp")
        .header("host", "localhost:3000")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
}

async fn send(app: &Router, request: Request<Body>) -> (Response<Body>, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let (parts, body) = response.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    (Response::from_parts(parts, Body::empty()), String::from_utf8(bytes.to_vec()).unwrap())
}

async fn initialize(app: &Router) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (response, text) = send(app, post().body(Body::from(body.to_string())).unwrap()).await;
    assert_eq!(response.status(), StatusCode::OK, "{text}");
    let result: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(result["result"]["protocolVersion"], "2025-11-25");
    response.headers()["mcp-session-id"].to_str().unwrap().to_string()
}

fn tools_call(id: i64, name: &str, arguments: Value, meta: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments, "_meta": meta}})
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let app = app(HttpOptions::default());
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    for (host, origin) in [
        ("evil.example", None),
        ("localhost:3000", Some("http://evil.example")),
        ("localhost:3000", Some("null")),
        ("127.0.0.1.evil.example:3000", None),
    ] {
        let mut request = Request::post("/mcp").header("host", host).header("content-type", "application/json");
        if let Some(origin) = origin {
            request = request.header("origin", origin);
        }
        let (response, text) = send(&app, request.body(Body::from(body.to_string())).unwrap()).await;
        assert_eq!(response.status(), StatusCode::FORBIDDEN, "{host} {origin:?}: {text}");
    }
    let request = post().header("origin", "http://localhost:5173").body(Body::from(body.to_string())).unwrap();
    let (response, _) = send(&app, request).await;
    assert_ne!(response.status(), StatusCode::FORBIDDEN, "a local origin passes the check");
}

#[tokio::test]
async fn sessions_open_on_initialize_and_end_on_delete_or_idleness() {
    let app = app(HttpOptions { session_idle_timeout: Duration::from_millis(300), ..HttpOptions::default() });
    let session = initialize(&app).await;
    assert_eq!(session.len(), 32);
    let call = tools_call(1, "greet", json!({"name": "ada"}), json!({}));

    let (response, _) = send(&app, post().body(Body::from(call.to_string())).unwrap()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST, "no session id");
    let request =
        post().header("mcp-session-id", "0123456789abcdef0123456789abcdef").body(Body::from(call.to_string()));
    assert_eq!(send(&app, request.unwrap()).await.0.status(), StatusCode::NOT_FOUND, "unknown session");

    let request = post().header("mcp-session-id", &session).body(Body::from(call.to_string())).unwrap();
    let (response, text) = send(&app, request).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["result"]["content"][0]["text"], "hello ada");

    let notification = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let request = post().header("mcp-session-id", &session).body(Body::from(notification.to_string()));
    assert_eq!(send(&app, request.unwrap()).await.0.status(), StatusCode::ACCEPTED);

    let delete = Request::delete("/mcp").header("host", "localhost").header("mcp-session-id", &session);
    assert_eq!(send(&app, delete.body(Body::empty()).unwrap()).await.0.status(), StatusCode::OK);
    let request = post().header("mcp-session-id", &session).body(Body::from(call.to_string())).unwrap();
    assert_eq!(send(&app, request).await.0.status(), StatusCode::NOT_FOUND, "ended session");

    let idle = initialize(&app).await;
    tokio::time::sleep(Duration::from_millis(400)).await;
    let request = post().header("mcp-session-id", &idle).body(Body::from(call.to_string())).unwrap();
    assert_eq!(send(&app, request).await.0.status(), StatusCode::NOT_FOUND, "expired session");
}

#[tokio::test]
async fn bad_requests_are_refused_with_the_right_status() {
    let app = app(HttpOptions::default());
    let get = Request::get("/mcp").header("host", "localhost").body(Body::empty()).unwrap();
    assert_eq!(send(&app, get).await.0.status(), StatusCode::METHOD_NOT_ALLOWED);
    let text_body = Request::post("/mcp").header("host", "localhost").header("content-type", "text/plain");
    assert_eq!(
        send(&app, text_body.body(Body::from("{}")).unwrap()).await.0.status(),
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    let (response, text) = send(&app, post().body(Body::from("{oops")).unwrap()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], -32700);
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}]"#;
    let (response, text) = send(&app, post().body(Body::from(batch)).unwrap()).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], -32600);
}

fn sse_messages(text: &str) -> Vec<Value> {
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[tokio::test]
async fn progress_streams_as_events_before_the_response() {
    let app = app(HttpOptions::default());
    let session = initialize(&app).await;
    let call = tools_call(5, "chatty", json!({}), json!({"progressToken": 11}));
    let request = post().header("mcp-session-id", &session).body(Body::from(call.to_string())).unwrap();
    let (response, text) = send(&app, request).await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let all = sse_messages(&text);
    let logs = all.iter().filter(|m| m["method"] == "notifications/message").count();
    assert_eq!(logs, 3, "log messages stream too: {text}");
    let messages: Vec<&Value> = all.iter().filter(|m| m["method"] != "notifications/message").collect();
    assert_eq!(messages.len(), 4, "{text}");
    for (index, message) in messages[..3].iter().enumerate() {
        assert_eq!(message["method"], "notifications/progress");
        assert_eq!(message["params"]["progressToken"], 11);
        assert_eq!(message["params"]["progress"], json!((index + 1) as f64));
    }
    assert_eq!(messages[3]["id"], 5);
    assert_eq!(messages[3]["result"]["content"][0]["text"], "chatty done");

    // A client that takes only JSON gets only the response.
    let request = Request::post("/mcp")
        .header("host", "localhost")
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .header("mcp-session-id", &session)
        .body(Body::from(call.to_string()))
        .unwrap();
    let (response, text) = send(&app, request).await;
    assert_eq!(response.headers()["content-type"], "application/json");
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["id"], 5);
}

fn modern(method: &str, name: Option<&str>, body: &Value) -> Request<Body> {
    let mut request = post().header("mcp-protocol-version", "2026-07-28").header("mcp-method", method);
    if let Some(name) = name {
        request = request.header("mcp-name", name);
    }
    request.body(Body::from(body.to_string())).unwrap()
}

#[tokio::test]
async fn stateless_requests_need_headers_that_agree_with_the_body() {
    let app = app(HttpOptions::default());
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let call = tools_call(1, "greet", json!({"name": "bob"}), meta.clone());
    let (response, text) = send(&app, modern("tools/call", Some("greet"), &call)).await;
    assert_eq!(response.status(), StatusCode::OK, "no session needed: {text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "hello bob");
    assert_eq!(answer["result"]["resultType"], "complete");

    for (method, name) in [("tools/list", Some("greet")), ("tools/call", Some("chatty")), ("tools/call", None)] {
        let (response, text) = send(&app, modern(method, name, &call)).await;
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{method} {name:?}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], -32020);
    }
    // The header says 2026-07-28 but the body does not.
    let unstamped = tools_call(1, "greet", json!({"name": "bob"}), json!({}));
    assert_eq!(send(&app, modern("tools/call", Some("greet"), &unstamped)).await.0.status(), StatusCode::BAD_REQUEST);

    let unknown = json!({"jsonrpc": "2.0", "id": 2, "method": "nope/nope", "params": {"_meta": meta}});
    let (response, text) = send(&app, modern("nope/nope", None, &unknown)).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["error"]["code"], -32601);
}

#[tokio::test]
async fn a_client_that_goes_away_cancels_its_call() {
    let app = app(HttpOptions::default());
    let session = initialize(&app).await;
    let call = tools_call(9, "stuck", json!({}), json!({}));
    let request = post().header("mcp-session-id", &session).body(Body::from(call.to_string())).unwrap();
    let in_flight = tokio::spawn(app.clone().oneshot(request));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!STUCK_DROPPED.load(Ordering::SeqCst));
    in_flight.abort(); // what hyper does when the connection closes
    for _ in 0..100 {
        if STUCK_DROPPED.load(Ordering::SeqCst) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the tool kept running after its client went away");
}
