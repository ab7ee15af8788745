//! Wrap and unwrap as text splices on the original file.

use std::path::Path;

use crate::document::{ArgsInsertion, Entry, Located};
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
    /// A remote server in a file clawai cannot rewrite it in (TOML), or with headers it
    /// cannot carry over: the URL and why.
    Remote(String, String),
    /// No `command` string.
    NoCommand,
    /// `args` is not a list of strings.
    UnusableArgs,
}

impl std::fmt::Display for NotWrappable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotWrappable::AlreadyWrapped => f.write_str("already wrapped"),
            NotWrappable::Remote(url, why) => write!(
                f,
                "remote server ({url}): {why}; guard it by hand with a stdio entry running `clawai proxy --upstream {url}` (README, Over HTTP)"
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
    flags: &[String],
) -> Result<(Vec<Splice>, Original), NotWrappable> {
    if let Some((key, url)) = &entry.remote
        && entry.command.is_none()
    {
        return wrap_remote(entry, text, clawai, policy, key, url);
    }
    let command = entry.command.as_ref().ok_or(NotWrappable::NoCommand)?;
    if entry.args_unusable {
        return Err(NotWrappable::UnusableArgs);
    }
    let args = entry.args.as_ref().map(|a| a.value.clone()).unwrap_or_default();
    if matches!(wrapping::read(&command.value, &args), Wrap::Wrapped { .. } | Wrap::Upstream { .. }) {
        return Err(NotWrappable::AlreadyWrapped);
    }
    let mut splices =
        vec![Splice { start: command.start, end: command.end, text: literal(&clawai.display().to_string()) }];
    let mut original =
        Original { command: text[command.start..command.end].to_owned(), args: None, inserted: None, entry: None };
    match &entry.args {
        Some(a) => {
            original.args = Some(text[a.start..a.end].to_owned());
            let head = wrapping::wrapped_args(&entry.name, policy, flags, &command.value, &[]);
            splices.push(prepend_to_array(text, a, &head));
        }
        None => {
            let new_args = array(&wrapping::wrapped_args(&entry.name, policy, flags, &command.value, &args));
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

/// The splice that puts `head` in front of the elements of the array written at
/// `start..end`, leaving the array's own text (its comments, line breaks, trailing comma)
/// as it is: a comment inside `args` survives the wrap. On an array written over several
/// lines the new elements get a line of their own, indented as the first element's.
fn prepend_to_array(text: &str, args: &Located<Vec<String>>, head: &[String]) -> Splice {
    let Some(inside) = text[args.start..args.end].strip_prefix('[') else {
        // Not an array's text (the readers never give one): write the array afresh.
        let all: Vec<String> = head.iter().chain(&args.value).cloned().collect();
        return Splice { start: args.start, end: args.end, text: array(&all) };
    };
    let items: Vec<String> = head.iter().map(|s| literal(s)).collect();
    let items = items.join(", ");
    let blank = inside.len() - inside.trim_start().len();
    let at = args.start + 1 + blank;
    let text = match inside[..blank].rfind('\n') {
        _ if args.value.is_empty() && inside[blank..].starts_with(']') => items,
        _ if args.value.is_empty() => format!("{items} "),
        Some(newline) => format!("{items},\n{}", &inside[newline + 1..blank]),
        None => format!("{items}, "),
    };
    Splice { start: at, end: at, text }
}

/// A remote entry becomes a stdio entry running `clawai proxy --upstream URL`: the URL
/// member is replaced by `command` and `args` in its place, `headers` go into `--header`
/// arguments, a `type` says `stdio`, and every other member stays as written. The whole
/// object is remembered for `unwrap`.
fn wrap_remote(
    entry: &Entry,
    text: &str,
    clawai: &Path,
    policy: Option<&Path>,
    key: &str,
    url: &str,
) -> Result<(Vec<Splice>, Original), NotWrappable> {
    let remote = |why: &str| NotWrappable::Remote(url.to_owned(), why.to_owned());
    let Some(layout) = &entry.layout else {
        return Err(remote("`clawai wrap` rewrites remote entries of JSON files only"));
    };
    let headers = match &entry.headers {
        None => Vec::new(),
        Some(Ok(headers)) => headers.clone(),
        Some(Err(why)) => return Err(remote(why)),
    };
    if let Some(bad) = headers.iter().find(|(name, value)| name.contains(':') || value.contains(['\r', '\n'])) {
        return Err(remote(&format!("header `{}` cannot be passed as `--header`", bad.0)));
    }
    let (_, url_member) = layout.member(key).expect("the remote key was read from this object");
    let args = wrapping::upstream_args(&entry.name, policy, url, &headers);
    let mut splices = vec![Splice {
        start: url_member.start,
        end: url_member.end,
        text: format!("\"command\": {}, \"args\": {}", literal(&clawai.display().to_string()), array(&args)),
    }];
    if let Some((_, kind)) = layout.member("type") {
        splices.push(Splice { start: kind.value_start, end: kind.end, text: literal("stdio") });
    }
    if let Some((i, member)) = layout.member("headers") {
        // The member goes with what separates it from the next member; the last one
        // with the comma before it, keeping any comment written after that comma (it
        // belongs to the member before).
        let splice = match layout.members.get(i + 1) {
            Some(next) => Splice { start: member.start, end: next.start, text: String::new() },
            None if i == 0 => Splice { start: member.start, end: member.end, text: String::new() },
            None => {
                let before = layout.members[i - 1].end;
                let separator = &text[before..member.start];
                let kept = separator.replacen(',', "", 1);
                let trimmed = kept.trim_end();
                // A line comment needs its line break, or it would swallow what follows.
                let ends_in_line_comment = trimmed.rsplit('\n').next().is_some_and(|line| line.contains("//"));
                let text = match () {
                    _ if trimmed.is_empty() => String::new(),
                    _ if ends_in_line_comment => kept,
                    _ => trimmed.to_owned(),
                };
                Splice { start: before, end: member.end, text }
            }
        };
        splices.push(splice);
    }
    let original = Original {
        command: String::new(),
        args: None,
        inserted: None,
        entry: Some(text[layout.start..layout.end].to_owned()),
    };
    Ok((splices, original))
}

/// The splices that unwrap a remote entry: the remembered object when it had the same
/// URL, else `url` (and `headers`) written afresh in place of `command` and `args`.
fn unwrap_remote(entry: &Entry, url: &str, headers: &[String], remembered: Option<&Original>) -> Option<Vec<Splice>> {
    let layout = entry.layout.as_ref()?;
    let same_url = |object: &&String| match jsonc_parser::parse_to_value(object, &Default::default()) {
        Ok(Some(jsonc_parser::JsonValue::Object(o))) => {
            ["url", "serverUrl", "httpUrl"].iter().any(|k| o.get_string(k).map(|u| u.as_ref()) == Some(url))
        }
        _ => false,
    };
    if let Some(object) = remembered.and_then(|o| o.entry.as_ref()).filter(same_url) {
        return Some(vec![Splice { start: layout.start, end: layout.end, text: object.clone() }]);
    }
    let (command_index, command) = layout.member("command")?;
    let (args_index, args) = layout.member("args")?;
    let mut restored = format!("\"url\": {}", literal(url));
    if !headers.is_empty() {
        let members: Vec<String> = headers
            .iter()
            .filter_map(|h| h.split_once(':'))
            .map(|(name, value)| format!("{}: {}", literal(name.trim()), literal(value.trim_start())))
            .collect();
        restored.push_str(&format!(", \"headers\": {{{}}}", members.join(", ")));
    }
    let mut splices = Vec::new();
    if args_index == command_index + 1 {
        splices.push(Splice { start: command.start, end: args.end, text: restored });
    } else {
        splices.push(Splice { start: command.start, end: command.end, text: restored });
        splices.push(Splice { start: layout.members[args_index - 1].end, end: args.end, text: String::new() });
    }
    if let Some((_, kind)) = layout.member("type") {
        splices.push(Splice { start: kind.value_start, end: kind.end, text: literal("http") });
    }
    Some(splices)
}

/// Decodes the text of a string value as written in the file.
fn decode_string(text: &str, syntax: Syntax) -> Option<String> {
    match syntax {
        Syntax::Toml => text.trim().parse::<toml_edit::Value>().ok()?.as_str().map(str::to_owned),
        _ => serde_json::from_str(text).ok(),
    }
}

/// Decodes the text of an `args` array as written in the file, comments and trailing
/// commas included (JSONC).
fn decode_args(text: &str, syntax: Syntax) -> Option<Vec<String>> {
    match syntax {
        Syntax::Toml => {
            let value = text.trim().parse::<toml_edit::Value>().ok()?;
            value.as_array()?.iter().map(|v| v.as_str().map(str::to_owned)).collect()
        }
        _ => match jsonc_parser::parse_to_value(text, &Default::default()).ok()?? {
            jsonc_parser::JsonValue::Array(items) => items
                .into_iter()
                .map(|v| match v {
                    jsonc_parser::JsonValue::String(s) => Some(s.into_owned()),
                    _ => None,
                })
                .collect(),
            _ => None,
        },
    }
}

/// The splices that unwrap an entry: the original text when clawai remembers it and it
/// still says the same thing, else the original command and arguments written afresh.
pub fn unwrap(entry: &Entry, text: &str, syntax: Syntax, remembered: Option<&Original>) -> Option<Vec<Splice>> {
    let command = entry.command.as_ref()?;
    let args = entry.args.as_ref()?;
    let (original_command, original_args) = match wrapping::read(&command.value, &args.value) {
        Wrap::Wrapped { command, args, .. } => (command, args),
        Wrap::Upstream { url, headers, .. } => return unwrap_remote(entry, &url, &headers, remembered),
        Wrap::Plain { .. } => return None,
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
