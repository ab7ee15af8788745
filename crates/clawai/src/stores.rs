//! The stores this process keeps its state in, chosen once at start-up and handed to
//! everything that keeps state: this process's memory and files (the only kind built so
//! far; cluster mode adds a shared one behind the same interfaces).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clawai_proxy::guard::AskOptions;
use clawai_store::Stores;

/// The stores of this process: every guard and gateway it starts shares them (one
/// keyring, so a token sealed for one session's guard opens in the same process only).
pub(crate) fn chosen() -> Stores {
    static STORES: OnceLock<Stores> = OnceLock::new();
    STORES.get_or_init(Stores::local).clone()
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
