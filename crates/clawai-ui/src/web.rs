//! The web page and its API: pending approvals, answers, the live stream, the state of
//! the audit trail's hash chain, and the pinned tools (`pins`).
//!
//! Only this machine's browser, opening the URL `clawai ui` printed, may use it:
//! `Host` must name the loopback address and port (a page elsewhere that re-points its
//! own name at 127.0.0.1 sends its own name), a present `Origin` must be the page's own,
//! and every `/api/` call carries the random token.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use clawai_approvals::{By, Scope};
use serde::Deserialize;
use tokio_stream::StreamExt;
use tokio_stream::wrappers::{BroadcastStream, WatchStream};

use crate::audit::AuditFeed;
use crate::broker::{Broker, Decision};
use crate::chain::ChainWatch;
use crate::pins;
use crate::secret::same_secret;

const PAGE: &str = include_str!("page/index.html");
const STYLE: &str = include_str!("page/app.css");
/// The page's scripts, loaded in this order (see index.html): helpers, the approvals,
/// the audit view, the pins view, and the one that connects the stream.
const SCRIPTS: [(&str, &str); 5] = [
    ("/common.js", include_str!("page/common.js")),
    ("/approvals.js", include_str!("page/approvals.js")),
    ("/audit.js", include_str!("page/audit.js")),
    ("/pins.js", include_str!("page/pins.js")),
    ("/app.js", include_str!("page/app.js")),
];

/// The page's own scripts and styles only, no framing, no inline code: data the page
/// shows can never become markup or script.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// What the handlers share.
pub(crate) struct Web {
    /// The pending approvals.
    pub broker: Arc<Broker>,
    /// The audit events.
    pub feed: Arc<AuditFeed>,
    /// The state of the trail's hash chain.
    pub chain: ChainWatch,
    /// The secret in the printed URL.
    pub token: String,
    /// `Host` values accepted (`127.0.0.1:PORT`, ...); `None` accepts any (`--public`).
    pub hosts: Option<Vec<String>>,
    /// The pin store shown and approved in (`clawai pins`'s, or the cluster's).
    pub pins: pins::Pins,
}

/// The router: every path goes through [`handle`].
pub(crate) fn router(web: Arc<Web>) -> axum::Router {
    axum::Router::new().fallback(handle).with_state(web)
}

fn plain(status: StatusCode, text: impl Into<String>) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text.into()).into_response()
}

fn json(status: StatusCode, value: serde_json::Value) -> Response {
    (status, [(header::CONTENT_TYPE, "application/json")], value.to_string()).into_response()
}

