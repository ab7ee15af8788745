//! mcp-gov's `rules.json`: per service, per operation, allow or deny.
//!
//! The three layouts mcp-gov reads, tried in its order:
//! - `{"rules": [{"service": "github", "operations": ["delete"], "permission": "deny"}]}`;
//! - `{"services": {"github": {"operations": {"delete": "deny"}}}}` (its proxy's and
//!   tests' layout);
//! - `{"github": {"delete": "deny"}}`.
//!
//! Keys starting with `_` (`_comment`, `_location`) and `defaultPolicy` are not services.
//! `"defaultPolicy": "deny"` denies what no rule names; anything else allows it. A later
//! entry for the same service and operation replaces an earlier one. mcp-gov skips a
//! malformed entry and keeps going; so does the import, and it names each one it skips.
//! Rules read tool names as mcp-gov does (`detector = "mcp-gov"`): its operation
//! keywords, and the server's name as the service.

use clawai_protocol::methods;
use serde_json::{Map, Value};

use super::{ConvertError, Converted, RuleOut, head, pass_through_rule, quote};
use crate::operation::Operation;
use crate::operation::mcpgov::MCPGOV_OPERATIONS;

/// One decided pair: service, operation, permission.
struct Entry {
    service: String,
    operation: Operation,
    permission: &'static str,
}

/// Reads entries, keeping the last one for each service and operation, and notes what
/// it skips.
#[derive(Default)]
struct Reader {
    entries: Vec<Entry>,
    notes: Vec<String>,
}

impl Reader {
    fn skip(&mut self, at: &str, why: impl std::fmt::Display) {
        self.notes.push(format!("{at} skipped: {why} (mcp-gov skips it too)"));
    }

    fn add(&mut self, at: &str, service: &str, operation: &Value, permission: &Value) {
        let Some(name) = operation.as_str() else {
            return self.skip(at, format_args!("the operation {operation} is not a string"));
        };
        let Some(op) = MCPGOV_OPERATIONS.into_iter().find(|op| op.as_str() == name) else {
            return self.skip(
                at,
                format_args!(
                    "mcp-gov only ever detects read, write, delete, execute and admin, so `{name}` never matches"
                ),
            );
        };
        let permission = match permission.as_str() {
            Some("allow") => "allow",
            Some("deny") => "deny",
            _ => return self.skip(at, format_args!("the permission {permission} is neither \"allow\" nor \"deny\"")),
        };
        self.entries.retain(|e| !(e.service == service && e.operation == op));
        self.entries.push(Entry { service: service.to_owned(), operation: op, permission });
    }

    fn rules_array(&mut self, rules: &[Value]) {
        for (n, rule) in rules.iter().enumerate() {
            let at = format!("rules[{n}]");
            let Some(rule) = rule.as_object() else {
                self.skip(&at, "it is not an object");
                continue;
            };
            let Some(service) = rule.get("service").and_then(Value::as_str) else {
                self.skip(&at, "it has no \"service\" string");
                continue;
            };
            let Some(ops) = rule.get("operations").and_then(Value::as_array) else {
                self.skip(&at, "it has no \"operations\" list");
                continue;
            };
            let permission = rule.get("permission").unwrap_or(&Value::Null);
            for (k, op) in ops.iter().enumerate() {
                self.add(&format!("{at}.operations[{k}]"), service, op, permission);
            }
        }
    }

    /// A service's `{OP: permission}` map; `_` keys are comments.
    fn operations(&mut self, at: &str, service: &str, ops: &Value) {
        let Some(ops) = ops.as_object() else {
            return self.skip(at, "it must map operations to \"allow\" or \"deny\"");
        };
        for (name, permission) in ops.iter().filter(|(k, _)| !k.starts_with('_')) {
            self.add(&format!("{at}.{name}"), service, &Value::String(name.clone()), permission);
        }
    }
}

/// True when `services` is mcp-gov's `{SVC: {"operations": {..}}}` layout.
fn looks_legacy(services: Option<&Value>) -> bool {
    services
        .and_then(Value::as_object)
        .is_some_and(|m| m.values().any(|v| v.get("operations").is_some_and(Value::is_object)))
}

fn is_reserved(key: &str) -> bool {
    key.starts_with('_') || key == "defaultPolicy"
}

/// Converts mcp-gov JSON to clawai TOML.
pub fn convert(text: &str) -> Result<Converted, ConvertError> {
    let json: Value = serde_json::from_str(text).map_err(|e| ConvertError {
        line: Some(e.line()),
        column: Some(e.column()),
        message: format!("not valid JSON: {e}"),
    })?;
    let Value::Object(map) = &json else {
        return Err(ConvertError::new("an mcp-gov rules.json is a JSON object"));
    };
    let mut reader = Reader::default();
    let default = match map.get("defaultPolicy") {
        None => "allow",
        Some(Value::String(s)) if s == "deny" => "deny",
        Some(Value::String(s)) if s == "allow" => "allow",
        Some(other) => {
            reader.notes.push(format!("defaultPolicy {other} is not \"deny\", so mcp-gov allows what no rule names"));
            "allow"
        }
    };
    read_layout(map, &mut reader);
    let Reader { entries, notes } = reader;

    let mut out = head(
        "an mcp-gov rules.json",
        &[
            "Rules read tool names as mcp-gov does (detector = \"mcp-gov\"): its operation keywords",
            "anywhere in the name, and the server's name (else the name's first part) as the service.",
        ],
        &notes,
        default,
    );
    pass_through_rule(
        "mcp-gov",
        &[methods::RESOURCES_READ, methods::PROMPTS_GET, methods::SAMPLING_CREATE_MESSAGE, methods::ELICITATION_CREATE],
        methods::TOOLS_CALL,
    )
    .write(&mut out);
    for e in &entries {
        let mut rule = RuleOut::new(format!("{}-{}", e.service, e.operation), e.permission);
        rule.set("service", quote(&e.service))
            .set("operation", quote(e.operation.as_str()))
            .set("detector", quote("mcp-gov"));
        let verb = if e.permission == "deny" { "denied" } else { "allowed" };
        rule.description = Some(format!("mcp-gov: {} on {} is {verb}", e.operation, e.service));
        rule.write(&mut out);
    }
    Ok(Converted { toml: out, notes })
}

fn read_layout(map: &Map<String, Value>, reader: &mut Reader) {
    if let Some(rules) = map.get("rules").and_then(Value::as_array) {
        return reader.rules_array(rules);
    }
    if looks_legacy(map.get("services")) {
        for (service, config) in map["services"].as_object().into_iter().flatten() {
            let at = format!("services.{service}");
            match config.get("operations") {
                Some(ops) => reader.operations(&format!("{at}.operations"), service, ops),
                None => reader.skip(&at, "it has no \"operations\" map"),
            }
        }
        return;
    }
    for (service, ops) in map.iter().filter(|(k, _)| !is_reserved(k)) {
        reader.operations(service, service, ops);
    }
}
