//! The skills module's rules, each shown on a SKILL.md.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::*;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/skills")
}

fn parse(text: &str) -> Result<Skill, SkillError> {
    Skill::parse(text, Path::new("/skills/folder/SKILL.md"))
}

fn args(value: Value) -> Map<String, Value> {
    value.as_object().cloned().unwrap()
}

/// Writes `DIR/FOLDER/SKILL.md` for each (folder, text).
fn skill_dir(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (folder, text) in files {
        std::fs::create_dir_all(dir.path().join(folder)).unwrap();
        std::fs::write(dir.path().join(folder).join("SKILL.md"), text).unwrap();
    }
    dir
}

#[test]
fn seed_flow_memory_skill_reads_every_field() {
    let skill = Skill::read(&fixtures().join("flow-memory/SKILL.md")).unwrap();
    assert_eq!(skill.name(), "flow-memory");
    assert_eq!(skill.listed_name(), "skill__flow-memory");
    assert_eq!(skill.description(), "Memory storage and retrieval via claude-flow");
    assert_eq!(skill.version(), Some("1.0.0"));
    assert_eq!(skill.variables(), [Variable { name: "operation".into(), description: None, required: true }]);
    assert_eq!(skill.allowed_tools(), ["claude-flow__memory_*"]);
    assert!(skill.user_invocable());
    assert_eq!(skill.argument_hint(), Some("Memory operation (store, search, retrieve)"));
    assert!(skill.body().starts_with("You have access to claude-flow's memory tools."), "{}", skill.body());
    assert!(skill.body().ends_with("- Delete: memory_delete with key, namespace"));
    assert_eq!(skill.shows("claude-flow__memory_store"), Some(true));
    assert_eq!(skill.shows("claude-flow__swarm_init"), Some(false));
    assert_eq!(skill.shows("other__memory_store"), Some(false));
}

#[test]
fn seed_flow_swarm_skill_shows_its_four_namespaces_only() {
    let skill = Skill::read(&fixtures().join("flow-swarm/SKILL.md")).unwrap();
    assert_eq!(skill.allowed_tools().len(), 4);
    for shown in ["swarm_init", "agent_spawn", "task_create", "coordination_sync"] {
        assert_eq!(skill.shows(&format!("claude-flow__{shown}")), Some(true), "{shown}");
    }
    for hidden in ["memory_store", "workflow_create", "hive-mind_init"] {
        assert_eq!(skill.shows(&format!("claude-flow__{hidden}")), Some(false), "{hidden}");
    }
    let rendered = skill.render(&args(json!({"task": "index the repo"})));
    assert!(rendered.contains("multi-agent execution for: index the repo\n"), "{rendered}");
}

#[test]
fn claude_code_skill_with_comma_separated_allowed_tools_and_its_own_keys_loads() {
    let skill = Skill::read(&fixtures().join("claude-review/SKILL.md")).unwrap();
    assert_eq!(skill.name(), "code-review");
    assert_eq!(skill.allowed_tools(), ["Read", "Grep", "Glob"]);
    assert_eq!(skill.argument_hint(), Some("[file or directory]"));
    assert!(skill.variables().is_empty());
    assert_eq!(skill.shows("Grep"), Some(true));
    assert_eq!(skill.shows("Write"), Some(false));
    // Claude Code's own `$ARGUMENTS` is not a clawai placeholder: it stays as written.
    assert!(skill.render(&Map::new()).contains("under $ARGUMENTS and"));
}

#[test]
fn allowed_tools_accepts_a_list_a_string_or_nothing() {
    let list = parse("---\nallowed-tools:\n  - a__*\n  - b__x\n---\n").unwrap();
    assert_eq!(list.allowed_tools(), ["a__*", "b__x"]);
    let string = parse("---\nallowed-tools: 'a__*, b__x,'\n---\n").unwrap();
    assert_eq!(string.allowed_tools(), ["a__*", "b__x"]);
    for nothing in ["---\nallowed-tools: []\n---\n", "---\nallowed-tools:\n---\n", "---\nname: x\n---\n"] {
        let skill = parse(nothing).unwrap();
        assert!(skill.allowed_tools().is_empty(), "{nothing}");
        assert_eq!(skill.shows("anything__at_all"), None, "no allowed-tools filters nothing: {nothing}");
    }
    let error = parse("---\nname: x\nallowed-tools:\n  - a__*\n  - ''\n---\n").unwrap_err();
    assert_eq!((error.line, error.column), (4, 3), "{error}");
    assert!(error.message.contains("empty entry"), "{error}");
}

