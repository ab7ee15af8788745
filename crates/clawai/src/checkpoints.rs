//! Audit checkpoints in cluster mode (design §12): every few seconds, and when the
//! replica stops, its audit writer records a `checkpoint` event naming the other
//! writers' newest lines it can see, then publishes its own newest line in Redis for
//! them. Each writer's trail is shipped to PostgreSQL on its own; a writer's newest
//! lines deleted there (or cut from its file before shipping) would leave its own chain
//! whole, but another writer's checkpoint names a line that is no longer there, and
//! `clawai audit verify --postgres` reports it.
//!
//! Heads go through Redis rather than PostgreSQL: replicas already share it, and the
//! database may lag behind (or be away) while the trails are still written.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use clawai_proxy::AuditLog;
use clawai_proxy::audit::ChainHead;
use clawai_store_redis::{PublishedHead, Redis};

/// How often a checkpoint is recorded, unless `CLAWAI_CHECKPOINT_SECONDS` says otherwise.
const EVERY: Duration = Duration::from_secs(10);

/// The checkpoints of one replica's trail, recorded on a thread of their own.
pub(crate) struct Checkpoints {
    writer: Arc<Writer>,
    /// Set (and notified) to stop the thread.
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What one checkpoint needs, and what the last one recorded.
struct Writer {
    audit: AuditLog,
    redis: Redis,
    /// The newest `seq` recorded so far for each other writer: a head that did not
    /// move is not recorded again (a stopped writer's last head is recorded once).
    recorded: Mutex<HashMap<String, u64>>,
}

/// Starts recording checkpoints of `audit` when this process joined a cluster; `None`
/// otherwise (nothing connects anywhere).
pub(crate) fn start(audit: &AuditLog) -> Option<Checkpoints> {
    let redis = crate::stores::cluster_redis()?;
    let every = std::env::var("CLAWAI_CHECKPOINT_SECONDS")
        .ok()
        .and_then(|text| text.parse::<f64>().ok())
        .filter(|secs| secs.is_finite() && *secs > 0.0)
        .map_or(EVERY, Duration::from_secs_f64);
    let writer = Arc::new(Writer { audit: audit.clone(), redis, recorded: Mutex::default() });
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let thread = {
        let (writer, stop) = (Arc::clone(&writer), Arc::clone(&stop));
        std::thread::Builder::new()
            .name("audit-checkpoint".into())
            .spawn(move || {
                let (stopped, wake) = &*stop;
                let mut stopped = stopped.lock().unwrap_or_else(|p| p.into_inner());
                while !*stopped {
                    writer.checkpoint();
                    stopped = wake.wait_timeout(stopped, every).unwrap_or_else(|p| p.into_inner()).0;
                }
            })
            .map_err(|error| tracing::warn!("audit checkpoints not started: {error}"))
            .ok()
    };
    Some(Checkpoints { writer, stop, thread })
}

impl Checkpoints {
    /// Stops the thread and records the last checkpoint: the trail's final lines are
    /// published for the replicas that go on.
    pub(crate) fn finish(mut self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(|p| p.into_inner()) = true;
        wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.writer.checkpoint();
    }
}

impl Writer {
    /// Records the heads that moved since the last checkpoint (none moved: no event),
    /// then publishes this writer's own head. Redis away: tried again next time.
    fn checkpoint(&self) {
        let own = self.audit.writer_id();
        let seen = match self.redis.published_heads(&own) {
            Ok(seen) => seen,
            Err(error) => {
                tracing::debug!("audit checkpoint skipped: {error}");
                return;
            }
        };
        let moved: Vec<ChainHead> = {
            let mut recorded = self.recorded.lock().unwrap_or_else(|p| p.into_inner());
            let mut moved = Vec::new();
            for head in &seen {
                if recorded.get(&head.writer).is_some_and(|&seq| seq >= head.seq) {
                    continue;
                }
                if let Some(head) = ChainHead::checked(&head.writer, head.seq, &head.hash) {
                    recorded.insert(head.writer.clone(), head.seq);
                    moved.push(head);
                }
            }
            moved
        };
        let head = if moved.is_empty() {
            self.audit.head()
        } else {
            self.audit.record_checkpoint(self.redis.replica(), &moved)
        };
        if let Some(head) = head {
            let published = PublishedHead { writer: head.writer, seq: head.seq, hash: head.hash };
            if let Err(error) = self.redis.publish_head(&published) {
                tracing::debug!("audit head not published: {error}");
            }
        }
    }
}
