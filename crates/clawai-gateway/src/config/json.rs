//! The file as JSON whose every value knows where it is, and typed reads of it that fail
//! with the place and the reason.

use std::path::Path;

use jsonc_parser::ast::{Object, ObjectProp, ObjectPropName, Value};
use jsonc_parser::common::Ranged;

use super::error::{ConfigError, Location};

/// The configuration text, where it came from, and where its lines start.
pub(super) struct Doc<'t> {
    text: &'t str,
    path: &'t Path,
    line_starts: Vec<usize>,
}

/// One member of a `"name": "value"` object of strings (`env`, `headers`).
pub(super) struct StringMember {
    pub key: String,
    pub value: String,
    pub key_at: usize,
    pub value_at: usize,
}

impl<'t> Doc<'t> {
    pub(super) fn new(text: &'t str, path: &'t Path) -> Self {
        let line_starts = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        Doc { text, path, line_starts }
    }

    /// The place of a byte offset of the text.
    pub(super) fn at(&self, offset: usize) -> Location {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&start| start <= offset);
        let start = self.line_starts[line - 1];
        let column = self.text.get(start..offset).map_or(1, |before| before.chars().count() + 1);
        self.line_column(line, column)
    }

    fn line_column(&self, line: usize, column: usize) -> Location {
        // A text of over 4 GiB is not read whole by anyone; saturate rather than wrap.
        let small = |n: usize| u32::try_from(n.max(1)).unwrap_or(u32::MAX);
        Location { path: self.path.to_owned(), line: small(line), column: small(column) }
    }

    /// Parses the text as strict JSON, keeping every value's position. serde_json checks
    /// the syntax first: its messages are the familiar ones and it refuses nesting deep
    /// enough to exhaust the stack before the positional parser sees it.
    pub(super) fn parse(&self) -> Result<Value<'t>, ConfigError> {
        if let Err(e) = serde_json::from_str::<serde::de::IgnoredAny>(self.text) {
            let message = e.to_string();
            let message = message.rsplit_once(" at line ").map_or(message.as_str(), |(m, _)| m).to_owned();
            return Err(ConfigError::Syntax { at: self.line_column(e.line(), e.column()), message });
        }
        let strict = jsonc_parser::ParseOptions {
            allow_comments: false,
            allow_loose_object_property_names: false,
            allow_trailing_commas: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_non_finite_numbers: false,
            allow_extended_string_escapes: false,
        };
        match jsonc_parser::parse_to_ast(self.text, &Default::default(), &strict) {
            Ok(parsed) => parsed
                .value
                .ok_or_else(|| ConfigError::Syntax { at: self.at(0), message: "the file is empty".to_owned() }),
            Err(e) => Err(ConfigError::Syntax { at: self.at(e.range().start), message: e.kind().to_string() }),
        }
    }

    /// The error for a value of the wrong type.
    pub(super) fn wrong(&self, value: &Value, what: &str, expected: &'static str) -> ConfigError {
        ConfigError::WrongType { at: self.at(value.start()), what: what.to_owned(), expected, found: kind(value) }
    }

    /// An error with a message of its own at a byte offset.
    pub(super) fn invalid(&self, offset: usize, message: String) -> ConfigError {
        ConfigError::Invalid { at: self.at(offset), message }
    }

    pub(super) fn object<'o>(&self, value: &'o Value<'t>, what: &str) -> Result<&'o Object<'t>, ConfigError> {
        match value {
            Value::Object(object) => Ok(object),
            other => Err(self.wrong(other, what, "an object")),
        }
    }

    pub(super) fn string<'o>(&self, value: &'o Value<'t>, what: &str) -> Result<&'o str, ConfigError> {
        match value {
            Value::StringLit(s) => Ok(&s.value),
            other => Err(self.wrong(other, what, "a string")),
        }
    }

    pub(super) fn boolean(&self, value: &Value<'t>, what: &str) -> Result<bool, ConfigError> {
        match value {
            Value::BooleanLit(b) => Ok(b.value),
            other => Err(self.wrong(other, what, "true or false")),
        }
    }

    /// An array of strings, each with its offset.
    pub(super) fn strings(&self, value: &Value<'t>, what: &str) -> Result<Vec<(String, usize)>, ConfigError> {
        let Value::Array(array) = value else { return Err(self.wrong(value, what, "an array of strings")) };
        array
            .elements
            .iter()
            .enumerate()
            .map(|(i, element)| match element {
                Value::StringLit(s) => Ok((s.value.to_string(), s.range.start)),
                other => Err(self.wrong(other, &format!("item {} of {what}", i + 1), "a string")),
            })
            .collect()
    }

    /// An object whose values are all strings; a key given twice is refused (JSON parsers
    /// disagree on which one wins).
    pub(super) fn string_members(&self, value: &Value<'t>, what: &str) -> Result<Vec<StringMember>, ConfigError> {
        let Value::Object(object) = value else {
            return Err(self.wrong(value, what, "an object of strings"));
        };
        let mut members: Vec<StringMember> = Vec::with_capacity(object.properties.len());
        for prop in &object.properties {
            let key = prop_name(prop);
            if members.iter().any(|m| m.key == key) {
                return Err(ConfigError::DuplicateKey {
                    at: self.at(prop.range.start),
                    key: key.to_owned(),
                    earlier: key.to_owned(),
                    section: what.to_owned(),
                });
            }
            let Value::StringLit(s) = &prop.value else {
                return Err(self.wrong(&prop.value, &format!("`{key}` in {what}"), "a string"));
            };
            members.push(StringMember {
                key: key.to_owned(),
                value: s.value.to_string(),
                key_at: prop.range.start,
                value_at: s.range.start,
            });
        }
        Ok(members)
    }
}

