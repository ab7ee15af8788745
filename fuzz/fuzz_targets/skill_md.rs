//! SKILL.md files: any text must load as a skill or be refused without panicking; a
//! refusal says where (line and column from 1, inside the file); a skill that loads has a
//! valid name, renders without its placeholders evaluated, and serves its prompt and tool.
#![no_main]

use std::path::Path;

use clawai_gateway::skills::Skill;
use clawai_gateway::skills::skill::MAX_NAME_LEN;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let file = Path::new("skills/fuzzed/SKILL.md");
    let loaded = Skill::parse(text, file);
    let again = Skill::parse(text, file);
    match loaded {
        Err(error) => {
            assert_eq!(again.as_ref().err(), Some(&error), "loading is deterministic");
            // YAML also breaks lines at a lone CR: count every break as one, an upper bound.
            let lines = 1 + text.matches('\n').count() + text.matches('\r').count();
            assert!(error.line >= 1 && error.line <= lines + 1, "line {} of {lines}: {error}", error.line);
            assert!(error.column >= 1, "{error}");
            assert!(error.to_string().starts_with(&format!("{}:{}:{}: ", file.display(), error.line, error.column)));
        }
        Ok(skill) => {
            assert_eq!(again.as_ref().ok(), Some(&skill), "loading is deterministic");
            let name = skill.name();
            assert!(!name.is_empty() && name.chars().count() <= MAX_NAME_LEN);
            assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'));
            // Without values nothing is replaced, so rendering gives the body back.
            assert_eq!(skill.render(&Map::new()), skill.body());
            // A value that looks like a placeholder is inserted, never expanded again.
            let args: Map<String, Value> =
                skill.variables().iter().map(|v| (v.name.clone(), Value::String("{{x}}".into()))).collect();
            let _ = skill.render(&args);
            // Empty values only take placeholders out: the text never grows.
            let empty: Map<String, Value> =
                skill.variables().iter().map(|v| (v.name.clone(), Value::String(String::new()))).collect();
            assert!(skill.render(&empty).len() <= skill.body().len());
            let prompt = skill.prompt_json();
            assert_eq!(prompt["name"], Value::String(skill.listed_name()));
            let tool = skill.tool_json();
            assert_eq!(tool["inputSchema"]["properties"]["deactivate"]["type"], "boolean");
            for pattern in skill.allowed_tools() {
                if !pattern.contains(['*', '?']) {
                    assert_eq!(skill.shows(pattern), Some(true), "a literal pattern shows its own name");
                }
            }
            let _ = skill.shows(text);
        }
    }
});
