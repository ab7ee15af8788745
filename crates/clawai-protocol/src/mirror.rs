//! The HTTP headers of MCP 2026-07-28 that mirror the body: `MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`, and the `Mcp-Param-{Name}` headers of tool arguments that a
//! tool's `inputSchema` marks with `x-mcp-header`.
//!
//! Routers may act on these headers without reading the body, so a request whose headers
//! say something other than its body is refused (400, `HeaderMismatch` -32020): a
//! policy that reads the body and a router that reads the headers must see the same
//! call. Written once for clawai's HTTP front, its remote client and the SDK's server.

use crate::methods;
use base64::Engine;
use base64::prelude::BASE64_STANDARD;
use serde_json::Value;

/// The protocol version header (every revision since 2025-06-18).
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";
/// The method header (2026-07-28).
pub const METHOD_HEADER: &str = "mcp-method";
/// The name header for `tools/call`, `prompts/get` (the name) and `resources/read` (the
/// URI) (2026-07-28).
pub const NAME_HEADER: &str = "mcp-name";
/// The session header of the handshake revisions.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// Revisions without sessions, whose requests carry their version in `_meta`.
pub const STATELESS_VERSIONS: [&str; 1] = ["2026-07-28"];
/// The JSON-RPC code for headers that disagree with the body.
pub use crate::codes::HEADER_MISMATCH;
/// The prefix of the headers that mirror tool arguments (2026-07-28).
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// A tool argument that 2026-07-28 requests mirror into an `Mcp-Param-{Name}` header: a
/// property of the tool's `inputSchema`, reached through `properties` alone, carrying
/// `"x-mcp-header": "Name"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamHeader {
    /// `{Name}`.
    pub name: String,
    /// The property names from the arguments down to the value.
    pub path: Vec<String>,
}

/// Deepest `properties` chain looked at for declarations.
const MAX_SCHEMA_DEPTH: usize = 16;

/// The mirrored arguments a tool's `inputSchema` declares. Declarations the
/// specification forbids are left out (a name that is not an HTTP token, names equal
/// but for case, a property that is not a string, integer, number or boolean): a request
/// never carries a header that cannot be read back from its body.
pub fn declared_param_headers(input_schema: &Value) -> Vec<ParamHeader> {
    fn walk(schema: &Value, path: &mut Vec<String>, out: &mut Vec<ParamHeader>) {
        let Some(properties) = schema.get("properties").and_then(Value::as_object) else { return };
        if path.len() >= MAX_SCHEMA_DEPTH {
            return;
        }
        for (key, property) in properties {
            path.push(key.clone());
            let primitive = matches!(
                property.get("type").and_then(Value::as_str),
                Some("string" | "integer" | "number" | "boolean")
            );
            if let Some(name) = property.get("x-mcp-header").and_then(Value::as_str)
                && primitive
                && is_token(name)
            {
                out.push(ParamHeader { name: name.to_owned(), path: path.clone() });
            }
            walk(property, path, out);
            path.pop();
        }
    }
    let mut out = Vec::new();
    walk(input_schema, &mut Vec::new(), &mut out);
    let twins: Vec<String> = out
        .iter()
        .filter(|a| out.iter().filter(|b| b.name.eq_ignore_ascii_case(&a.name)).count() > 1)
        .map(|a| a.name.to_ascii_lowercase())
        .collect();
    out.retain(|h| !twins.contains(&h.name.to_ascii_lowercase()));
    out
}