#[test]
fn variables_accept_names_or_maps_and_become_prompt_arguments() {
    let text = "---\nname: v\nargument-hint: ignored with two variables\nvariables:\n  - task\n  \
                - name: scope\n    description: Where to look\n    required: false\n    default: ignored\n---\n\
                Do {{task}} in {{ scope }}.\n";
    let skill = parse(text).unwrap();
    assert_eq!(
        skill.prompt_json(),
        json!({
            "name": "skill__v",
            "description": "Do {{task}} in {{ scope }}.",
            "arguments": [
                {"name": "task", "required": true},
                {"name": "scope", "description": "Where to look", "required": false},
            ],
        })
    );
    assert_eq!(skill.render(&args(json!({"task": "tests", "scope": "src/"}))), "Do tests in src/.");
    // A variable not given: the required one is named, never rendered as `{{task}}`.
    assert_eq!(skill.missing_variables(&args(json!({"scope": "src/"}))), ["task"]);
    assert_eq!(skill.missing_variables(&args(json!({"task": "  ", "scope": null}))), ["task"]);
    assert!(skill.missing_variables(&args(json!({"task": "tests"}))).is_empty(), "scope is optional");
    assert_eq!(skill.render(&args(json!({"task": "tests"}))), "Do tests in .");
}

#[test]
fn tool_json_takes_each_variable_as_a_string_and_deactivate_as_a_boolean() {
    let skill = Skill::read(&fixtures().join("flow-memory/SKILL.md")).unwrap();
    let tool = skill.tool_json();
    assert_eq!(tool["name"], "skill__flow-memory");
    assert!(tool["description"].as_str().unwrap().starts_with("Memory storage and retrieval via claude-flow\n"));
    let schema = &tool["inputSchema"];
    assert_eq!(schema["type"], "object");
    assert_eq!(schema.get("required"), None, "{{\"deactivate\": true}} alone must be a valid call");
    let properties = schema["properties"].as_object().unwrap();
    assert_eq!(properties.keys().collect::<Vec<_>>(), ["deactivate", "operation"]);
    assert_eq!(properties["operation"]["type"], "string");
    // The skill's only variable is described by its argument-hint.
    assert_eq!(properties["operation"]["description"], "Memory operation (store, search, retrieve)");
    assert_eq!(properties["deactivate"]["type"], "boolean");
}

#[test]
fn rendering_fills_spaced_placeholders_and_leaves_unknown_ones() {
    let skill = parse("---\nvariables: [task]\n---\nA {{ task }} B {{task}} C {{other}} D {{ nope }}").unwrap();
    let rendered = skill.render(&args(json!({"task": "T", "other": "not declared"})));
    assert_eq!(rendered, "A T B T C {{other}} D {{ nope }}");
    // Never read unfilled: activating without `task` is refused (`missing_variables`).
    assert_eq!(skill.render(&Map::new()), "A  B  C {{other}} D {{ nope }}");
    assert_eq!(skill.missing_variables(&Map::new()), ["task"]);
}

#[test]
fn name_comes_from_frontmatter_else_from_the_folder() {
    let skill = Skill::read(&fixtures().join("folder-named/SKILL.md")).unwrap();
    assert_eq!(skill.name(), "folder-named");
    assert_eq!(skill.name_position(), (0, 0));
    assert_eq!(skill.description(), "Summarise {{ topic }} in three sentences.");
    assert!(skill.user_invocable());
    let named = parse("---\nname: other_name\n---\nbody").unwrap();
    assert_eq!(named.name(), "other_name");
    assert_eq!(named.name_position(), (2, 7));
}

#[test]
fn invalid_names_are_refused_with_where_and_what_to_do() {
    let error = parse("---\ndescription: d\nname: has space\n---\n").unwrap_err();
    assert_eq!((error.line, error.column), (3, 7), "{error}");
    assert!(error.message.contains("`has space`") && error.message.contains("change `name:`"), "{error}");
    for bad in ["a/b", "a.b", "ä", "\"\""] {
        assert!(parse(&format!("---\nname: {bad}\n---\n")).is_err(), "{bad}");
    }
    let long = "n".repeat(skill::MAX_NAME_LEN + 1);
    assert!(parse(&format!("---\nname: {long}\n---\n")).is_err());
    assert!(parse(&format!("---\nname: {}\n---\n", &long[1..])).is_ok());

    let error = Skill::parse("body", Path::new("/skills/my skill/SKILL.md")).unwrap_err();
    assert_eq!((error.line, error.column), (1, 1));
    assert!(error.message.contains("rename the folder or add `name:`"), "{error}");
}

#[test]
fn variable_names_are_checked() {
    let error = parse("---\nvariables:\n  - ok\n  - not ok\n---\n").unwrap_err();
    assert_eq!((error.line, error.column), (4, 5), "{error}");
    let error = parse("---\nvariables: [task, task]\n---\n").unwrap_err();
    assert!(error.message.contains("listed twice"), "{error}");
    let error = parse("---\nvariables: [deactivate]\n---\n").unwrap_err();
    assert!(error.message.contains("ends a skill"), "{error}");
}

