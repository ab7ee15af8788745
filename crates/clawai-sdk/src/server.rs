//! [`SdkMcpServerImpl`]: a set of tools and the JSON-RPC routing that serves them.

use clawai_protocol::methods;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde_json::{Map, Value, json};
use tokio::sync::mpsc::UnboundedSender;

use crate::abort::AbortOnDrop;
use crate::codes::{INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION};
use crate::context::{CURRENT, CallContext, LogGate, LogLevel};
use crate::version::{self, HANDSHAKE_VERSIONS, LATEST_HANDSHAKE_VERSION};
use crate::{ClawError, SdkMcpTool, ToolResult};

/// The `_meta` key that carries a 2026-07-28 request's protocol version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key under which 2026-07-28 results name the server.
const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key with which a 2026-07-28 request opts in to log messages.
const LOG_LEVEL_META: &str = "io.modelcontextprotocol/logLevel";

/// An MCP server made of tools: routes `initialize`, `server/discover`, `ping`,
/// `logging/setLevel`, `tools/list` and `tools/call`, in the handshake revisions
/// (2024-11-05 … 2025-11-25) and the stateless 2026-07-28 revision.
///
/// ```
/// use clawai_sdk::{claw_tool, SdkMcpServerImpl, ToolResult};
/// use serde_json::json;
///
/// /// Adds two numbers.
/// #[claw_tool]
/// async fn add(a: f64, b: f64) -> ToolResult {
///     ToolResult::text(format!("{}", a + b))
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut server = SdkMcpServerImpl::new("math", "1.0.0");
/// server.register_tool(add());
/// let response = server
///     .handle_jsonrpc(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
///                            "params": {"name": "add", "arguments": {"a": 2, "b": 3}}}))
///     .await
///     .unwrap();
/// assert_eq!(response["result"]["content"][0]["text"], "5");
/// # });
/// ```
pub struct SdkMcpServerImpl {
    /// The server's name, as `serverInfo` shows it.
    pub name: String,
    /// The server's version, as `serverInfo` shows it.
    pub version: String,
    instructions: Option<String>,
    tools: Vec<SdkMcpTool>,
    by_name: HashMap<String, usize>,
    page_size: usize,
    min_log_level: Arc<AtomicU8>,
}

/// A JSON-RPC error the router answers with.
struct RpcError {
    code: i64,
    message: String,
    data: Option<Value>,
}

impl RpcError {
    fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError { code, message: message.into(), data: None }
    }

    fn invalid_params(message: impl Into<String>) -> Self {
        RpcError::new(INVALID_PARAMS, message)
    }
}

impl From<ClawError> for RpcError {
    fn from(error: ClawError) -> Self {
        RpcError::new(error.code(), error.to_string())
    }
}

impl SdkMcpServerImpl {
    /// The default number of tools per `tools/list` page.
    pub const DEFAULT_PAGE_SIZE: usize = 100;

