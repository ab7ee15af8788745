//! JSON-RPC batches over `--listen`, in sessions that negotiated protocol 2025-03-26
//! (the one revision whose Streamable HTTP accepts a batch as a POST body).
//!
//! The session's guard decides every element and forwards the allowed ones one by one;
//! it gathers the answers (denials, the server's responses) into one array, which comes
//! back through the session like any message for this POST: every request id of the
//! batch is registered on the POST's stream, and the array is routed by its first
//! answer's id. The POST answers with the array as JSON; a batch without requests gets
//! 202.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use clawai_protocol::reply;
use serde_json::value::RawValue;

use crate::json_response::json_bytes;
use crate::route::Route;
use crate::session::Session;

/// Unregisters a batch's ids when its POST is answered or given up.
struct Registered {
    session: Arc<Session>,
    ids: Vec<String>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        for id in &self.ids {
            self.session.unregister(id);
        }
    }
}

/// The ids (as written) of the requests among a batch's elements.
fn request_ids(body: &[u8]) -> Vec<String> {
    let elements: Vec<&RawValue> = serde_json::from_slice(body).unwrap_or_default();
    elements
        .iter()
        .map(|element| Route::of(element.get().as_bytes()))
        .filter(Route::is_request)
        .filter_map(|r| r.id)
        .collect()
}

/// Relays a batch POSTed in a session that takes batches, and answers the POST.
pub(crate) async fn post(session: Arc<Session>, body: &[u8]) -> Response {
    let ids = request_ids(body);
    let mut answers = session.register_all(&ids);
    let registered = Registered { session: Arc::clone(&session), ids };
    match session.relay_from_client(body.to_vec()).await {
        Ok(None) => {}
        Ok(Some(refusal)) => return json_bytes(StatusCode::BAD_REQUEST, refusal, None),
        Err(()) => {
            let error = reply::error(None, reply::SERVER_UNAVAILABLE, "clawai: the server is gone", None);
            return json_bytes(StatusCode::OK, error, None);
        }
    }
    if registered.ids.is_empty() {
        return StatusCode::ACCEPTED.into_response();
    }
    while let Some(message) = answers.recv().await {
        // Server messages meant for a request of the batch (progress…) are not
        // relayed: the batch is answered as JSON, not as an event stream.
        if message.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            return json_bytes(StatusCode::OK, message, None);
        }
    }
    let error = reply::error(None, reply::SERVER_UNAVAILABLE, "clawai: the server is gone", None);
    json_bytes(StatusCode::OK, error, None)
}
