//! The stores this process keeps its state in, chosen once at start-up and handed to
//! everything that keeps state: this process's memory and files, or, in cluster mode
//! (`--cluster URL`), Redis for sessions and the keyring.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clawai_proxy::guard::AskOptions;
use clawai_store::Stores;

/// The stores in Redis, once this process joined a cluster.
static CLUSTER: OnceLock<Stores> = OnceLock::new();

/// The connection to the cluster's Redis, once this process joined one (audit
/// checkpoints publish and read chain heads through it).
static CLUSTER_REDIS: OnceLock<clawai_store_redis::Redis> = OnceLock::new();

/// Where calls are held for a person once this process joined a cluster.
static CLUSTER_HELD: OnceLock<Arc<dyn clawai_approvals::HeldApprovals>> = OnceLock::new();

/// The stores of this process: every guard and gateway it starts shares them (one
/// keyring: locally, a token sealed for one session's guard opens in the same process
/// only; in a cluster, in every replica).
pub(crate) fn chosen() -> Stores {
    static LOCAL: OnceLock<Stores> = OnceLock::new();
    match CLUSTER.get() {
        Some(shared) => shared.clone(),
        None => LOCAL.get_or_init(Stores::local).clone(),
    }
}

/// Joins the cluster whose Redis is at `url` as replica `replica`: from now on
/// [`chosen`] names the stores there. Fails, saying what to do, when Redis does not
/// answer now.
pub(crate) fn join_cluster(url: &str, replica: &str) -> anyhow::Result<Stores> {
    if let Some(joined) = CLUSTER.get() {
        return Ok(joined.clone());
    }
    let shown = clawai_audit_ship::redacted(url);
    let redis = clawai_store_redis::Redis::connect(url, replica)
        .map_err(|error| anyhow::anyhow!("--cluster (CLAWAI_CLUSTER) {shown}: {error}"))?;
    let stores = redis.stores().map_err(|error| anyhow::anyhow!("--cluster (CLAWAI_CLUSTER) {shown}: {error}"))?;
    CLUSTER_REDIS.get_or_init(|| redis.clone());
    CLUSTER_HELD.get_or_init(|| Arc::new(clawai_store_redis::RedisHeld::new(redis)));
    Ok(CLUSTER.get_or_init(|| stores).clone())
}

/// Where the guards of a replica that joined a cluster hold calls for a person (in
/// Redis, relayed to any `clawai ui --cluster`); `None` before it joined.
pub(crate) fn cluster_held() -> Option<Arc<dyn clawai_approvals::HeldApprovals>> {
    CLUSTER_HELD.get().cloned()
}

/// The cluster's Redis, once this process joined a cluster.
pub(crate) fn cluster_redis() -> Option<clawai_store_redis::Redis> {
    CLUSTER_REDIS.get().cloned()
}

/// How the guards of this process ask a person: within `timeout`, with the standing
/// approvals of `approvals` (a file, locally), holding calls at the broker of `clawai ui`
/// on this machine, keeping session state in [`chosen`].
pub(crate) fn ask_options(timeout: Duration, approvals: PathBuf) -> AskOptions {
    AskOptions {
        timeout,
        standing: Some(Arc::new(clawai_policy::ApprovalsFile::new(approvals))),
        held: Arc::new(clawai_approvals::LocalBroker),
        stores: chosen(),
    }
}
