//! A configuration file read into server entries that know where they are in the text.
//!
//! Nothing here re-serialises a file: edits are splices at the byte ranges recorded
//! here, so comments, key order, indentation and unknown keys survive untouched.

use jsonc_parser::ast::{Object, ObjectPropName, Value};
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions, parse_to_ast};

use crate::known::{ServersPath, Syntax};

/// A value and the byte range of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Located<T> {
    /// The value.
    pub value: T,
    /// Where its text starts.
    pub start: usize,
    /// Where its text ends (exclusive).
    pub end: usize,
}

/// How a new `args` member is written next to `command` when an entry has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgsInsertion {
    /// `, "args": [...]` after the command value (JSON).
    JsonMember,
    /// `\nargs = [...]` on the line after `command = ...` (TOML table).
    TomlLine,
    /// `, args = [...]` after the command value (TOML inline table).
    TomlInline,
}

/// One server of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The keys leading to the server map (`["mcpServers"]`,
    /// `["projects", "/home/me/p", "mcpServers"]`).
    pub scope: Vec<String>,
    /// The server's name (its key in the map).
    pub name: String,
    /// The command to run, for stdio servers.
    pub command: Option<Located<String>>,
    /// Its arguments, when present and a list of strings.
    pub args: Option<Located<Vec<String>>>,
    /// `args` is present but not a list of strings: the entry is left alone.
    pub args_unusable: bool,
    /// For remote servers: the key (`url`, `serverUrl`, `httpUrl`) and the URL.
    pub remote: Option<(String, String)>,
    /// The `type` member, if any.
    pub kind: Option<String>,
    /// How to add `args` when there is none.
    pub insertion: ArgsInsertion,
    /// JSON files: where the entry's object is, and each of its members (remote entries
    /// are rewritten member by member, and restored as a whole).
    pub layout: Option<ObjectLayout>,
    /// A remote entry's `headers`, when it is an object of strings (`Err` with the
    /// reason when it is something else).
    pub headers: Option<Result<Vec<(String, String)>, String>>,
}

/// Where an entry's object and its members are in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectLayout {
    /// The object, braces included.
    pub start: usize,
    /// Its end (exclusive).
    pub end: usize,
    /// Its members in order.
    pub members: Vec<MemberSpan>,
}

/// One member of an object: the name and the range of `"name": value`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberSpan {
    /// The member's name.
    pub name: String,
    /// Where `"name"` starts.
    pub start: usize,
    /// Where the value ends (exclusive).
    pub end: usize,
    /// Where the value starts.
    pub value_start: usize,
}

impl ObjectLayout {
    /// The last member of that name (the one a client reads).
    pub fn member(&self, name: &str) -> Option<(usize, &MemberSpan)> {
        self.members.iter().enumerate().rev().find(|(_, m)| m.name == name)
    }
}

impl Entry {
    /// A key identifying the entry inside its file.
    pub fn key(&self) -> String {
        let mut parts = self.scope.clone();
        parts.push(self.name.clone());
        parts.join("\u{1f}")
    }

    /// The scope written for people (`mcpServers`, `projects["/p"].mcpServers`).
    pub fn scope_display(&self) -> String {
        match self.scope.as_slice() {
            [projects, path, rest @ ..] if projects == "projects" => format!("projects[{path:?}].{}", rest.join(".")),
            parts => parts.join("."),
        }
    }
}

/// A file that could not be read as its syntax.
#[derive(Debug, Clone)]
pub struct SyntaxError {
    /// 1-based line.
    pub line: usize,
    /// 1-based column.
    pub column: usize,
    /// What is wrong.
    pub message: String,
}

/// A layout the file does not follow (reported and skipped, not fatal).
#[derive(Debug, Clone)]
pub struct LayoutWarning(pub String);

/// Reads every server entry of a file.
pub fn entries(
    text: &str,
    syntax: Syntax,
    servers_at: &[ServersPath],
) -> Result<(Vec<Entry>, Vec<LayoutWarning>), SyntaxError> {
    match syntax {
        Syntax::Json | Syntax::Jsonc => json_entries(text, syntax == Syntax::Jsonc, servers_at),
        Syntax::Toml => toml_entries(text, servers_at),
    }
}

fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    (before.matches('\n').count() + 1, before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1)
}

