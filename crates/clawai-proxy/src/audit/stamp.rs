//! When something happened: wall time and monotonic instant from one clock read.

use std::cell::Cell;
use std::time::{Duration, Instant};

/// When something happened, from one clock read: the wall-clock time an event records
/// and the monotonic instant a duration is measured from.
#[derive(Debug, Clone, Copy)]
pub struct Stamp {
    /// Wall-clock time.
    pub wall: jiff::Timestamp,
    /// The same moment on the monotonic clock.
    pub instant: Instant,
}

/// How long a thread derives wall-clock times from the monotonic clock before it reads
/// the system clock again. Within it a time can be off by the clock's slew (at most
/// 0.5 ms a second under NTP); a step of the system clock shows within this period.
const ANCHOR_FOR: Duration = Duration::from_secs(1);

/// The current [`Stamp`]. Every message needs both a wall time (its event) and an
/// instant (the duration of its request); reading one clock instead of two per message
/// matters because a clock read is a sizeable share of a decision in a VM.
pub fn stamp() -> Stamp {
    thread_local! {
        static ANCHOR: Cell<Option<(Instant, jiff::Timestamp)>> = const { Cell::new(None) };
    }
    let instant = Instant::now();
    ANCHOR.with(|anchor| {
        let (at, wall) = match anchor.get() {
            Some((at, wall)) if instant.saturating_duration_since(at) < ANCHOR_FOR => (at, wall),
            _ => {
                let fresh = (instant, jiff::Timestamp::now());
                anchor.set(Some(fresh));
                fresh
            }
        };
        let since = instant.saturating_duration_since(at);
        Stamp { wall: wall.checked_add(since).unwrap_or(wall), instant }
    })
}