#[test]
fn unknown_keys_are_ignored_but_wrong_types_are_errors_at_the_value() {
    let skill = parse("---\nname: x\nmodel: opus\ncontext: fork\nhooks: {a: [1, 2]}\n---\n").unwrap();
    assert_eq!(skill.name(), "x");
    let cases = [
        ("---\nname: x\nuser-invocable: maybe\n---\n", 3),
        ("---\nname: x\n\nvariables: task\n---\n", 4),
        ("---\nname: x\nallowed-tools: {a: b}\n---\n", 3),
        ("---\nname: [a]\n---\n", 2),
        ("---\nname: x\nvariables:\n  - {description: no name}\n---\n", 4),
    ];
    for (text, line) in cases {
        let error = parse(text).unwrap_err();
        assert_eq!(error.line, line, "{text:?}: {error}");
        assert!(error.column >= 1);
        assert!(error.message.ends_with("fix the YAML between the `---` lines"), "{error}");
        assert!(!error.message.contains("at line"), "the position is the file's, not the YAML's: {error}");
    }
    let error = parse("---\nname: x\nvariables:\n  - {description: no name}\n---\n").unwrap_err();
    assert!(error.message.starts_with("`variables`: missing field `name`"), "the key is named: {error}");
    assert!(error.message.contains("write a list of names"), "the shape is said: {error}");
    let error = parse("---\nname: x\nname: y\n---\n").unwrap_err();
    assert_eq!(error.line, 3, "{error}");
    assert!(error.message.contains("remove one") && !error.message.contains("Policy"), "{error}");
}

#[test]
fn frontmatter_fences_are_recognised_and_an_unclosed_one_is_an_error() {
    let crlf = parse("---\r\nname: crlf\r\n---  \r\nbody\r\n").unwrap();
    assert_eq!((crlf.name(), crlf.body()), ("crlf", "body"));
    let bom = parse("\u{feff}---\nname: bom\n---\n").unwrap();
    assert_eq!(bom.name(), "bom");
    let empty = parse("---\n---\n\n\nJust text.\n").unwrap();
    assert_eq!((empty.name(), empty.body(), empty.description()), ("folder", "Just text.", "Just text."));
    let error = parse("---\nname: x\nbody without a closing fence\n").unwrap_err();
    assert_eq!((error.line, error.column), (1, 1));
    assert!(error.message.contains("never closed"), "{error}");
    let error = parse("---\nname: x\n  bad: indent\n---\n").unwrap_err();
    assert!(error.line >= 2, "{error}");
}

#[test]
fn versions_are_kept_as_written() {
    assert_eq!(parse("---\nversion: 2\n---\n").unwrap().version(), Some("2"));
    assert_eq!(parse("---\nversion: 1.10\n---\n").unwrap().version(), Some("1.10"));
}

#[test]
fn a_malformed_skill_is_reported_with_file_and_line_and_the_others_load() {
    let loaded = load_dirs(&[fixtures()]);
    let names: Vec<&str> = loaded.skills.iter().map(Skill::name).collect();
    // Folders in name order: broken, claude-review, flow-memory, flow-swarm, folder-named.
    assert_eq!(names, ["code-review", "flow-memory", "flow-swarm", "folder-named"]);
    assert_eq!(loaded.problems.len(), 1, "{:?}", loaded.problems);
    let problem = &loaded.problems[0];
    assert_eq!(problem.file, fixtures().join("broken/SKILL.md"));
    assert_eq!(problem.line, 5, "{problem}");
    assert!(problem.to_string().starts_with(&format!("{}:5:", fixtures().join("broken/SKILL.md").display())));
    assert!(loaded.get("flow-swarm").is_some() && loaded.get("broken").is_none());
}

#[test]
fn the_first_directory_wins_a_name_and_the_later_skill_is_reported() {
    let first = skill_dir(&[("a", "---\nname: same\ndescription: first\n---\n")]);
    let second = skill_dir(&[("b", "---\ndescription: second\nname: same\n---\n"), ("c", "---\nname: other\n---\n")]);
    let loaded = load_dirs(&[first.path().to_owned(), second.path().to_owned(), first.path().to_owned()]);
    assert_eq!(loaded.skills.iter().map(Skill::name).collect::<Vec<_>>(), ["same", "other"]);
    assert_eq!(loaded.get("same").unwrap().description(), "first");
    assert_eq!(loaded.problems.len(), 1, "a directory listed twice is read once: {:?}", loaded.problems);
    let problem = &loaded.problems[0];
    assert_eq!(problem.file, second.path().join("b/SKILL.md"));
    assert_eq!((problem.line, problem.column), (3, 7));
    assert!(problem.message.contains(&first.path().join("a/SKILL.md").display().to_string()), "{problem}");
}

