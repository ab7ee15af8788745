//! Documents shared by every replica (the pins): each a field of one Redis hash per
//! kind, with a write counter beside it as its version.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use clawai_store::{DocumentError, Documents, Unavailable, Version};

use crate::{PREFIX, Redis};

/// How long a version read from Redis is taken as current: a watcher that asks twice a
/// second sees another replica's write within a second, and a call that asks does not
/// cost a round trip each time.
const VERSION_FRESH_FOR: Duration = Duration::from_millis(250);

/// Writes `ARGV[2]` as document `ARGV[1]` if its version is `ARGV[3]` (0: none yet; -1:
/// whatever it is): the new version, or -1 when someone else wrote it since.
/// KEYS: the documents' hash, their versions' hash.
static SAVE: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
local now = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if ARGV[3] ~= '-1' and now ~= tonumber(ARGV[3]) then return -1 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
",
    )
});

/// Removes document `ARGV[1]` and counts its version on, so that a reader tells a reset
/// from a Redis that lost its data (no version then): 1 when there was one, else 0.
/// KEYS: the documents' hash, their versions' hash.
static RESET: std::sync::LazyLock<redis::Script> = std::sync::LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
",
    )
});

/// The documents of one kind (`pins`) in Redis.
pub struct RedisDocuments {
    redis: Redis,
    kind: &'static str,
    bodies: String,
    versions: String,
    /// Each document's version as last read or written, and when.
    known: Mutex<HashMap<String, (u64, Instant)>>,
}

impl std::fmt::Debug for RedisDocuments {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisDocuments").field("kind", &self.kind).finish_non_exhaustive()
    }
}

impl RedisDocuments {
    /// The documents of `kind`.
    pub fn new(redis: Redis, kind: &'static str) -> RedisDocuments {
        let bodies = format!("{PREFIX}docs:{kind}");
        RedisDocuments { redis, kind, versions: format!("{bodies}:versions"), bodies, known: Mutex::default() }
    }

    fn error(&self, name: &str, why: Unavailable) -> DocumentError {
        DocumentError { location: self.location(name).display().to_string(), source: std::io::Error::other(why) }
    }

    /// Removes document `name` as a reset (`clawai pins reset --cluster`): readers find
    /// none, under a new version. False when there was none.
    pub fn reset(&self, name: &str) -> Result<bool, DocumentError> {
        let (bodies, versions, field) = (self.bodies.clone(), self.versions.clone(), name.to_owned());
        let removed: i64 = self
            .redis
            .bridge
            .block(move |mut connection| async move {
                RESET.key(bodies).key(versions).arg(field).invoke_async(&mut connection).await
            })
            .map_err(|why| self.error(name, why))?;
        self.known.lock().unwrap_or_else(PoisonError::into_inner).remove(name);
        Ok(removed == 1)
    }

    fn remember(&self, name: &str, version: u64) {
        self.known.lock().unwrap_or_else(PoisonError::into_inner).insert(name.to_owned(), (version, Instant::now()));
    }

