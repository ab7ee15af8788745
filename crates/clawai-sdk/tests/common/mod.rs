//! Tools shared by the transport tests.

use std::sync::atomic::{AtomicBool, Ordering};

use clawai_sdk::context;
use clawai_sdk::prelude::*;

/// Set when a `stuck` call's future is dropped (it was cancelled).
pub(crate) static STUCK_DROPPED: AtomicBool = AtomicBool::new(false);

struct MarkDropped;

impl Drop for MarkDropped {
    fn drop(&mut self) {
        STUCK_DROPPED.store(true, Ordering::SeqCst);
    }
}

/// Never finishes on its own.
#[claw_tool]
pub async fn stuck() -> ToolResult {
    let _marker = MarkDropped;
    std::future::pending::<()>().await;
    ToolResult::text("unreachable")
}

/// Reports progress three times, logging each step, then answers.
#[claw_tool]
pub async fn chatty() -> ToolResult {
    for step in 1..=3 {
        context::report_progress(f64::from(step), Some(3.0), Some("working"));
        context::log(context::LogLevel::Info, format!("step {step}"));
        tokio::task::yield_now().await;
    }
    ToolResult::text("chatty done")
}
