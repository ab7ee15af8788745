//! What an HTTP front needs to know about a message to route it: its id, whether it is
//! a request or a response, and its progress token. Read with the skim (no full parse)
//! where it can, strictly otherwise.

use clawai_protocol::skim::{member, members_named, skim};
use serde::Deserialize;
use serde_json::value::RawValue;

/// Routing facts of one message; ids and tokens as written (raw JSON text).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Route {
    /// The id, as written.
    pub id: Option<String>,
    /// The method, when the message is a request or notification.
    pub method: Option<String>,
    /// `params._meta.progressToken`, as written.
    pub progress_token: Option<String>,
    /// `params._meta["io.modelcontextprotocol/subscriptionId"]`, as written: the
    /// `subscriptions/listen` request a notification belongs to (2026-07-28).
    pub subscription: Option<String>,
}

/// `_meta` key naming the subscription a notification belongs to.
pub(crate) const SUBSCRIPTION_ID_META: &str = "io.modelcontextprotocol/subscriptionId";

#[derive(Deserialize)]
struct View<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(default)]
    method: Option<String>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
}

impl Route {
    /// Reads the routing facts of `message`; empty when it is not a JSON object.
    pub(crate) fn of(message: &[u8]) -> Route {
        let (id, method, params) = match skim(message) {
            Some(s) => (s.id.map(<[u8]>::to_vec), s.method.map(str::to_owned), s.params.map(<[u8]>::to_vec)),
            None => match serde_json::from_slice::<View>(message) {
                Ok(view) => (
                    view.id.map(|id| id.get().as_bytes().to_vec()),
                    view.method,
                    view.params.map(|p| p.get().as_bytes().to_vec()),
                ),
                Err(_) => return Route::default(),
            },
        };
        let meta = params.as_deref().and_then(|params| member(params, b"_meta"));
        let [progress_token, subscription] = match meta {
            Some(meta) => members_named(meta, [b"progressToken".as_slice(), SUBSCRIPTION_ID_META.as_bytes()]),
            None => [None, None],
        };
        let text = |raw: &[u8]| String::from_utf8_lossy(raw).into_owned();
        Route {
            id: id.map(|id| text(&id)),
            method,
            progress_token: progress_token.map(text),
            subscription: subscription.map(text),
        }
    }

    /// [`Route::of`]; for a batch of answers, the route of its first answer (a batch is
    /// answered as a whole, to the stream of its requests).
    pub(crate) fn of_message_or_batch(message: &[u8]) -> Route {
        if message.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            let answers: Vec<&RawValue> = serde_json::from_slice(message).unwrap_or_default();
            return answers.first().map(|first| Route::of(first.get().as_bytes())).unwrap_or_default();
        }
        Route::of(message)
    }

    /// A request: a method and an id.
    pub(crate) fn is_request(&self) -> bool {
        self.method.is_some() && self.id.is_some()
    }

    /// A response: an id and no method.
    pub(crate) fn is_response(&self) -> bool {
        self.method.is_none() && self.id.is_some()
    }

    /// For `notifications/progress`: the token it reports on (`params.progressToken`).
    pub(crate) fn reported_progress_token(message: &[u8]) -> Option<String> {
        let params = skim(message)?.params?;
        member(params, b"progressToken").map(|token| String::from_utf8_lossy(token).into_owned())
    }
}

/// Whether `needle` occurs in `haystack` (a quick look before a full parse).
pub(crate) fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_responses_and_tokens() {
        let request = Route::of(
            br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x","_meta":{"progressToken":7}}}"#,
        );
        assert!(request.is_request());
        assert_eq!(request.id.as_deref(), Some("\"a\""));
        assert_eq!(request.progress_token.as_deref(), Some("7"));
        let response = Route::of(br#"{"jsonrpc":"2.0","id":12345678901234567890123,"result":{}}"#);
        assert!(response.is_response());
        assert_eq!(response.id.as_deref(), Some("12345678901234567890123"));
        let progress =
            br#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
        assert_eq!(Route::reported_progress_token(progress).as_deref(), Some("\"t\""));
        assert_eq!(Route::of(b"[1,2]"), Route::default());
        let told = br#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"clawai-3"}}}"#;
        assert_eq!(Route::of(told).subscription.as_deref(), Some("\"clawai-3\""));
    }
}
