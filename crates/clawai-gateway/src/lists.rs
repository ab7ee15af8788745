//! What a server lists, as the gateway lists it: the four kinds of list, and each
//! server's items rendered once under the gateway's names (when the server's list
//! changes). Below both the servers (`upstream`), which keep their lists, and the
//! catalog, which merges them.

use clawai_protocol::methods;
use std::sync::Arc;

use clawai_policy::ToolAnnotations;
use serde_json::Value;

use crate::names;

/// The four lists a server may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl ListKind {
    /// Every kind, in the order lists are kept.
    pub(crate) const ALL: [ListKind; 4] =
        [ListKind::Tools, ListKind::Prompts, ListKind::Resources, ListKind::Templates];

    /// The position of the kind in per-kind arrays.
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The method that lists it.
    pub(crate) fn method(self) -> &'static str {
        match self {
            ListKind::Tools => methods::TOOLS_LIST,
            ListKind::Prompts => methods::PROMPTS_LIST,
            ListKind::Resources => methods::RESOURCES_LIST,
            ListKind::Templates => methods::RESOURCES_TEMPLATES_LIST,
        }
    }

    /// The kind a list method asks for.
    pub(crate) fn of_method(method: &str) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|kind| kind.method() == method)
    }

    /// The member of the result that holds the items.
    pub(crate) fn member(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
        }
    }

    /// The server capability that says the list exists.
    pub(crate) fn capability(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources | ListKind::Templates => "resources",
        }
    }

    /// The member that names an item (`name`, or the URI).
    fn key(self) -> &'static str {
        match self {
            ListKind::Tools | ListKind::Prompts => "name",
            ListKind::Resources => "uri",
            ListKind::Templates => "uriTemplate",
        }
    }
}

/// A server's items of one kind, rendered under the gateway's names: done once when
/// the server's list changes. An item listed twice keeps its first.
pub(crate) fn render(kind: ListKind, server: &str, items: Vec<Value>) -> Vec<Listed> {
    let mut seen = std::collections::HashSet::new();
    let mut rendered = Vec::with_capacity(items.len());
    for mut item in items {
        let Some(original) = item.get(kind.key()).and_then(Value::as_str).map(str::to_owned) else { continue };
        let listed = match kind {
            ListKind::Tools | ListKind::Prompts => names::namespaced(server, &original),
            ListKind::Resources | ListKind::Templates => names::resource_uri(server, &original),
        };
        if !seen.insert(listed.clone()) {
            tracing::warn!("{server}: `{original}` is listed twice; the first is kept");
            continue;
        }
        let annotations = item.get("annotations").map(ToolAnnotations::from_json).unwrap_or_default();
        item[kind.key()] = Value::String(listed.clone());
        let json = serde_json::value::to_raw_value(&item).expect("a JSON value encodes");
        let full_name = format!("{server}{}{original}", names::SEPARATOR);
        rendered.push(Listed { original, listed, full_name, json, annotations });
    }
    rendered
}

/// What the server listed, each item ready to be listed by the gateway (rendered once,
/// when the server's list changes; the parsed items are not kept).
#[derive(Default)]
pub(crate) struct Lists {
    /// The items of each [`ListKind`].
    pub items: [Arc<Vec<Listed>>; 4],
    /// Bumped whenever a list changes.
    pub version: u64,
}

/// One item of a server's list, as the gateway lists it.
pub(crate) struct Listed {
    /// The server's own name (or URI) for it.
    pub original: String,
    /// The gateway's name (or URI) for it.
    pub listed: String,
    /// `S__name` in full (what `agent.allowedTools` and skills match), even when the
    /// listed name is a short form.
    pub full_name: String,
    /// The item as clients see it, encoded once.
    pub json: Box<serde_json::value::RawValue>,
    /// What a tool says of itself (`readOnlyHint`, `destructiveHint`), for the policy.
    pub annotations: clawai_policy::ToolAnnotations,
}
