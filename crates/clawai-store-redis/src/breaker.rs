//! Failing at once while Redis is away. Without it every decision that needs Redis waited
//! for its own time-out while Redis was down: about 0.54 s per call, measured under load
//! (tests/e2e/test_cluster_outage.py). After a step finds Redis away, the steps of the
//! next [`FAIL_FAST_FOR`] fail at once; then one step at a time tries Redis (a probe),
//! the others failing at once until it is answered. The first answer closes the breaker.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use clawai_store::Unavailable;

use crate::STEP_TIMEOUT;

/// How long after Redis failed to answer steps fail without trying: recovery still comes
/// within this and one step of Redis returning, well inside design §12's 2 s.
pub(crate) const FAIL_FAST_FOR: Duration = Duration::from_millis(250);

#[derive(Default)]
struct State {
    /// When a step last found Redis away; `None` while Redis answers.
    failed_at: Option<Instant>,
    /// When the step now trying Redis started (a probe whose caller went away without
    /// an answer counts as over after a step's time limit).
    probe_since: Option<Instant>,
}

/// Whether Redis answered lately, shared by every step on one connection.
#[derive(Default)]
pub(crate) struct Breaker {
    state: Mutex<State>,
}

/// What [`Breaker::admit`] lets a step do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Admitted {
    /// Redis answers: go ahead.
    Normally,
    /// Redis was away: this step is the one that tries it.
    AsProbe,
}

impl Breaker {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Whether a step may try Redis now, or fails at once.
    pub(crate) fn admit(&self) -> Result<Admitted, Unavailable> {
        let now = Instant::now();
        let mut state = self.state();
        let Some(failed_at) = state.failed_at else { return Ok(Admitted::Normally) };
        let probing = state.probe_since.is_some_and(|since| now.duration_since(since) < STEP_TIMEOUT);
        if now.duration_since(failed_at) < FAIL_FAST_FOR || probing {
            let ago = now.duration_since(failed_at).as_millis();
            return Err(Unavailable::Unreachable(format!(
                "Redis did not answer {ago} ms ago; clawai tries it again every {} ms",
                FAIL_FAST_FOR.as_millis()
            )));
        }
        state.probe_since = Some(now);
        Ok(Admitted::AsProbe)
    }

    /// What a step found: `away` when Redis did not answer (no connection, a time-out),
    /// not when it answered with an error.
    pub(crate) fn record(&self, admitted: Admitted, away: bool) {
        let mut state = self.state();
        state.failed_at = if away { Some(Instant::now()) } else { None };
        if admitted == Admitted::AsProbe || !away {
            state.probe_since = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_a_failure_steps_fail_at_once_then_one_probe_tries_and_an_answer_closes_it() {
        let breaker = Breaker::default();
        assert_eq!(breaker.admit().unwrap(), Admitted::Normally);
        breaker.record(Admitted::Normally, true);
        // Within the window: no step tries Redis.
        let refused = breaker.admit().unwrap_err();
        assert!(refused.to_string().contains("did not answer"), "{refused}");
        std::thread::sleep(FAIL_FAST_FOR + Duration::from_millis(20));
        // After it: one probe; the others fail at once while it is out.
        assert_eq!(breaker.admit().unwrap(), Admitted::AsProbe);
        assert!(breaker.admit().is_err(), "a second step while the probe is out");
        // The probe fails: a new window.
        breaker.record(Admitted::AsProbe, true);
        assert!(breaker.admit().is_err());
        std::thread::sleep(FAIL_FAST_FOR + Duration::from_millis(20));
        assert_eq!(breaker.admit().unwrap(), Admitted::AsProbe);
        // It is answered (even with an error of Redis's own): every step goes again.
        breaker.record(Admitted::AsProbe, false);
        assert_eq!(breaker.admit().unwrap(), Admitted::Normally);
        assert_eq!(breaker.admit().unwrap(), Admitted::Normally);
    }

    #[test]
    fn a_probe_whose_caller_went_away_does_not_hold_the_breaker_open() {
        let breaker = Breaker::default();
        breaker.record(Admitted::Normally, true);
        std::thread::sleep(FAIL_FAST_FOR + Duration::from_millis(20));
        assert_eq!(breaker.admit().unwrap(), Admitted::AsProbe);
        // Never recorded (its future was dropped): after a step's time limit, another
        // step may probe.
        std::thread::sleep(STEP_TIMEOUT + Duration::from_millis(20));
        assert_eq!(breaker.admit().unwrap(), Admitted::AsProbe);
    }
}
