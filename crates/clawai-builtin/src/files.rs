//! `read_file`, `write_file`, `list_directory`: files on this machine. Relative paths
//! are taken from the directory clawai runs in.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use clawai_sdk::{ToolResult, claw_tool};
use tokio::io::AsyncReadExt;

/// The most `read_file` returns, and its default.
pub(crate) const READ_MAX_BYTES: u64 = 1 << 20;
/// The most entries `list_directory` shows.
pub(crate) const LIST_MAX_ENTRIES: usize = 5_000;
/// The most `write_file` writes in one call.
pub(crate) const WRITE_MAX_BYTES: usize = 16 << 20;

/// What went wrong with `path`, worded for the model.
fn io_problem(path: &str, error: &std::io::Error) -> ToolResult {
    let why = match error.kind() {
        ErrorKind::NotFound => "does not exist".to_owned(),
        ErrorKind::PermissionDenied => "cannot be accessed (permission denied)".to_owned(),
        _ => format!("cannot be used: {error}"),
    };
    ToolResult::error(format!("`{path}` {why}"))
}

/// Read a UTF-8 text file from this machine. Returns its text (at most `max_bytes`,
/// 1 MiB by default and at most; a longer file is cut and says so).
#[claw_tool(name = "read_file")]
pub(crate) async fn read_file(
    /// The file's path (absolute, or relative to the directory clawai runs in).
    path: String,
    /// The most bytes to return (default and at most 1048576).
    max_bytes: Option<u64>,
) -> ToolResult {
    let cap = max_bytes.unwrap_or(READ_MAX_BYTES).min(READ_MAX_BYTES);
    let mut file = match tokio::fs::File::open(&path).await {
        Ok(file) => file,
        Err(error) => return io_problem(&path, &error),
    };
    match file.metadata().await {
        Ok(meta) if meta.is_dir() => {
            return ToolResult::error(format!("`{path}` is a directory; list it with builtin__list_directory"));
        }
        Ok(meta) if !meta.is_file() => {
            return ToolResult::error(format!("`{path}` is not a regular file (a device, pipe or socket)"));
        }
        Ok(_) => {}
        Err(error) => return io_problem(&path, &error),
    }
    let mut bytes = Vec::new();
    if let Err(error) = (&mut file).take(cap + 1).read_to_end(&mut bytes).await {
        return io_problem(&path, &error);
    }
    let cut = bytes.len() as u64 > cap;
    let Some(text) = crate::text::text_prefix(&bytes, cap as usize) else {
        return ToolResult::error(format!("`{path}` is not a text file (it is not UTF-8)"));
    };
    if cut {
        ToolResult::text(format!("{text}\n[cut at {cap} bytes: the file is longer]"))
    } else {
        ToolResult::text(text)
    }
}

/// Write a text file on this machine, replacing it whole (atomically: readers see the
/// old file or the new one, never half of it), or appending to it with `append: true`.
/// The directory must exist.
#[claw_tool(name = "write_file")]
pub(crate) async fn write_file(
    /// The file's path (absolute, or relative to the directory clawai runs in).
    path: String,
    /// The text to write.
    content: String,
    /// Add to the end of the file instead of replacing it (default false).
    append: Option<bool>,
) -> ToolResult {
    if content.len() > WRITE_MAX_BYTES {
        return ToolResult::error(format!(
            "the content is {} bytes; at most {WRITE_MAX_BYTES} are written",
            content.len()
        ));
    }
    let bytes = content.len();
    let append = append.unwrap_or(false);
    let target = path.clone();
    let written = tokio::task::spawn_blocking(move || write(Path::new(&target), content.as_bytes(), append)).await;
    match written {
        Ok(Ok(())) if append => ToolResult::text(format!("appended {bytes} bytes to `{path}`")),
        Ok(Ok(())) => ToolResult::text(format!("wrote {bytes} bytes to `{path}`")),
        Ok(Err(error)) => io_problem(&path, &error),
        Err(error) => ToolResult::error(format!("writing `{path}` failed: {error}")),
    }
}

/// Appends, or replaces the file through a temporary file in its directory and a rename.
fn write(path: &Path, content: &[u8], append: bool) -> std::io::Result<()> {
    if append {
        let mut file = std::fs::OpenOptions::new().append(true).create(true).open(path)?;
        file.write_all(content)?;
        return file.sync_all();
    }
    // Through a symbolic link, the file it points to is replaced, not the link.
    let path: PathBuf = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => std::fs::canonicalize(path)?,
        _ => path.to_owned(),
    };
    let mode = match std::fs::metadata(&path) {
        Ok(meta) if meta.is_dir() => {
            return Err(std::io::Error::new(ErrorKind::IsADirectory, "is a directory"));
        }
        Ok(meta) => meta.mode() & 0o7777,
        Err(error) if error.kind() == ErrorKind::NotFound => 0o644,
        Err(error) => return Err(error),
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_owned(),
        _ => PathBuf::from("."),
    };
    let mut temporary = tempfile::Builder::new().prefix(".clawai-write-").tempfile_in(&dir)?;
    temporary.write_all(content)?;
    temporary.as_file().set_permissions(std::fs::Permissions::from_mode(mode))?;
    temporary.as_file().sync_all()?;
    temporary.persist(&path).map_err(|error| error.error)?;
    Ok(())
}

