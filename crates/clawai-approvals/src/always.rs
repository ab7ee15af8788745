//! "Always" answers: `[[allow]]` entries appended to approvals.toml.
//!
//! The file is the person's as much as clawai's: an append keeps every byte already
//! there (comments, order, spacing), and is written whole to a temporary file in the
//! same directory and renamed over, so a reader never sees half an entry.

use std::io::Write;
use std::path::{Path, PathBuf};

use toml_edit::{DocumentMut, Item, Table, value};

/// The header of a new approvals.toml.
const HEADER: &str = "\
# clawai approvals: calls a person allowed \"always\" (in `clawai ui` or with
# `clawai approve ID --always`). Each [[allow]] entry turns a `prompt` decision into
# `allow` for the calls it matches; it never overrides a `deny`. Edit or delete
# entries as you like; clawai only ever appends.
";

/// Where the person answered, for the entry's description.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskedVia {
    /// The web page (`clawai ui`).
    Ui,
    /// The terminal (`clawai approve --always`).
    Cli,
}

/// The call an "always" answer allows from now on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysEntry {
    /// The server's name; the entry matches every server when there is none.
    pub server: Option<String>,
    /// The JSON-RPC method (`tools/call`, `resources/read`, `prompts/get`, ...).
    pub method: String,
    /// The tool, resource URI or prompt name.
    pub name: Option<String>,
    /// `args.NAME` globs (dotted name, glob): the arguments the entry covers; none
    /// covers any arguments ([`crate::Covered`]).
    pub arguments: Vec<(String, String)>,
    /// Where the person answered.
    pub via: AskedVia,
}

/// Why an entry was not written.
#[derive(Debug, thiserror::Error)]
pub enum AlwaysError {
    /// A name holds `*` or `?`, which approvals.toml reads as a glob with no escape.
    #[error(
        "`{name}` contains `*` or `?`, which approvals.toml reads as a wildcard (there is no escape), so an \"always\" entry would allow more than this call; approve it once, or write the entry in {} by hand", .path.display()
    )]
    GlobInName {
        /// The server or tool name.
        name: String,
        /// The approvals file.
        path: PathBuf,
    },
    /// An argument the entry would have to cover more widely than the call shown.
    #[error(
        "an \"always\" entry cannot cover `{argument}` exactly ({why}); approve this call once, or choose to cover any arguments (`clawai approve ID --always --any-arguments`, or \"Always, any arguments\" in clawai ui)"
    )]
    TooWide {
        /// The argument, as a dotted name.
        argument: String,
        /// Why.
        why: String,
    },
    /// The existing file is not valid TOML, or its `allow` is not a list of tables.
    #[error("{} is not a valid approvals file ({problem}); fix it by hand, then approve again", .path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        problem: String,
    },
    /// Reading or writing the file failed.
    #[error("cannot write {}: {error}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What failed.
        error: std::io::Error,
    },
}

/// Appends `entry` to [`crate::approvals_file`]; returns the new entry's id.
pub fn append_always(entry: &AlwaysEntry) -> Result<String, AlwaysError> {
    append_always_to(&crate::approvals_file(), entry, jiff::Zoned::now().date())
}

/// Appends `entry` to the approvals file at `path`, dated `today`; returns its id
/// (`always-2026-11-25-3`: the date and the next free number for it).
pub fn append_always_to(path: &Path, entry: &AlwaysEntry, today: jiff::civil::Date) -> Result<String, AlwaysError> {
    let io = |error| AlwaysError::Io { path: path.to_path_buf(), error };
    let existing = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let (appended, id) = with_always(existing.as_deref(), entry, today, path)?;
    write_private(path, appended.as_bytes()).map_err(io)?;
    Ok(id)
}

