//! How batches reach the collector: reqwest's blocking client, called on the SDK's own
//! export threads, with a time limit, and one warning when the collector cannot be
//! reached (not one per batch: a dead collector must not flood clawai's stderr, which a
//! client such as Claude Desktop keeps in its logs).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use opentelemetry_http::{HttpClient, HttpError};

/// The warning about a failing collector is printed once per process.
#[derive(Debug, Default)]
pub(crate) struct WarnOnce {
    warned: AtomicBool,
}

impl WarnOnce {
    /// Prints `message` the first time only; true when it did.
    pub(crate) fn warn(&self, message: impl FnOnce() -> String) -> bool {
        if self.warned.swap(true, Ordering::Relaxed) {
            return false;
        }
        tracing::warn!("{}", message());
        true
    }
}

/// An [`HttpClient`] for the OTLP exporters.
#[derive(Clone)]
pub(crate) struct CollectorClient {
    client: reqwest::blocking::Client,
    warning: Arc<WarnOnce>,
    /// The collector, as given (for the warning).
    endpoint: String,
}

impl fmt::Debug for CollectorClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CollectorClient").field("endpoint", &self.endpoint).finish_non_exhaustive()
    }
}

impl CollectorClient {
    /// A client giving up on a request after `timeout`. Built on a thread of its own:
    /// reqwest's blocking client starts a runtime of its own, which must not be done
    /// (or later dropped) inside an async runtime, and the caller may be in one.
    pub(crate) fn new(endpoint: &str, timeout: Duration, warning: Arc<WarnOnce>) -> Result<Self, reqwest::Error> {
        let client = std::thread::spawn(move || reqwest::blocking::Client::builder().timeout(timeout).build())
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
        Ok(CollectorClient { client, warning, endpoint: endpoint.to_owned() })
    }

    fn failed(&self, what: &dyn fmt::Display) {
        self.warning.warn(|| {
            format!(
                "cannot send telemetry to the OpenTelemetry collector at {} ({what}); decisions go on, telemetry that cannot be sent is dropped (this is said once)",
                self.endpoint
            )
        });
    }
}

#[async_trait::async_trait]
impl HttpClient for CollectorClient {
    /// Blocks the calling thread: the SDK calls it on its batch threads only.
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let request: reqwest::blocking::Request = request.try_into()?;
        let result = self.client.execute(request).and_then(|response| response.error_for_status());
        let mut response = match result {
            Ok(response) => response,
            Err(error) => {
                self.failed(&clawai_http::error_chain(&error));
                return Err(error.into());
            }
        };
        let headers = std::mem::take(response.headers_mut());
        let status = response.status();
        let mut reply = Response::builder().status(status).body(response.bytes()?)?;
        *reply.headers_mut() = headers;
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_warning_is_given_once() {
        let once = WarnOnce::default();
        assert!(once.warn(|| "first".into()));
        assert!(!once.warn(|| unreachable!("not built again")));
    }
}
