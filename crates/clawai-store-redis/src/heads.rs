//! Where each replica's audit writer publishes the newest line of its chain, so that
//! the others record it in their `checkpoint` events (design §12): one hash,
//! `clawai:audit:heads`, a field per writer, `SEQ HASH UNIX-SECONDS`.

use clawai_store::Unavailable;

use crate::{PREFIX, Redis};

/// A writer's newest line, as published.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublishedHead {
    /// The writer's id.
    pub writer: String,
    /// The line's number in its chain.
    pub seq: u64,
    /// The hex SHA-256 of the line.
    pub hash: String,
}

/// Heads not published again for this long belong to writers that stopped (a replica
/// publishes every few seconds while it runs); every live writer recorded their last
/// head long before, so they are removed.
const FORGET_AFTER_SECS: u64 = 24 * 3600;

fn key() -> String {
    format!("{PREFIX}audit:heads")
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

impl Redis {
    /// Publishes this process's newest audit line.
    pub fn publish_head(&self, head: &PublishedHead) -> Result<(), Unavailable> {
        let value = format!("{} {} {}", head.seq, head.hash, now_secs());
        let writer = head.writer.clone();
        self.bridge.block(move |mut connection| async move {
            redis::cmd("HSET").arg(key()).arg(writer).arg(value).query_async::<()>(&mut connection).await
        })
    }

    /// Every head published, except `own` writer's; heads of writers gone for a day are
    /// removed on the way. Fields not in the published shape are skipped.
    pub fn published_heads(&self, own: &str) -> Result<Vec<PublishedHead>, Unavailable> {
        let all: Vec<(String, String)> = self.bridge.block(|mut connection| async move {
            redis::cmd("HGETALL").arg(key()).query_async(&mut connection).await
        })?;
        let now = now_secs();
        let mut heads = Vec::new();
        let mut gone = Vec::new();
        for (writer, value) in all {
            let mut parts = value.split(' ');
            let (Some(seq), Some(hash), Some(at)) = (parts.next(), parts.next(), parts.next()) else { continue };
            let (Ok(seq), Ok(at)) = (seq.parse::<u64>(), at.parse::<u64>()) else { continue };
            if now.saturating_sub(at) > FORGET_AFTER_SECS {
                gone.push(writer);
            } else if writer != own {
                heads.push(PublishedHead { writer, seq, hash: hash.to_owned() });
            }
        }
        if !gone.is_empty() {
            // Best effort: a head left behind is removed at the next look.
            let _ = self.bridge.block(move |mut connection| async move {
                redis::cmd("HDEL").arg(key()).arg(gone).query_async::<()>(&mut connection).await
            });
        }
        heads.sort_by(|a, b| a.writer.cmp(&b.writer));
        Ok(heads)
    }
}