    /// Writes unless the version is not `expected` (-1: whatever it is).
    fn write(&self, name: &str, bytes: &[u8], expected: i64) -> Result<bool, DocumentError> {
        let (bodies, versions, field, body) =
            (self.bodies.clone(), self.versions.clone(), name.to_owned(), bytes.to_vec());
        let version: i64 = self
            .redis
            .bridge
            .block(move |mut connection| async move {
                SAVE.key(bodies).key(versions).arg(field).arg(body).arg(expected).invoke_async(&mut connection).await
            })
            .map_err(|why| self.error(name, why))?;
        match u64::try_from(version) {
            Ok(version) => {
                self.remember(name, version);
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }
}

/// A version as `SAVE` takes it: none yet is 0.
fn count_of(version: Option<Version>) -> i64 {
    version.and_then(|version| version.count()).map_or(0, |count| i64::try_from(count).unwrap_or(i64::MAX))
}

impl Documents for RedisDocuments {
    fn load(&self, name: &str) -> Result<Option<Vec<u8>>, DocumentError> {
        let (bodies, versions, field) = (self.bodies.clone(), self.versions.clone(), name.to_owned());
        let (body, version): (Option<Vec<u8>>, Option<u64>) = self
            .redis
            .bridge
            .block(move |mut connection| async move {
                redis::pipe().hget(&bodies, &field).hget(&versions, &field).query_async(&mut connection).await
            })
            .map_err(|why| self.error(name, why))?;
        self.remember(name, version.unwrap_or(0));
        Ok(body)
    }

    fn save(&self, name: &str, bytes: &[u8]) -> Result<(), DocumentError> {
        self.write(name, bytes, -1).map(|_| ())
    }

    fn save_if(&self, name: &str, bytes: &[u8], expected: Option<Version>) -> Result<bool, DocumentError> {
        self.write(name, bytes, count_of(expected))
    }

    /// From what was last read or written here when that is recent; else asked of Redis
    /// (while it does not answer: the last version known).
    fn version(&self, name: &str) -> Option<Version> {
        let known = self.known.lock().unwrap_or_else(PoisonError::into_inner).get(name).copied();
        let version = match known {
            Some((version, at)) if at.elapsed() < VERSION_FRESH_FOR => version,
            _ => {
                let (versions, field) = (self.versions.clone(), name.to_owned());
                let asked = self.redis.bridge.block(move |mut connection| async move {
                    redis::cmd("HGET").arg(versions).arg(field).query_async::<Option<u64>>(&mut connection).await
                });
                match asked {
                    Ok(version) => {
                        let version = version.unwrap_or(0);
                        self.remember(name, version);
                        version
                    }
                    Err(_) => known.map_or(0, |(version, _)| version),
                }
            }
        };
        (version > 0).then(|| Version::counted(version))
    }

    fn names(&self) -> Result<Vec<String>, DocumentError> {
        let bodies = self.bodies.clone();
        let mut names: Vec<String> = self
            .redis
            .bridge
            .block(
                move |mut connection| async move { redis::cmd("HKEYS").arg(bodies).query_async(&mut connection).await },
            )
            .map_err(|why| self.error("", why))?;
        names.sort();
        Ok(names)
    }

    fn location(&self, name: &str) -> PathBuf {
        PathBuf::from(format!("redis:{}/{name}", self.kind))
    }
}

/// "Always" answers appended to the approvals replicas share (a document in Redis),
/// written over the version read, and appended again when another writer came first.
#[derive(Debug)]
pub struct RedisAlways {
    documents: std::sync::Arc<RedisDocuments>,
    name: String,
}

impl RedisAlways {
    /// Appends to document `name` of `documents`.
    pub fn new(documents: std::sync::Arc<RedisDocuments>, name: &str) -> RedisAlways {
        RedisAlways { documents, name: name.to_owned() }
    }
}

impl clawai_approvals::AlwaysWriter for RedisAlways {
    fn append(&self, entry: &clawai_approvals::AlwaysEntry) -> Result<String, clawai_approvals::AlwaysError> {
        let location = self.documents.location(&self.name);
        let failed =
            |error: DocumentError| clawai_approvals::AlwaysError::Io { path: location.clone(), error: error.source };
        for _ in 0..5 {
            let read = self.documents.version(&self.name);
            let existing = self.documents.load(&self.name).map_err(failed)?;
            let existing = existing.map(|bytes| String::from_utf8_lossy(&bytes).into_owned());
            let today = jiff::Zoned::now().date();
            let (text, id) = clawai_approvals::with_always(existing.as_deref(), entry, today, &location)?;
            if self.documents.save_if(&self.name, text.as_bytes(), read).map_err(failed)? {
                return Ok(id);
            }
        }
        Err(clawai_approvals::AlwaysError::Io {
            path: location,
            error: std::io::Error::other("the approvals kept changing while this answer was written; answer again"),
        })
    }
}
