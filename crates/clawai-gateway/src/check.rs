//! What a running gateway has and what is wrong with it: each server (its state, tools
//! listed and held), each skill (and its `allowed-tools` patterns that match no tool),
//! and every problem. Logged once every server has started (the unmatched patterns, with
//! the skill's file and line), and reported whole by `clawai gateway --check`. The
//! types of the report; the core works it out.

use std::fmt::Write as _;
use std::path::PathBuf;

/// One server, as the report shows it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ServerReport {
    /// Its name.
    pub name: String,
    /// `up`, `starting`, `failed`, `draining` or `stopped`.
    pub state: String,
    /// Why it failed to start, when it did (with the last lines of its stderr).
    pub failure: Option<String>,
    /// Its tools listed (held ones not counted).
    pub tools: usize,
    /// Its tools held by pinning, waiting for a review.
    pub held: usize,
    /// Its tools are shown only by skills.
    pub internal: bool,
}

/// A pattern of a skill's `allowed-tools` that matches no tool.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct UnmatchedPattern {
    /// The skill's name.
    pub skill: String,
    /// Its SKILL.md.
    pub file: PathBuf,
    /// The line the pattern is on.
    pub line: usize,
    /// The pattern.
    pub pattern: String,
}

impl std::fmt::Display for UnmatchedPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: skill `{}`: `{}` in allowed-tools matches no tool of the running servers; \
             correct it or remove it (`search_tools` finds the tools there are)",
            self.file.display(),
            self.line,
            self.skill,
            self.pattern
        )
    }
}

/// Everything `--check` says (and `clawai status` of a running gateway).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Report {
    /// Every server, by name.
    pub servers: Vec<ServerReport>,
    /// Every skill loaded: its listed name and file.
    pub skills: Vec<(String, PathBuf)>,
    /// The SKILL.md files that did not load, each with its file and line.
    pub skill_problems: Vec<String>,
    /// The `allowed-tools` patterns that match no tool of a server that is up.
    pub unmatched: Vec<UnmatchedPattern>,
}

impl Report {
    /// Every problem, one line (or paragraph) each; none when all is well.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for server in &self.servers {
            match (server.state.as_str(), &server.failure) {
                ("failed", Some(why)) => problems.push(format!("server `{}` could not start: {why}", server.name)),
                ("failed", None) => problems.push(format!("server `{}` could not start", server.name)),
                ("starting", _) => problems.push(format!("server `{}` did not come up in time", server.name)),
                _ => {}
            }
            if server.held > 0 {
                problems.push(format!(
                    "server `{}`: {} tools are held by pinning until reviewed (`clawai pins diff {}`)",
                    server.name, server.held, server.name
                ));
            }
        }
        problems.extend(self.skill_problems.iter().cloned());
        problems.extend(self.unmatched.iter().map(ToString::to_string));
        problems
    }

    /// The report as people read it.
    pub fn render(&self) -> String {
        let mut text = String::new();
        let _ = writeln!(text, "servers ({}):", self.servers.len());
        for server in &self.servers {
            let held = if server.held > 0 { format!(", {} held", server.held) } else { String::new() };
            let internal = if server.internal { ", internal (shown by skills)" } else { "" };
            let _ = writeln!(text, "  {}: {}, {} tools{held}{internal}", server.name, server.state, server.tools);
        }
        let _ = writeln!(text, "skills ({}):", self.skills.len());
        for (name, file) in &self.skills {
            let _ = writeln!(text, "  {name}: {}", file.display());
        }
        let problems = self.problems();
        match problems.is_empty() {
            true => text.push_str("no problems\n"),
            false => {
                let _ = writeln!(text, "problems ({}):", problems.len());
                for problem in problems {
                    let _ = writeln!(text, "  - {}", problem.replace('\n', "\n      "));
                }
            }
        }
        text
    }
}
