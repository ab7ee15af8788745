//! What the scan reports: a [`Finding`] with its [`Severity`], [`Class`] and where it is.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// How bad a finding is. Ordered: `Info < Warn < Critical`, so a threshold such as
/// `quarantine_on` or `--fail-on` is a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Unusual but most likely harmless (a single stray zero-width character).
    Info,
    /// Something a legitimate description has no need for: hidden text, an instruction
    /// tag, a credential path, another server's tool name. Quarantined by default.
    Warn,
    /// An attack pattern: smuggled text (tag characters, variation selectors), bidi
    /// overrides, terminal escapes, instructions to override the model's rules or to hide
    /// things from the user.
    Critical,
}

impl Severity {
    /// The lowercase name, as in the policy file and the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Critical => "critical",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A severity name that is not `info`, `warn` or `critical`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown severity {0:?}: expected info, warn or critical")]
pub struct ParseSeverityError(pub String);

impl FromStr for Severity {
    type Err = ParseSeverityError;

    /// Reads `info`, `warn` (or `warning`) and `critical`, in any case.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text.trim().to_ascii_lowercase().as_str() {
            "info" => Ok(Severity::Info),
            "warn" | "warning" => Ok(Severity::Warn),
            "critical" => Ok(Severity::Critical),
            _ => Err(ParseSeverityError(text.to_owned())),
        }
    }
}

/// What kind of thing was found. The first group is found on the raw text, the second
/// after hidden characters are removed, NFKC applied and look-alike letters folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Unicode tag characters (U+E0000–U+E007F): invisible ASCII, read by models.
    /// Critical. The emoji subdivision flags (🏴 + tag letters + cancel tag) are not.
    TagCharacters,
    /// Bidi overrides, embeddings and isolates (Trojan Source): critical. Bidi marks
    /// (LRM, RLM, ALM) in text with no right-to-left letters: warn.
    BidiControl,
    /// Zero-width and other invisible format characters, and invisible fillers (Hangul
    /// fillers). One: info; more: warn. A zero-width joiner inside an emoji sequence or
    /// between letters of a script that needs it is not a finding, nor a soft hyphen
    /// inside a word.
    ZeroWidth,
    /// Control characters other than line feed, tab and carriage return: warn; an ANSI
    /// escape (ESC or CSI), which can rewrite what a terminal shows: critical.
    ControlCharacter,
    /// Variation selectors that carry data: a run of them (bytes smuggled after one
    /// character, decoded in the detail): critical; one that follows no character that
    /// takes it: warn. Emoji presentation selectors after emoji are not findings.
    VariationSelector,
    /// A tool name outside `[A-Za-z0-9_.-]`, empty or longer than 128: warn.
    BadToolName,
    /// A tag addressed to the model, such as `<IMPORTANT>`, `<SYSTEM>` or
    /// `<instructions>`: warn. Plain emphasis ("IMPORTANT: …") is not.
    InstructionTag,
    /// Text that tells the model to drop its instructions: "ignore previous
    /// instructions", "disregard prior…", "you must now", "new instructions": critical.
    OverridePhrase,
    /// Text that tells the model to hide something from the user: "do not tell the
    /// user", "without informing the user", "secretly": critical. A prediction ("the
    /// user will not notice") with nothing covert in its paragraph is not one.
    Concealment,
    /// A path to credentials or secrets: `~/.ssh`, `id_rsa`, `.aws/credentials`,
    /// `/etc/passwd`, a `.env` file in a path (`./.env`; a bare `.env` is too common in
    /// developer tools), an MCP client's config…: warn. Not in advice against exposing
    /// it ("do not commit files that contain secrets (.env, credentials.json)").
    CredentialPath,
    /// The name of a tool of another server (tool shadowing): warn when the sentence
    /// tells the model to use or avoid it, or how it must behave ("send_email must BCC
    /// …", "before createIssue, call me", "never call read_file"); info for a mention
    /// ("unlike WebFetch, this tool renders JavaScript").
    CrossServerToolName,
    /// A long run of whitespace followed by more text, which pushes it out of view: warn.
    HiddenWhitespace,
    /// An HTML comment, which renderers hide and models read: warn. Not one shown as
    /// code (in a code span or a fenced block), which a renderer shows as written.
    HtmlComment,
    /// A base64 blob (40 characters or more) that decodes to text with findings of its
    /// own: the highest of theirs, at least warn.
    EncodedPayload,
}

impl Class {
    /// The snake_case name, as in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::TagCharacters => "tag_characters",
            Class::BidiControl => "bidi_control",
            Class::ZeroWidth => "zero_width",
            Class::ControlCharacter => "control_character",
            Class::VariationSelector => "variation_selector",
            Class::BadToolName => "bad_tool_name",
            Class::InstructionTag => "instruction_tag",
            Class::OverridePhrase => "override_phrase",
            Class::Concealment => "concealment",
            Class::CredentialPath => "credential_path",
            Class::CrossServerToolName => "cross_server_tool_name",
            Class::HiddenWhitespace => "hidden_whitespace",
            Class::HtmlComment => "html_comment",
            Class::EncodedPayload => "encoded_payload",
        }
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was scanned: a listed item, the server's instructions, or free text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ItemKind {
    /// An entry of `tools/list`.
    Tool,
    /// An entry of `prompts/list`.
    Prompt,
    /// An entry of `resources/templates/list`.
    ResourceTemplate,
    /// The `instructions` string of the server's `initialize` result.
    Instructions,
    /// Free text given to [`crate::scan_text`], such as a result.
    Text,
}

impl ItemKind {
    /// The snake_case name, as in the JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ItemKind::Tool => "tool",
            ItemKind::Prompt => "prompt",
            ItemKind::ResourceTemplate => "resource_template",
            ItemKind::Instructions => "instructions",
            ItemKind::Text => "text",
        }
    }
}

impl fmt::Display for ItemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One thing the scan found in one string of one item.
///
/// `name` and `field` are the item's own text, unescaped (the pipeline needs them to
/// find the item); print them through [`crate::escape_invisible`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// What was scanned.
    pub kind: ItemKind,
    /// The item's `name` (for instructions and text: empty).
    pub name: String,
    /// A JSON pointer to the string inside the item, such as
    /// `/inputSchema/properties/path/description`; for a property name, the pointer to
    /// that property; empty for the whole text.
    pub field: String,
    /// How bad it is.
    pub severity: Severity,
    /// What kind of thing it is.
    pub class: Class,
    /// The text where it was found, cut to a window and escaped so nothing in it is
    /// invisible (see [`crate::escape_invisible`]).
    pub evidence: String,
    /// One sentence saying what it is, for people.
    pub detail: String,
}
