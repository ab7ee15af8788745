//! What a running tool can tell the client while it works: progress and log messages.
//!
//! Inside a tool handler, [`report_progress`] and [`log`] send notifications that belong
//! to the call being served: over stdio they are written before the result; over HTTP
//! they are streamed as server-sent events ahead of it. Outside a call, or when the
//! transport cannot carry them, they do nothing.
//!
//! ```
//! use clawai_sdk::{claw_tool, context, ToolResult};
//!
//! /// Counts to three, reporting progress.
//! #[claw_tool]
//! async fn count() -> ToolResult {
//!     for step in 1..=3 {
//!         context::report_progress(step as f64, Some(3.0), Some(&format!("step {step}")));
//!         context::log(context::LogLevel::Info, format!("reached {step}"));
//!     }
//!     ToolResult::text("done")
//! }
//! # let _ = count();
//! ```

use clawai_protocol::methods;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use serde::Serialize;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;

/// Log severities of MCP's `notifications/message`, lowest first (RFC 5424 names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Detailed debugging information.
    Debug,
    /// Normal operation.
    Info,
    /// Normal but significant.
    Notice,
    /// A warning.
    Warning,
    /// An error.
    Error,
    /// A critical condition.
    Critical,
    /// Action must be taken immediately.
    Alert,
    /// The system is unusable.
    Emergency,
}

impl LogLevel {
    const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire (`"info"`, `"warning"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name`, if there is one.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|level| level.as_str() == name)
    }

    pub(crate) fn from_index(index: u8) -> LogLevel {
        LogLevel::ALL[usize::from(index).min(LogLevel::ALL.len() - 1)]
    }
}

/// The call a handler is serving: where its notifications go.
#[derive(Clone)]
pub(crate) struct CallContext {
    pub(crate) progress_token: Option<Value>,
    pub(crate) notifications: Option<UnboundedSender<Value>>,
    pub(crate) log_gate: LogGate,
}

/// Which log messages the client wants from this call.
#[derive(Clone)]
pub(crate) enum LogGate {
    /// Handshake revisions: at or above the level last set with `logging/setLevel`.
    Session(Arc<AtomicU8>),
    /// 2026-07-28: only when the request opted in with `_meta`
    /// `io.modelcontextprotocol/logLevel`, at or above that level.
    Request(Option<LogLevel>),
}

impl LogGate {
    fn admits(&self, level: LogLevel) -> bool {
        match self {
            LogGate::Session(minimum) => level >= LogLevel::from_index(minimum.load(Ordering::Relaxed)),
            LogGate::Request(minimum) => minimum.is_some_and(|minimum| level >= minimum),
        }
    }
}

tokio::task_local! {
    pub(crate) static CURRENT: CallContext;
}

fn send(notification: Value) {
    let _ = CURRENT.try_with(|context| {
        if let Some(sink) = &context.notifications {
            // The receiver is gone only when the call was cancelled: nobody to tell.
            let _ = sink.send(notification);
        }
    });
}

/// Reports progress of the current call, if the client asked for it (sent a
/// `progressToken`). `progress` must increase from one report to the next.
pub fn report_progress(progress: f64, total: Option<f64>, message: Option<&str>) {
    let Ok(Some(token)) = CURRENT.try_with(|context| context.progress_token.clone()) else { return };
    let mut params = json!({"progressToken": token, "progress": progress});
    if let Some(total) = total {
        params["total"] = json!(total);
    }
    if let Some(message) = message {
        params["message"] = json!(message);
    }
    send(json!({"jsonrpc": "2.0", "method": methods::PROGRESS, "params": params}));
}

/// Sends a log message (`notifications/message`) to the client, if it wants messages of
/// this level: on handshake revisions unless `logging/setLevel` asked for a higher one;
/// on 2026-07-28 only when the request opted in (`_meta` `io.modelcontextprotocol/logLevel`).
pub fn log(level: LogLevel, data: impl Serialize) {
    if CURRENT.try_with(|context| context.log_gate.admits(level)).unwrap_or(false) {
        let data = serde_json::to_value(data).unwrap_or_else(|error| json!(error.to_string()));
        send(json!({
            "jsonrpc": "2.0",
            "method": methods::MESSAGE,
            "params": {"level": level.as_str(), "data": data},
        }));
    }
}
