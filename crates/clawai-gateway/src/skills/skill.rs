//! One skill: read from its SKILL.md, and what the gateway serves for it.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use serde_saphyr::Spanned;

use super::error::SkillError;
use super::frontmatter::{self, Frontmatter, VariableSpec};
use super::{pattern, template};
use crate::names;

/// What the gateway's names for skills start with: skill `x` is prompt and tool `skill__x`.
pub const PREFIX: &str = "skill__";
/// The longest skill name: `skill__NAME` must stay within the gateway's longest tool name.
pub const MAX_NAME_LEN: usize = names::MAX_NAME - PREFIX.len();
/// The largest SKILL.md read. A skill's instructions go into a model's context whole, so
/// a bigger file is a mistake (a log or data file named SKILL.md), not a skill.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;
/// The argument of a skill's tool that ends the skill; no variable may take its name.
pub const DEACTIVATE: &str = "deactivate";

/// One variable of a skill: a `{{name}}` of its body, an argument of its prompt, a string
/// parameter of its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Variable {
    /// The name, `[A-Za-z0-9_-]+`.
    pub name: String,
    /// What to give it, when the skill says.
    pub description: Option<String>,
    /// Whether activating the skill needs it (`true` unless the skill says
    /// `required: false`; an optional one not given renders as nothing).
    pub required: bool,
}

/// A skill, loaded from a `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    name: String,
    description: String,
    version: Option<String>,
    variables: Vec<Variable>,
    allowed_tools: Vec<String>,
    /// The line of the file each `allowed-tools` pattern is on.
    allowed_tools_lines: Vec<usize>,
    user_invocable: bool,
    argument_hint: Option<String>,
    body: String,
    file: PathBuf,
    /// Where its `name:` is written, (0, 0) when the name is its folder's.
    name_position: (usize, usize),
}

impl Skill {
    /// Reads the skill in the SKILL.md at `file`.
    pub fn read(file: &Path) -> Result<Skill, SkillError> {
        let cannot_read = |error: std::io::Error| {
            SkillError::whole(file, format!("cannot read this skill ({error}); check that it is a readable file"))
        };
        let size = std::fs::metadata(file).map_err(cannot_read)?.len();
        if size > MAX_FILE_BYTES {
            return Err(SkillError::whole(
                file,
                format!("this skill is {size} bytes, more than the {MAX_FILE_BYTES} a SKILL.md may have; shorten it"),
            ));
        }
        let bytes = std::fs::read(file).map_err(cannot_read)?;
        let text = String::from_utf8(bytes).map_err(|error| {
            let valid = &error.as_bytes()[..error.utf8_error().valid_up_to()];
            let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
            let column = 1 + valid.iter().rev().take_while(|&&b| b != b'\n').count();
            SkillError::at(file, line, column, "this is not UTF-8 text; save the SKILL.md as UTF-8")
        })?;
        Skill::parse(&text, file)
    }

    /// Reads a skill from the text of a SKILL.md; `file` is where it came from (its
    /// folder names the skill when the frontmatter does not, and errors name it).
    pub fn parse(text: &str, file: &Path) -> Result<Skill, SkillError> {
        let split = frontmatter::split(text).map_err(|message| SkillError::at(file, 1, 1, message))?;
        let front = match split.yaml {
            None => Frontmatter::default(),
            Some(yaml) => frontmatter::parse(yaml).map_err(|(message, (line, column))| {
                SkillError::at(file, line, column, format!("{message}; fix the YAML between the `---` lines"))
            })?,
        };
        let (name, name_position) = skill_name(front.name, file)?;
        let variables = variables(front.variables.unwrap_or_default(), file)?;
        let (allowed_tools, allowed_tools_lines) = match front.allowed_tools {
            None => (Vec::new(), Vec::new()),
            Some(Spanned { value, referenced, .. }) => {
                if value.patterns.iter().any(String::is_empty) {
                    let (line, column) = frontmatter::file_position(referenced);
                    return Err(SkillError::at(
                        file,
                        line,
                        column,
                        "`allowed-tools` has an empty entry, which matches no tool; remove it",
                    ));
                }
                // One string of patterns is on the line of `allowed-tools`.
                let list_line = frontmatter::file_position(referenced).0;
                let lines = (0..value.patterns.len())
                    .map(|n| value.positions.get(n).map_or(list_line, |at| frontmatter::file_position(*at).0))
                    .collect();
                (value.patterns, lines)
            }
        };
        let body = without_leading_blank_lines(split.body).trim_end().to_owned();
        let description = front.description.map(|d| d.trim().to_owned()).unwrap_or_else(|| first_paragraph(&body));
        Ok(Skill {
            name,
            description,
            version: front.version,
            variables,
            allowed_tools,
            allowed_tools_lines,
            user_invocable: front.user_invocable.unwrap_or(true),
            argument_hint: front.argument_hint,
            body,
            file: file.to_owned(),
            name_position,
        })
    }

