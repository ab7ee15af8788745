//! The sandbox a server runs in, as the guard records it: one event when the server
//! starts, and the summary on the events of every call (`Event::sandbox`).

use crate::audit::{Event, stamp};

use super::Guard;

/// Where the summary of a server's sandbox is kept once it started, for the audit events
/// of its calls.
pub type SandboxCell = std::sync::Arc<std::sync::OnceLock<Box<str>>>;

impl Guard {
    /// Records that the server runs in a sandbox with these protections (`summary`), and
    /// what it has not (`detail`): one event now, and the summary on every call's events.
    pub fn record_sandbox(&self, summary: &str, detail: &str) {
        let _ = self.sandbox.set(summary.into());
        let event = Event {
            time: stamp().wall,
            session: &self.session,
            server: self.server.as_deref(),
            kind: crate::audit::EventKind::Sandbox,
            reason: Some(detail.into()),
            sandbox: Some(summary),
            ..Default::default()
        };
        self.audit.record(&event);
        self.audit.flush();
    }

    /// Where this guard keeps the summary of its server's sandbox.
    pub fn sandbox_cell(&self) -> SandboxCell {
        std::sync::Arc::clone(&self.sandbox)
    }

    /// The same guard, reading its server's sandbox from `cell` (behind the gateway: the
    /// guard of the server's own session records the sandbox when the server starts).
    pub fn with_sandbox_cell(mut self, cell: SandboxCell) -> Guard {
        self.sandbox = cell;
        self
    }
}
