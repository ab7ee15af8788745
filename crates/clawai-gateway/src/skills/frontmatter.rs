//! A SKILL.md split into its YAML frontmatter and its body, and the frontmatter read.
//!
//! The frontmatter is the YAML between a first line `---` and the next line `---`. Keys
//! clawai does not use are ignored (Claude Code's skills carry `model`,
//! `disable-model-invocation` and more); a key it uses with a value of the wrong shape
//! is an error. `allowed-tools` is a YAML list or, as Claude Code also writes it, one
//! comma-separated string; `variables` is a list of names or of `{name, description,
//! required}`.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{Location, Spanned};

/// The lines before the YAML (the opening `---`), added to the YAML's own line numbers so
/// that positions count in the whole file.
const YAML_FIRST_LINE_OFFSET: usize = 1;

/// A SKILL.md cut in two.
#[derive(Debug)]
pub(crate) struct Split<'a> {
    /// The YAML between the `---` lines; `None` when the file has no frontmatter.
    pub yaml: Option<&'a str>,
    /// Everything after the closing `---` line (the whole file without frontmatter).
    pub body: &'a str,
}

/// Cuts `text` into frontmatter and body; `Err` holds the message when the frontmatter is
/// opened and never closed (its position is line 1).
pub(crate) fn split(text: &str) -> Result<Split<'_>, &'static str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let Some(first) = lines.next().filter(|line| is_fence(line)) else {
        return Ok(Split { yaml: None, body: text });
    };
    let yaml_start = first.len();
    let mut at = yaml_start;
    for line in lines {
        if is_fence(line) {
            return Ok(Split { yaml: Some(&text[yaml_start..at]), body: &text[at + line.len()..] });
        }
        at += line.len();
    }
    Err("the frontmatter opened by `---` on line 1 is never closed; add a line `---` after its last key")
}

/// True for a line that is `---` (trailing spaces and a CR allowed).
fn is_fence(line: &str) -> bool {
    line.trim_end() == "---"
}

/// The frontmatter keys clawai reads.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub(crate) struct Frontmatter {
    /// `name`, with where it is written (for errors about it).
    pub name: Option<Spanned<String>>,
    /// `description`.
    pub description: Option<String>,
    /// `version`, as written (`1.0.0`, `2`).
    pub version: Option<String>,
    /// `variables`, each with where it is written.
    pub variables: Option<Vec<Spanned<VariableSpec>>>,
    /// `allowed-tools`, with where it is written.
    #[serde(rename = "allowed-tools", alias = "allowed_tools")]
    pub allowed_tools: Option<Spanned<ToolList>>,
    /// `user-invocable`.
    #[serde(rename = "user-invocable", alias = "user_invocable")]
    pub user_invocable: Option<bool>,
    /// `argument-hint`.
    #[serde(rename = "argument-hint", alias = "argument_hint")]
    pub argument_hint: Option<String>,
}

/// One entry of `variables`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VariableSpec {
    /// The variable's name, as `{{name}}` in the body.
    pub name: String,
    /// What to give it.
    pub description: Option<String>,
    /// Whether a client must give it.
    pub required: bool,
}

/// `allowed-tools` as written: a list, or one comma-separated string split at its commas.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct ToolList {
    /// The patterns, trimmed; those of a list may be empty (an error the caller reports).
    pub patterns: Vec<String>,
    /// Where each pattern of a YAML list is written (one string of patterns: none).
    pub positions: Vec<Location>,
}

/// Where a YAML error or value is in the whole file: (line, column), from 1.
pub(crate) fn file_position(location: Location) -> (usize, usize) {
    if location.line() == 0 {
        // The parser did not say; the frontmatter's first line is the best guess.
        return (1, 1);
    }
    let line = usize::try_from(location.line()).unwrap_or(usize::MAX).saturating_add(YAML_FIRST_LINE_OFFSET);
    (line, usize::try_from(location.column()).unwrap_or(usize::MAX).max(1))
}

/// Reads the frontmatter's YAML; an error gives its message and its position in the file.
pub(crate) fn parse(yaml: &str) -> Result<Frontmatter, (String, (usize, usize))> {
    if yaml.trim().is_empty() {
        return Ok(Frontmatter::default());
    }
    let options = serde_saphyr::options! { with_snippet: false };
    serde_saphyr::from_str_with_options(yaml, options).map_err(|error| {
        let yaml_line = error.location().map_or(0, |at| usize::try_from(at.line()).unwrap_or(usize::MAX));
        let position = error.location().map_or((1, 1), file_position);
        let message = message_of(&error);
        let message = match key_at(yaml, yaml_line) {
            Some(key) => match hint(key, &message) {
                Some(hint) => format!("`{key}`: {message}; {hint}"),
                None => format!("`{key}`: {message}"),
            },
            None => message,
        };
        (message, position)
    })
}

