//! The broker's protocol: JSON lines over a Unix socket, one object per line.
//!
//! A proxy opens one connection per asked call: it sends [`Request::Ask`], gets
//! [`Reply::Queued`] (or at once an [`Reply::Answer`] when a grant for the same call
//! exists), then either the person's [`Reply::Answer`], or it gives up with
//! [`Request::Timeout`] (the approval stays listed, and approving it grants the next
//! identical call) or [`Request::Cancel`]. The terminal commands open one connection per
//! command: [`Request::List`], [`Request::Approve`], [`Request::Deny`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A call waiting for a person, as the proxy describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ask {
    /// The proxy's session (the audit trail's `session`).
    pub session: String,
    /// The server's name, when the proxy has one.
    pub server: Option<String>,
    /// The JSON-RPC method (`tools/call`, `resources/read`, ...).
    pub method: String,
    /// The tool, resource URI or prompt name.
    pub name: Option<String>,
    /// The call's arguments, secrets already redacted.
    pub arguments: Value,
    /// The id of the rule that asked for a person.
    pub rule: Option<String>,
    /// That rule's description.
    pub description: Option<String>,
    /// Why the call needs approval, in words.
    pub reason: String,
    /// A digest binding server, method, name and canonical arguments: a grant left by an
    /// approval that came after the proxy stopped waiting is used by the next ask with the
    /// same key.
    pub key: String,
    /// How long the proxy waits before it stops holding the call.
    pub timeout_ms: u64,
    /// The id to list the call under, when it has one already: a call held in a shared
    /// store (cluster mode) and relayed to a `clawai ui`, so that a person sees and
    /// types the same id everywhere. `None`: the broker gives it one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// What a person (or a grant) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Let this call through.
    AllowOnce,
    /// Let this call, and the identical call later in the same session, through.
    AllowSession,
    /// Let it through; an `[[allow]]` entry was written to approvals.toml.
    AllowAlways,
    /// Refuse it.
    Deny,
}

/// How far an approval reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// This call only.
    Once,
    /// The identical call for the rest of the proxy's session.
    Session,
    /// Matching calls from now on (written to approvals.toml): this tool with the
    /// arguments shown (each exactly, a path by its directory).
    Always,
    /// This tool with any arguments from now on: the explicit, wider choice.
    #[serde(rename = "always_any_arguments")]
    AlwaysAnyArguments,
}

impl Scope {
    /// The outcome an approval with this scope gives.
    pub fn outcome(self) -> Outcome {
        match self {
            Scope::Once => Outcome::AllowOnce,
            Scope::Session => Outcome::AllowSession,
            Scope::Always | Scope::AlwaysAnyArguments => Outcome::AllowAlways,
        }
    }
}

/// Who answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum By {
    /// A grant left by an approval given after an earlier identical call timed out.
    Grant,
    /// A person in the web page.
    Ui,
    /// A person at the terminal (`clawai approve`, `clawai deny`).
    Cli,
}

/// The answer to an ask.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answer {
    /// The approval's id.
    pub id: String,
    /// What was decided.
    pub outcome: Outcome,
    /// Who decided.
    pub by: By,
}

/// Whether the proxy still holds the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// The proxy holds the call; an answer goes straight to it.
    Waiting,
    /// The proxy stopped waiting; an approval grants the next identical call.
    Expired,
}

/// One pending approval, as listed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PendingItem {
    /// The approval's id (`K7P2QD`).
    pub id: String,
    /// The proxy's session.
    pub session: String,
    /// The server's name.
    pub server: Option<String>,
    /// The JSON-RPC method.
    pub method: String,
    /// The tool, resource URI or prompt name.
    pub name: Option<String>,
    /// The arguments (secrets redacted by the proxy).
    pub arguments: Value,
    /// The rule that asked.
    pub rule: Option<String>,
    /// That rule's description.
    pub description: Option<String>,
    /// Why approval is needed.
    pub reason: String,
    /// When it was asked, RFC 3339.
    pub asked_at: String,
    /// Waiting or expired.
    pub state: State,
    /// The `[[allow]]` entry "always" would write (the arguments shown), or why it
    /// cannot cover them exactly: shown before anyone chooses it.
    #[serde(default)]
    pub always: String,
}

impl PendingItem {
    /// `ask`, listed under `id` since `asked_at`, in `state`: what a person is shown,
    /// with the `[[allow]]` entry "always" would write.
    pub fn of(ask: Ask, id: String, asked_at: String, state: State) -> PendingItem {
        let always = crate::AlwaysEntry::for_call(
            ask.server.clone(),
            ask.method.clone(),
            ask.name.clone(),
            &ask.arguments,
            crate::AskedVia::Ui,
            crate::Covered::Shown,
        )
        .map_or_else(|why| why.to_string(), |entry| entry.preview());
        PendingItem {
            always,
            id,
            session: ask.session,
            server: ask.server,
            method: ask.method,
            name: ask.name,
            arguments: ask.arguments,
            rule: ask.rule,
            description: ask.description,
            reason: ask.reason,
            asked_at,
            state,
        }
    }
}

/// A line sent to the broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Request {
    /// A proxy asks a person about a call.
    Ask {
        /// The call (boxed: it is much larger than the other requests).
        ask: Box<Ask>,
    },
    /// The proxy stopped holding the call (it answered "approval pending under ID").
    Timeout {
        /// The approval's id.
        id: String,
    },
    /// The proxy no longer needs an answer (the client cancelled the call).
    Cancel {
        /// The approval's id.
        id: String,
    },
    /// List the pending approvals.
    List,
    /// Approve a pending call.
    Approve {
        /// The approval's id.
        id: String,
        /// How far the approval reaches.
        scope: Scope,
    },
    /// Refuse a pending call.
    Deny {
        /// The approval's id.
        id: String,
    },
}

/// A line sent by the broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Reply {
    /// The ask is listed under this id, waiting for a person.
    Queued {
        /// The approval's id.
        id: String,
    },
    /// The ask is answered.
    Answer(Answer),
    /// The pending approvals.
    Pending {
        /// Oldest first.
        items: Vec<PendingItem>,
    },
    /// The approval or denial was taken.
    Ok,
    /// The request was refused.
    Error {
        /// What is wrong, for a person.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn lines_have_the_documented_shape() {
        let answer = Reply::Answer(Answer { id: "K7P2QD".into(), outcome: Outcome::AllowOnce, by: By::Grant });
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            json!({"type": "answer", "id": "K7P2QD", "outcome": "allow_once", "by": "grant"})
        );
        let approve: Request =
            serde_json::from_value(json!({"type": "approve", "id": "K7P2QD", "scope": "session"})).unwrap();
        assert_eq!(approve, Request::Approve { id: "K7P2QD".into(), scope: Scope::Session });
        assert_eq!(serde_json::to_value(Request::List).unwrap(), json!({"type": "list"}));
        assert_eq!(serde_json::to_value(Reply::Ok).unwrap(), json!({"type": "ok"}));
        let ask = json!({"type": "ask", "ask": {"session": "s", "server": null, "method": "tools/call",
            "name": "rm", "arguments": {"path": "/"}, "rule": null, "description": null,
            "reason": "r", "key": "ab", "timeout_ms": 45000}});
        let parsed: Request = serde_json::from_value(ask.clone()).unwrap();
        assert_eq!(serde_json::to_value(parsed).unwrap(), ask);
    }
}
