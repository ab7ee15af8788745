//! mcp-gov's `rules.json` (seed 003): per service, per operation, allow or deny.
//!
//! Two layouts exist: `{"github": {"delete": "deny", ...}}` and
//! `{"rules": [{"service": "github", "operations": ["delete"], "permission": "deny"}]}`.
//! mcp-gov forwards everything it does not deny, so the converted policy's default is
//! `allow`. The service is the server's name (`--server`) or the tool name's prefix.

use serde_json::Value;

use super::{ConvertError, pass_through_rule, quote};
use crate::operation::Operation;

/// Converts mcp-gov JSON to clawai TOML.
pub fn convert(text: &str) -> Result<String, ConvertError> {
    let json: Value = serde_json::from_str(text).map_err(|e| ConvertError {
        line: Some(e.line()),
        column: Some(e.column()),
        message: format!("not valid JSON: {e}"),
    })?;
    let entries = entries(&json)?;
    let mut out = String::from("# Converted from an mcp-gov rules.json by `clawai policy import`.\n");
    out.push_str("# mcp-gov forwards every call it does not deny, hence the default below.\n\n");
    out.push_str("[defaults]\naction = \"allow\"\n\n");
    out.push_str(&pass_through_rule("mcp-gov"));
    for permission in ["deny", "allow"] {
        for (service, operation, perm) in &entries {
            if perm != permission {
                continue;
            }
            out.push_str(&format!(
                "[[rule]]\nid = {}\naction = {}\nservice = {}\noperation = {}\ndescription = {}\n\n",
                quote(&format!("{service}-{operation}")),
                quote(perm),
                quote(service),
                quote(operation.as_str()),
                quote(&format!(
                    "mcp-gov: {operation} on {service} is {perm}{}",
                    if perm == "deny" { "ied" } else { "ed" }
                ))
            ));
        }
    }
    Ok(out)
}

type Entry = (String, Operation, String);

fn entries(json: &Value) -> Result<Vec<Entry>, ConvertError> {
    let mut out = Vec::new();
    let perm = |v: &Value, at: &str| -> Result<String, ConvertError> {
        match v.as_str() {
            Some(p @ ("allow" | "deny")) => Ok(p.to_owned()),
            _ => Err(ConvertError::new(format!("{at}: permission must be \"allow\" or \"deny\", found {v}"))),
        }
    };
    let op = |s: &str, at: &str| -> Result<Operation, ConvertError> {
        s.parse::<Operation>().map_err(|e| ConvertError::new(format!("{at}: {e}")))
    };
    match json {
        Value::Object(map) if map.get("rules").is_some_and(Value::is_array) => {
            for (n, rule) in map["rules"].as_array().into_iter().flatten().enumerate() {
                let at = format!("rules[{n}]");
                let service = rule
                    .get("service")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ConvertError::new(format!("{at}: missing \"service\"")))?;
                let permission = perm(rule.get("permission").unwrap_or(&Value::Null), &at)?;
                let ops = rule
                    .get("operations")
                    .and_then(Value::as_array)
                    .ok_or_else(|| ConvertError::new(format!("{at}: missing \"operations\" list")))?;
                for o in ops {
                    let name =
                        o.as_str().ok_or_else(|| ConvertError::new(format!("{at}: operations must be strings")))?;
                    out.push((service.to_owned(), op(name, &at)?, permission.clone()));
                }
            }
        }
        Value::Object(map) => {
            for (service, ops) in map {
                let ops = ops.as_object().ok_or_else(|| {
                    ConvertError::new(format!("\"{service}\" must map operations to \"allow\" or \"deny\""))
                })?;
                for (name, p) in ops {
                    let at = format!("{service}.{name}");
                    out.push((service.clone(), op(name, &at)?, perm(p, &at)?));
                }
            }
        }
        _ => return Err(ConvertError::new("an mcp-gov rules.json is a JSON object")),
    }
    Ok(out)
}
