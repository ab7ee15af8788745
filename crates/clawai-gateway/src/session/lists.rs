//! What the gateway answers itself: `initialize`, `server/discover`, `logging/setLevel`
//! and the merged lists, page by page from the session's view.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Instant;

use clawai_protocol::reply;
use serde_json::{Value, json};

use super::{HANDSHAKE_VERSIONS, MODERN_VERSION, Session, lock, server_info};
use crate::cursor::BadCursor;
use crate::lists::ListKind;
use crate::rewrite;
use crate::view::View;

impl Session {
    /// What the gateway can do: every list (servers that start late bring theirs, with
    /// `list_changed`), and logging and completions when a server has them.
    fn capabilities(&self) -> Value {
        let mut capabilities = json!({
            "tools": {"listChanged": true},
            "prompts": {"listChanged": true},
            "resources": {"subscribe": true, "listChanged": true},
        });
        for upstream in self.core.upstreams() {
            for extra in ["logging", "completions"] {
                if upstream.capability(extra).is_some() {
                    capabilities[extra] = json!({});
                }
            }
            // Task-augmented calls, and the session's tasks listed and cancelled
            // (`tasks`), when a server takes them.
            if upstream.capability("tasks").is_some() {
                capabilities["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
            }
            // The 2026-07-28 tasks extension, served as its servers serve it.
            if upstream
                .capability("extensions")
                .is_some_and(|extensions| extensions.get(super::tasks::EXTENSION).is_some())
            {
                capabilities["extensions"][super::tasks::EXTENSION] = json!({});
            }
        }
        capabilities
    }

    /// The instructions of the servers this session sees, each under its name.
    fn instructions(&self) -> Option<String> {
        let mut text = String::new();
        for upstream in self.core.upstreams() {
            if upstream.entry.internal_only {
                continue;
            }
            if let Some(instructions) = upstream
                .initialized()
                .and_then(|init| init.get("instructions").and_then(Value::as_str).map(str::to_owned))
            {
                let _ =
                    write!(text, "{}## {}\n{}", if text.is_empty() { "" } else { "\n\n" }, upstream.name, instructions);
            }
        }
        (!text.is_empty()).then_some(text)
    }

    pub(super) fn initialize(&self, id: &Value, params: &Value) {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = requested.filter(|v| HANDSHAKE_VERSIONS.contains(v)).unwrap_or(HANDSHAKE_VERSIONS[3]);
        let view = self.view();
        {
            let mut state = lock(&self.state);
            state.initialized = true;
            state.capabilities = params.get("capabilities").cloned().unwrap_or(Value::Null);
            state.announced = Some(view.digests);
            state.initialize = Some(params.clone());
        }
        for pair in lock(&self.pairs).values() {
            pair.guard.client_initialized(params);
        }
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": self.capabilities(),
            "serverInfo": server_info(),
        });
        if let Some(instructions) = self.instructions() {
            result["instructions"] = json!(instructions);
        }
        self.send(rewrite::result(id, result));
    }

    pub(super) fn discover(&self, id: &Value) {
        let mut versions: Vec<&str> = HANDSHAKE_VERSIONS.to_vec();
        versions.push(MODERN_VERSION);
        let mut result = json!({
            "supportedVersions": versions,
            "capabilities": self.capabilities(),
            "serverInfo": server_info(),
            "ttlMs": 0,
            "cacheScope": "private",
        });
        if let Some(instructions) = self.instructions() {
            result["instructions"] = json!(instructions);
        }
        self.answer(id, result, true);
    }

    pub(super) fn set_log_level(&self, id: &Value, params: &Value, modern: bool) {
        for upstream in self.core.upstreams() {
            // A per-client server's level is set in this session's instance, if it has one.
            let upstream = match upstream.is_per_client() {
                true => match upstream.instance_of(&self.id) {
                    Some(instance) => instance,
                    None => continue,
                },
                false => upstream,
            };
            if upstream.is_up() && upstream.capability("logging").is_some() {
                let params = params.clone();
                tokio::spawn(async move { upstream.set_log_level(params).await });
            }
        }
        self.answer(id, json!({}), modern);
    }

    /// One page of a merged list: the first from what the session sees now, the next
    /// ones from the snapshot the first was cut from (`crate::snapshots`), so that a
    /// list that changes while the client pages through it is neither torn nor refused.
    pub(super) fn list(&self, kind: ListKind, id: &Value, params: &Value, modern: bool) {
        let (view, offset) = match params.get("cursor") {
            None | Some(Value::Null) => (self.view(), 0),
            Some(Value::String(cursor)) => match self.page_of(kind, cursor) {
                Ok(page) => page,
                Err(bad) => return self.send(rewrite::error(id, reply::INVALID_PARAMS, bad_cursor(bad))),
            },
            Some(_) => return self.send(rewrite::error(id, reply::INVALID_PARAMS, bad_cursor(BadCursor::Forged))),
        };
        if offset == 0 {
            // The client has this list now: a change is news to it.
            if let Some(announced) = lock(&self.state).announced.as_mut() {
                announced[kind.index()] = view.digests[kind.index()];
            }
        }
        let page = self.core.options.page_size.max(1);
        let total = view.len(kind);
        let size: usize = view.listed(kind).skip(offset).take(page).map(|item| item.get().len() + 1).sum();
        let mut body = String::with_capacity(size + 512);
        let _ = write!(body, "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"{}\":[", kind.member());
        for (n, item) in view.listed(kind).skip(offset).take(page).enumerate() {
            if n > 0 {
                body.push(',');
            }
            body.push_str(item.get());
        }
        body.push(']');
        if offset + page < total {
            let snapshot = lock(&self.snapshots).keep(kind, &view, Instant::now());
            let cursor = self.core.cursors.seal(kind.method(), snapshot, offset + page);
            let _ = write!(body, ",\"nextCursor\":{}", json!(cursor));
        }
        if modern {
            let _ = write!(
                body,
                ",\"ttlMs\":0,\"cacheScope\":\"private\",\"resultType\":\"complete\",\"_meta\":{}",
                json!({rewrite::SERVER_INFO_META: server_info()})
            );
        }
        body.push_str("}}\n");
        self.send(body.into_bytes());
    }

    /// The snapshot a cursor pages through, and where its page starts.
    fn page_of(&self, kind: ListKind, cursor: &str) -> Result<(Arc<View>, usize), BadCursor> {
        let (snapshot, offset) = self.core.cursors.open(cursor, kind.method())?;
        let view = lock(&self.snapshots).get(kind, snapshot, Instant::now()).ok_or(BadCursor::Expired)?;
        Ok((view, offset))
    }
}

fn bad_cursor(bad: BadCursor) -> &'static str {
    match bad {
        BadCursor::Forged => "clawai gateway: this cursor is not one the gateway gave out; list again without a cursor",
        BadCursor::Expired => {
            "clawai gateway: this cursor expired (a listing's pages are kept for 5 minutes); list again without a cursor"
        }
    }
}
