//! The listing stage: with `[guards] hide_denied_tools = true`, the tools the policy
//! denies whatever their arguments are left out of `tools/list` (their calls are still
//! decided, and denied, as before). Off by default in the proxy, so that a client sees
//! the server's whole list; the gateway always leaves them out.

use clawai_policy::{Call, ToolAnnotations};
use clawai_protocol::methods;
use serde_json::Value;
use serde_json::value::RawValue;

use super::Guard;

impl Guard {
    /// The `tools/list` response to pass on without the tools the policy always denies,
    /// when there are any and the policy asks for it: from the message an earlier stage
    /// made (`replaced`), else from the server's `result`.
    pub(super) fn hide_denied(&self, id: &RawValue, replaced: Option<&[u8]>, result: &[u8]) -> Option<Vec<u8>> {
        let policy = self.policy.current();
        if !policy.guards().hide_denied_tools {
            return None;
        }
        let mut result: Value = match replaced {
            Some(message) => serde_json::from_slice::<Value>(message).ok()?.get_mut("result")?.take(),
            None => serde_json::from_slice(result).ok()?,
        };
        let tools = result.get_mut("tools")?.as_array_mut()?;
        let before = tools.len();
        tools.retain(|tool| {
            let Some(name) = tool.get("name").and_then(Value::as_str) else { return true };
            let annotations = tool.get("annotations").map(ToolAnnotations::from_json);
            let call = Call {
                method: methods::TOOLS_CALL,
                name: Some(name),
                arguments: None,
                server: self.server.as_deref(),
                annotations: Some(annotations.unwrap_or_default()),
                follow_links: None,
            };
            policy.denies_whatever_the_arguments(&call).is_none()
        });
        if tools.len() == before {
            return None;
        }
        let mut message = format!("{{\"jsonrpc\":\"2.0\",\"id\":{},\"result\":", id.get()).into_bytes();
        serde_json::to_writer(&mut message, &result).expect("a JSON value encodes");
        message.extend_from_slice(b"}\n");
        Some(message)
    }
}
