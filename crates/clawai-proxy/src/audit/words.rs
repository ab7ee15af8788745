//! The audit trail's vocabulary: each fixed word a line may carry, as a type.
//!
//! The guard writes these and `clawai audit`, `clawai policy replay` and the telemetry
//! read them back through [`AuditLine`]: a word is spelled in one place, and a reader
//! that asks for a word the writer never writes does not compile.

use serde_json::{Map, Value};

/// Declares an enum of fixed words: its variants, how each is written, and the reading
/// back of a written word (`None` for a word this version does not know).
macro_rules! words {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+ }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl $name {
            /// Every word, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)+];

            /// As written in the trail.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $word,)+
                }
            }

            /// The word written as `text`, if this version knows it.
            pub fn parse(text: &str) -> Option<$name> {
                match text {
                    $($word => Some($name::$variant),)+
                    _ => None,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

words! {
    /// What an event records (`kind`).
    EventKind {
        /// A request went by, or was decided.
        Request = "request",
        /// A notification went by, or was decided.
        Notification = "notification",
        /// A response went by.
        Response = "response",
        /// A message that was not valid, refused.
        Refused = "refused",
        /// How asking a person about a call ended.
        Approval = "approval",
        /// What pinning held of a listing.
        Pinning = "pinning",
        /// What the results guard found in a result.
        Result = "result",
        /// What a sandboxed server had in force when it started.
        Sandbox = "sandbox",
        /// The other writers' chain heads this writer saw (cluster mode).
        Checkpoint = "checkpoint",
    }
}

// By hand: the words macro derives no `Default` (only this word has one, for
// `Event::default()`).
#[allow(clippy::derivable_impls)]
impl Default for EventKind {
    fn default() -> EventKind {
        EventKind::Request
    }
}

words! {
    /// What happened to the message (`decision`).
    Decision {
        /// A rule allowed it.
        Allow = "allow",
        /// A rule (or the default) denied it.
        Deny = "deny",
        /// A rule asks a person.
        Prompt = "prompt",
        /// A rule allowed it and marked it for review.
        Audit = "audit",
        /// No rule applies to it: passed on.
        Pass = "pass",
        /// Not valid, or ambiguous: refused.
        Refused = "refused",
        /// Pinning held something of a listing back.
        Held = "held",
        /// The results guard flagged a result and let it through.
        Flag = "flag",
    }
}

impl From<clawai_policy::Action> for Decision {
    fn from(action: clawai_policy::Action) -> Decision {
        match action {
            clawai_policy::Action::Allow => Decision::Allow,
            clawai_policy::Action::Deny => Decision::Deny,
            clawai_policy::Action::Prompt => Decision::Prompt,
            clawai_policy::Action::Audit => Decision::Audit,
        }
    }
}

words! {
    /// Where asking a person about a call is (`step`).
    Step {
        /// A person is being asked.
        Asked = "asked",
        /// The person answered.
        Answered = "answered",
        /// Nobody answered in time.
        TimedOut = "timed_out",
        /// The client cancelled the call meanwhile.
        Cancelled = "cancelled",
        /// A standing approval or a session grant let it through.
        AllowedWithoutAsking = "allowed_without_asking",
        /// A retry's answer could not be used.
        Refused = "refused",
        /// Nobody could be asked.
        NotAsked = "not_asked",
    }
}

words! {
    /// How a person was asked, or why nobody was (`channel`).
    Channel {
        /// clawai asked the client (an elicitation).
        Client = "client",
        /// The client's retry carried the answer (2026-07-28).
        ClientRetry = "client_retry",
        /// `clawai ui` or `clawai approve` answered.
        Broker = "broker",
        /// A standing approval in the approvals file.
        ApprovalsFile = "approvals_file",
        /// An earlier "for this session" answer.
        SessionGrant = "session_grant",
        /// Nobody could be asked.
        None = "none",
    }
}

words! {
    /// What a person allowed (`scope`).
    Scope {
        /// This call.
        Once = "once",
        /// Calls like it for the rest of the session.
        Session = "session",
        /// Calls like it from now on (an approvals file entry).
        Always = "always",
    }
}

/// One line of the trail, read back: a view of its JSON object, with the fixed words
/// typed. Readers keep the line's `Value` (to print or compare it) and read it through
/// this view.
#[derive(Debug, Clone, Copy)]
pub struct AuditLine<'a> {
    fields: &'a Map<String, Value>,
}

impl<'a> AuditLine<'a> {
    /// The view of `line`: `None` unless it is a JSON object.
    pub fn of(line: &'a Value) -> Option<AuditLine<'a>> {
        line.as_object().map(|fields| AuditLine { fields })
    }

    /// `kind`, when it is a word this version writes.
    pub fn kind(&self) -> Option<EventKind> {
        self.str("kind").and_then(EventKind::parse)
    }

    /// `decision`, when it is a word this version writes.
    pub fn decision(&self) -> Option<Decision> {
        self.str("decision").and_then(Decision::parse)
    }

    /// `step`, when it is a word this version writes.
    pub fn step(&self) -> Option<Step> {
        self.str("step").and_then(Step::parse)
    }

    /// `channel`, when it is a word this version writes.
    pub fn channel(&self) -> Option<Channel> {
        self.str("channel").and_then(Channel::parse)
    }

    /// `scope`, when it is a word this version writes.
    pub fn scope(&self) -> Option<Scope> {
        self.str("scope").and_then(Scope::parse)
    }

    /// Whether the call a rule asked about went on (`approved`).
    pub fn approved(&self) -> bool {
        self.fields.get("approved") == Some(&Value::Bool(true))
    }

    /// A member that is a string.
    pub fn str(&self, member: &str) -> Option<&'a str> {
        self.fields.get(member).and_then(Value::as_str)
    }

    /// A member as it was written.
    pub fn get(&self, member: &str) -> Option<&'a Value> {
        self.fields.get(member)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_word_reads_back_as_itself() {
        for kind in EventKind::ALL {
            assert_eq!(EventKind::parse(kind.as_str()), Some(*kind));
        }
        for decision in Decision::ALL {
            assert_eq!(Decision::parse(decision.as_str()), Some(*decision));
        }
        for step in Step::ALL {
            assert_eq!(Step::parse(step.as_str()), Some(*step));
        }
        for channel in Channel::ALL {
            assert_eq!(Channel::parse(channel.as_str()), Some(*channel));
        }
        for scope in Scope::ALL {
            assert_eq!(Scope::parse(scope.as_str()), Some(*scope));
        }
    }

    #[test]
    fn a_line_reads_its_words_and_leaves_unknown_ones_unread() {
        let value = serde_json::json!({"kind":"approval","step":"timed_out","channel":"broker","decision":"novel"});
        let line = AuditLine::of(&value).expect("an object");
        assert_eq!(line.kind(), Some(EventKind::Approval));
        assert_eq!(line.step(), Some(Step::TimedOut));
        assert_eq!(line.channel(), Some(Channel::Broker));
        assert_eq!(line.decision(), None, "a word this version does not write is not taken for another");
        assert!(AuditLine::of(&serde_json::json!([1])).is_none());
    }
}
