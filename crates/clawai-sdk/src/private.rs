//! Support for the code `#[claw_tool]` generates. Not a stable API.

use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::{ClawError, Json, ToolResult};

pub use serde_json::Value as JsonValue;
pub use std::sync::Arc;

/// A call's arguments, taken out one parameter at a time.
pub struct Arguments(Map<String, Value>);

impl Arguments {
    /// The call's `arguments` object.
    pub fn new(args: Value) -> Result<Self, ClawError> {
        match args {
            Value::Object(map) => Ok(Arguments(map)),
            Value::Null => Ok(Arguments(Map::new())),
            _ => Err(ClawError::InvalidParams("tool arguments must be a JSON object".into())),
        }
    }

    /// A required parameter: missing or of the wrong type is an invalid-params error that
    /// names it.
    pub fn required<T: DeserializeOwned>(&mut self, name: &str) -> Result<T, ClawError> {
        match self.0.remove(name) {
            None => Err(ClawError::InvalidParams(format!("missing required argument `{name}`"))),
            Some(value) => convert(name, value),
        }
    }

    /// An `Option<T>` parameter: missing or `null` is `None`.
    pub fn optional<T: DeserializeOwned>(&mut self, name: &str) -> Result<Option<T>, ClawError> {
        match self.0.remove(name) {
            None | Some(Value::Null) => Ok(None),
            Some(value) => convert(name, value).map(Some),
        }
    }
}

fn convert<T: DeserializeOwned>(name: &str, value: Value) -> Result<T, ClawError> {
    serde_json::from_value(value)
        .map_err(|error| ClawError::InvalidParams(format!("invalid argument `{name}`: {error}")))
}

/// The JSON Schema of `T`, with every definition inlined and no `$schema` key (a tool's
/// schemas are embedded in `tools/list`).
pub fn schema_for<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Value::Object(object) = &mut schema {
        object.remove("$schema");
    }
    schema
}

/// The schemas of the seed's parameter table.
pub fn string_schema() -> Value {
    json!({"type": "string"})
}

/// Integers and floats alike are `number` (seed 002's table).
pub fn number_schema() -> Value {
    json!({"type": "number"})
}

/// `bool`.
pub fn boolean_schema() -> Value {
    json!({"type": "boolean"})
}

/// `Vec<T>`.
pub fn array_schema(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

/// Adds a parameter's doc comment to its schema.
pub fn describe(mut schema: Value, description: &str) -> Value {
    if let Value::Object(object) = &mut schema {
        object.insert("description".into(), json!(description));
    }
    schema
}

/// The input schema of a tool: one property per parameter.
pub fn object_schema(properties: Vec<(&str, Value)>, required: &[&str]) -> Value {
    let properties: Map<String, Value> =
        properties.into_iter().map(|(name, schema)| (name.to_string(), schema)).collect();
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema
}

/// What a `#[claw_tool]` function may return.
pub trait IntoToolOutcome {
    /// The call's outcome.
    fn into_tool_outcome(self) -> Result<ToolResult, ClawError>;
}

impl IntoToolOutcome for ToolResult {
    fn into_tool_outcome(self) -> Result<ToolResult, ClawError> {
        Ok(self)
    }
}

impl<E: Into<ClawError>> IntoToolOutcome for Result<ToolResult, E> {
    fn into_tool_outcome(self) -> Result<ToolResult, ClawError> {
        self.map_err(Into::into)
    }
}

impl<T: Serialize> IntoToolOutcome for Json<T> {
    fn into_tool_outcome(self) -> Result<ToolResult, ClawError> {
        Ok(self.into_tool_result()?)
    }
}

impl<T: Serialize, E: Into<ClawError>> IntoToolOutcome for Result<Json<T>, E> {
    fn into_tool_outcome(self) -> Result<ToolResult, ClawError> {
        self.map_err(Into::into)?.into_tool_outcome()
    }
}
