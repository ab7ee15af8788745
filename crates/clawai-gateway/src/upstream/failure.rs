//! A server that cannot start, said once and clearly: the first failure is a warning
//! with its cause and the last lines the server wrote to stderr; each retry after it is
//! one line at most (npm's 8-line error at every retry, forever, told nothing new).
//!
//! A stdio server's stderr is held while it starts, its last lines kept: once it is up,
//! what it wrote is passed on to the gateway's stderr (and everything after it, as it
//! comes); when it fails first, the held lines are the cause the warning quotes.

use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use super::{Upstream, lock};

/// The lines of a starting server's stderr quoted when it fails.
const QUOTED_LINES: usize = 8;
/// The most lines of a starting server's stderr held.
const HELD_LINES: usize = 200;

/// What the gateway knows of a server's failures to start.
#[derive(Default)]
pub(crate) struct Failures {
    /// Why the last run ended before the server was up (cleared once it is).
    last: std::sync::Mutex<Option<String>>,
    /// Runs in a row that ended before the server was up.
    in_a_row: AtomicU32,
    /// The current run's stderr while it starts, and whether it is up (passed on then).
    stderr: std::sync::Mutex<Stderr>,
    /// Why `initialize` failed in the current run.
    initialize: std::sync::Mutex<Option<String>>,
}

#[derive(Default)]
struct Stderr {
    held: VecDeque<String>,
    up: bool,
}

impl Failures {
    /// Why the server's last run failed before it was up, if it did and is not up since.
    pub(crate) fn last(&self) -> Option<String> {
        lock(&self.last).clone()
    }

    /// `initialize` failed (`why`): the run ends, and this is why.
    pub(super) fn initialize_failed(&self, why: String) {
        *lock(&self.initialize) = Some(why);
    }

    /// Why the run ends when it did not initialize.
    pub(super) fn not_initialized(&self) -> String {
        lock(&self.initialize).take().unwrap_or_else(|| "it did not initialize".to_owned())
    }
}

impl Upstream {
    /// Why its last run failed before it was up, if it did and is not up since.
    pub(crate) fn last_failure(&self) -> Option<String> {
        self.failures.last()
    }

    /// How many of its tools pinning holds (waiting for a person's review), for reports.
    pub(crate) fn held_tools(&self) -> usize {
        self.held_now().0
    }

    /// Reads a starting server's stderr: held (its last lines kept) until the server is
    /// up, then passed on to the gateway's stderr as it comes.
    pub(super) fn take_stderr(self: &Arc<Self>, stderr: tokio::process::ChildStderr) {
        *lock(&self.failures.stderr) = Stderr::default();
        let upstream = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            let mut out = tokio::io::stderr();
            while let Ok(Some(line)) = lines.next_line().await {
                let Some(upstream) = upstream.upgrade() else { break };
                let pass_on = {
                    let mut stderr = lock(&upstream.failures.stderr);
                    if !stderr.up {
                        if stderr.held.len() == HELD_LINES {
                            stderr.held.pop_front();
                        }
                        stderr.held.push_back(line.clone());
                    }
                    stderr.up
                };
                if pass_on {
                    let _ = out.write_all(format!("{line}\n").as_bytes()).await;
                }
            }
        });
    }

    /// The server is up: what it wrote while starting is passed on, and a failure told
    /// of is over.
    pub(super) fn came_up(&self) {
        let held: Vec<String> = {
            let mut stderr = lock(&self.failures.stderr);
            stderr.up = true;
            stderr.held.drain(..).collect()
        };
        if !held.is_empty() {
            eprintln!("{}", held.join("\n"));
        }
        if lock(&self.failures.last).take().is_some() {
            tracing::info!("server `{}` is up again", self.name);
        }
        self.failures.in_a_row.store(0, Ordering::SeqCst);
    }

    /// The run ended (`reason`), and the server is started again after `wait`: said in
    /// full the first time it fails to start, in one line at each retry after.
    pub(super) fn tell_run_ended(self: &Arc<Self>, reason: &str, wait: Duration) {
        let (quoted, was_up) = {
            let mut stderr = lock(&self.failures.stderr);
            let was_up = stderr.up;
            let skip = stderr.held.len().saturating_sub(QUOTED_LINES);
            let quoted: Vec<String> = stderr.held.drain(..).skip(skip).collect();
            stderr.up = false;
            (quoted, was_up)
        };
        let again = format!("starting it again in {}", wait_text(wait));
        if was_up {
            tracing::warn!("server `{}`: {reason}; {again}", self.name);
            return;
        }
        *lock(&self.failures.last) = Some(match quoted.is_empty() {
            true => reason.to_owned(),
            false => format!("{reason}; its stderr ends:\n{}", quoted.join("\n")),
        });
        // Every server may have started now, this one failing.
        self.context.reports.tell(self, super::events::Event::StartFailed);
        let failures = self.failures.in_a_row.fetch_add(1, Ordering::SeqCst) + 1;
        if failures > 1 {
            tracing::info!("server `{}` failed to start again ({failures} times): {reason}; {again}", self.name);
            return;
        }
        let stderr = match quoted.is_empty() {
            true => String::new(),
            false => format!("; its last words on stderr:\n    {}", quoted.join("\n    ")),
        };
        tracing::warn!(
            "server `{}` could not start: {reason}{stderr}\n  {again} (then less and less often, at most every 5 minutes); \
             check its `command` and `args` in the configuration",
            self.name
        );
    }
}

/// `0.5s`, `40s`, `5m`.
fn wait_text(wait: Duration) -> String {
    match wait.as_secs() {
        0 => format!("{:.1}s", wait.as_secs_f64()),
        seconds @ 1..=119 => format!("{seconds}s"),
        seconds => format!("{}m{:02}s", seconds / 60, seconds % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_read_as_people_write_them() {
        assert_eq!(wait_text(Duration::from_millis(500)), "0.5s");
        assert_eq!(wait_text(Duration::from_secs(64)), "64s");
        assert_eq!(wait_text(Duration::from_secs(300)), "5m00s");
    }
}
