//! A JSON-RPC message as the HTTP response that carries it, for the fronts' handlers
//! (`listen`, `batch`). A leaf: it uses no other module of the crate.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use clawai_protocol::mirror::SESSION_HEADER;

/// `body` (one JSON-RPC message, its trailing newlines dropped) as a response with this
/// status, naming the session when there is one.
pub(crate) fn json_bytes(status: StatusCode, mut body: Vec<u8>, session: Option<&str>) -> Response {
    while body.last() == Some(&b'\n') {
        body.pop();
    }
    let mut response = (status, [(header::CONTENT_TYPE, "application/json")], body).into_response();
    if let Some(id) = session {
        response.headers_mut().insert(SESSION_HEADER, HeaderValue::from_str(id).expect("hex session id"));
    }
    response
}
