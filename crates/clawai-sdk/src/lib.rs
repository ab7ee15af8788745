#![warn(missing_docs)]
//! Write MCP servers in Rust.
//!
//! Put `#[claw_tool]` on an `async fn` and it becomes a tool: its parameters become the
//! tool's arguments and their JSON Schema, its doc comment the description. Register
//! tools with a [`SdkMcpServerImpl`] and serve it over stdio or Streamable HTTP.
//!
//! ```no_run
//! use clawai_sdk::prelude::*;
//!
//! /// Perform basic arithmetic operations (add or multiply).
//! #[claw_tool(name = "calculator")]
//! async fn calculator(operation: String, a: i32, b: i32) -> ToolResult {
//!     match operation.as_str() {
//!         "add" => ToolResult::text(format!("Result: {}", a + b)),
//!         "multiply" => ToolResult::text(format!("Result: {}", a * b)),
//!         _ => ToolResult::error(format!("Unknown operation: {operation}")),
//!     }
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::io::Result<()> {
//!     let mut server = SdkMcpServerImpl::new("math-tools", "1.0.0");
//!     server.register_tool(calculator());
//!     server.serve_stdio().await
//! }
//! ```
//!
//! The pieces, after seed 002 (rusty_claw), whose names this crate keeps:
//!
//! * [`claw_tool`]: the attribute. Parameters may be `String`, integers, floats, `bool`,
//!   `Option<T>` (not required), `Vec<T>`, or any `T: schemars::JsonSchema +
//!   serde::Deserialize`; doc comments on parameters become schema descriptions. The
//!   function returns [`ToolResult`], `Result<ToolResult, E>` with `E: Into<ClawError>`,
//!   or [`Json<T>`] for structured output. A missing or mistyped argument is answered
//!   with -32602 naming the argument.
//! * [`ToolResult`] and [`ToolContent`]: text, image, audio, embedded resource, link.
//! * [`ToolHandler`] and [`SdkMcpTool`]: a tool written by hand.
//! * [`SdkMcpServerImpl`]: tools plus JSON-RPC routing
//!   ([`SdkMcpServerImpl::handle_jsonrpc`]); [`SdkMcpServerRegistry`]: servers by name.
//! * [`context`]: progress and log notifications from inside a tool.
//! * Serving: [`SdkMcpServerImpl::serve_stdio`], [`serve_io`], and [`http`].
//! * [`McpServerConfig`]: how a host reaches a server (stdio, SSE, HTTP), tagged by `type`.
//!
//! Errors (seed 002 §9, [`codes`]): -32601 unknown method, -32602 unknown tool or invalid
//! arguments, -32603 a handler's `Err`. A [`ToolResult::error`] is a *successful*
//! response with `isError: true`.

extern crate self as clawai_sdk;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod abort;
pub mod codes;
mod config;
mod content;
pub mod context;
mod error;
pub mod http;
mod registry;
mod server;
mod stdio;
mod structured;
mod tool;
pub mod version;

pub use async_trait::async_trait;
pub use clawai_sdk_macros::claw_tool;
pub use config::McpServerConfig;
pub use content::{EmbeddedResource, ToolContent, ToolResult};
pub use error::ClawError;
pub use registry::SdkMcpServerRegistry;
pub use server::SdkMcpServerImpl;
pub use stdio::{MAX_MESSAGE_SIZE, serve_io};
pub use structured::Json;
pub use tool::{SdkMcpTool, ToolHandler};

/// The names a tool module needs: `use clawai_sdk::prelude::*;`.
pub mod prelude {
    pub use crate::{
        ClawError, Json, SdkMcpServerImpl, SdkMcpServerRegistry, SdkMcpTool, ToolContent, ToolHandler, ToolResult,
        async_trait, claw_tool,
    };
}
