//! Tasks (2025-11-25): a task-augmented `tools/call` answers with a task, which its
//! client then asks about with `tasks/get`, `tasks/result`, `tasks/cancel` and lists with
//! `tasks/list`. Through the gateway a task is named `SERVER__taskId` (two servers' ids
//! never meet), belongs to the session that created it (another session's requests for it
//! get the error an unknown task gets), and each request about it goes to the server
//! instance that holds it, under an id of the gateway's, through the session's guard.
//! `tasks/list` answers with the session's own tasks, as their servers last reported them;
//! a server's `notifications/tasks/status` goes to the task's session only.
//!
//! The tasks extension of 2026-07-28 (`io.modelcontextprotocol/tasks`) is served the same
//! way: a call answered `resultType: "task"` (the task's fields in the result itself)
//! creates the session's task, `tasks/get`, `tasks/update` (the client's `inputResponses`
//! for the task's `inputRequests`) and `tasks/cancel` go to the server that holds it, and
//! its `notifications/tasks` to the task's session only.

use std::sync::Arc;

use clawai_protocol::{methods, reply};
use serde_json::{Value, json};

use super::{Session, lock};
use crate::names;
use crate::rewrite;
use crate::upstream::Upstream;

/// The tasks extension's request carrying a client's input for a task.
pub(crate) const UPDATE: &str = "tasks/update";
pub(crate) use crate::rewrite::{TASKS_EXTENSION as EXTENSION, TASKS_NOTIFIED as NOTIFIED};

/// `_meta` key that ties a message to a task.
const RELATED_TASK_META: &str = "io.modelcontextprotocol/related-task";

/// A task of this session's.
pub(crate) struct Task {
    /// The server instance that holds it.
    instance: u64,
    /// The task as its server last reported it, under the gateway's id.
    last: Value,
}

impl Session {
    /// `tasks/get`, `tasks/result`, `tasks/cancel`, `tasks/update`: to the server that
    /// holds the task; `tasks/list`: the session's tasks.
    pub(super) async fn task_request(self: &Arc<Self>, method: &str, id: Value, mut message: Value, modern: bool) {
        if method == methods::TASKS_LIST {
            let tasks: Vec<Value> = lock(&self.tasks).values().map(|task| task.last.clone()).collect();
            return self.answer(&id, json!({"tasks": tasks}), modern);
        }
        let listed = message.pointer("/params/taskId").and_then(Value::as_str).unwrap_or_default().to_owned();
        let known = lock(&self.tasks).contains_key(&listed);
        let split = listed.split_once(names::SEPARATOR).filter(|_| known);
        // The server by its name: a per-client one's calls go to this session's instance.
        let upstream = split.and_then(|(server, _)| self.core.upstream(server));
        let (Some(upstream), Some((_, original))) = (upstream, split) else {
            let why = format!("clawai gateway: no task `{listed}` in this session; list them with tasks/list");
            return self.send(rewrite::error(&id, reply::INVALID_PARAMS, &why));
        };
        message["params"]["taskId"] = json!(original);
        self.forward(&upstream, id, message).await;
    }

    /// A server's answer on its way to this session's client: the tasks it names get the
    /// gateway's names, and a task it creates becomes this session's.
    pub(crate) fn tasks_answered(&self, upstream: &Upstream, result: &mut Value) {
        let server = &upstream.name;
        if let Some(task) = result.get_mut("task").filter(|task| task.get("taskId").is_some()) {
            rename(task, server);
            self.keep_task(upstream, task.clone());
        }
        if result.get("taskId").is_some() && result.get("status").is_some() {
            rename(result, server);
            self.keep_task(upstream, result.clone());
        }
        if let Some(tasks) = result.get_mut("tasks").and_then(Value::as_array_mut) {
            tasks.iter_mut().for_each(|task| rename(task, server));
        }
        if let Some(related) = result.pointer_mut(&format!("/_meta/{}", RELATED_TASK_META.replace('/', "~1"))) {
            rename(related, server);
        }
    }

    /// The status of one of this session's tasks changed: the client is told, under the
    /// task's gateway name. False when the task is not this session's.
    pub(crate) fn task_status(&self, upstream: &Upstream, message: &Value) -> bool {
        let Some(original) = message.pointer("/params/taskId").and_then(Value::as_str) else { return false };
        let listed = listed_id(&upstream.name, original);
        let mut tasks = lock(&self.tasks);
        let Some(task) = tasks.get_mut(&listed).filter(|task| task.instance == upstream.instance) else { return false };
        let mut message = message.clone();
        message["params"]["taskId"] = json!(listed);
        if let Some(params) = message.get("params").filter(|params| params.get("status").is_some()) {
            task.last = params.clone();
        }
        drop(tasks);
        if message.get("method").and_then(Value::as_str) == Some(NOTIFIED) {
            // The extension's notifications come on the subscriptions that follow the task.
            let params = message.get("params").cloned().unwrap_or_else(|| json!({}));
            self.tell_task_subscriptions(&listed, params);
        } else {
            self.send(rewrite::encode(&message));
        }
        true
    }

    /// The server instance that holds this session's task `listed`, and the task's own
    /// id there, when the task is this session's.
    pub(super) async fn task_server(self: &Arc<Self>, listed: &str) -> Option<(Arc<Upstream>, String)> {
        let instance = lock(&self.tasks).get(listed)?.instance;
        let (server, original) = listed.split_once(names::SEPARATOR)?;
        let upstream = self.core.upstream(server)?.serving((self.key, &self.id)).await.ok()?;
        (upstream.instance == instance).then(|| (upstream, original.to_owned()))
    }

    fn keep_task(&self, upstream: &Upstream, task: Value) {
        let Some(listed) = task.get("taskId").and_then(Value::as_str).map(str::to_owned) else { return };
        let mut tasks = lock(&self.tasks);
        match tasks.get_mut(&listed) {
            Some(known) => known.last = task,
            None => {
                tasks.insert(listed, Task { instance: upstream.instance, last: task });
            }
        }
    }
}

/// A task object's `taskId` under the gateway's name for server `server`.
fn rename(task: &mut Value, server: &str) {
    if let Some(original) = task.get("taskId").and_then(Value::as_str) {
        task["taskId"] = json!(listed_id(server, original));
    }
}

/// A task's name through the gateway: `SERVER__taskId`, never shortened (the id is the
/// server's to read back).
fn listed_id(server: &str, original: &str) -> String {
    format!("{server}{}{original}", names::SEPARATOR)
}
