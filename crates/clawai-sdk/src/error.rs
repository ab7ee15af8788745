//! The error a tool or the server returns, and the JSON-RPC code it maps to.

use thiserror::Error;

/// Why a request failed. [`ClawError::code`] is the JSON-RPC error code the server
/// answers with.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ClawError {
    /// The tool ran and failed: answered with -32603 (internal error). A failure the
    /// model should see and correct belongs in [`crate::ToolResult::error`] instead.
    #[error("{0}")]
    ToolExecution(String),
    /// The request's parameters are wrong: an unknown tool, a missing or mistyped
    /// argument. Answered with -32602 (invalid params).
    #[error("{0}")]
    InvalidParams(String),
    /// [`crate::SdkMcpServerRegistry::handle`] was asked for a server it does not have.
    #[error("no MCP server named `{0}` is registered")]
    UnknownServer(String),
    /// Reading or writing the transport failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// A value could not be converted to or from JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
}

impl ClawError {
    /// The JSON-RPC error code for this error: -32602 for invalid parameters, -32603
    /// (internal error) for everything else.
    pub fn code(&self) -> i64 {
        match self {
            ClawError::InvalidParams(_) => crate::codes::INVALID_PARAMS,
            _ => crate::codes::INTERNAL_ERROR,
        }
    }
}

impl From<String> for ClawError {
    fn from(message: String) -> Self {
        ClawError::ToolExecution(message)
    }
}

impl From<&str> for ClawError {
    fn from(message: &str) -> Self {
        ClawError::ToolExecution(message.to_string())
    }
}

impl From<Box<dyn std::error::Error + Send + Sync>> for ClawError {
    fn from(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        ClawError::ToolExecution(error.to_string())
    }
}