/// The approvals `existing` (`None`: none yet) with `entry` appended, dated `today`, and
/// the entry's id; `location` names them in messages. For a store other than a file (the
/// approvals replicas share).
pub fn with_always(
    existing: Option<&str>,
    entry: &AlwaysEntry,
    today: jiff::civil::Date,
    location: &Path,
) -> Result<(String, String), AlwaysError> {
    for name in entry.server.iter().chain(entry.name.iter()) {
        if name.contains(['*', '?']) {
            return Err(AlwaysError::GlobInName { name: name.clone(), path: location.to_path_buf() });
        }
    }
    let text = existing.unwrap_or(HEADER);
    let invalid = |problem: String| AlwaysError::Invalid { path: location.to_path_buf(), problem };
    let document: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| invalid(e.to_string()))?;
    let id = next_id(&document, today, location)?;
    let mut appended = String::with_capacity(text.len() + 256);
    appended.push_str(text);
    if !appended.is_empty() && !appended.ends_with('\n') {
        appended.push('\n');
    }
    if !appended.is_empty() {
        appended.push('\n');
    }
    appended.push_str(&entry_text(entry, &id, today));
    // The whole file must still read as approvals: a top-level `allow = ...` that is not
    // a list of tables would have been refused above, so this only guards surprises.
    appended.parse::<DocumentMut>().map_err(|e| invalid(e.to_string()))?;
    Ok((appended, id))
}

/// Where "always" answers are written: the approvals file ([`AlwaysFile`]), or the
/// approvals replicas share (cluster mode).
pub trait AlwaysWriter: Send + Sync + std::fmt::Debug {
    /// Appends `entry`; returns its id.
    fn append(&self, entry: &AlwaysEntry) -> Result<String, AlwaysError>;
}

/// "Always" answers written to the approvals file at a path.
#[derive(Debug, Clone)]
pub struct AlwaysFile(pub PathBuf);

impl AlwaysWriter for AlwaysFile {
    fn append(&self, entry: &AlwaysEntry) -> Result<String, AlwaysError> {
        append_always_to(&self.0, entry, jiff::Zoned::now().date())
    }
}

impl AlwaysEntry {
    /// The `[[allow]]` entry as it would be written (without its id and date): what the
    /// person is shown before choosing "always".
    pub fn preview(&self) -> String {
        // Long values are cut for the eye (the approval shows them cut, with a digest);
        // the entry written holds them whole.
        const SHOWN: usize = 80;
        let mut shown = self.clone();
        for (_, glob) in &mut shown.arguments {
            let count = glob.chars().count();
            if count > SHOWN {
                *glob =
                    format!("{}… ({count} characters, as shown above)", glob.chars().take(SHOWN).collect::<String>());
            }
        }
        entry_text(&shown, "always-…", jiff::civil::date(2000, 1, 1))
            .lines()
            .filter(|line| !line.starts_with("id = ") && !line.starts_with("description = "))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// `always-DATE-N` with the first N no entry uses.
fn next_id(document: &DocumentMut, today: jiff::civil::Date, path: &Path) -> Result<String, AlwaysError> {
    let prefix = format!("always-{today}-");
    let used: Vec<u64> = match document.get("allow") {
        None => Vec::new(),
        Some(Item::ArrayOfTables(entries)) => entries
            .iter()
            .filter_map(|t| t.get("id").and_then(Item::as_str))
            .filter_map(|id| id.strip_prefix(&prefix)?.parse().ok())
            .collect(),
        Some(_) => {
            return Err(AlwaysError::Invalid {
                path: path.to_path_buf(),
                problem: "`allow` must be a list of [[allow]] tables".into(),
            });
        }
    };
    let n = used.iter().max().map_or(1, |max| max + 1);
    Ok(format!("{prefix}{n}"))
}

/// The `[[allow]]` table, written by toml_edit so that every value is quoted right.
fn entry_text(entry: &AlwaysEntry, id: &str, today: jiff::civil::Date) -> String {
    let mut table = Table::new();
    table.insert("id", value(id));
    if let Some(server) = &entry.server {
        table.insert("server", value(server.as_str()));
    }
    match (entry.method.as_str(), &entry.name) {
        ("tools/call", Some(tool)) => {
            table.insert("tool", value(tool.as_str()));
        }
        (method, name) => {
            table.insert("method", value(method));
            let key = match method {
                "resources/read" => Some("resource"),
                "prompts/get" => Some("prompt"),
                _ => None,
            };
            if let (Some(key), Some(name)) = (key, name) {
                table.insert(key, value(name.as_str()));
            }
        }
    }
    if !entry.arguments.is_empty() {
        // `args.path = "…"`, `args.options.dryRun = "true"`: dotted keys, as rules write them.
        let mut args = Table::new();
        args.set_dotted(true);
        for (key, glob) in &entry.arguments {
            let mut parts: Vec<&str> = key.split('.').collect();
            let last = parts.pop().expect("a name has one part at least");
            let mut at = &mut args;
            for part in parts {
                let inner = at.entry(part).or_insert_with(|| {
                    let mut t = Table::new();
                    t.set_dotted(true);
                    Item::Table(t)
                });
                at = inner.as_table_mut().expect("a dotted table");
            }
            at.insert(last, value(glob.as_str()));
        }
        table.insert("args", Item::Table(args));
    }
    let how = match entry.via {
        AskedVia::Ui => "in clawai ui",
        AskedVia::Cli => "with clawai approve",
    };
    let covers = if entry.arguments.is_empty() { "any arguments" } else { "the arguments shown" };
    table.insert("description", value(format!("approved always {how} on {today}, for {covers}")));
    let mut document = DocumentMut::new();
    let mut list = toml_edit::ArrayOfTables::new();
    list.push(table);
    document.insert("allow", Item::ArrayOfTables(list));
    document.to_string()
}

/// Writes `bytes` to `path` through a temporary file in the same directory (mode 0600)
/// renamed over it; creates the directory (0700) when missing.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if !dir.exists() {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)?;
    }
    // NamedTempFile creates its file with mode 0600.
    let mut temp = tempfile::NamedTempFile::new_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn day() -> jiff::civil::Date {
        jiff::civil::date(2026, 11, 25)
    }