    /// A server with no tools yet.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        SdkMcpServerImpl {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: Vec::new(),
            by_name: HashMap::new(),
            page_size: Self::DEFAULT_PAGE_SIZE,
            min_log_level: Arc::new(AtomicU8::new(LogLevel::Debug as u8)),
        }
    }

    /// Sets the `instructions` the server gives clients (e.g. for a system prompt).
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// Sets how many tools one `tools/list` page holds (at least 1).
    pub fn with_page_size(mut self, page_size: usize) -> Self {
        self.page_size = page_size.max(1);
        self
    }

    /// Adds a tool; a tool already registered under the same name is replaced (and
    /// keeps its place in `tools/list`).
    pub fn register_tool(&mut self, tool: SdkMcpTool) {
        match self.by_name.get(&tool.name) {
            Some(&index) => self.tools[index] = tool,
            None => {
                self.by_name.insert(tool.name.clone(), self.tools.len());
                self.tools.push(tool);
            }
        }
    }

    /// The tool registered under `name`.
    pub fn get_tool(&self, name: &str) -> Option<&SdkMcpTool> {
        self.by_name.get(name).map(|&index| &self.tools[index])
    }

    /// Every tool's `tools/list` entry, in registration order.
    pub fn list_tools(&self) -> Vec<Value> {
        self.tools.iter().map(SdkMcpTool::definition).collect()
    }

    /// Answers one JSON-RPC message: `Some(response)` for a request (a result, or an
    /// error with the codes of [`crate::codes`]), `None` for a notification or a
    /// response, which need no answer.
    pub async fn handle_jsonrpc(&self, message: Value) -> Option<Value> {
        self.handle_message(message, None).await
    }

    /// [`Self::handle_jsonrpc`], with a channel for the notifications (progress, log
    /// messages) a tool sends while it runs.
    pub(crate) async fn handle_message(
        &self,
        message: Value,
        notifications: Option<UnboundedSender<Value>>,
    ) -> Option<Value> {
        let Value::Object(mut message) = message else {
            return Some(error_response(
                Value::Null,
                RpcError::new(INVALID_REQUEST, "a JSON-RPC message is an object"),
            ));
        };
        let id = message.remove("id");
        let Some(method) = message.get("method").and_then(Value::as_str).map(str::to_owned) else {
            // A response to a request we never send, or garbage: answer only garbage
            // that carries an id.
            let is_response = message.contains_key("result") || message.contains_key("error");
            return match id {
                Some(id) if !is_response => {
                    Some(error_response(id, RpcError::new(INVALID_REQUEST, "a request needs a `method`")))
                }
                _ => None,
            };
        };
        let id = id?; // notifications need no answer
        if !(id.is_string() || id.is_i64() || id.is_u64()) {
            return Some(error_response(
                Value::Null,
                RpcError::new(INVALID_REQUEST, "a request id is a string or an integer"),
            ));
        }
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Some(error_response(id, RpcError::new(INVALID_REQUEST, "`jsonrpc` must be \"2.0\"")));
        }
        let params = message.remove("params").unwrap_or(Value::Null);
        let outcome = self.route(&method, params, notifications).await;
        Some(match outcome {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => error_response(id, error),
        })
    }

    async fn route(
        &self,
        method: &str,
        params: Value,
        notifications: Option<UnboundedSender<Value>>,
    ) -> Result<Value, RpcError> {
        let modern = modern_version(&params)?.is_some();
        let mut result = match method {
            methods::INITIALIZE => self.initialize(&params),
            methods::SERVER_DISCOVER => Ok(self.discover()),
            "ping" => Ok(json!({})),
            methods::LOGGING_SET_LEVEL => self.set_log_level(&params),
            methods::TOOLS_LIST => self.tools_list(&params, modern),
            methods::TOOLS_CALL => self.tools_call(params, notifications, modern).await,
            _ => Err(RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))),
        }?;
        if modern || method == methods::SERVER_DISCOVER {
            self.stamp_modern(&mut result);
        }
        Ok(result)
    }

    fn capabilities(&self) -> Value {
        json!({"tools": {"listChanged": false}, "logging": {}})
    }

    fn server_info(&self) -> Value {
        json!({"name": self.name, "version": self.version})
    }

    fn initialize(&self, params: &Value) -> Result<Value, RpcError> {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = requested.filter(|v| HANDSHAKE_VERSIONS.contains(v)).unwrap_or(LATEST_HANDSHAKE_VERSION);
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": self.server_info(),
        });
        if let Some(instructions) = &self.instructions {
            result["instructions"] = json!(instructions);
        }
        Ok(result)
    }

    fn discover(&self) -> Value {
        let mut result = json!({
            "supportedVersions": version::ALL_VERSIONS,
            "capabilities": self.capabilities(),
            "ttlMs": 0,
            "cacheScope": "private",
        });
        if let Some(instructions) = &self.instructions {
            result["instructions"] = json!(instructions);
        }
        result
    }

    /// 2026-07-28 results say they are complete and name the server.
    fn stamp_modern(&self, result: &mut Value) {
        let Value::Object(result) = result else { return };
        result.insert("resultType".into(), json!("complete"));
        let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_META.into(), self.server_info());
        }
    }

    fn set_log_level(&self, params: &Value) -> Result<Value, RpcError> {
        let name = params.get("level").and_then(Value::as_str).unwrap_or_default();
        let level = LogLevel::parse(name).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "unknown log level `{name}`; use debug, info, notice, warning, error, critical, alert or emergency"
            ))
        })?;
        self.min_log_level.store(level as u8, Ordering::Relaxed);
        Ok(json!({}))
    }

    fn tools_list(&self, params: &Value, modern: bool) -> Result<Value, RpcError> {
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => cursor
                .as_str()
                .and_then(|cursor| cursor.parse::<usize>().ok())
                .filter(|&start| start <= self.tools.len())
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("invalid cursor {cursor}: pass a nextCursor as given"))
                })?,
        };
        let end = (start + self.page_size).min(self.tools.len());
        let tools: Vec<Value> = self.tools[start..end].iter().map(SdkMcpTool::definition).collect();
        let mut result = json!({"tools": tools});
        if end < self.tools.len() {
            result["nextCursor"] = json!(end.to_string());
        }
        if modern {
            result["ttlMs"] = json!(0);
            result["cacheScope"] = json!("private");
        }
        Ok(result)
    }

    async fn tools_call(
        &self,
        params: Value,
        notifications: Option<UnboundedSender<Value>>,
        modern: bool,
    ) -> Result<Value, RpcError> {
        let Value::Object(mut params) = params else {
            return Err(RpcError::invalid_params("tools/call needs params with the tool's `name`"));
        };
        let Some(name) = params.get("name").and_then(Value::as_str).map(str::to_owned) else {
            return Err(RpcError::invalid_params("tools/call needs `params.name`, the tool to call"));
        };
        let Some(tool) = self.get_tool(&name) else {
            return Err(RpcError::invalid_params(format!(
                "unknown tool `{name}`; tools/list shows this server's tools"
            )));
        };
        let args = match params.remove("arguments") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(args @ Value::Object(_)) => args,
            Some(_) => return Err(RpcError::invalid_params("tools/call `arguments` must be an object")),
        };
        let meta = params.get("_meta");
        let log_gate = if modern {
            LogGate::Request(
                meta.and_then(|meta| meta.get(LOG_LEVEL_META)).and_then(Value::as_str).and_then(LogLevel::parse),
            )
        } else {
            LogGate::Session(Arc::clone(&self.min_log_level))
        };
        let context = CallContext {
            progress_token: meta.and_then(|meta| meta.get("progressToken")).cloned(),
            notifications,
            log_gate,
        };
        let handler = tool.handler();
        // The handler runs as its own task so that a panic becomes an error answer
        // instead of taking the server down.
        let task = tokio::spawn(CURRENT.scope(context, async move { handler.call(args).await }));
        let _abort = AbortOnDrop(task.abort_handle());
        match task.await {
            Ok(Ok(result)) => Ok(tool_result_value(result)),
            Ok(Err(error)) => Err(error.into()),
            Err(join) if join.is_panic() => Err(RpcError::new(INTERNAL_ERROR, format!("tool `{name}` panicked"))),
            Err(_) => Err(RpcError::new(INTERNAL_ERROR, format!("tool `{name}` was cancelled"))),
        }
    }
}

fn tool_result_value(result: ToolResult) -> Value {
    serde_json::to_value(result).expect("a ToolResult is always representable as JSON")
}

/// The protocol version of a 2026-07-28 request (from its `_meta`), `None` for a
/// handshake-era request; an error for a per-request version this server does not speak.
fn modern_version(params: &Value) -> Result<Option<&str>, RpcError> {
    let Some(version) = params.get("_meta").and_then(|meta| meta.get(PROTOCOL_VERSION_META)) else {
        return Ok(None);
    };
    match version.as_str() {
        Some(version) if version::MODERN_VERSIONS.contains(&version) => Ok(Some(version)),
        _ => Err(RpcError {
            code: UNSUPPORTED_PROTOCOL_VERSION,
            message: format!("unsupported protocol version {version}"),
            data: Some(json!({"supported": version::ALL_VERSIONS, "requested": version})),
        }),
    }
}

fn error_response(id: Value, error: RpcError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = error.data {
        body["data"] = data;
    }
    json!({"jsonrpc": "2.0", "id": id, "error": body})
}
