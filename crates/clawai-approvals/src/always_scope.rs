//! What an "always" answer covers: by default the arguments the person was shown, and
//! no more. A person who approves one project write must not have approved a write to
//! `/etc/shadow`. Each argument becomes an `args.NAME` glob of the entry: a string or a
//! number as it was (exactly), a path as the directory it is in (`/home/u/p/notes/*`:
//! the files there, not below). What a glob cannot say exactly (an array, a value that
//! holds `*` or `?`, a key with a dot) is refused with what to do instead; widening to
//! any arguments is a separate, explicit choice.

use serde_json::Value;

use crate::always::{AlwaysEntry, AlwaysError, AskedVia};

/// Which arguments an "always" entry covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Covered {
    /// The arguments shown: each exactly, a path by its directory.
    Shown,
    /// Any arguments (the person chose to widen it).
    Any,
}

impl AlwaysEntry {
    /// The entry an "always" answer to this call writes, covering `covered`. `arguments`
    /// are what a rule's `args.NAME` reads (a call's `arguments`; a resource read's
    /// `params`), as the approval showed them.
    pub fn for_call(
        server: Option<String>,
        method: String,
        name: Option<String>,
        arguments: &Value,
        via: AskedVia,
        covered: Covered,
    ) -> Result<AlwaysEntry, AlwaysError> {
        let mut globs = Vec::new();
        if covered == Covered::Shown {
            collect(arguments, "", &mut globs)?;
            // No condition would cover any arguments: a call shown without arguments
            // cannot be told from one that carries some.
            if globs.is_empty() {
                return Err(too_wide("(the arguments)", "the call shown has none, and an entry cannot require none"));
            }
        }
        Ok(AlwaysEntry { server, method, name, arguments: globs, via })
    }
}

/// Why an argument cannot be covered exactly.
fn too_wide(key: &str, why: &str) -> AlwaysError {
    AlwaysError::TooWide { argument: key.to_owned(), why: why.to_owned() }
}

fn collect(value: &Value, prefix: &str, globs: &mut Vec<(String, String)>) -> Result<(), AlwaysError> {
    let Value::Object(members) = value else {
        return match value {
            Value::Null if prefix.is_empty() => Ok(()),
            _ if prefix.is_empty() => Err(too_wide("(the arguments)", "they are not an object of named arguments")),
            _ => Err(too_wide(prefix, "it is not a named argument")),
        };
    };
    let mut keys: Vec<&String> = members.keys().collect();
    keys.sort();
    for key in keys {
        if key.contains(['.', '*', '?']) || key.is_empty() {
            return Err(too_wide(key, "its name cannot be written as `args.NAME`"));
        }
        let path = if prefix.is_empty() { key.clone() } else { format!("{prefix}.{key}") };
        match &members[key] {
            Value::Object(_) => collect(&members[key], &path, globs)?,
            Value::Array(_) => {
                return Err(too_wide(&path, "it is a list, which one glob cannot match exactly"));
            }
            Value::Null => return Err(too_wide(&path, "it is null, which a glob cannot require")),
            Value::String(text) => globs.push((path.clone(), glob_of(key, &path, text)?)),
            other => globs.push((path, other.to_string())),
        }
    }
    Ok(())
}

/// Argument names that hold a file's path: only their values are covered by their
/// directory. A command line or an API route that starts with `/` is not a path.
const PATH_NAMES: &[&str] = &[
    "path",
    "file",
    "filepath",
    "file_path",
    "filename",
    "file_name",
    "source",
    "src",
    "destination",
    "dest",
    "dst",
    "target",
    "from",
    "to",
    "old_path",
    "new_path",
    "notebook_path",
];

