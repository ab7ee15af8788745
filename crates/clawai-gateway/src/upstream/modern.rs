//! Servers that speak only the stateless revision (2026-07-28): no `initialize`, so the
//! gateway asks `server/discover` when `initialize` fails, and from then on stamps every
//! request it sends the server with the revision, its capabilities and its name in
//! `_meta`, as that revision requires (the server is told nothing else: no
//! `notifications/initialized`). Their `input_required` results pass to the calling
//! client as any result does, and its retry back.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{INITIALIZE_TIMEOUT, Upstream};
use crate::rewrite::{CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META};

/// The stateless revision.
const MODERN: &str = "2026-07-28";
/// `_meta` key of the client's name.
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";

impl Upstream {
    /// Whether the server speaks 2026-07-28 only (its requests are stamped).
    pub(super) fn speaks_modern(&self) -> bool {
        self.modern.load(Ordering::SeqCst)
    }

    /// After `initialize` failed: `server/discover`, and what it says as an `initialize`
    /// result would (revision, capabilities, serverInfo, instructions).
    pub(super) async fn discover(&self) -> Result<Value, String> {
        self.modern.store(true, Ordering::SeqCst);
        let found = self.request("server/discover", Some(json!({})), INITIALIZE_TIMEOUT).await;
        let refused = |why: String| {
            self.modern.store(false, Ordering::SeqCst);
            Err(why)
        };
        let found = match found {
            Ok(found) => found,
            Err(why) => return refused(why),
        };
        let versions = found.get("supportedVersions").and_then(Value::as_array).cloned().unwrap_or_default();
        if !versions.iter().any(|version| version.as_str() == Some(MODERN)) {
            return refused(format!("`server/discover` offers {versions:?}, not {MODERN}"));
        }
        let mut result = json!({
            "protocolVersion": MODERN,
            "capabilities": found.get("capabilities").cloned().unwrap_or_else(|| json!({})),
            "serverInfo": found.get("serverInfo").cloned().unwrap_or_else(|| json!({})),
        });
        if let Some(instructions) = found.get("instructions") {
            result["instructions"] = instructions.clone();
        }
        Ok(result)
    }
}

/// A request for a 2026-07-28 server, with the revision, the gateway's capabilities and
/// name in its `_meta` (those it carries already stay); anything else as it is.
pub(super) fn stamp_request(message: Vec<u8>) -> Vec<u8> {
    let Ok(mut value) = serde_json::from_slice::<Value>(&message) else { return message };
    if value.get("method").is_none() || value.get("id").is_none() {
        return message;
    }
    if !value.get("params").is_some_and(Value::is_object) {
        value["params"] = json!({});
    }
    if !value["params"].get("_meta").is_some_and(Value::is_object) {
        value["params"]["_meta"] = json!({});
    }
    let meta = value["params"]["_meta"].as_object_mut().expect("an object");
    meta.entry(PROTOCOL_VERSION_META).or_insert_with(|| json!(MODERN));
    // What the gateway itself can take: requests for input come back to it in results.
    meta.entry(CLIENT_CAPABILITIES_META).or_insert_with(|| json!({"elicitation": {}, "sampling": {}, "roots": {}}));
    meta.entry(CLIENT_INFO_META)
        .or_insert_with(|| json!({"name": "clawai-gateway", "version": env!("CARGO_PKG_VERSION")}));
    serde_json::to_vec(&value).expect("a JSON value encodes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_stamped_and_notifications_are_not() {
        let stamped = stamp_request(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#.to_vec());
        let stamped: Value = serde_json::from_slice(&stamped).unwrap();
        assert_eq!(stamped["params"]["_meta"][PROTOCOL_VERSION_META], MODERN);
        assert!(stamped["params"]["_meta"][CLIENT_CAPABILITIES_META].is_object());
        let call =
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","_meta":{"progressToken":5}}}"#;
        let stamped: Value = serde_json::from_slice(&stamp_request(call.to_vec())).unwrap();
        assert_eq!(stamped["params"]["_meta"]["progressToken"], 5);
        assert_eq!(stamped["params"]["name"], "x");
        let notification = br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}"#.to_vec();
        assert_eq!(stamp_request(notification.clone()), notification);
    }
}
