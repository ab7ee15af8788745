//! Something else that sees every audit event as it is recorded (OpenTelemetry export).

use std::sync::Arc;

use super::event::Event;
use super::log::AuditLog;

/// Sees every event a log records, on the thread that records it: that is the path of
/// the message the event describes, so [`AuditObserver::observe`] must return at once
/// (hand the event to a queue, never wait for a disk or a network).
pub trait AuditObserver: Send + Sync {
    /// Called once for each event, before it is written to the trail. `event.time` is
    /// when the message arrived; the call happens once the message is decided.
    fn observe(&self, event: &Event<'_>);
}

impl AuditLog {
    /// This log, and every clone made of it from now on, shows each event it records
    /// to `observer` (one observer: a second call replaces the first).
    pub fn with_observer(mut self, observer: Arc<dyn AuditObserver>) -> AuditLog {
        self.observer = Some(observer);
        self
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::audit::{Decision, EventKind};

    /// Kind, method and decision of an event.
    type Summary = (&'static str, Option<String>, Option<&'static str>);

    /// Keeps what it saw.
    #[derive(Default)]
    struct Seen(Mutex<Vec<Summary>>);

    impl AuditObserver for Seen {
        fn observe(&self, event: &Event<'_>) {
            self.0.lock().unwrap().push((
                event.kind.as_str(),
                event.method.map(str::to_owned),
                event.decision.map(|d| d.as_str()),
            ));
        }
    }

    fn event(kind: &'static str, method: &'static str, decision: Option<&'static str>) -> Event<'static> {
        let kind = EventKind::parse(kind).expect("a kind the trail writes");
        let decision = decision.map(|word| Decision::parse(word).expect("a decision the trail writes"));
        Event { session: "s", kind, method: Some(method), decision, ..Event::default() }
    }

    #[test]
    fn an_observer_sees_every_event_each_way_of_recording_does_and_clones_share_it() {
        let dir = tempfile::tempdir().unwrap();
        let seen = Arc::new(Seen::default());
        let log = AuditLog::open(&dir.path().join("audit.jsonl"), u64::MAX, 1)
            .unwrap()
            .with_observer(Arc::clone(&seen) as Arc<dyn AuditObserver>);
        let clone = log.clone();
        log.record_decision(&event("request", "tools/call", Some("deny")));
        clone.record(&event("notification", "notifications/initialized", Some("pass")));
        log.record_all([event("response", "tools/call", None), event("response", "tools/list", None)]);
        let seen = seen.0.lock().unwrap().clone();
        let expected = [
            ("request", Some("tools/call".to_owned()), Some("deny")),
            ("notification", Some("notifications/initialized".to_owned()), Some("pass")),
            ("response", Some("tools/call".to_owned()), None),
            ("response", Some("tools/list".to_owned()), None),
        ];
        assert_eq!(seen, expected);
        // The trail itself is written as before.
        log.flush();
        let written = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        assert_eq!(written.lines().count(), 4);
    }
}
