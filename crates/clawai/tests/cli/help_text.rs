//! What a person reads first: `--help` of every command, and the README and docs/ pages.
//! They say what clawai does today in plain words: no words from the project's internal
//! documents.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Words of the project's internal documents, meaningless to a user.
const INTERNAL: [&str; 5] = ["seed 0", "design §", "§", "MRTR", "AgentShield documents"];

fn help(binary: &str, command: &[String]) -> String {
    let out = Command::new(binary).args(command).arg("--help").output().expect("the binary runs");
    assert!(out.status.success(), "{binary} {command:?} --help failed: {out:?}");
    String::from_utf8(out.stdout).expect("help is UTF-8")
}

/// The subcommands a help text lists under `Commands:`.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| !line.starts_with("Commands:"))
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// Every help text of a binary, with the command it belongs to.
fn every_help(binary: &str) -> Vec<(String, String)> {
    let mut texts = Vec::new();
    let mut todo = vec![Vec::<String>::new()];
    while let Some(command) = todo.pop() {
        let text = help(binary, &command);
        for sub in subcommands(&text) {
            let mut deeper = command.clone();
            deeper.push(sub);
            todo.push(deeper);
        }
        texts.push((command.join(" "), text));
    }
    texts
}

#[test]
fn help_says_what_exists_in_plain_words() {
    for binary in [env!("CARGO_BIN_EXE_clawai"), env!("CARGO_BIN_EXE_clawai-http")] {
        let texts = every_help(binary);
        assert!(
            texts.len() > 10,
            "every subcommand's help is read: {:?}",
            texts.iter().map(|t| &t.0).collect::<Vec<_>>()
        );
        for (command, text) in &texts {
            for word in INTERNAL {
                assert!(!text.contains(word), "`{binary} {command} --help` says {word:?}:\n{text}");
            }
        }
        let gateway = &texts.iter().find(|(command, _)| command == "gateway").expect("a gateway command").1;
        assert!(
            gateway.contains("--config") && gateway.contains("--listen") && gateway.contains("--skills"),
            "{gateway}"
        );
        let mcp_server = &texts.iter().find(|(command, _)| command == "mcp-server").expect("an mcp-server command").1;
        assert!(mcp_server.contains("--skills") && mcp_server.contains("exec_shell"), "{mcp_server}");
        let top = &texts.iter().find(|(command, _)| command.is_empty()).unwrap().1;
        assert!(top.contains("firewall for the Model Context Protocol"), "{top}");
        assert!(
            top.contains("clawai policy init") && top.contains("clawai wrap --all"),
            "the first steps are shown:\n{top}"
        );
    }
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn readme_and_docs_use_no_internal_words() {
    let mut pages = vec![repository().join("README.md")];
    for entry in std::fs::read_dir(repository().join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|x| x == "md") {
            pages.push(path);
        }
    }
    for page in pages {
        let text = std::fs::read_to_string(&page).unwrap();
        for word in INTERNAL {
            for (n, line) in text.lines().enumerate() {
                assert!(!line.contains(word), "{}:{}: says {word:?}: {line}", page.display(), n + 1);
            }
        }
    }
}
