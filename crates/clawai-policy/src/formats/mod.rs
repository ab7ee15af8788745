//! Converters from other policy formats to clawai's TOML.
//!
//! Each converter produces TOML text that the native loader then validates, so there is
//! one engine and one set of checks whatever the format a policy was written in.

pub mod agentshield;
pub mod mcpgov;

/// A policy of another format that could not be converted.
#[derive(Debug, Clone)]
pub struct ConvertError {
    /// 1-based line in the source, when known.
    pub line: Option<usize>,
    /// 1-based column in the source, when known.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl ConvertError {
    pub(crate) fn new(message: impl Into<String>) -> Self {
        ConvertError { line: None, column: None, message: message.into() }
    }
}

/// A TOML string literal for `s`.
pub(crate) fn quote(s: &str) -> String {
    toml::Value::String(s.to_owned()).to_string()
}

/// A TOML key, quoted when it is not a bare key.
pub(crate) fn key(s: &str) -> String {
    let bare = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { s.to_owned() } else { quote(s) }
}

/// Methods that clawai intercepts but the other formats let through unexamined; the
/// converted policy allows them explicitly so it decides exactly as the original did.
pub(crate) const PASSED_THROUGH: [&str; 4] =
    ["resources/read", "prompts/get", "sampling/createMessage", "elicitation/create"];

pub(crate) fn pass_through_rule(origin: &str) -> String {
    let methods: Vec<String> = PASSED_THROUGH.iter().map(|m| quote(m)).collect();
    format!(
        "[[rule]]\nid = \"passthrough\"\naction = \"allow\"\nmethod = [{}]\ndescription = {}\n\n",
        methods.join(", "),
        quote(&format!("{origin} only examines tools/call; everything else passes through"))
    )
}
