//! Every small damage to real files (cut short, a character dropped, a character
//! replaced) is loaded or refused without a panic, and a refusal says where.

use super::*;

const GATEWAY_FILE: &str = r#"{
  "tools": {
    "mcpServers": {
      "gh": { "command": "npx", "args": ["-y", "gh"], "env": { "TOKEN": "${GH_TOKEN:-x}" }, "cwd": "/srv" },
      "docs": { "type": "http", "url": "https://docs.example/mcp", "headers": { "Authorization": "Bearer ${T}" }, "internal_only": false },
      "off": { "command": "old", "disabled": true }
    }
  },
  "agent": { "allowedTools": ["gh__*", "docs__search?"] }
}"#;

fn env(name: &str) -> Option<String> {
    (name == "T").then(|| "tok".to_owned())
}

fn check(text: &str) {
    for leniency in [false, true] {
        match parse(text, Path::new("x.json"), &env, leniency) {
            Ok(config) => {
                for name in config.servers.keys() {
                    assert!(!name.is_empty() && !name.contains("__") && !name.ends_with('_'), "{text}");
                }
            }
            Err(error) => {
                let message = error.to_string();
                let at = error.location().expect("parsed text has locations");
                assert!(at.line >= 1 && at.column >= 1, "{text}");
                assert!(message.starts_with(&format!("x.json:{}:{}: ", at.line, at.column)), "{message}");
            }
        }
    }
}

#[test]
fn damaged_files_are_loaded_or_refused_with_a_place() {
    for file in [GATEWAY_FILE, CLAUDE_DESKTOP, CURSOR] {
        assert!(parse(file, Path::new("x.json"), &env, true).is_ok(), "the undamaged file loads");
        for (i, c) in file.char_indices() {
            check(&file[..i]);
            let after = &file[i + c.len_utf8()..];
            check(&format!("{}{after}", &file[..i]));
            for replacement in ['"', '{', '}', '[', ',', '_', '$', 'é', '\n'] {
                check(&format!("{}{replacement}{after}", &file[..i]));
            }
        }
    }
}