/// RFC 9110 `token`: what a header name may be.
fn is_token(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// The `Mcp-Param-*` headers (lower-case names, encoded values) of a `tools/call` with
/// these arguments. An argument that is absent, null, or not a primitive gets none.
pub fn param_header_values(declared: &[ParamHeader], arguments: Option<&Value>) -> Vec<(String, String)> {
    declared
        .iter()
        .filter_map(|header| {
            let value = header.path.iter().try_fold(arguments?, |value, key| value.get(key))?;
            let text = match value {
                Value::String(s) => s.clone(),
                Value::Bool(b) => b.to_string(),
                Value::Number(n) => n.to_string(),
                _ => return None,
            };
            Some((format!("{PARAM_HEADER_PREFIX}{}", header.name.to_ascii_lowercase()), encode_header_value(&text)))
        })
        .collect()
}

/// The mirrored header values of one request, as received.
#[derive(Debug, Default, Clone, Copy)]
pub struct Mirrored<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`, possibly `=?base64?…?=`-encoded.
    pub name: Option<&'a str>,
}

/// The protocol version a 2026-07-28 message names in `params._meta`.
pub fn body_protocol_version(message: &Value) -> Option<&str> {
    message.pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").and_then(Value::as_str)
}

/// The value `Mcp-Name` must carry for this message, if its method has one.
pub fn body_name(message: &Value) -> Option<&str> {
    let pointer = match message.get("method").and_then(Value::as_str)? {
        methods::TOOLS_CALL | methods::PROMPTS_GET => "/params/name",
        methods::RESOURCES_READ => "/params/uri",
        _ => return None,
    };
    message.pointer(pointer).and_then(Value::as_str)
}

fn is_stateless_version(version: Option<&str>) -> bool {
    version.is_some_and(|version| STATELESS_VERSIONS.contains(&version))
}

impl Mirrored<'_> {
    /// True when the header or the body says the request is a stateless (2026-07-28)
    /// one: it needs no session, and its headers must agree with its body.
    pub fn is_stateless(&self, message: &Value) -> bool {
        is_stateless_version(self.protocol_version) || is_stateless_version(body_protocol_version(message))
    }

    /// Checks that the headers say what the body says; the error explains the first
    /// difference.
    pub fn check(&self, message: &Value) -> Result<(), String> {
        let body_version = body_protocol_version(message);
        if self.protocol_version != body_version {
            return Err(format!(
                "MCP-Protocol-Version header {:?} does not match the body's _meta protocol version {body_version:?}",
                self.protocol_version
            ));
        }
        self.check_method_and_name(message, true)
    }

    /// True when the request carries `Mcp-Method` or `Mcp-Name`.
    pub fn names_anything(&self) -> bool {
        self.method.is_some() || self.name.is_some()
    }

    /// For a request of an earlier revision that carries `Mcp-Method` or `Mcp-Name`
    /// anyway: those it carries must say what the body says, since a router in front may
    /// act on them.
    pub fn check_present(&self, message: &Value) -> Result<(), String> {
        self.check_method_and_name(message, false)
    }

    /// `required`: a missing header is a difference too (2026-07-28 requires them).
    fn check_method_and_name(&self, message: &Value, required: bool) -> Result<(), String> {
        let method = message.get("method").and_then(Value::as_str);
        if (required || self.method.is_some()) && method.is_some() && self.method != method {
            return Err(format!("Mcp-Method header {:?} does not match the body's method {method:?}", self.method));
        }
        let named = matches!(method, Some(methods::TOOLS_CALL | methods::PROMPTS_GET | methods::RESOURCES_READ));
        let name = body_name(message);
        let header_name = self.name.map(decode_header_value);
        if (required || self.name.is_some()) && (named || self.name.is_some()) && header_name.as_deref() != name {
            return Err(format!("Mcp-Name header {header_name:?} does not match the body's {name:?}"));
        }
        Ok(())
    }
}

/// A header value as sent: non-ASCII (or control characters) as `=?base64?…?=`.
pub fn encode_header_value(value: &str) -> String {
    // Spaces survive only inside a value: HTTP trims them at either end.
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b)) && !value.starts_with(' ') && !value.ends_with(' ');
    if plain && !value.starts_with("=?base64?") {
        value.to_string()
    } else {
        format!("=?base64?{}?=", BASE64_STANDARD.encode(value))
    }
}

/// A header value as meant: `=?base64?…?=` decoded.
pub fn decode_header_value(value: &str) -> String {
    value
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
        .and_then(|encoded| BASE64_STANDARD.decode(encoded).ok())
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .unwrap_or_else(|| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": name, "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}})
    }

    #[test]
    fn headers_must_say_what_the_body_says() {
        let agreeing =
            Mirrored { protocol_version: Some("2026-07-28"), method: Some("tools/call"), name: Some("wipe") };
        assert!(agreeing.is_stateless(&call("wipe")));
        assert_eq!(agreeing.check(&call("wipe")), Ok(()));
        assert!(agreeing.check(&call("read")).is_err(), "a router would see `wipe`, the server `read`");
        let wrong_method = Mirrored { method: Some("tools/list"), ..agreeing };
        assert!(wrong_method.check(&call("wipe")).is_err());
        let no_name = Mirrored { name: None, ..agreeing };
        assert!(no_name.check(&call("wipe")).is_err());
        let mut nameless = call("wipe");
        nameless["params"].as_object_mut().unwrap().remove("name");
        assert!(agreeing.check(&nameless).is_err(), "a header name for a body without one");
        let old_version = Mirrored { protocol_version: Some("2025-11-25"), ..agreeing };
        assert!(old_version.check(&call("wipe")).is_err());
        let encoded = Mirrored { name: Some("=?base64?ZMOpasOgLXZ1?="), ..agreeing };
        assert_eq!(encoded.check(&call("déjà-vu")), Ok(()));
        // Earlier revisions: only the headers present are compared.
        let present = Mirrored { protocol_version: Some("2025-11-25"), method: Some("tools/call"), name: None };
        assert_eq!(present.check_present(&call("wipe")), Ok(()));
        assert!(Mirrored { method: Some("tools/list"), ..present }.check_present(&call("wipe")).is_err());
        assert!(Mirrored { name: Some("read"), ..present }.check_present(&call("wipe")).is_err());
        let read = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                          "params": {"uri": "file:///x", "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
        let uri =
            Mirrored { protocol_version: Some("2026-07-28"), method: Some("resources/read"), name: Some("file:///x") };
        assert_eq!(uri.check(&read), Ok(()));
    }

    #[test]
    fn tool_arguments_marked_x_mcp_header_are_mirrored() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
            "note": {"type": "string", "x-mcp-header": "Note"},
            "query": {"type": "string"},
            "target": {"type": "object", "properties": {"zone": {"type": "string", "x-mcp-header": "Zone"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
            "bad name": {"type": "string", "x-mcp-header": "Bad Name"},
            "blob": {"type": "object", "x-mcp-header": "Blob"},
            "twin_a": {"type": "string", "x-mcp-header": "Twin"},
            "twin_b": {"type": "string", "x-mcp-header": "TWIN"},
        }});
        let declared = declared_param_headers(&schema);
        let mut names: Vec<&str> = declared.iter().map(|h| h.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(
            names,
            ["Count", "Dry-Run", "Note", "Region", "Zone"],
            "items, bad names, objects and twins are not"
        );
        let arguments = json!({"region": "eu-west-1", "count": 3, "dry": false, "note": "déjà", "query": "x",
                               "target": {"zone": "b"}});
        let mut values = param_header_values(&declared, Some(&arguments));
        values.sort();
        assert_eq!(
            values,
            [
                ("mcp-param-count".to_owned(), "3".to_owned()),
                ("mcp-param-dry-run".to_owned(), "false".to_owned()),
                ("mcp-param-note".to_owned(), encode_header_value("déjà")),
                ("mcp-param-region".to_owned(), "eu-west-1".to_owned()),
                ("mcp-param-zone".to_owned(), "b".to_owned()),
            ]
        );
        assert!(values.iter().any(|(_, v)| v.starts_with("=?base64?")), "non-ASCII travels as base64");
        let sparse = json!({"region": null, "count": 1});
        assert_eq!(param_header_values(&declared, Some(&sparse)), [("mcp-param-count".to_owned(), "1".to_owned())]);
        assert!(param_header_values(&declared, None).is_empty());
    }

    #[test]
    fn header_values_round_trip() {
        for value in ["plain_name", "déjà-vu", "tab\there", "=?base64?trick?=", " padded "] {
            assert_eq!(decode_header_value(&encode_header_value(value)), value);
        }
        assert_eq!(encode_header_value("get_weather"), "get_weather");
        assert_eq!(encode_header_value("two words"), "two words");
        assert!(encode_header_value(" lead").starts_with("=?base64?"));
    }
}
