//! The audit trail as tests read it: one JSON object per line.

use std::path::Path;

use serde_json::Value;

/// Every event of the trail at `path`, in order (none when there is no file yet).
pub fn read(path: &Path) -> Vec<Value> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("a trail line is not JSON ({e}): {line}")))
        .collect()
}

/// The events of the trail at `path` whose `member` is `value`.
pub fn where_(path: &Path, member: &str, value: &str) -> Vec<Value> {
    read(path).into_iter().filter(|event| event.get(member).and_then(Value::as_str) == Some(value)).collect()
}
