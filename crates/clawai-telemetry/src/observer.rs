//! The audit observer: each event becomes measurements, and each decided message a span
//! from its arrival to its decision.

use std::time::SystemTime;

use clawai_proxy::AuditObserver;
use clawai_proxy::audit::Event;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::{Span as _, SpanKind, Tracer as _, TracerProvider as _};
use opentelemetry_sdk::metrics::SdkMeterProvider;
use opentelemetry_sdk::trace::{SdkTracer, SdkTracerProvider};

use crate::mapping;

/// Bucket bounds of the decision latency, in milliseconds: most decisions take well
/// under one (the SDK's default bounds start at 5), a `prompt` waits for a person.
const LATENCY_BOUNDS_MS: [f64; 19] = [
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 25.0, 50.0, 100.0, 250.0, 500.0, 1_000.0, 5_000.0, 15_000.0,
    30_000.0, 60_000.0,
];

/// Turns audit events into spans and measurements.
pub(crate) struct Exporter {
    tracer: SdkTracer,
    messages: Counter<u64>,
    decisions: Counter<u64>,
    latency: Histogram<f64>,
}

impl Exporter {
    pub(crate) fn new(traces: &SdkTracerProvider, metrics: &SdkMeterProvider) -> Exporter {
        let meter = metrics.meter("clawai");
        Exporter {
            tracer: traces.tracer("clawai"),
            messages: meter
                .u64_counter("clawai.messages")
                .with_description("MCP messages seen, by method, direction and kind")
                .with_unit("{message}")
                .build(),
            decisions: meter
                .u64_counter("clawai.decisions")
                .with_description(
                    "Messages decided, by action (allow, deny, prompt, audit, refused), method and server",
                )
                .with_unit("{decision}")
                .build(),
            latency: meter
                .f64_histogram("clawai.decision.duration")
                .with_description("From a message's arrival to its decision")
                .with_unit("ms")
                .with_boundaries(LATENCY_BOUNDS_MS.to_vec())
                .build(),
        }
    }
}

impl AuditObserver for Exporter {
    /// Counts the message; for a decided one, records the latency and ends its span now.
    /// Every step only adds to memory or to the span queue (`try_send`): nothing here
    /// waits for the collector.
    fn observe(&self, event: &Event<'_>) {
        self.messages.add(1, &mapping::message_attributes(event));
        if !mapping::is_decided(event) {
            return;
        }
        let decided = jiff::Timestamp::now();
        let attributes = mapping::decision_attributes(event);
        self.decisions.add(1, &attributes);
        self.latency.record(mapping::decision_millis(event, decided), &attributes);
        let mut span = self
            .tracer
            .span_builder(mapping::span_name(event))
            .with_kind(SpanKind::Internal)
            .with_start_time(SystemTime::from(event.time))
            .with_attributes(mapping::span_attributes(event))
            .start(&self.tracer);
        span.end_with_timestamp(SystemTime::from(decided));
    }
}
