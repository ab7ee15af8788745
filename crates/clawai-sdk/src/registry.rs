//! [`SdkMcpServerRegistry`]: several servers in one process, addressed by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::{ClawError, SdkMcpServerImpl};

/// Servers by name, for a host that routes messages to in-process servers (for example
/// a gateway that exposes several of them).
///
/// ```
/// use clawai_sdk::{SdkMcpServerImpl, SdkMcpServerRegistry};
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let mut registry = SdkMcpServerRegistry::new();
/// registry.register(SdkMcpServerImpl::new("math-tools", "1.0.0"));
/// let pong = registry.handle("math-tools", json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await.unwrap();
/// assert_eq!(pong.unwrap()["result"], json!({}));
/// assert!(registry.handle("nope", json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})).await.is_err());
/// # });
/// ```
#[derive(Default)]
pub struct SdkMcpServerRegistry {
    servers: BTreeMap<String, Arc<SdkMcpServerImpl>>,
}

impl SdkMcpServerRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        SdkMcpServerRegistry::default()
    }

    /// Adds a server under its name, replacing one of the same name.
    pub fn register(&mut self, server: SdkMcpServerImpl) {
        self.servers.insert(server.name.clone(), Arc::new(server));
    }

    /// The server registered as `name`.
    pub fn get(&self, name: &str) -> Option<Arc<SdkMcpServerImpl>> {
        self.servers.get(name).cloned()
    }

    /// The registered servers' names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.servers.keys().map(String::as_str)
    }

    /// Routes a JSON-RPC message to the server named `server`: its response, `None`
    /// for a notification, or [`ClawError::UnknownServer`].
    pub async fn handle(&self, server: &str, message: Value) -> Result<Option<Value>, ClawError> {
        let target = self.servers.get(server).ok_or_else(|| ClawError::UnknownServer(server.to_string()))?;
        Ok(target.handle_jsonrpc(message).await)
    }
}