/// The top-level key whose value holds YAML line `line` (from 1): the parser's messages
/// say what it expected, not where, and a user fixes a key, not a line.
fn key_at(yaml: &str, line: usize) -> Option<&str> {
    let lines: Vec<&str> = yaml.lines().take(line).collect();
    lines.iter().rev().find_map(|text| {
        let starts_key = text.chars().next().is_some_and(|c| !c.is_whitespace() && !matches!(c, '#' | '-'));
        let (key, _) = text.split_once(':').filter(|_| starts_key)?;
        let key = key.trim();
        (!key.is_empty() && !key.contains(['{', '[', '"', '\''])).then_some(key)
    })
}

/// What the value of `key` should look like, for a message about its value's shape.
fn hint(key: &str, message: &str) -> Option<&'static str> {
    // A syntax error gets no reminder of shapes: it is not about one.
    if !["invalid", "expected", "missing field"].iter().any(|word| message.contains(word)) {
        return None;
    }
    match key {
        "variables" => Some("write a list of names, or of maps with `name`, `description` and `required`"),
        "user-invocable" | "user_invocable" => Some("write true or false"),
        "name" | "description" | "version" | "argument-hint" | "argument_hint" => Some("write text"),
        // `allowed-tools` says its shape in the message itself.
        _ => None,
    }
}

/// The parser's message without its own `at line …` suffix (its lines count from the
/// YAML, not the file, so the caller states the position instead).
fn message_of(error: &serde_saphyr::Error) -> String {
    let formatter = serde_saphyr::DefaultMessageFormatter;
    let plain = formatter.with_localizer(&NoLocation);
    let options = serde_saphyr::render_options! { formatter: &plain, snippets: serde_saphyr::SnippetMode::Off };
    let message = error.render_with_options(options);
    // The parser suggests one of its own settings for a key written twice; what the user
    // can do is remove one of them.
    match message.split_once(", set DuplicateKeyPolicy") {
        Some((before, _)) => format!("{before}; remove one of them"),
        None => message.trim().to_owned(),
    }
}

/// Renders the parser's messages without positions.
struct NoLocation;

impl serde_saphyr::Localizer for NoLocation {
    fn attach_location<'a>(&self, base: Cow<'a, str>, _: Location) -> Cow<'a, str> {
        base
    }
}

impl<'de> Deserialize<'de> for ToolList {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ToolListVisitor;

        impl<'de> Visitor<'de> for ToolListVisitor {
            type Value = ToolList;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a list of tool name patterns, or one string of patterns separated by commas")
            }

            fn visit_str<E: de::Error>(self, text: &str) -> Result<ToolList, E> {
                // Claude Code's `allowed-tools: Read, Grep, Glob`: empty pieces (a trailing
                // comma) are dropped.
                let patterns = text.split(',').map(str::trim).filter(|p| !p.is_empty()).map(str::to_owned).collect();
                Ok(ToolList { patterns, positions: Vec::new() })
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ToolList, A::Error> {
                let (mut patterns, mut positions) = (Vec::new(), Vec::new());
                while let Some(pattern) = seq.next_element::<Spanned<String>>()? {
                    patterns.push(pattern.value.trim().to_owned());
                    positions.push(pattern.referenced);
                }
                Ok(ToolList { patterns, positions })
            }

            fn visit_unit<E: de::Error>(self) -> Result<ToolList, E> {
                Ok(ToolList::default())
            }

            fn visit_none<E: de::Error>(self) -> Result<ToolList, E> {
                Ok(ToolList::default())
            }
        }

        deserializer.deserialize_any(ToolListVisitor)
    }
}

impl<'de> Deserialize<'de> for VariableSpec {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(VariableVisitor)
    }
}

/// Reads a variable written as a bare name or as `{name, description, required}`.
struct VariableVisitor;

impl<'de> Visitor<'de> for VariableVisitor {
    type Value = VariableSpec;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a variable name, or a map with `name` and optionally `description` and `required`")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<VariableSpec, E> {
        Ok(VariableSpec { name: name.to_owned(), description: None, required: true })
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<VariableSpec, A::Error> {
        let VariableMap { name, description, required } =
            VariableMap::deserialize(de::value::MapAccessDeserializer::new(map))?;
        Ok(VariableSpec { name, description, required })
    }
}

/// A variable written as a map (other keys ignored, as at the top level).
#[derive(Deserialize)]
struct VariableMap {
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default = "required_by_default")]
    required: bool,
}

/// A variable is required unless the skill says `required: false`: its placeholder is
/// in the body, and a model must never read it unfilled.
fn required_by_default() -> bool {
    true
}
