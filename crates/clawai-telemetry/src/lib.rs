#![warn(missing_docs)]
//! clawai's OpenTelemetry export (`--otlp URL`): a span for every decided MCP message
//! and metrics (messages, decisions by action, decision latency), sent over OTLP/HTTP
//! with protobuf bodies to a collector.
//!
//! The proxy's audit log shows every event it records to an
//! [`AuditObserver`](clawai_proxy::AuditObserver); [`Telemetry::observer`] is one. It
//! only hands spans and measurements to the SDK: spans go into the batch processor's
//! bounded queue (dropped when it is full), measurements into in-memory aggregates. The
//! SDK's own threads send them, so a slow or dead collector never slows a decision; it
//! costs one warning on stderr. [`Telemetry`] flushes what is left when dropped, giving
//! up after [`SHUTDOWN_LIMIT`] so that clawai exits promptly.
//!
//! Modules: [`mapping`] (what an event becomes: names and attributes), `client` (how
//! batches are sent) and `observer` (the observer).

mod client;
pub mod mapping;
mod observer;

use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clawai_proxy::AuditObserver;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{BatchSpanProcessor, SdkTracerProvider};

use client::{CollectorClient, WarnOnce};

/// The longest a flush at exit waits for the collector.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(2);

/// The longest one export request waits for the collector (on the SDK's threads).
const REQUEST_LIMIT: Duration = Duration::from_secs(5);

/// The resource attribute naming the clawai command (`proxy`, `gateway`, `mcp-server`).
pub const COMMAND: &str = "clawai.command";

/// Why export could not start.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// The collector's URL is not one.
    #[error(
        "the OpenTelemetry collector URL {url} (--otlp or OTEL_EXPORTER_OTLP_ENDPOINT): {why}; give the collector's OTLP/HTTP base URL, such as http://127.0.0.1:4318 (spans go to /v1/traces, metrics to /v1/metrics)"
    )]
    BadEndpoint {
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// The exporters could not be built.
    #[error("cannot start the OpenTelemetry export: {0}")]
    Start(String),
}

/// The URLs spans and metrics are sent to, from the collector's base URL
/// (`http://127.0.0.1:4318` → `http://127.0.0.1:4318/v1/traces` and `…/v1/metrics`; a
/// path in the base is kept: `…/otlp` → `…/otlp/v1/traces`).
pub fn endpoint_urls(base: &str) -> Result<(String, String), TelemetryError> {
    let bad = |why: &str| TelemetryError::BadEndpoint { url: base.to_owned(), why: why.to_owned() };
    if !base.contains("://") {
        return Err(bad("it does not start with http:// or https://"));
    }
    let url = url::Url::parse(base.trim()).map_err(|error| bad(&format!("not a URL ({error})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("it must start with http:// or https://"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("a query or fragment has no place in it"));
    }
    let base = url.as_str().trim_end_matches('/');
    Ok((format!("{base}/v1/traces"), format!("{base}/v1/metrics")))
}

/// The export running: hand [`Telemetry::observer`] to the audit log; drop it at exit
/// to flush what is left (within [`SHUTDOWN_LIMIT`]).
pub struct Telemetry {
    traces: SdkTracerProvider,
    metrics: SdkMeterProvider,
    observer: Arc<observer::Exporter>,
    /// The collector's URL as given, for the warnings.
    endpoint: String,
}

impl Telemetry {
    /// Starts exporting to the collector at `endpoint` (its base URL) as the clawai
    /// `command` (`proxy`, `gateway`, `mcp-server`). Nothing is sent until there is
    /// something to send, so a collector that is down now is not an error.
    pub fn start(endpoint: &str, command: &str) -> Result<Telemetry, TelemetryError> {
        let (traces_url, metrics_url) = endpoint_urls(endpoint)?;
        let start_error = |error: &dyn std::fmt::Display| TelemetryError::Start(error.to_string());
        let warning = Arc::new(WarnOnce::default());
        let client = CollectorClient::new(endpoint, REQUEST_LIMIT, warning).map_err(|e| start_error(&e))?;
        let resource = Resource::builder()
            .with_service_name("clawai")
            .with_attributes([
                KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
                KeyValue::new(COMMAND, command.to_owned()),
            ])
            .build();
        let span_exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(traces_url)
            .with_timeout(REQUEST_LIMIT)
            .with_http_client(client.clone())
            .build()
            .map_err(|e| start_error(&e))?;
        let metric_exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(metrics_url)
            .with_timeout(REQUEST_LIMIT)
            .with_http_client(client)
            .build()
            .map_err(|e| start_error(&e))?;
        // The batch processor has its own thread and a bounded queue (2048 spans by
        // default, OTEL_BSP_MAX_QUEUE_SIZE): a span that finds it full is dropped.
        let traces = SdkTracerProvider::builder()
            .with_span_processor(BatchSpanProcessor::builder(span_exporter).build())
            .with_resource(resource.clone())
            .build();
        // Every 60 s by default (OTEL_METRIC_EXPORT_INTERVAL, in milliseconds), and at exit.
        let metrics = SdkMeterProvider::builder()
            .with_reader(PeriodicReader::builder(metric_exporter).build())
            .with_resource(resource)
            .build();
        let observer = Arc::new(observer::Exporter::new(&traces, &metrics));
        Ok(Telemetry { traces, metrics, observer, endpoint: endpoint.to_owned() })
    }

    /// What the audit log shows its events to.
    pub fn observer(&self) -> Arc<dyn AuditObserver> {
        Arc::clone(&self.observer) as Arc<dyn AuditObserver>
    }
}

impl Drop for Telemetry {
    /// Sends what is left: the spans in the queue and the metrics' final values. Both
    /// shut down at once, on threads of their own, and are waited for at most
    /// [`SHUTDOWN_LIMIT`] together: a collector that does not answer does not hold up
    /// clawai's exit (what it did not take is lost).
    fn drop(&mut self) {
        let (done, finished) = mpsc::channel();
        let traces = self.traces.clone();
        let metrics = self.metrics.clone();
        let shutdowns: [Box<dyn FnOnce() + Send>; 2] = [
            Box::new(move || drop(traces.shutdown_with_timeout(SHUTDOWN_LIMIT))),
            Box::new(move || drop(metrics.shutdown_with_timeout(SHUTDOWN_LIMIT))),
        ];
        let mut waiting = 0;
        for shutdown in shutdowns {
            let done = done.clone();
            let spawned = std::thread::Builder::new().name("otlp-shutdown".into()).spawn(move || {
                shutdown();
                let _ = done.send(());
            });
            waiting += usize::from(spawned.is_ok());
        }
        let deadline = Instant::now() + SHUTDOWN_LIMIT;
        for _ in 0..waiting {
            let left = deadline.saturating_duration_since(Instant::now());
            if finished.recv_timeout(left).is_err() {
                tracing::warn!(
                    "the OpenTelemetry collector at {} did not take the last telemetry within {} s; exiting without it",
                    self.endpoint,
                    SHUTDOWN_LIMIT.as_secs()
                );
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