fn json_entries(
    text: &str,
    jsonc: bool,
    servers_at: &[ServersPath],
) -> Result<(Vec<Entry>, Vec<LayoutWarning>), SyntaxError> {
    // Strict files are parsed strictly: clawai must never accept (and so keep) what the
    // client would refuse.
    let options = ParseOptions {
        allow_comments: jsonc,
        allow_loose_object_property_names: false,
        allow_trailing_commas: jsonc,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    };
    let parsed = parse_to_ast(text, &CollectOptions::default(), &options).map_err(|e| SyntaxError {
        line: e.line_display(),
        column: e.column_display(),
        message: e.kind().to_string(),
    })?;
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let Some(root) = parsed.value else { return Ok((out, warnings)) };
    let Value::Object(root) = root else {
        warnings.push(LayoutWarning("the file is not a JSON object".into()));
        return Ok((out, warnings));
    };
    for path in servers_at {
        collect_json(&root, path, &mut Vec::new(), &mut out, &mut warnings, text);
    }
    Ok((out, warnings))
}

fn member<'o, 'a>(object: &'o Object<'a>, key: &str) -> Option<&'o Value<'a>> {
    // The last duplicate wins, as in JavaScript's JSON.parse.
    object.properties.iter().rev().find(|p| prop_name(&p.name) == key).map(|p| &p.value)
}

fn prop_name<'a>(name: &'a ObjectPropName<'_>) -> &'a str {
    match name {
        ObjectPropName::String(s) => s.value.as_ref(),
        ObjectPropName::Word(w) => w.value,
    }
}

fn collect_json(
    object: &Object,
    path: &[&str],
    scope: &mut Vec<String>,
    out: &mut Vec<Entry>,
    warnings: &mut Vec<LayoutWarning>,
    text: &str,
) {
    match path.split_first() {
        None => {
            for prop in &object.properties {
                let name = prop_name(&prop.name).to_owned();
                match &prop.value {
                    Value::Object(entry) => out.push(json_entry(entry, scope.clone(), name)),
                    _ => warnings.push(LayoutWarning(format!("{}.{name} is not an object; skipped", scope.join(".")))),
                }
            }
        }
        Some((&"*", rest)) => {
            for prop in &object.properties {
                if let Value::Object(inner) = &prop.value {
                    scope.push(prop_name(&prop.name).to_owned());
                    collect_json(inner, rest, scope, out, warnings, text);
                    scope.pop();
                }
            }
        }
        Some((key, rest)) => match member(object, key) {
            Some(Value::Object(inner)) => {
                scope.push((*key).to_owned());
                collect_json(inner, rest, scope, out, warnings, text);
                scope.pop();
            }
            Some(other) => {
                let (line, _) = line_column(text, other.start());
                warnings
                    .push(LayoutWarning(format!("`{key}` at line {line} is not an object; its servers were skipped")));
            }
            None => {}
        },
    }
}

fn json_string(value: &Value) -> Option<Located<String>> {
    match value {
        Value::StringLit(s) => Some(Located { value: s.value.to_string(), start: s.range.start, end: s.range.end }),
        _ => None,
    }
}

fn json_entry(entry: &Object, scope: Vec<String>, name: String) -> Entry {
    // Zed's older layout nests the command: {"command": {"path": .., "args": [..]}}.
    let (holder, command) = match member(entry, "command") {
        Some(Value::Object(nested)) => (nested, member(nested, "path").and_then(json_string)),
        Some(other) => (entry, json_string(other)),
        None => (entry, None),
    };
    let (args, args_unusable) = match member(holder, "args") {
        None => (None, false),
        Some(Value::Array(array)) => {
            let strings: Option<Vec<String>> = array
                .elements
                .iter()
                .map(|v| match v {
                    Value::StringLit(s) => Some(s.value.to_string()),
                    _ => None,
                })
                .collect();
            match strings {
                Some(values) => {
                    (Some(Located { value: values, start: array.range.start, end: array.range.end }), false)
                }
                None => (None, true),
            }
        }
        Some(_) => (None, true),
    };
    let remote = ["url", "serverUrl", "httpUrl"]
        .iter()
        .find_map(|k| member(entry, k).and_then(json_string).map(|s| ((*k).to_owned(), s.value)));
    let kind = member(entry, "type").and_then(json_string).map(|s| s.value);
    let layout = ObjectLayout {
        start: entry.range.start,
        end: entry.range.end,
        members: entry
            .properties
            .iter()
            .map(|p| MemberSpan {
                name: prop_name(&p.name).to_owned(),
                start: p.range.start,
                end: p.range.end,
                value_start: p.value.start(),
            })
            .collect(),
    };
    let headers = member(entry, "headers").map(|h| match h {
        Value::Object(object) => object
            .properties
            .iter()
            .map(|p| match &p.value {
                Value::StringLit(v) => Ok((prop_name(&p.name).to_owned(), v.value.to_string())),
                _ => Err(format!("header `{}` is not a string", prop_name(&p.name))),
            })
            .collect(),
        _ => Err("`headers` is not an object".to_owned()),
    });
    Entry {
        scope,
        name,
        command,
        args,
        args_unusable,
        remote,
        kind,
        insertion: ArgsInsertion::JsonMember,
        layout: Some(layout),
        headers,
    }
}

