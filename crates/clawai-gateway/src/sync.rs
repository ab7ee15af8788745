//! Locks every module takes, the crate root included (kept out of the root, which
//! depends on everything).

/// Locks a mutex, taking it over from a thread that panicked holding it (what it
/// guards stays usable: maps of requests in flight, sessions, lists).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