#[test]
fn missing_directories_and_folders_without_skill_md_are_skipped_quietly() {
    let dir = skill_dir(&[("real", "---\nname: real\n---\n")]);
    std::fs::create_dir(dir.path().join("helpers")).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a skill").unwrap();
    let loaded = load_dirs(&[dir.path().join("missing"), dir.path().to_owned()]);
    assert_eq!(loaded.skills.len(), 1);
    assert!(loaded.problems.is_empty(), "{:?}", loaded.problems);
}

#[test]
fn unreadable_and_oversized_files_are_reported() {
    let dir = skill_dir(&[("latin1", ""), ("big", "")]);
    std::fs::write(dir.path().join("latin1/SKILL.md"), b"---\nname: x\ndescription: caf\xe9\n---\n").unwrap();
    let big = vec![b'a'; usize::try_from(skill::MAX_FILE_BYTES).unwrap() + 1];
    std::fs::write(dir.path().join("big/SKILL.md"), big).unwrap();
    let loaded = load_dirs(&[dir.path().to_owned()]);
    assert!(loaded.skills.is_empty());
    let [big, latin1] = &loaded.problems[..] else { panic!("{:?}", loaded.problems) };
    assert!(big.message.contains("shorten it"), "{big}");
    assert_eq!((latin1.line, latin1.column), (3, 17), "{latin1}");
    assert!(latin1.message.contains("UTF-8"), "{latin1}");
}

#[test]
fn default_dirs_come_in_their_order_relative_to_the_working_directory() {
    let dirs = default_dirs(
        &[PathBuf::from("mine"), PathBuf::from("/abs/skills"), PathBuf::from(".clawai/skills")],
        Path::new("/work/project"),
        Path::new("/home/me/.config"),
    );
    let expected = [
        "/work/project/mine",
        "/abs/skills",
        "/work/project/.clawai/skills",
        "/home/me/.config/clawai/skills",
        "/work/project/.claude/skills",
    ];
    assert_eq!(dirs, expected.map(PathBuf::from));
}

#[test]
fn config_home_follows_xdg_then_home() {
    let env = |pairs: &'static [(&'static str, &'static str)]| {
        move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_owned())
    };
    assert_eq!(config_home(env(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")])), Some(PathBuf::from("/x")));
    assert_eq!(config_home(env(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")])), Some(PathBuf::from("/h/.config")));
    assert_eq!(config_home(env(&[("HOME", "/h")])), Some(PathBuf::from("/h/.config")));
    assert_eq!(config_home(env(&[])), None);
}

#[test]
fn every_cut_or_dropped_character_of_the_fixtures_loads_or_is_refused_at_a_place_in_the_file() {
    for folder in ["flow-memory", "flow-swarm", "claude-review", "broken", "folder-named"] {
        let text = std::fs::read_to_string(fixtures().join(folder).join("SKILL.md")).unwrap();
        let boundaries: Vec<usize> = text.char_indices().map(|(at, _)| at).collect();
        for &at in &boundaries {
            let next = at + text[at..].chars().next().map_or(0, char::len_utf8);
            for variant in [text[..at].to_owned(), format!("{}{}", &text[..at], &text[next..])] {
                match parse(&variant) {
                    Err(error) => {
                        let lines = 1 + variant.matches('\n').count();
                        assert!((1..=lines + 1).contains(&error.line), "{folder} {variant:?}: {error}");
                        assert!(error.column >= 1, "{folder} {variant:?}: {error}");
                    }
                    Ok(skill) => {
                        assert!(!skill.name().is_empty(), "{folder} {variant:?}");
                        let nothing_given: Map<String, Value> =
                            skill.variables().iter().map(|v| (v.name.clone(), Value::String(String::new()))).collect();
                        let rendered = skill.render(&nothing_given);
                        // Text is never evaluated: only declared placeholders go.
                        let declared = skill.variables().iter().any(|v| skill.body().contains(&v.name));
                        assert!(declared || rendered == skill.body(), "{folder} {variant:?}");
                    }
                }
            }
        }
    }
}

#[test]
fn patterns_that_match_no_tool_are_told_with_their_line() {
    let skill = Skill::read(&fixtures().join("flow-swarm/SKILL.md")).unwrap();
    let tools = ["claude-flow__swarm_init", "claude-flow__task_create", "claude-code__Bash"];
    assert_eq!(skill.unmatched_patterns(&tools), [("claude-flow__agent_*", 9), ("claude-flow__coordination_*", 11)]);
    // Claude Code's comma-separated form: every pattern is on the line of `allowed-tools`.
    let inline = parse("---\nname: c\nallowed-tools: claude-code__Read, claude-code__Grep\n---\nbody\n").unwrap();
    assert_eq!(inline.unmatched_patterns(&["claude-code__Read"]), [("claude-code__Grep", 3)]);
}