fn toml_entries(text: &str, servers_at: &[ServersPath]) -> Result<(Vec<Entry>, Vec<LayoutWarning>), SyntaxError> {
    let doc = toml_edit::Document::parse(text).map_err(|e| {
        let (line, column) = e.span().map_or((1, 1), |s| line_column(text, s.start));
        SyntaxError { line, column, message: e.message().to_owned() }
    })?;
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    for path in servers_at {
        let [key] = path else { continue };
        let Some(item) = doc.get(key) else { continue };
        let Some(servers) = item.as_table_like() else {
            warnings.push(LayoutWarning(format!("`{key}` is not a table; its servers were skipped")));
            continue;
        };
        for (name, server) in servers.iter() {
            let Some(table) = server.as_table_like() else {
                warnings.push(LayoutWarning(format!("{key}.{name} is not a table; skipped")));
                continue;
            };
            let inline = server.is_inline_table();
            let string = |k: &str| -> Option<Located<String>> {
                let v = table.get(k)?.as_value()?;
                let span = v.span()?;
                Some(Located { value: v.as_str()?.to_owned(), start: span.start, end: span.end })
            };
            let (args, args_unusable) = match table.get("args") {
                None => (None, false),
                Some(item) => match item.as_array() {
                    Some(array) => {
                        let values: Option<Vec<String>> = array.iter().map(|v| v.as_str().map(str::to_owned)).collect();
                        match (values, array.span()) {
                            (Some(value), Some(span)) => {
                                (Some(Located { value, start: span.start, end: span.end }), false)
                            }
                            _ => (None, true),
                        }
                    }
                    None => (None, true),
                },
            };
            let remote = ["url"].iter().find_map(|k| string(k).map(|s| ((*k).to_owned(), s.value)));
            out.push(Entry {
                scope: vec![(*key).to_owned()],
                name: name.to_owned(),
                command: string("command"),
                args,
                args_unusable,
                remote,
                kind: string("type").map(|s| s.value),
                insertion: if inline { ArgsInsertion::TomlInline } else { ArgsInsertion::TomlLine },
                layout: None,
                headers: None,
            });
        }
    }
    Ok((out, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::known::Syntax;

    #[test]
    fn json_entries_know_where_they_are() {
        let text = r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server"], "env": {"A": "1"} },
    "remote": { "url": "https://example.com/mcp" }
  },
  "projects": { "/p": { "mcpServers": { "local": { "command": "node" } } } }
}"#;
        let (entries, warnings) =
            entries(text, Syntax::Json, &[&["mcpServers"], &["projects", "*", "mcpServers"]]).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(entries.len(), 3);
        let fs = &entries[0];
        let cmd = fs.command.as_ref().unwrap();
        assert_eq!(&text[cmd.start..cmd.end], "\"npx\"");
        assert_eq!(fs.args.as_ref().unwrap().value, ["-y", "server"]);
        assert_eq!(entries[1].remote.as_ref().unwrap().1, "https://example.com/mcp");
        assert_eq!(entries[2].scope, ["projects", "/p", "mcpServers"]);
        assert!(entries[2].args.is_none());
    }

    #[test]
    fn strict_json_refuses_comments_jsonc_accepts_them() {
        let text = "{\n  // c\n  \"servers\": {},\n}";
        let e = entries(text, Syntax::Json, &[&["servers"]]).unwrap_err();
        assert_eq!(e.line, 2);
        assert!(entries(text, Syntax::Jsonc, &[&["servers"]]).is_ok());
    }

    #[test]
    fn toml_entries() {
        let text = "# mine\n[mcp_servers.fs]\ncommand = \"npx\" # launcher\nargs = [\"-y\", \"s\"]\n\n[mcp_servers.inline]\nx = { }\n";
        let (entries, _) = entries(text, Syntax::Toml, &[&["mcp_servers"]]).unwrap();
        let fs = &entries[0];
        let cmd = fs.command.as_ref().unwrap();
        assert_eq!(&text[cmd.start..cmd.end], "\"npx\"");
        assert_eq!(fs.insertion, ArgsInsertion::TomlLine);
    }
}
