//! Why a request could not reach the upstream, in words a user can act on.

use reqwest::Url;

/// An error and its causes, on one line (`error sending request: client error
/// (Connect): tcp connect error: Connection refused`): reqwest's own message alone says
/// little.
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Why a request could not reach `url`, in words that name the cause (reqwest's own
/// message says only "error sending request").
pub(super) fn unreachable(url: &Url, error: &reqwest::Error) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    let mut deepest = None;
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            let what = match io.kind() {
                std::io::ErrorKind::ConnectionRefused => "connection refused",
                std::io::ErrorKind::TimedOut => "connection timed out",
                std::io::ErrorKind::ConnectionReset => "connection reset",
                _ => "",
            };
            if !what.is_empty() {
                return format!("{what} to {url}: is the server running and listening there?");
            }
        }
        deepest = Some(cause);
        source = cause.source();
    }
    let cause = deepest.map(ToString::to_string).unwrap_or_else(|| error.to_string());
    if error.is_timeout() || error.is_connect() {
        format!("cannot connect to {url}: {cause}")
    } else {
        format!("the request to {url} failed: {cause}")
    }
}