    /// The skill's name (`[A-Za-z0-9_-]+`, at most [`MAX_NAME_LEN`] characters).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The name its prompt and its tool are listed under: `skill__NAME`.
    pub fn listed_name(&self) -> String {
        format!("{PREFIX}{}", self.name)
    }

    /// Its description: the frontmatter's, else the body's first paragraph.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// Its `version`, as written.
    pub fn version(&self) -> Option<&str> {
        self.version.as_deref()
    }

    /// Its variables, in the order written.
    pub fn variables(&self) -> &[Variable] {
        &self.variables
    }

    /// True when `name` is one of its variables.
    pub fn has_variable(&self, name: &str) -> bool {
        self.variables.iter().any(|v| v.name == name)
    }

    /// Its `allowed-tools` globs as written; empty means it filters nothing.
    pub fn allowed_tools(&self) -> &[String] {
        &self.allowed_tools
    }

    /// The patterns of its `allowed-tools` that match none of `tools` (full names,
    /// `S__name`), each with the line of its file it is written on.
    pub fn unmatched_patterns<'a>(&'a self, tools: &[&str]) -> Vec<(&'a str, usize)> {
        self.allowed_tools
            .iter()
            .zip(&self.allowed_tools_lines)
            .filter(|(glob, _)| !tools.iter().any(|tool| pattern::matches(glob, tool)))
            .map(|(glob, line)| (glob.as_str(), *line))
            .collect()
    }

    /// Its `user-invocable` (true when not written, as in Claude Code).
    pub fn user_invocable(&self) -> bool {
        self.user_invocable
    }

    /// Its `argument-hint`.
    pub fn argument_hint(&self) -> Option<&str> {
        self.argument_hint.as_deref()
    }

    /// Its body, the template [`Skill::render`] fills.
    pub fn body(&self) -> &str {
        &self.body
    }

    /// The SKILL.md it was read from.
    pub fn file(&self) -> &Path {
        &self.file
    }

    /// Where in its file its `name:` is, `(line, column)`; `(0, 0)` when its folder names it.
    pub fn name_position(&self) -> (usize, usize) {
        self.name_position
    }

    /// Whether the skill shows the tool listed as `full_tool_name` (`SERVER__tool`):
    /// `None` when its `allowed-tools` is empty (it filters nothing), else whether one of
    /// its globs matches the whole name (`*` any run of characters, `?` one character).
    /// The `skill__*` tools and `search_tools`, always shown, are not this method's
    /// business.
    pub fn shows(&self, full_tool_name: &str) -> Option<bool> {
        if self.allowed_tools.is_empty() {
            return None;
        }
        Some(self.allowed_tools.iter().any(|glob| pattern::matches(glob, full_tool_name)))
    }

    /// The required variables `args` does not give (absent, null or blank): activating
    /// the skill without them is refused, naming them.
    pub fn missing_variables(&self, args: &Map<String, Value>) -> Vec<&str> {
        let given = |name: &str| match args.get(name) {
            None | Some(Value::Null) => false,
            Some(Value::String(text)) => !text.trim().is_empty(),
            Some(_) => true,
        };
        self.variables.iter().filter(|v| v.required && !given(&v.name)).map(|v| v.name.as_str()).collect()
    }

    /// The body with each `{{variable}}` replaced by its value in `args` (by nothing when
    /// not given); placeholders of undeclared names stay as written and nothing else is
    /// evaluated.
    pub fn render(&self, args: &Map<String, Value>) -> String {
        template::render(&self.body, |name| self.has_variable(name), args)
    }

    /// The skill as an MCP prompt (`prompts/list` entry): `skill__NAME`, its description,
    /// and its variables as arguments.
    pub fn prompt_json(&self) -> Value {
        let arguments: Vec<Value> = self
            .variables
            .iter()
            .map(|variable| {
                let mut argument = json!({"name": variable.name, "required": variable.required});
                if let Some(description) = self.variable_description(variable) {
                    argument["description"] = json!(description);
                }
                argument
            })
            .collect();
        json!({"name": self.listed_name(), "description": self.description, "arguments": arguments})
    }

    /// The skill as an MCP tool (`tools/list` entry): `skill__NAME`, taking each variable
    /// as an optional string and `deactivate` as a boolean. No parameter is required, so
    /// that `{"deactivate": true}` alone is a valid call.
    pub fn tool_json(&self) -> Value {
        let mut properties = Map::new();
        for variable in &self.variables {
            let mut property = json!({"type": "string"});
            if let Some(description) = self.variable_description(variable) {
                property["description"] = json!(description);
            }
            properties.insert(variable.name.clone(), property);
        }
        properties.insert(
            DEACTIVATE.to_owned(),
            json!({"type": "boolean", "description": "true ends this skill: the tools it showed leave the list"}),
        );
        let description = format!(
            "{}\n\nCalling this tool activates the skill: it returns the skill's instructions and shows the tools \
             they use. Call it with {{\"{DEACTIVATE}\": true}} to end it.",
            self.description
        );
        json!({
            "name": self.listed_name(),
            "description": description.trim_start(),
            "inputSchema": {"type": "object", "properties": properties},
        })
    }

    /// A variable's own description, else the skill's `argument-hint` when the variable
    /// is its only one (the hint then describes exactly that argument).
    fn variable_description<'a>(&'a self, variable: &'a Variable) -> Option<&'a str> {
        variable.description.as_deref().or(if self.variables.len() == 1 { self.argument_hint.as_deref() } else { None })
    }
}

