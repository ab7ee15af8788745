//! Wrap and unwrap as text splices on the original file.

use std::path::Path;

use crate::document::{ArgsInsertion, Entry};
use crate::known::Syntax;
use crate::state::Original;
use crate::wrapping::{self, Wrap};

/// Replace `start..end` with `text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Splice {
    /// Where the replaced text starts.
    pub start: usize,
    /// Where it ends (exclusive).
    pub end: usize,
    /// The new text.
    pub text: String,
}

/// Applies non-overlapping splices.
pub fn apply(text: &str, mut splices: Vec<Splice>) -> String {
    splices.sort_by_key(|s| std::cmp::Reverse(s.start));
    let mut out = text.to_owned();
    for s in splices {
        out.replace_range(s.start..s.end, &s.text);
    }
    out
}

/// A string literal valid in JSON and in TOML (serde_json only emits escapes TOML knows).
fn literal(s: &str) -> String {
    serde_json::to_string(s).expect("strings always serialise")
}

fn array(items: &[String]) -> String {
    let items: Vec<String> = items.iter().map(|s| literal(s)).collect();
    format!("[{}]", items.join(", "))
}

/// Why an entry is not wrapped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotWrappable {
    /// Already wrapped by clawai.
    AlreadyWrapped,
    /// A remote server: `wrap` does not rewrite URL entries yet.
    Remote(String),
    /// No `command` string.
    NoCommand,
    /// `args` is not a list of strings.
    UnusableArgs,
}

impl std::fmt::Display for NotWrappable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotWrappable::AlreadyWrapped => f.write_str("already wrapped"),
            NotWrappable::Remote(url) => write!(
                f,
                "remote server ({url}): `clawai wrap` does not rewrite URL entries yet; guard it with a stdio entry running `clawai proxy --upstream {url}` (README, Over HTTP)"
            ),
            NotWrappable::NoCommand => f.write_str("no `command` string: not a stdio server clawai can launch"),
            NotWrappable::UnusableArgs => f.write_str("`args` is not a list of strings; left alone"),
        }
    }
}

/// The splices that wrap an entry, and what to remember to undo them exactly.
pub fn wrap(
    entry: &Entry,
    text: &str,
    clawai: &Path,
    policy: Option<&Path>,
) -> Result<(Vec<Splice>, Original), NotWrappable> {
    if let Some((_, url)) = &entry.remote
        && entry.command.is_none()
    {
        return Err(NotWrappable::Remote(url.clone()));
    }
    let command = entry.command.as_ref().ok_or(NotWrappable::NoCommand)?;
    if entry.args_unusable {
        return Err(NotWrappable::UnusableArgs);
    }
    let args = entry.args.as_ref().map(|a| a.value.clone()).unwrap_or_default();
    if matches!(wrapping::read(&command.value, &args), Wrap::Wrapped { .. }) {
        return Err(NotWrappable::AlreadyWrapped);
    }
    let new_args = array(&wrapping::wrapped_args(&entry.name, policy, &command.value, &args));
    let mut splices =
        vec![Splice { start: command.start, end: command.end, text: literal(&clawai.display().to_string()) }];
    let mut original = Original { command: text[command.start..command.end].to_owned(), args: None, inserted: None };
    match &entry.args {
        Some(a) => {
            original.args = Some(text[a.start..a.end].to_owned());
            splices.push(Splice { start: a.start, end: a.end, text: new_args });
        }
        None => {
            let prefix = match entry.insertion {
                ArgsInsertion::JsonMember => ", \"args\": ",
                ArgsInsertion::TomlInline => ", args = ",
                ArgsInsertion::TomlLine => "\nargs = ",
            };
            original.inserted = Some(prefix.to_owned());
            splices.push(Splice { start: command.end, end: command.end, text: format!("{prefix}{new_args}") });
        }
    }
    Ok((splices, original))
}

/// Decodes the text of a string value as written in the file.
fn decode_string(text: &str, syntax: Syntax) -> Option<String> {
    match syntax {
        Syntax::Toml => text.trim().parse::<toml_edit::Value>().ok()?.as_str().map(str::to_owned),
        _ => serde_json::from_str(text).ok(),
    }
}

fn decode_args(text: &str, syntax: Syntax) -> Option<Vec<String>> {
    match syntax {
        Syntax::Toml => {
            let value = text.trim().parse::<toml_edit::Value>().ok()?;
            value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
        }
        _ => serde_json::from_str(text).ok(),
    }
}

/// The splices that unwrap an entry: the original text when clawai remembers it and it
/// still says the same thing, else the original command and arguments written afresh.
pub fn unwrap(entry: &Entry, text: &str, syntax: Syntax, remembered: Option<&Original>) -> Option<Vec<Splice>> {
    let command = entry.command.as_ref()?;
    let args = entry.args.as_ref()?;
    let Wrap::Wrapped { command: original_command, args: original_args, .. } =
        wrapping::read(&command.value, &args.value)
    else {
        return None;
    };
    let exact = remembered.filter(|o| {
        decode_string(&o.command, syntax).as_deref() == Some(original_command.as_str())
            && match &o.args {
                Some(t) => decode_args(t, syntax).as_deref() == Some(original_args.as_slice()),
                None => original_args.is_empty(),
            }
    });
    let mut splices = vec![Splice {
        start: command.start,
        end: command.end,
        text: exact.map_or_else(|| literal(&original_command), |o| o.command.clone()),
    }];
    match exact {
        Some(Original { args: None, inserted: Some(prefix), .. })
            if text.get(command.end..args.start) == Some(prefix.as_str()) =>
        {
            splices.push(Splice { start: command.end, end: args.end, text: String::new() });
        }
        Some(Original { args: Some(original), .. }) => {
            splices.push(Splice { start: args.start, end: args.end, text: original.clone() });
        }
        _ => splices.push(Splice { start: args.start, end: args.end, text: array(&original_args) }),
    }
    Some(splices)
}
