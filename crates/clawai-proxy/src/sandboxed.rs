//! What a sandboxed server had in force: said on stderr when it starts (a warning when
//! something asked was not enforced) and recorded in the audit trail.

use clawai_sandbox::Report;

use crate::guard::Guard;

/// Says what `report` holds for the server of `guard`, and records it.
pub fn announce(guard: &Guard, report: &Report) {
    let server = guard.server_name().unwrap_or("the MCP server");
    if report.not_enforced.is_empty() {
        tracing::info!("{server}: {}", report.describe());
    } else {
        tracing::warn!("{server}: {}", report.describe());
    }
    guard.record_sandbox(&report.summary(), &report.describe());
}