/// The glob a string argument (`name`, at `path` in the arguments) is covered by: the
/// directory of a file's path (an argument named like one, a value that is one absolute
/// path: no blanks, no shell or glob characters, not a directory itself), else the value
/// exactly.
fn glob_of(name: &str, path: &str, text: &str) -> Result<String, AlwaysError> {
    if text.contains(['*', '?']) {
        return Err(too_wide(path, "its value holds `*` or `?`, which a glob reads as a wildcard"));
    }
    let named_as_path = PATH_NAMES.contains(&name.to_ascii_lowercase().as_str());
    let one_path = (text.starts_with('/') || text.starts_with("~/"))
        && !text.ends_with('/')
        && !text.chars().any(|c| c.is_whitespace() || c.is_control() || ";|&$`<>(){}[]'\"\\".contains(c))
        && !text.split('/').any(|part| part == ".." || part == ".");
    if !(named_as_path && one_path) {
        return Ok(text.to_owned());
    }
    match text.rsplit_once('/') {
        // Files in a directory two levels down at least: `/home/u/p/*`, not `/home/*`.
        Some((dir, _)) if dir.matches('/').count() >= 2 || (dir.starts_with("~/") && dir.len() > 2) => {
            Ok(format!("{dir}/*"))
        }
        _ => Ok(text.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(arguments: Value, covered: Covered) -> Result<AlwaysEntry, AlwaysError> {
        AlwaysEntry::for_call(
            Some("fs".into()),
            "tools/call".into(),
            Some("write_file".into()),
            &arguments,
            AskedVia::Cli,
            covered,
        )
    }

    #[test]
    fn the_arguments_shown_are_covered_a_path_by_its_directory() {
        let e = entry(json!({"path": "/home/u/p/notes/a.md", "content": "hi", "mode": 420}), Covered::Shown).unwrap();
        assert_eq!(
            e.arguments,
            [
                ("content".to_owned(), "hi".to_owned()),
                ("mode".to_owned(), "420".to_owned()),
                ("path".to_owned(), "/home/u/p/notes/*".to_owned())
            ]
        );
        let nested = entry(json!({"options": {"dryRun": true}}), Covered::Shown).unwrap();
        assert_eq!(nested.arguments, [("options.dryRun".to_owned(), "true".to_owned())]);
        assert_eq!(entry(json!({"path": "/etc"}), Covered::Shown).unwrap().arguments[0].1, "/etc");
    }

    #[test]
    fn only_a_path_argument_is_covered_by_its_directory() {
        let command = entry(json!({"command": "/usr/bin/env ls /home/u/p/src"}), Covered::Shown).unwrap();
        assert_eq!(command.arguments[0].1, "/usr/bin/env ls /home/u/p/src", "a command line is matched exactly");
        let route = entry(json!({"endpoint": "/repos/o/r/issues"}), Covered::Shown).unwrap();
        assert_eq!(route.arguments[0].1, "/repos/o/r/issues");
        for exact in ["/home/u/p/build/", "/home/u", "/home/u/p/../x/a", "/home/u/p/a b"] {
            assert_eq!(entry(json!({"path": exact}), Covered::Shown).unwrap().arguments[0].1, exact, "{exact}");
        }
        assert_eq!(
            entry(json!({"file_path": "/srv/app/src/main.rs"}), Covered::Shown).unwrap().arguments[0].1,
            "/srv/app/src/*"
        );
    }

    #[test]
    fn a_call_shown_without_arguments_is_not_covered_with_any() {
        for arguments in [json!(null), json!({}), json!({"command": null}), json!({"list": []})] {
            let error = entry(arguments.clone(), Covered::Shown).unwrap_err().to_string();
            assert!(error.contains("any arguments"), "{arguments}: {error}");
        }
    }

    #[test]
    fn what_a_glob_cannot_say_exactly_is_refused_unless_widened() {
        for arguments in [json!({"paths": ["/a", "/b"]}), json!({"pattern": "*.rs"}), json!({"a.b": "x"})] {
            let error = entry(arguments.clone(), Covered::Shown).unwrap_err().to_string();
            assert!(error.contains("any arguments"), "{error}");
            assert!(entry(arguments, Covered::Any).unwrap().arguments.is_empty());
        }
    }
}
