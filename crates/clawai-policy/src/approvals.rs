//! Standing approvals: the calls a person chose to allow always, from `clawai ui` or
//! `clawai approve ID --always`, kept in their own file (`approvals.toml` beside the
//! policy) as `[[allow]]` entries written like rules, without `action`:
//!
//! ```toml
//! [[allow]]
//! id = "always-2026-11-25-1"
//! server = "filesystem"
//! tool = "write_file"
//! args.path = "/home/me/notes/**"
//! description = "approved always in clawai ui on 2026-11-25"
//! ```
//!
//! An entry only ever turns a `prompt` into `allow` for the calls it matches (matched as
//! an allow rule is: exact names, every reading of a value); a `deny` stays a deny.

use std::path::Path;

use crate::call::Call;
use crate::engine::Policy;
use crate::load::{PolicyError, parse_approvals};
use crate::rule::{Action, Rule};

/// The entries of an approvals file.
#[derive(Debug, Clone)]
pub struct Approvals {
    entries: Policy,
}

impl Approvals {
    /// No standing approvals.
    pub fn none() -> Approvals {
        Approvals { entries: Policy::new(Vec::new(), Action::Deny).expect("an empty policy compiles") }
    }

    /// Reads approvals from text; `name` is used in error messages.
    pub fn parse(text: &str, name: &str) -> Result<Approvals, PolicyError> {
        parse_approvals(text, name).map(|entries| Approvals { entries })
    }

    /// Reads an approvals file; a file that does not exist holds no approvals.
    pub fn load(path: &Path) -> Result<Approvals, PolicyError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Approvals::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Approvals::none()),
            Err(e) => Err(PolicyError {
                path: path.display().to_string(),
                diagnostics: vec![crate::load::Diagnostic {
                    line: None,
                    column: None,
                    message: format!("cannot read the approvals: {e}"),
                }],
            }),
        }
    }

    /// The entries, in order.
    pub fn entries(&self) -> &[Rule] {
        self.entries.rules()
    }

    /// The entry that approves this call, with its index, if one does.
    pub fn approving(&self, call: &Call) -> Option<(usize, &Rule)> {
        let decision = self.entries.decide(call);
        decision.rule.filter(|_| decision.action == Action::Allow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clawai_protocol::Json;
    use serde_json::json;

    fn call<'a>(params: &'a Json<'a>, server: Option<&'a str>) -> Call<'a> {
        Call::from_params("tools/call", Some(params)).with_server(server)
    }

    #[test]
    fn an_entry_approves_only_the_calls_it_matches_as_an_allow_would() {
        let approvals = Approvals::parse(
            "[[allow]]\nid = \"notes\"\nserver = \"fs\"\ntool = \"write_file\"\nargs.path = \"/home/me/notes/**\"\n",
            "approvals.toml",
        )
        .unwrap();
        let ok = json!({"name": "write_file", "arguments": {"path": "/home/me/notes/a.md"}});
        let ok = Json::from(&ok);
        assert_eq!(approvals.approving(&call(&ok, Some("fs"))).map(|(_, r)| r.id.as_deref()), Some(Some("notes")));
        assert!(approvals.approving(&call(&ok, Some("gh"))).is_none(), "another server");
        assert!(approvals.approving(&call(&ok, None)).is_none(), "no server");
        let escape = json!({"name": "write_file", "arguments": {"path": "/home/me/notes/../.ssh/x"}});
        let escape = Json::from(&escape);
        assert!(approvals.approving(&call(&escape, Some("fs"))).is_none(), "every reading must match");
        let case = json!({"name": "Write_File", "arguments": {"path": "/home/me/notes/a.md"}});
        let case = Json::from(&case);
        assert!(approvals.approving(&call(&case, Some("fs"))).is_none(), "exact names");
    }

    #[test]
    fn a_bad_file_is_refused_with_its_line() {
        let e = Approvals::parse("[[allow]]\ntool = \"x\"\naction = \"deny\"\n", "approvals.toml").unwrap_err();
        assert!(e.to_string().contains("approvals.toml:3") && e.to_string().contains("remove `action`"), "{e}");
        let e = Approvals::parse("[[rule]]\ntool = \"x\"\n", "approvals.toml").unwrap_err();
        assert!(e.to_string().contains("approvals.toml:1"), "{e}");
        let e = Approvals::parse("[[allow]]\nserver = \"fs\"\n", "approvals.toml").unwrap_err();
        assert!(e.to_string().contains("no target"), "{e}");
        assert!(Approvals::load(Path::new("/nonexistent/approvals.toml")).unwrap().entries().is_empty());
    }
}

/// Where the standing approvals are kept, read again whenever a rule asks (a person may
/// have added one meanwhile): one interface, chosen at start-up. The local one is a file
/// ([`ApprovalsFile`], `approvals.toml`).
pub trait StandingApprovals: Send + Sync + std::fmt::Debug {
    /// The approvals as they are now (none, when nothing was approved yet).
    fn current(&self) -> Result<Approvals, PolicyError>;

    /// Where they are, as the trail names who allowed a call (a path, locally).
    fn location(&self) -> String;
}

/// The standing approvals in a file.
#[derive(Debug, Clone)]
pub struct ApprovalsFile {
    path: std::path::PathBuf,
}

impl ApprovalsFile {
    /// The approvals in the file at `path` (it need not exist yet).
    pub fn new(path: impl Into<std::path::PathBuf>) -> ApprovalsFile {
        ApprovalsFile { path: path.into() }
    }
}

impl StandingApprovals for ApprovalsFile {
    fn current(&self) -> Result<Approvals, PolicyError> {
        Approvals::load(&self.path)
    }

    fn location(&self) -> String {
        self.path.display().to_string()
    }
}

/// The standing approvals in a document of a store (cluster mode: the approvals every
/// replica reads, in Redis), read again at every ask.
#[derive(Debug, Clone)]
pub struct ApprovalsDocument {
    documents: std::sync::Arc<dyn clawai_store::Documents>,
    name: String,
}

impl ApprovalsDocument {
    /// The approvals in document `name` of `documents` (it need not exist yet).
    pub fn new(documents: std::sync::Arc<dyn clawai_store::Documents>, name: &str) -> ApprovalsDocument {
        ApprovalsDocument { documents, name: name.to_owned() }
    }
}

impl StandingApprovals for ApprovalsDocument {
    fn current(&self) -> Result<Approvals, PolicyError> {
        match self.documents.load(&self.name) {
            Ok(None) => Ok(Approvals::none()),
            Ok(Some(bytes)) => Approvals::parse(&String::from_utf8_lossy(&bytes), &self.location()),
            Err(error) => Err(PolicyError {
                path: self.location(),
                diagnostics: vec![crate::load::Diagnostic {
                    line: None,
                    column: None,
                    message: format!("cannot read the approvals: {}", error.source),
                }],
            }),
        }
    }

    fn location(&self) -> String {
        self.documents.location(&self.name).display().to_string()
    }
}
