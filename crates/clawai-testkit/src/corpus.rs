//! The corpus of real servers' listings (`crates/clawai-scan/tests/corpus/`, dumped by
//! its `dump.py` from the servers people run): each server's tools, prompts, resource
//! templates and instructions, with the package and version it came from.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// One server's dump.
#[derive(Debug, Clone)]
pub struct Dump {
    /// The name the corpus gives the server.
    pub server: String,
    /// The package it was installed from (`@scope/name@version`), when the dump says.
    pub package: String,
    /// The whole dump: `server`, `package`, `serverInfo`, `capabilities`,
    /// `instructions`, `tools`, `prompts`, `resourceTemplates`.
    pub value: Value,
}

impl Dump {
    /// The server's `instructions`, if it gives any.
    pub fn instructions(&self) -> Option<&str> {
        self.value["instructions"].as_str()
    }

    /// The items of one list (`tools`, `prompts`, `resourceTemplates`).
    pub fn items(&self, member: &str) -> &[Value] {
        self.value[member].as_array().map_or(&[], Vec::as_slice)
    }
}

/// The corpus folder.
pub fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../clawai-scan/tests/corpus")
}

/// Every dumped server, in file name order.
pub fn dumps() -> Vec<Dump> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir())
        .expect("the corpus folder")
        .map(|entry| entry.expect("a corpus entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let value: Value =
                serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
            Dump {
                server: value["server"].as_str().expect("every dump names its server").to_owned(),
                package: value["package"].as_str().unwrap_or_default().to_owned(),
                value,
            }
        })
        .collect()
}
