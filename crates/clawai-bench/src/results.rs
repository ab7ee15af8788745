//! The large `tools/call` results benchmarks send through clawai, in the shapes real
//! servers answer with.

use base64::Engine as _;

/// The large results, by the name of the tool that answers with them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BigShape {
    /// One text block of source-code-like lines (a file read, a log).
    Text,
    /// A base64 PNG, as browser-automation servers return screenshots.
    Image,
    /// `structuredContent` holding an array of records, a one-line summary beside it.
    Json,
}

impl BigShape {
    /// The shape a `tools/call` of `tool` asks for, if it names one: `big_text`,
    /// `big_image` or `big_json`.
    pub fn named(tool: Option<&str>) -> Option<BigShape> {
        match tool? {
            "big_text" => Some(BigShape::Text),
            "big_image" => Some(BigShape::Image),
            "big_json" => Some(BigShape::Json),
            _ => None,
        }
    }

    /// The `result` member, as JSON text, with about `bytes` bytes of payload.
    pub fn result(self, bytes: usize) -> String {
        match self {
            BigShape::Text => {
                let mut text = String::with_capacity(bytes + 128);
                let mut n = 0usize;
                while text.len() < bytes {
                    n += 1;
                    text.push_str(&format!(
                        "{n:>6}  let total_{n} = items.iter().filter(|i| i.size > {}).map(|i| i.size).sum::<u64>(); // pass {}\n",
                        n % 977,
                        n % 13
                    ));
                }
                serde_json::json!({"content": [{"type": "text", "text": text}]}).to_string()
            }
            BigShape::Image => {
                // A PNG signature and pseudo-random bytes: base64 of data that does not
                // compress, as a screenshot's does not.
                let mut raw = b"\x89PNG\r\n\x1a\n".to_vec();
                let mut state = 0x9e37_79b9_7f4a_7c15u64;
                while raw.len() < bytes / 4 * 3 {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    raw.extend_from_slice(&state.to_le_bytes());
                }
                let data = base64::engine::general_purpose::STANDARD.encode(&raw);
                serde_json::json!({"content": [{"type": "image", "data": data, "mimeType": "image/png"}]}).to_string()
            }
            BigShape::Json => {
                let mut rows = Vec::new();
                let mut size = 0;
                while size < bytes {
                    let n = rows.len();
                    let row = serde_json::json!({
                        "id": n,
                        "name": format!("item-{n}"),
                        "path": format!("/home/u/projects/app/src/module_{}/file_{n}.rs", n % 40),
                        "size": n * 37 % 100_000,
                        "modified": format!("2026-{:02}-{:02}T10:{:02}:00Z", n % 12 + 1, n % 28 + 1, n % 60),
                        "tags": ["source", if n % 2 == 0 { "even" } else { "odd" }],
                    });
                    size += row.to_string().len() + 1;
                    rows.push(row);
                }
                let summary = format!("{} rows", rows.len());
                serde_json::json!({"content": [{"type": "text", "text": summary}], "structuredContent": {"rows": rows}})
                    .to_string()
            }
        }
    }
}
