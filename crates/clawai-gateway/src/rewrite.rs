//! Small edits of JSON-RPC messages on their way through the gateway: ids, progress
//! tokens, names and URIs. The gateway is a server of its own to its clients, so what
//! it forwards is re-encoded; what it decided on is what it forwards.

use serde_json::{Map, Value, json};

use crate::names;

/// The meta keys a 2026-07-28 request carries for the server it is sent to.
pub(crate) const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";
/// The client's capabilities in a 2026-07-28 request.
pub(crate) const CLIENT_CAPABILITIES_META: &str = "io.modelcontextprotocol/clientCapabilities";
/// The tasks extension's name, as capabilities declare it (a server's requests are
/// stamped with it, a client's tasks are kept by it).
pub(crate) const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// The tasks extension's notification of a task's state.
pub(crate) const TASKS_NOTIFIED: &str = "notifications/tasks";
/// The server's information in a 2026-07-28 result.
pub(crate) const SERVER_INFO_META: &str = "io.modelcontextprotocol/serverInfo";

/// JSON-RPC's code for a method the receiver does not have.
pub(crate) use clawai_protocol::codes::METHOD_NOT_FOUND;

/// One message, newline-terminated.
pub(crate) fn encode(message: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(message).expect("a JSON value encodes");
    bytes.push(b'\n');
    bytes
}

/// A JSON-RPC error response.
pub(crate) fn error(id: &Value, code: i64, message: &str) -> Vec<u8> {
    encode(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// A JSON-RPC error response with `data`.
pub(crate) fn error_with_data(id: &Value, code: i64, message: &str, data: Value) -> Vec<u8> {
    encode(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message, "data": data}}))
}

/// A JSON-RPC result response.
pub(crate) fn result(id: &Value, result: Value) -> Vec<u8> {
    encode(&json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// A notification.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Vec<u8> {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    encode(&message)
}

/// The id a message carries, as JSON text (`7`, `"a"`), the key requests are matched by.
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

/// `params._meta.progressToken`, if any.
pub(crate) fn progress_token(message: &Value) -> Option<&Value> {
    message.pointer("/params/_meta/progressToken")
}

/// Replaces `params._meta.progressToken`.
pub(crate) fn set_progress_token(message: &mut Value, token: Value) {
    if let Some(slot) = message.pointer_mut("/params/_meta/progressToken") {
        *slot = token;
    }
}

/// Takes the 2026-07-28 keys out of a request's `_meta`: the gateway speaks to each
/// server in the revision it agreed with that server.
pub(crate) fn strip_protocol_meta(message: &mut Value) {
    if let Some(Value::Object(meta)) = message.pointer_mut("/params/_meta") {
        meta.retain(|key, _| !key.starts_with("io.modelcontextprotocol/"));
        if meta.is_empty()
            && let Some(Value::Object(params)) = message.get_mut("params")
        {
            params.remove("_meta");
        }
    }
}

/// The message without the 2026-07-28 keys of its `_meta` (see [`strip_protocol_meta`]);
/// a message without them is returned as it is.
pub(crate) fn without_protocol_meta(bytes: Vec<u8>) -> Vec<u8> {
    if memchr::memmem::find(&bytes, b"io.modelcontextprotocol/").is_none() {
        return bytes;
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(mut message) => {
            strip_protocol_meta(&mut message);
            encode(&message)
        }
        Err(_) => bytes,
    }
}

/// The resource URIs a result names (resource links, embedded resources, read contents),
/// rewritten to the gateway's names for server `server`.
pub(crate) fn list_resource_uris(result: &mut Value, server: &str) {
    fn visit(value: &mut Value, server: &str, depth: usize) {
        if depth > 8 {
            return;
        }
        match value {
            Value::Object(object) => {
                let is_link = object.get("type").and_then(Value::as_str) == Some("resource_link");
                let is_contents =
                    object.contains_key("mimeType") || object.contains_key("text") || object.contains_key("blob");
                // Always under this server's name, even a URI that reads as the gateway's:
                // a server never hands out a link to another server's resources.
                if (is_link || is_contents)
                    && let Some(Value::String(uri)) = object.get_mut("uri")
                {
                    *uri = names::resource_uri(server, uri);
                }
                for (key, child) in object.iter_mut() {
                    if matches!(key.as_str(), "content" | "contents" | "resource" | "messages" | "structuredContent")
                        || matches!(child, Value::Array(_))
                    {
                        visit(child, server, depth + 1);
                    }
                }
            }
            Value::Array(items) => {
                for item in items {
                    visit(item, server, depth + 1);
                }
            }
            _ => {}
        }
    }
    visit(result, server, 0);
}

/// Marks a result for a 2026-07-28 client: `resultType` and the gateway's information.
pub(crate) fn stamp_modern(result: &mut Value, server_info: &Value) {
    if let Value::Object(result) = result {
        result.entry("resultType").or_insert_with(|| json!("complete"));
        let meta = result.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(SERVER_INFO_META.into(), server_info.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_links_and_embedded_resources_get_the_gateway_names() {
        let mut result = json!({"content": [
            {"type": "text", "text": "see"},
            {"type": "resource_link", "uri": "mem://shared", "name": "shared"},
            {"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}
        ]});
        list_resource_uris(&mut result, "m");
        assert_eq!(result["content"][1]["uri"], "clawai://m/mem://shared");
        assert_eq!(result["content"][2]["resource"]["uri"], "clawai://m/file:///a");
        assert_eq!(result["content"][0]["text"], "see");
        // A server's link that reads as another server's stays this server's.
        let mut forged = json!({"content": [{"type": "resource_link", "uri": "clawai://b/secret", "name": "x"}]});
        list_resource_uris(&mut forged, "a");
        assert_eq!(forged["content"][0]["uri"], "clawai://a/clawai://b/secret");
    }

    #[test]
    fn protocol_meta_is_taken_out_and_the_rest_kept() {
        let mut request = json!({"params": {"_meta": {PROTOCOL_VERSION_META: "2026-07-28", "progressToken": 1}}});
        strip_protocol_meta(&mut request);
        assert_eq!(request, json!({"params": {"_meta": {"progressToken": 1}}}));
        let mut request = json!({"params": {"_meta": {PROTOCOL_VERSION_META: "2026-07-28"}, "name": "x"}});
        strip_protocol_meta(&mut request);
        assert_eq!(request, json!({"params": {"name": "x"}}));
    }
}
