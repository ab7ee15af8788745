//! A spawned task tied to its requester. A leaf.

/// Aborts a spawned task when dropped: a call whose requester is gone (cancelled, or
/// disconnected) does not run on.
pub(crate) struct AbortOnDrop(pub(crate) tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
