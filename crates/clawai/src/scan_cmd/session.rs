//! A minimal MCP client for `clawai scan`: initialize, then every page of every list,
//! over a [`Link`] (a child's pipes or a remote session alike). The server's own
//! requests are answered (`ping`, empty `roots/list`) or refused; notifications are
//! ignored.

use clawai_protocol::methods;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use clawai_http::link::{FromServer, Link};
use serde_json::{Value, json};

/// The revision proposed to the server.
const PROPOSED_VERSION: &str = "2025-11-25";

/// The most pages one list is read for (a server whose cursor never ends).
const MAX_PAGES: usize = 1000;

/// What a server lists.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    /// The `serverInfo` of the `initialize` result (`name`, `version`…), when given.
    pub(crate) server_info: Option<Value>,
    pub(crate) instructions: Option<String>,
    pub(crate) tools: Vec<Value>,
    pub(crate) prompts: Vec<Value>,
    pub(crate) templates: Vec<Value>,
}

/// One session with one server.
pub(crate) struct Session {
    link: Link,
    next_id: u64,
    timeout: Duration,
}

impl Session {
    pub(crate) fn new(link: Link, timeout: Duration) -> Session {
        Session { link, next_id: 1, timeout }
    }

    /// The handshake, then every page of tools, prompts and resource templates (a list
    /// the server does not have is empty).
    pub(crate) async fn list_everything(&mut self) -> Result<Listed> {
        let params = json!({
            "protocolVersion": PROPOSED_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "clawai-scan", "version": env!("CARGO_PKG_VERSION")},
        });
        let init = self.request(methods::INITIALIZE, params).await.context("the server did not initialize")?;
        let instructions = init.get("instructions").and_then(Value::as_str).map(str::to_owned);
        self.send(json!({"jsonrpc": "2.0", "method": methods::INITIALIZED})).await?;
        Ok(Listed {
            server_info: init.get("serverInfo").filter(|info| info.is_object()).cloned(),
            instructions,
            tools: self.list_all(methods::TOOLS_LIST, "tools").await?,
            prompts: self.list_all(methods::PROMPTS_LIST, "prompts").await?,
            templates: self.list_all(methods::RESOURCES_TEMPLATES_LIST, "resourceTemplates").await?,
        })
    }

    /// Every page of one list; a list the server refuses is empty.
    async fn list_all(&mut self, method: &str, key: &str) -> Result<Vec<Value>> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = match &cursor {
                Some(cursor) => json!({"cursor": cursor}),
                None => json!({}),
            };
            let page = match self.request(method, params).await {
                Ok(page) => page,
                Err(error) if error.downcast_ref::<Refused>().is_some() => return Ok(items),
                Err(error) => return Err(error),
            };
            if let Some(list) = page.get(key).and_then(Value::as_array) {
                items.extend(list.iter().cloned());
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if cursor.as_deref() != Some(next) => cursor = Some(next.to_owned()),
                _ => return Ok(items),
            }
        }
        bail!("{method} still had more pages after {MAX_PAGES}")
    }

    async fn send(&mut self, message: Value) -> Result<()> {
        let bytes = serde_json::to_vec(&message).expect("JSON");
        self.link.to_server.send(bytes).await.map_err(|_| anyhow!("the server is gone"))
    }

    /// Sends a request and waits for its response, answering what the server asks
    /// meanwhile. A JSON-RPC error is a [`Refused`].
    async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await?;
        let deadline = tokio::time::Instant::now() + self.timeout;
        loop {
            let item = tokio::time::timeout_at(deadline, self.link.from_server.recv())
                .await
                .map_err(|_| anyhow!("no answer to {method} within {} seconds", self.timeout.as_secs_f64()))?;
            let message = match item {
                Some(FromServer::Message(message)) => message,
                Some(FromServer::Oversize { length, .. }) => {
                    bail!("the server sent a message of {length} bytes, over the limit")
                }
                Some(FromServer::Closed(reason)) => bail!("{reason}"),
                None => bail!("the server is gone"),
            };
            let Ok(message) = serde_json::from_slice::<Value>(&message) else { continue };
            match (message.get("method").and_then(Value::as_str), message.get("id")) {
                (Some(asked), Some(their_id)) => {
                    let reply = match asked {
                        "ping" => json!({"jsonrpc": "2.0", "id": their_id, "result": {}}),
                        methods::ROOTS_LIST => json!({"jsonrpc": "2.0", "id": their_id, "result": {"roots": []}}),
                        _ => {
                            json!({"jsonrpc": "2.0", "id": their_id, "error": {"code": -32601, "message": "not supported by clawai scan"}})
                        }
                    };
                    self.send(reply).await?;
                }
                (Some(_), None) => {}
                (None, Some(their_id)) if their_id.as_u64() == Some(id) => {
                    if let Some(error) = message.get("error") {
                        let text = error.get("message").and_then(Value::as_str).unwrap_or("an error");
                        return Err(anyhow::Error::new(Refused(format!("{method}: {text}"))));
                    }
                    return Ok(message.get("result").cloned().unwrap_or(Value::Null));
                }
                (None, _) => {}
            }
        }
    }

    /// Ends the session: the link's sender is dropped (a child's stdin closes).
    pub(crate) fn close(self) {
        drop(self.link);
    }
}

/// The server answered a request with a JSON-RPC error.
#[derive(Debug)]
struct Refused(String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Refused {}
