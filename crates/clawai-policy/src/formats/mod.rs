//! Converters from other policy formats to clawai's TOML.
//!
//! Each converter produces TOML text that the native loader then validates, so there is
//! one engine and one set of checks whatever the format a policy was written in. A
//! converted policy decides every call as the original tool decided it; where the TOML
//! had to be shaped to get there (a rule left out because it could never change a
//! decision there, an entry the original skips), the converter says so in
//! [`Converted::notes`], which `clawai policy import` and `check` print, the proxy logs,
//! and the TOML carries as comments.

pub mod agentshield;
pub mod mcpgov;

/// A policy of another format, converted.
#[derive(Debug, Clone, Default)]
pub struct Converted {
    /// The equivalent clawai TOML.
    pub toml: String,
    /// What the conversion had to shape or leave out, one sentence each.
    pub notes: Vec<String>,
}

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

/// A TOML array of string literals.
pub(crate) fn quote_all<S: AsRef<str>>(items: &[S]) -> String {
    let quoted: Vec<String> = items.iter().map(|s| quote(s.as_ref())).collect();
    format!("[{}]", quoted.join(", "))
}

/// A TOML key, quoted when it is not a bare key.
pub(crate) fn key(s: &str) -> String {
    let bare = !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare { s.to_owned() } else { quote(s) }
}

/// One `[[rule]]` being written: its id, action, conditions (`key = value` lines, the
/// value already TOML) and description.
#[derive(Debug, Clone)]
pub(crate) struct RuleOut {
    pub(crate) id: String,
    pub(crate) action: &'static str,
    pub(crate) lines: Vec<String>,
    pub(crate) description: Option<String>,
}

impl RuleOut {
    pub(crate) fn new(id: impl Into<String>, action: &'static str) -> Self {
        RuleOut { id: id.into(), action, lines: Vec::new(), description: None }
    }

    /// Adds `key = value`, the value already written as TOML.
    pub(crate) fn set(&mut self, key: impl AsRef<str>, value: impl Into<String>) -> &mut Self {
        self.lines.push(format!("{} = {}", key.as_ref(), value.into()));
        self
    }

    pub(crate) fn write(&self, out: &mut String) {
        out.push_str(&format!("[[rule]]\nid = {}\naction = {}\n", quote(&self.id), quote(self.action)));
        for line in &self.lines {
            out.push_str(line);
            out.push('\n');
        }
        if let Some(d) = &self.description {
            out.push_str(&format!("description = {}\n", quote(d)));
        }
        out.push('\n');
    }
}

/// The file's head: where it came from, the notes as comments, the default.
pub(crate) fn head(origin: &str, explanation: &[&str], notes: &[String], default: &str) -> String {
    let mut out = format!("# Converted from {origin} by `clawai policy import`.\n");
    for line in explanation {
        out.push_str(&format!("# {line}\n"));
    }
    for note in notes {
        out.push_str(&format!("# Note: {}\n", note.replace('\n', " ")));
    }
    out.push_str(&format!("\n[defaults]\naction = {}\n\n", quote(default)));
    out
}

/// A rule that allows the methods clawai decides but the other format lets through
/// unexamined, so the converted policy decides exactly as the original did.
pub(crate) fn pass_through_rule(origin: &str, methods: &[&str], examined: &str) -> RuleOut {
    let mut rule = RuleOut::new("passthrough", "allow");
    rule.set("method", quote_all(methods));
    rule.description = Some(format!("{origin} only examines {examined}; everything else passes through"));
    rule
}
