//! A server's `"sandbox"`: `"auto"`, `"require"`, `"off"`, or an object
//! `{"profile": "auto", "require": false, "read": [..], "write": [..], "network": ..}`
//! whose grants add to the `auto` profile (`network`: `"none"`, `"loopback"`,
//! `"HOST:PORT"`, `"any"`, or an array of them).

use std::path::PathBuf;

use clawai_proxy::sandbox::{Mode, NetworkGrant, Request};
use jsonc_parser::ast::{ObjectProp, Value};
use jsonc_parser::common::Ranged;

use super::error::ConfigError;
use super::json::{Doc, prop_name};

/// What to write instead, said with every refused value.
const FORMS: &str = "use \"auto\", \"require\", \"off\", or an object such as {\"profile\": \"auto\", \
                     \"read\": [\"/data\"], \"write\": [\"/work\"], \"network\": \"none\"}";

/// Reads the `sandbox` member of server `name`.
pub(super) fn read(doc: &Doc, prop: &ObjectProp, name: &str) -> Result<Request, ConfigError> {
    let what = format!("`sandbox` of server `{name}`");
    match &prop.value {
        Value::StringLit(text) => {
            let mode = Mode::parse(&text.value)
                .ok_or_else(|| doc.invalid(prop.value.start(), format!("{what} is `{}`; {FORMS}", text.value)))?;
            Ok(Request { mode, ..Request::default() })
        }
        Value::Object(object) => {
            let mut request = Request { mode: Mode::Auto, ..Request::default() };
            for member in &object.properties {
                let key = prop_name(member);
                let at = member.range.start;
                match key {
                    "profile" => {
                        let profile = doc.string(&member.value, &format!("`profile` in {what}"))?;
                        if profile != "auto" {
                            return Err(doc.invalid(
                                member.value.start(),
                                format!("`profile` in {what} is `{profile}`; the one profile is \"auto\" (add to it with read, write and network)"),
                            ));
                        }
                    }
                    "require" => {
                        if doc.boolean(&member.value, &format!("`require` in {what}"))? {
                            request.mode = Mode::Require;
                        }
                    }
                    "read" | "write" => {
                        let paths = doc.strings(&member.value, &format!("`{key}` in {what}"))?;
                        let paths = paths.into_iter().map(|(path, _)| PathBuf::from(path));
                        if key == "read" { request.read.extend(paths) } else { request.write.extend(paths) }
                    }
                    "network" => request.network = network(doc, &member.value, &what)?,
                    other => {
                        return Err(doc.invalid(
                            at,
                            format!("unknown key `{other}` in {what}; the keys are profile, require, read, write and network"),
                        ));
                    }
                }
            }
            Ok(request)
        }
        other => Err(doc.invalid(other.start(), format!("{what} must be a string or an object; {FORMS}"))),
    }
}

fn network(doc: &Doc, value: &Value, what: &str) -> Result<Vec<NetworkGrant>, ConfigError> {
    let texts = match value {
        Value::StringLit(text) => vec![(text.value.to_string(), text.range.start)],
        other => doc.strings(other, &format!("`network` in {what}"))?,
    };
    for (text, at) in &texts {
        NetworkGrant::parse(text).map_err(|e| doc.invalid(*at, format!("`network` in {what}: {e}")))?;
    }
    let names: Vec<&str> = texts.iter().map(|(text, _)| text.as_str()).collect();
    NetworkGrant::parse_all(&names).map_err(|e| doc.invalid(value.start(), format!("`network` in {what}: {e}")))
}