/// The skill's name and where it is written: the frontmatter's `name`, else the folder's.
fn skill_name(written: Option<Spanned<String>>, file: &Path) -> Result<(String, (usize, usize)), SkillError> {
    if let Some(Spanned { value, referenced, .. }) = written {
        let (line, column) = frontmatter::file_position(referenced);
        let name = value.trim().to_owned();
        return match name_problem(&name) {
            None => Ok((name, (line, column))),
            Some(problem) => {
                Err(SkillError::at(file, line, column, format!("the skill name `{name}` {problem}; change `name:`")))
            }
        };
    }
    let folder = file.parent().and_then(Path::file_name).map(|f| f.to_string_lossy().into_owned());
    let Some(folder) = folder else {
        return Err(SkillError::at(file, 1, 1, "this skill has no folder to name it; add `name:` to its frontmatter"));
    };
    match name_problem(&folder) {
        None => Ok((folder, (0, 0))),
        Some(problem) => Err(SkillError::at(
            file,
            1,
            1,
            format!("the folder name `{folder}` names this skill and {problem}; rename the folder or add `name:`"),
        )),
    }
}

/// Why `name` is not a skill or variable name, if it is not.
fn name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("is empty".into());
    }
    if !name.chars().all(template::is_name_char) {
        return Some("may hold only letters, digits, `_` and `-`".into());
    }
    if name.chars().count() > MAX_NAME_LEN {
        return Some(format!("is longer than {MAX_NAME_LEN} characters"));
    }
    None
}

/// The variables, checked: valid names, none twice, none named `deactivate`.
fn variables(specs: Vec<Spanned<VariableSpec>>, file: &Path) -> Result<Vec<Variable>, SkillError> {
    let mut variables: Vec<Variable> = Vec::with_capacity(specs.len());
    for Spanned { value, referenced, .. } in specs {
        let (line, column) = frontmatter::file_position(referenced);
        let fail = |message: String| Err(SkillError::at(file, line, column, message));
        let name = value.name.trim().to_owned();
        if let Some(problem) = name_problem(&name) {
            return fail(format!("the variable name `{name}` {problem}; change it in `variables`"));
        }
        if name == DEACTIVATE {
            return fail(format!(
                "`{DEACTIVATE}` is the argument that ends a skill and cannot be a variable; rename the variable"
            ));
        }
        if variables.iter().any(|v| v.name == name) {
            return fail(format!("the variable `{name}` is listed twice; remove one"));
        }
        variables.push(Variable { name, description: value.description, required: value.required });
    }
    Ok(variables)
}

/// `text` from its first line that holds more than whitespace.
fn without_leading_blank_lines(text: &str) -> &str {
    let mut rest = text;
    while let Some(end) = rest.find('\n') {
        if !rest[..end].trim().is_empty() {
            break;
        }
        rest = &rest[end + 1..];
    }
    if rest.trim().is_empty() { "" } else { rest }
}

/// The body's first paragraph on one line: what describes a skill whose frontmatter does
/// not (Claude Code's rule).
fn first_paragraph(body: &str) -> String {
    body.lines().map(str::trim).take_while(|line| !line.is_empty()).collect::<Vec<_>>().join(" ")
}
