//! A tool: its name, description and schemas, and the [`ToolHandler`] that runs it.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Map, Value, json};

use crate::{ClawError, ToolResult};

/// Runs a tool. Implement it by hand for tools that carry state (a database pool, a
/// client); `#[claw_tool]` implements it for an `async fn`.
///
/// ```
/// use clawai_sdk::{async_trait, ClawError, ToolHandler, ToolResult};
/// use serde_json::Value;
///
/// struct Add;
///
/// #[async_trait]
/// impl ToolHandler for Add {
///     async fn call(&self, args: Value) -> Result<ToolResult, ClawError> {
///         let a = args["a"].as_f64().ok_or_else(|| ClawError::InvalidParams("`a` must be a number".into()))?;
///         let b = args["b"].as_f64().ok_or_else(|| ClawError::InvalidParams("`b` must be a number".into()))?;
///         Ok(ToolResult::text(format!("{}", a + b)))
///     }
/// }
/// ```
#[async_trait]
pub trait ToolHandler: Send + Sync {
    /// Runs the tool with the call's `arguments` (an object; `{}` when the client sent
    /// none). `Ok(ToolResult::error(..))` reports a failure to the model;
    /// `Err(ClawError::InvalidParams(..))` answers -32602, any other `Err` -32603.
    async fn call(&self, args: Value) -> Result<ToolResult, ClawError>;
}

/// A tool a server offers: what `tools/list` shows, and the handler `tools/call` runs.
#[derive(Clone)]
pub struct SdkMcpTool {
    /// The name clients call it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON Schema of its arguments (an object schema).
    pub input_schema: Value,
    /// JSON Schema of its structured output, when it has one.
    pub output_schema: Option<Value>,
    /// Behaviour hints (`readOnlyHint`, `destructiveHint`, …), shown as `annotations`.
    pub annotations: Option<Value>,
    handler: Arc<dyn ToolHandler>,
}

impl SdkMcpTool {
    /// A tool from its name, description, input schema and handler.
    ///
    /// ```
    /// # use clawai_sdk::{async_trait, ClawError, SdkMcpTool, ToolHandler, ToolResult};
    /// # use serde_json::{json, Value};
    /// # use std::sync::Arc;
    /// # struct Echo;
    /// # #[async_trait]
    /// # impl ToolHandler for Echo {
    /// #     async fn call(&self, args: Value) -> Result<ToolResult, ClawError> { Ok(ToolResult::text(args.to_string())) }
    /// # }
    /// let tool = SdkMcpTool::new("echo", "Echo the arguments", json!({"type": "object"}), Arc::new(Echo));
    /// assert_eq!(tool.definition()["name"], "echo");
    /// ```
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
        handler: Arc<dyn ToolHandler>,
    ) -> Self {
        SdkMcpTool {
            name: name.into(),
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: None,
            handler,
        }
    }

    /// The same tool with an output schema (structured output).
    pub fn with_output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// The same tool with behaviour annotations, e.g.
    /// `json!({"readOnlyHint": true})`. A policy proxy such as clawai treats a tool
    /// without `readOnlyHint: true` as one that may change things.
    pub fn with_annotations(mut self, annotations: Value) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// The tool's entry in a `tools/list` result.
    pub fn definition(&self) -> Value {
        let mut definition = Map::new();
        definition.insert("name".into(), json!(self.name));
        definition.insert("description".into(), json!(self.description));
        definition.insert("inputSchema".into(), self.input_schema.clone());
        if let Some(schema) = &self.output_schema {
            definition.insert("outputSchema".into(), schema.clone());
        }
        if let Some(annotations) = &self.annotations {
            definition.insert("annotations".into(), annotations.clone());
        }
        Value::Object(definition)
    }

    /// Runs the tool's handler.
    pub async fn call(&self, args: Value) -> Result<ToolResult, ClawError> {
        self.handler.call(args).await
    }

    pub(crate) fn handler(&self) -> Arc<dyn ToolHandler> {
        Arc::clone(&self.handler)
    }
}

impl fmt::Debug for SdkMcpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SdkMcpTool")
            .field("name", &self.name)
            .field("description", &self.description)
            .field("input_schema", &self.input_schema)
            .field("output_schema", &self.output_schema)
            .finish_non_exhaustive()
    }
}