fn asset(content_type: &'static str, body: &'static str) -> Response {
    let mut response = ([(header::CONTENT_TYPE, content_type)], body).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Checks Host and Origin; `Some` is the refusal to send.
fn refuse_site(web: &Web, headers: &HeaderMap) -> Option<Response> {
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if let Some(hosts) = &web.hosts
        && !hosts.iter().any(|allowed| allowed.eq_ignore_ascii_case(host))
    {
        return Some(plain(
            StatusCode::FORBIDDEN,
            format!(
                "Host `{host}` is refused: this page answers only to {} (protection against DNS rebinding); open the URL `clawai ui` printed",
                hosts.join(", ")
            ),
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = format!("http://{host}");
        if !origin.to_str().is_ok_and(|o| o.eq_ignore_ascii_case(&own)) {
            let shown = String::from_utf8_lossy(origin.as_bytes());
            return Some(plain(
                StatusCode::FORBIDDEN,
                format!("requests from the origin `{shown}` are refused: only the page at {own} may call this API"),
            ));
        }
    }
    None
}

/// The token from `?token=` or `Authorization: Bearer`.
fn has_token(web: &Web, uri: &Uri, headers: &HeaderMap) -> bool {
    let from_query = uri
        .query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|pair| pair.strip_prefix("token="))
        .any(|given| same_secret(given.as_bytes(), web.token.as_bytes()));
    let from_header = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .is_some_and(|given| same_secret(given.trim().as_bytes(), web.token.as_bytes()));
    from_query || from_header
}

async fn handle(State(web): State<Arc<Web>>, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(refusal) = refuse_site(&web, &headers) {
        return refusal;
    }
    let path = uri.path();
    if !path.starts_with("/api/") {
        return match (&method, path) {
            (&Method::GET, "/") => asset("text/html; charset=utf-8", PAGE),
            (&Method::GET, "/app.css") => asset("text/css; charset=utf-8", STYLE),
            // The page names no icon file ("data:,"); a browser that asks anyway gets
            // nothing, not an error in its console.
            (&Method::GET, "/favicon.ico") => StatusCode::NO_CONTENT.into_response(),
            (&Method::GET, _) => match SCRIPTS.iter().find(|(name, _)| *name == path) {
                Some((_, script)) => asset("text/javascript; charset=utf-8", script),
                None => plain(StatusCode::NOT_FOUND, "not found"),
            },
            _ => plain(StatusCode::NOT_FOUND, "not found"),
        };
    }
    if !has_token(&web, &uri, &headers) {
        return plain(
            StatusCode::UNAUTHORIZED,
            "the token is missing or wrong: open the URL `clawai ui` printed (it is also in ui.url beside the broker's socket)",
        );
    }
    match (&method, path) {
        (&Method::GET, "/api/pending") => json(StatusCode::OK, serde_json::json!(web.broker.list())),
        (&Method::GET, "/api/stream") => stream(&web),
        (&Method::GET, "/api/audit/chain") => json(StatusCode::OK, serde_json::json!(web.chain.state().await)),
        (&Method::POST, "/api/approve" | "/api/deny") => answer(&web, path == "/api/deny", &headers, &body),
        (&Method::GET, "/api/pins" | "/api/pins/diff") | (&Method::POST, "/api/pins/approve") => {
            pins_api(&web, &method, &uri, &headers, body).await
        }
        _ => plain(StatusCode::NOT_FOUND, "no such API"),
    }
}

/// True when the body is declared `application/json`: a cross-site form cannot send
/// this content type without a CORS preflight, which the Origin check already refuses.
fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json")))
}

/// `/api/pins…`: the store read (and, for an approval, written) off the async threads.
async fn pins_api(web: &Web, method: &Method, uri: &Uri, headers: &HeaderMap, body: Bytes) -> Response {
    if method == Method::POST && !is_json(headers) {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the approval as application/json");
    }
    let dir = web.pins.clone();
    let (path, query) = (uri.path().to_owned(), uri.query().map(str::to_owned));
    let work = move || -> Result<serde_json::Value, pins::PinsError> {
        let query = query.as_deref();
        match path.as_str() {
            "/api/pins" => pins::list(&dir),
            "/api/pins/diff" => {
                let get = |key| pins::query_value(query, key);
                pins::review(&dir, &get("server")?, &get("kind")?, &get("name")?)
            }
            _ => pins::approve(&dir, &body),
        }
    };
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(value)) => json(StatusCode::OK, value),
        Ok(Err(error)) => json(error.status(), error.body()),
        Err(error) => plain(StatusCode::INTERNAL_SERVER_ERROR, format!("the pin store could not be read: {error}")),
    }
}

#[derive(Deserialize)]
struct AnswerBody {
    id: String,
    scope: Option<Scope>,
}

fn answer(web: &Web, deny: bool, headers: &HeaderMap, body: &[u8]) -> Response {
    // JSON only (see `is_json`).
    if !is_json(headers) {
        return plain(StatusCode::UNSUPPORTED_MEDIA_TYPE, "send the answer as application/json");
    }
    let Ok(request) = serde_json::from_slice::<AnswerBody>(body) else {
        return json(
            StatusCode::BAD_REQUEST,
            serde_json::json!({"error": "expected {\"id\": ID, \"scope\": \"once\"|\"session\"|\"always\"|\"always_any_arguments\"}"}),
        );
    };
    let decision = match (deny, request.scope) {
        (true, _) => Decision::Deny,
        (false, Some(scope)) => Decision::Approve(scope),
        (false, None) => {
            return json(
                StatusCode::BAD_REQUEST,
                serde_json::json!({"error": "scope is missing: once, session, always or always_any_arguments"}),
            );
        }
    };
    match web.broker.answer(&request.id, decision, By::Ui) {
        Ok(()) => json(StatusCode::OK, serde_json::json!({"ok": true})),
        Err(message) => json(StatusCode::CONFLICT, serde_json::json!({"error": message})),
    }
}

/// Server-sent events: `pending` (the whole list, now and whenever it changes) and
/// `audit` (the recent trail lines, then each new one).
fn stream(web: &Web) -> Response {
    let broker = web.broker.clone();
    let pending = WatchStream::new(broker.subscribe())
        .map(move |_| Event::default().event("pending").data(serde_json::json!(broker.list()).to_string()));
    let (recent, live) = web.feed.subscribe();
    let audit = tokio_stream::iter(recent)
        .chain(BroadcastStream::new(live).filter_map(Result::ok))
        .map(|line| Event::default().event("audit").data(&*line));
    let events = pending.merge(audit).map(Ok::<_, Infallible>);
    let mut response = Sse::new(events).keep_alive(KeepAlive::default()).into_response();
    response.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}