/// A member's key as written (decoded).
pub(super) fn prop_name<'o>(prop: &'o ObjectProp) -> &'o str {
    match &prop.name {
        ObjectPropName::String(s) => &s.value,
        ObjectPropName::Word(w) => w.value,
    }
}

/// A value's JSON type, for messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::StringLit(_) => "a string",
        Value::NumberLit(_) => "a number",
        Value::BooleanLit(_) => "a boolean",
        Value::Object(_) => "an object",
        Value::Array(_) => "an array",
        Value::NullKeyword(_) => "null",
    }
}

/// A key an object may have: its camelCase spelling and, for a multiword key, its
/// snake_case one (both are accepted; giving both is refused).
#[derive(Clone, Copy)]
pub(super) struct Key {
    pub name: &'static str,
    pub snake: Option<&'static str>,
}

impl Key {
    pub(super) const fn one(name: &'static str) -> Key {
        Key { name, snake: None }
    }

    pub(super) const fn two(name: &'static str, snake: &'static str) -> Key {
        Key { name, snake: Some(snake) }
    }

    fn matches(&self, written: &str) -> bool {
        self.name == written || self.snake == Some(written)
    }
}

/// The known members of one object, by camelCase name.
pub(super) struct Fields<'o, 't> {
    found: Vec<(&'static str, &'o ObjectProp<'t>)>,
}

impl<'o, 't> Fields<'o, 't> {
    /// Reads an object's members against the keys it may have. An unknown key is an
    /// error unless `lenient` (the file belongs to an MCP client, whose own settings the
    /// gateway does not read); `hints` maps other spellings people use to a known key.
    pub(super) fn read(
        doc: &Doc<'t>,
        object: &'o Object<'t>,
        section: &str,
        known: &[Key],
        hints: &[(&str, &'static str)],
        lenient: bool,
    ) -> Result<Self, ConfigError> {
        let mut found: Vec<(&'static str, &'o ObjectProp<'t>)> = Vec::new();
        for prop in &object.properties {
            let written = prop_name(prop);
            match known.iter().find(|k| k.matches(written)) {
                Some(key) => {
                    if let Some((_, earlier)) = found.iter().find(|(name, _)| *name == key.name) {
                        return Err(ConfigError::DuplicateKey {
                            at: doc.at(prop.range.start),
                            key: written.to_owned(),
                            earlier: prop_name(earlier).to_owned(),
                            section: section.to_owned(),
                        });
                    }
                    found.push((key.name, prop));
                }
                None if lenient => {}
                None => {
                    return Err(ConfigError::UnknownKey {
                        at: doc.at(prop.range.start),
                        key: written.to_owned(),
                        section: section.to_owned(),
                        suggestion: suggest(written, known, hints),
                        known: describe(known),
                    });
                }
            }
        }
        Ok(Fields { found })
    }

    /// The member for a key (by its camelCase name), whichever spelling the file used.
    pub(super) fn get(&self, name: &str) -> Option<&'o ObjectProp<'t>> {
        self.found.iter().find(|(n, _)| *n == name).map(|(_, prop)| *prop)
    }
}

/// The known key a mistyped one most likely meant: the same letters in another case or
/// with other separators (`InternalOnly`, `internal-only`), or a spelling another tool uses.
fn suggest(written: &str, known: &[Key], hints: &[(&str, &'static str)]) -> Option<&'static str> {
    let folded = fold(written);
    known
        .iter()
        .find(|k| fold(k.name) == folded)
        .map(|k| k.name)
        .or_else(|| hints.iter().find(|(other, _)| fold(other) == folded).map(|(_, name)| *name))
}

fn fold(key: &str) -> String {
    key.chars().filter(|c| !matches!(c, '_' | '-')).flat_map(char::to_lowercase).collect()
}

fn describe(known: &[Key]) -> String {
    known
        .iter()
        .map(|k| match k.snake {
            Some(snake) => format!("`{}` or `{snake}`", k.name),
            None => format!("`{}`", k.name),
        })
        .collect::<Vec<_>>()
        .join(", ")
}