/// List a directory on this machine: one entry per line, directories ending in `/`,
/// symbolic links with their target, files with their size; sorted by name.
#[claw_tool(name = "list_directory")]
pub(crate) async fn list_directory(
    /// The directory's path (absolute, or relative to the directory clawai runs in).
    path: String,
) -> ToolResult {
    let dir = path.clone();
    match tokio::task::spawn_blocking(move || list(Path::new(&dir))).await {
        Ok(Ok(lines)) if lines.is_empty() => ToolResult::text(format!("`{path}` is empty")),
        Ok(Ok(lines)) => ToolResult::text(lines.join("\n")),
        Ok(Err(error)) if error.kind() == ErrorKind::NotADirectory => {
            ToolResult::error(format!("`{path}` is not a directory; read it with builtin__read_file"))
        }
        Ok(Err(error)) => io_problem(&path, &error),
        Err(error) => ToolResult::error(format!("listing `{path}` failed: {error}")),
    }
}

fn list(dir: &Path) -> std::io::Result<Vec<String>> {
    let mut entries: Vec<(String, String)> = Vec::new();
    let mut more = 0usize;
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entries.len() >= LIST_MAX_ENTRIES {
            more += 1;
            continue;
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let kind = entry.file_type()?;
        let line = if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map(|t| t.display().to_string()).unwrap_or_default();
            format!("{name} -> {target}")
        } else if kind.is_dir() {
            format!("{name}/")
        } else {
            let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
            format!("{name} ({size} bytes)")
        };
        entries.push((name, line));
    }
    entries.sort();
    let mut lines: Vec<String> = entries.into_iter().map(|(_, line)| line).collect();
    if more > 0 {
        lines.push(format!("[{more} more entries not shown]"));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    async fn call(tool: clawai_sdk::SdkMcpTool, args: Value) -> (bool, String) {
        let result = tool.call(args).await.unwrap();
        let text = serde_json::to_value(&result).unwrap()["content"][0]["text"].as_str().unwrap().to_owned();
        (result.failed(), text)
    }

    #[tokio::test]
    async fn a_file_written_whole_replaces_the_old_one_and_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notes.txt");
        std::fs::write(&path, "old text that is longer").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let p = path.to_str().unwrap();
        assert_eq!(
            call(write_file(), json!({"path": p, "content": "new"})).await,
            (false, format!("wrote 3 bytes to `{p}`"))
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        call(write_file(), json!({"path": p, "content": "+more", "append": true})).await;
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new+more");
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left.len(), 1, "no temporary file is left: {left:?}");
    }

    #[tokio::test]
    async fn writing_through_a_link_replaces_the_file_it_points_to() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.txt");
        std::fs::write(&real, "a").unwrap();
        let link = dir.path().join("link.txt");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        call(write_file(), json!({"path": link.to_str().unwrap(), "content": "b"})).await;
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&real).unwrap(), "b");
    }

    #[tokio::test]
    async fn a_missing_directory_is_an_error_and_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("no/such/dir/x.txt");
        let (failed, text) = call(write_file(), json!({"path": path.to_str().unwrap(), "content": "x"})).await;
        assert!(failed && text.contains("does not exist"), "{text}");
        assert!(!dir.path().join("no").exists());
    }

    #[tokio::test]
    async fn reading_is_capped_and_binary_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let text = dir.path().join("a.txt");
        std::fs::write(&text, "0123456789").unwrap();
        let p = text.to_str().unwrap();
        assert_eq!(call(read_file(), json!({"path": p})).await, (false, "0123456789".to_owned()));
        let (failed, cut) = call(read_file(), json!({"path": p, "max_bytes": 4})).await;
        assert!(!failed && cut.starts_with("0123\n[cut at 4 bytes"), "{cut}");
        let binary = dir.path().join("b.bin");
        std::fs::write(&binary, [0xff, 0xfe, 0, 1]).unwrap();
        let (failed, why) = call(read_file(), json!({"path": binary.to_str().unwrap()})).await;
        assert!(failed && why.contains("not a text file"), "{why}");
        let (failed, why) = call(read_file(), json!({"path": dir.path().to_str().unwrap()})).await;
        assert!(failed && why.contains("is a directory"), "{why}");
    }

    #[tokio::test]
    async fn a_listing_is_sorted_and_marks_kinds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.txt"), "12").unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::os::unix::fs::symlink("b.txt", dir.path().join("c")).unwrap();
        let (failed, text) = call(list_directory(), json!({"path": dir.path().to_str().unwrap()})).await;
        assert!(!failed);
        assert_eq!(text, "a/\nb.txt (2 bytes)\nc -> b.txt");
    }
}
