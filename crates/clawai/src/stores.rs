//! The stores this process keeps its state in, chosen once at start-up and handed to
//! everything that keeps state: this process's memory and files (the only kind built so
//! far; cluster mode adds a shared one behind the same interfaces).

use std::sync::OnceLock;

use clawai_store::Stores;

/// The stores of this process: every guard and gateway it starts shares them (one
/// keyring, so a token sealed for one session's guard opens in the same process only).
pub(crate) fn chosen() -> Stores {
    static STORES: OnceLock<Stores> = OnceLock::new();
    STORES.get_or_init(Stores::local).clone()
}
