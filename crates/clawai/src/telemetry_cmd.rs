//! `--otlp URL`: OpenTelemetry export of what `proxy`, `gateway` and `mcp-server`
//! decide. The option is parsed by both binaries (`clawai` hands a command given it to
//! `clawai-http`); only `clawai-http` calls [`start`], so only it links the exporter.

use anyhow::Result;
use clap::Args;
use clawai_telemetry::Telemetry;

use crate::guarded::Guarded;

/// The option shared by `proxy`, `gateway` and `mcp-server`.
#[derive(Debug, Args)]
pub(crate) struct OtlpArgs {
    /// Export a span for every decided message and metrics (messages, decisions by
    /// action, decision latency) to this OpenTelemetry collector, over OTLP/HTTP: its
    /// base URL, such as http://127.0.0.1:4318 (spans go to /v1/traces, metrics to
    /// /v1/metrics). Arguments are never exported.
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_ENDPOINT")]
    pub(crate) otlp: Option<String>,
}

impl OtlpArgs {
    /// True when a collector was named (by the option or the environment).
    pub(crate) fn wanted(&self) -> bool {
        self.otlp.is_some()
    }
}

/// Starts the export when a collector was named, and shows it every event of the
/// guards' audit trail (and of every clone of it made from now on). A URL that is not
/// one stops the start; a collector that is down is not an error (it costs a warning
/// when the first telemetry cannot be sent). Dropping what this returns flushes.
pub(crate) fn start(args: &OtlpArgs, command: &str, guarded: &mut Guarded) -> Result<Option<Telemetry>> {
    let Some(endpoint) = &args.otlp else { return Ok(None) };
    let telemetry = Telemetry::start(endpoint, command)?;
    guarded.audit = guarded.audit.clone().with_observer(telemetry.observer());
    Ok(Some(telemetry))
}
