//! Servers that speak only the stateless revision (2026-07-28): no `initialize`, so the
//! gateway asks `server/discover` when `initialize` fails, and from then on stamps every
//! request it sends the server with the revision, its capabilities and its name in
//! `_meta`, as that revision requires (the server is told nothing else: no
//! `notifications/initialized`). Their `input_required` results pass to the calling
//! client as any result does, and its retry back.
//! What such a server says unasked comes on a subscription of the gateway's ([`super::follow`]).

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use super::{INITIALIZE_TIMEOUT, Upstream};
use crate::rewrite::{CLIENT_CAPABILITIES_META, PROTOCOL_VERSION_META, TASKS_EXTENSION};

/// The stateless revision.
const MODERN: &str = "2026-07-28";
/// `_meta` key of the client's name.
const CLIENT_INFO_META: &str = "io.modelcontextprotocol/clientInfo";

impl Upstream {
    /// Whether the server speaks 2026-07-28 only (its requests are stamped).
    pub(crate) fn speaks_modern(&self) -> bool {
        self.modern.load(Ordering::SeqCst)
    }

    /// A client's message on its way to the server, in the revision the server speaks:
    /// the client's 2026-07-28 keys of `_meta` are taken out (a 2026-07-28 server's
    /// requests get the gateway's, [`stamp_request`]), but a request that declared the
    /// tasks extension keeps it declared to a 2026-07-28 server, which may then answer
    /// with a task: a task that goes, as it is, to the client that can take it.
    pub(crate) fn outgoing(&self, bytes: Vec<u8>) -> Vec<u8> {
        if !self.speaks_modern() || memchr::memmem::find(&bytes, TASKS_EXTENSION.as_bytes()).is_none() {
            return crate::rewrite::without_protocol_meta(bytes);
        }
        let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else { return bytes };
        let declared = message
            .pointer("/params/_meta")
            .and_then(|meta| meta.get(CLIENT_CAPABILITIES_META))
            .and_then(|capabilities| capabilities.get("extensions"))
            .is_some_and(|extensions| extensions.get(TASKS_EXTENSION).is_some());
        crate::rewrite::strip_protocol_meta(&mut message);
        if declared {
            let mut capabilities = gateway_capabilities();
            capabilities["extensions"][TASKS_EXTENSION] = json!({});
            message["params"]["_meta"][CLIENT_CAPABILITIES_META] = capabilities;
        }
        crate::rewrite::encode(&message)
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

/// What the gateway itself can take: requests for input come back to it in results.
fn gateway_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {}})
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
    meta.entry(CLIENT_CAPABILITIES_META).or_insert_with(gateway_capabilities);
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
