//! The `clawai ui --cluster` side of held approvals: while it runs, Redis says so (a
//! replica holds calls for a person only then), and every call a replica holds in Redis
//! is asked of this ui's broker under the same id, as a local proxy would ask it. The
//! page and `clawai approve` on this machine answer it there; the answer is written to
//! Redis, where it wins only if the replica still waits.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clawai_approvals::{Ask, Client, PendingItem, State};

use crate::Redis;
use crate::held::{ANSWER, by_word, entry_key, index_key, outcome_of, outcome_word, presence_key};

/// How often Redis is looked at for calls held and for their fate.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// How long the mark that a ui runs lasts unless renewed (it is renewed every look).
const PRESENCE_MS: u64 = 3000;

/// What Redis holds of one call.
struct Held {
    ask: Option<Ask>,
    state: Option<String>,
    outcome: Option<String>,
}

fn held(redis: &Redis, id: &str) -> Option<Held> {
    let entry = entry_key(id);
    let (ask, state, outcome): (Option<String>, Option<String>, Option<String>) = redis
        .bridge
        .block(move |mut c| async move {
            redis::cmd("HMGET").arg(entry).arg("ask").arg("state").arg("outcome").query_async(&mut c).await
        })
        .ok()?;
    Some(Held { ask: ask.and_then(|ask| serde_json::from_str(&ask).ok()), state, outcome })
}

/// The ids of the calls held in Redis, oldest first, with when each was held (ms).
fn held_ids(redis: &Redis) -> Vec<(String, i64)> {
    let index = index_key();
    redis
        .bridge
        .block(move |mut c| async move {
            redis::cmd("ZRANGE").arg(index).arg(0).arg(-1).arg("WITHSCORES").query_async(&mut c).await
        })
        .unwrap_or_default()
}

/// Every call held in Redis, as `clawai approvals` lists them.
pub fn pending(redis: &Redis) -> Vec<PendingItem> {
    let mut items = Vec::new();
    for (id, score) in held_ids(redis) {
        let Some(Held { ask: Some(ask), state: Some(state), .. }) = held(redis, &id) else {
            let (index, gone) = (index_key(), id.clone());
            let _ = redis.bridge.block(move |mut c| async move {
                redis::cmd("ZREM").arg(index).arg(gone).query_async::<i64>(&mut c).await
            });
            continue;
        };
        let state = match state.as_str() {
            "waiting" => State::Waiting,
            "expired" => State::Expired,
            _ => continue,
        };
        let asked_at = jiff::Timestamp::from_millisecond(score)
            .map(|at| at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
            .unwrap_or_default();
        items.push(PendingItem::of(ask, id, asked_at, state));
    }
    items
}

/// Marks that a ui runs and relays held calls to the broker at `socket`, every
/// [`LOOK_EVERY`], until `stop` is set.
pub fn relay(redis: Redis, socket: PathBuf, stop: Arc<AtomicBool>) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name("clawai-held-relay".into()).spawn(move || {
        let mut relayed: HashSet<String> = HashSet::new();
        while !stop.load(Ordering::SeqCst) {
            let presence = presence_key();
            let _ = redis.bridge.block(move |mut c| async move {
                redis::cmd("SET").arg(presence).arg(1).arg("PX").arg(PRESENCE_MS).query_async::<()>(&mut c).await
            });
            let ids: Vec<String> = held_ids(&redis).into_iter().map(|(id, _)| id).collect();
            relayed.retain(|id| ids.contains(id));
            for id in ids {
                if relayed.contains(&id) {
                    continue;
                }
                if let Some(Held { ask: Some(ask), state: Some(state), .. }) = held(&redis, &id)
                    && state == "waiting"
                {
                    relayed.insert(id.clone());
                    let (redis, socket) = (redis.clone(), socket.clone());
                    let spawned = std::thread::Builder::new()
                        .name("clawai-held-ask".into())
                        .spawn(move || relay_one(&redis, &socket, &id, &ask));
                    if let Err(why) = spawned {
                        tracing::warn!("cannot relay a held call: {why}");
                    }
                }
            }
            std::thread::sleep(LOOK_EVERY);
        }
        let presence = presence_key();
        let _ = redis
            .bridge
            .block(move |mut c| async move { redis::cmd("DEL").arg(presence).query_async::<i64>(&mut c).await });
    })
}

/// Asks the local broker about one held call and carries its fate both ways.
fn relay_one(redis: &Redis, socket: &std::path::Path, id: &str, ask: &Ask) {
    // The broker's socket may not be up yet when the relay starts with the ui.
    let mut asked = Client::connect_to(socket).and_then(|client| client.ask(ask));
    for _ in 0..20 {
        if !matches!(asked, Err(clawai_approvals::Error::NoBroker(_))) {
            break;
        }
        std::thread::sleep(LOOK_EVERY / 2);
        asked = Client::connect_to(socket).and_then(|client| client.ask(ask));
    }
    let mut pending = match asked {
        Ok(pending) => pending,
        Err(why) => return tracing::warn!("cannot list held call {id} here: {why}"),
    };
    loop {
        match pending.wait(LOOK_EVERY) {
            Ok(Some(answer)) => {
                let (entry, outcome, by) = (entry_key(id), outcome_word(answer.outcome), by_word(answer.by));
                let won = redis.bridge.block(move |mut c| async move {
                    ANSWER.key(entry).arg(outcome).arg(by).invoke_async::<i64>(&mut c).await
                });
                if !matches!(won, Ok(1)) {
                    tracing::info!("the answer to {id} came too late: the replica had stopped waiting");
                }
                return;
            }
            Ok(None) => {}
            Err(_) => return, // the broker went away or dropped it
        }
        match held(redis, id).and_then(|held| held.state.map(|state| (state, held.outcome))) {
            Some((state, _)) if state == "waiting" => {}
            Some((state, _)) if state == "expired" => {
                // Listed on as expired: approving it grants the retry, as on one machine.
                let _ = pending.timed_out();
                return;
            }
            // Answered elsewhere (`clawai approve --cluster`), withdrawn, or gone.
            answered => {
                let elsewhere = answered.and_then(|(_, outcome)| outcome).and_then(|o| outcome_of(&o));
                tracing::debug!("held call {id} was settled elsewhere: {elsewhere:?}");
                if let Ok(canceller) = pending.canceller() {
                    let _ = canceller.cancel();
                }
                return;
            }
        }
    }
}