    fn tool(server: Option<&str>, name: &str) -> AlwaysEntry {
        AlwaysEntry {
            server: server.map(String::from),
            method: "tools/call".into(),
            name: Some(name.into()),
            arguments: Vec::new(),
            via: AskedVia::Ui,
        }
    }

    #[test]
    fn appends_keeping_every_existing_byte_and_numbers_the_day() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.toml");
        let before = "# mine, keep me\n[[allow]]   # spaced\nid = \"always-2026-11-25-4\"\ntool = \"x\"";
        std::fs::write(&path, before).unwrap();
        let id = append_always_to(&path, &tool(Some("fs \"q\""), "write_file"), day()).unwrap();
        assert_eq!(id, "always-2026-11-25-5");
        let after = std::fs::read_to_string(&path).unwrap();
        assert!(after.starts_with(before), "{after}");
        let doc: toml::Table = toml::from_str(&after).unwrap();
        let entries = doc["allow"].as_array().unwrap();
        let new = entries[1].as_table().unwrap();
        assert_eq!(new["id"].as_str(), Some("always-2026-11-25-5"));
        assert_eq!(new["server"].as_str(), Some("fs \"q\""));
        assert_eq!(new["tool"].as_str(), Some("write_file"));
        assert_eq!(new["description"].as_str(), Some("approved always in clawai ui on 2026-11-25, for any arguments"));
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn creates_the_file_with_a_header_and_private_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new").join("approvals.toml");
        let entry = AlwaysEntry {
            server: None,
            method: "resources/read".into(),
            name: Some("file:///etc/hosts".into()),
            arguments: Vec::new(),
            via: AskedVia::Cli,
        };
        assert_eq!(append_always_to(&path, &entry, day()).unwrap(), "always-2026-11-25-1");
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# clawai approvals"), "{text}");
        let doc: toml::Table = toml::from_str(&text).unwrap();
        let new = doc["allow"].as_array().unwrap()[0].as_table().unwrap();
        assert!(new.get("server").is_none());
        assert_eq!(new["method"].as_str(), Some("resources/read"));
        assert_eq!(new["resource"].as_str(), Some("file:///etc/hosts"));
        assert_eq!(
            new["description"].as_str(),
            Some("approved always with clawai approve on 2026-11-25, for any arguments")
        );
        assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
        assert_eq!(std::fs::metadata(path.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn refuses_names_that_would_read_as_globs_and_leaves_the_file_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.toml");
        std::fs::write(&path, "# keep\n").unwrap();
        for entry in [tool(None, "read*"), tool(Some("fs?"), "read")] {
            let error = append_always_to(&path, &entry, day()).unwrap_err();
            assert!(matches!(error, AlwaysError::GlobInName { .. }), "{error}");
            assert!(error.to_string().contains("by hand"));
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "# keep\n");
    }

    #[test]
    fn refuses_a_file_whose_allow_is_not_a_list_of_tables() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("approvals.toml");
        std::fs::write(&path, "allow = 3\n").unwrap();
        assert!(matches!(append_always_to(&path, &tool(None, "x"), day()), Err(AlwaysError::Invalid { .. })));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "allow = 3\n");
    }
}
