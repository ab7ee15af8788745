//! What the engine decides on: one intercepted message, reduced to the parts rules see.

use clawai_protocol::Json;
use clawai_protocol::methods;
use serde_json::Value;

/// The MCP tool annotations that rules can test, as the server declared them in
/// `tools/list`. Absent hints take the specification's defaults when read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolAnnotations {
    /// `readOnlyHint`; absent means `false`.
    pub read_only_hint: Option<bool>,
    /// `destructiveHint`; absent means `true` (meaningful only when not read-only).
    pub destructive_hint: Option<bool>,
}

impl ToolAnnotations {
    /// Reads the hints from a tool's `annotations` object; other fields are ignored.
    pub fn from_json(annotations: &Value) -> Self {
        ToolAnnotations {
            read_only_hint: annotations.get("readOnlyHint").and_then(Value::as_bool),
            destructive_hint: annotations.get("destructiveHint").and_then(Value::as_bool),
        }
    }

    /// Read-only as the specification defines it (absent = not read-only).
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }

    /// True when the server said anything of what the tool does (`readOnlyHint` or
    /// `destructiveHint`): only then do the defaults not stand in for it.
    pub fn is_annotated(&self) -> bool {
        self.read_only_hint.is_some() || self.destructive_hint.is_some()
    }

    /// Destructive as the specification defines it: not read-only, and
    /// `destructiveHint` true or absent.
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.destructive_hint.unwrap_or(true)
    }
}

/// One message to decide on.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The JSON-RPC method (`tools/call`, `resources/read`, …).
    pub method: &'a str,
    /// The tool name (`tools/call`), resource URI (`resources/read`) or prompt name
    /// (`prompts/get`); `None` for other methods or when absent.
    pub name: Option<&'a str>,
    /// What argument conditions look at: `params.arguments` for `tools/call` and
    /// `prompts/get`, the whole `params` otherwise.
    pub arguments: Option<&'a Json<'a>>,
    /// The server's name, as given to the proxy with `--server`.
    pub server: Option<&'a str>,
    /// The tool's annotations as recorded from `tools/list`; `None` when the tool was
    /// never listed (then the specification's defaults apply: destructive, not read-only).
    pub annotations: Option<ToolAnnotations>,
    /// Where an absolute path leads on the server's machine once symbolic links are
    /// followed; `None` (the default, and in CI) matches paths as spelled.
    pub follow_links: Option<FollowLinks>,
}

/// Where the absolute path it is given leads once symbolic links are followed, when
/// that differs from the path (`None` when it does not, or when it cannot be known).
/// The proxy plugs one in for servers on its own machine, so that conditions see
/// `/allowed/link/id_rsa`, with `link` pointing at `~/.ssh`, as the key it opens: a
/// deny-like condition holds on either path, an allow only on both.
pub type FollowLinks = fn(&str) -> Option<String>;

impl<'a> Call<'a> {
    /// Builds a call from a method and its `params`, picking name and arguments the way
    /// each method carries them.
    pub fn from_params(method: &'a str, params: Option<&'a Json<'a>>) -> Self {
        let field = |key: &str| params.and_then(|p| p.get(key));
        let (name, arguments) = match method {
            methods::TOOLS_CALL | methods::PROMPTS_GET => (field("name").and_then(Json::as_str), field("arguments")),
            methods::RESOURCES_READ => (field("uri").and_then(Json::as_str), params),
            _ => (None, params),
        };
        Call { method, name, arguments, server: None, annotations: None, follow_links: None }
    }

    /// The same call, from the named server.
    pub fn with_server(mut self, server: Option<&'a str>) -> Self {
        self.server = server;
        self
    }

    /// The same call, with the tool's recorded annotations.
    pub fn with_annotations(mut self, annotations: Option<ToolAnnotations>) -> Self {
        self.annotations = annotations;
        self
    }

    /// The same call, with symbolic links followed by `follow` (see [`FollowLinks`]).
    pub fn with_links_followed(mut self, follow: Option<FollowLinks>) -> Self {
        self.follow_links = follow;
        self
    }

    /// The effective annotations (defaults when the tool was never listed).
    pub fn effective_annotations(&self) -> ToolAnnotations {
        self.annotations.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn annotation_defaults_follow_the_spec() {
        let none = ToolAnnotations::default();
        assert!(none.is_destructive() && !none.is_read_only());
        let ro = ToolAnnotations::from_json(&json!({"readOnlyHint": true}));
        assert!(ro.is_read_only() && !ro.is_destructive());
        let safe = ToolAnnotations::from_json(&json!({"destructiveHint": false}));
        assert!(!safe.is_destructive());
        let ro_but_destructive = ToolAnnotations::from_json(&json!({"readOnlyHint": true, "destructiveHint": true}));
        assert!(!ro_but_destructive.is_destructive(), "destructiveHint only counts when not read-only");
    }

    #[test]
    fn name_and_arguments_per_method() {
        let p = json!({"name": "read_file", "arguments": {"path": "/x"}});
        let p_json = Json::from(&p);
        let c = Call::from_params("tools/call", Some(&p_json));
        assert_eq!(c.name, Some("read_file"));
        assert_eq!(c.arguments.map(Json::to_value), Some(json!({"path": "/x"})));
        let r = json!({"uri": "file:///etc/passwd"});
        let r_json = Json::from(&r);
        let c = Call::from_params("resources/read", Some(&r_json));
        assert_eq!(c.name, Some("file:///etc/passwd"));
        assert_eq!(c.arguments.map(Json::to_value), Some(r.clone()));
    }
}
