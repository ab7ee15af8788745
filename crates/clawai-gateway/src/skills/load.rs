//! Finding skills: which directories, in which order, and loading every `DIR/*/SKILL.md`.

use std::path::{Path, PathBuf};

use super::error::SkillError;
use super::skill::Skill;

/// The file a skill's folder holds.
pub const SKILL_FILE: &str = "SKILL.md";

/// What loading the skill directories gave: the skills that loaded and what was skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The skills, directory by directory in the order given, folders by name within one.
    pub skills: Vec<Skill>,
    /// Every SKILL.md that was skipped (malformed, unreadable, a name already taken), and
    /// every directory that exists but could not be read.
    pub problems: Vec<SkillError>,
}

impl Loaded {
    /// The skill named `name` (its name, not its `skill__` listing).
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|skill| skill.name() == name)
    }
}

/// The skill directories, in the order their skills win: every `--skills DIR` as given
/// (relative to `cwd`), `./.clawai/skills`, `CONFIG_HOME/clawai/skills` and Claude Code's
/// `./.claude/skills`. `config_home` is `$XDG_CONFIG_HOME`, or `~/.config` (see
/// [`config_home`]). A directory named twice is kept at its first place.
pub fn default_dirs(explicit: &[PathBuf], cwd: &Path, config_home: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::with_capacity(explicit.len() + 3);
    let candidates = explicit.iter().map(|dir| cwd.join(dir)).chain([
        cwd.join(".clawai").join("skills"),
        config_home.join("clawai").join("skills"),
        cwd.join(".claude").join("skills"),
    ]);
    for dir in candidates {
        if !dirs.contains(&dir) {
            dirs.push(dir);
        }
    }
    dirs
}

/// Where the user's configuration lives: `$XDG_CONFIG_HOME` when it is set to an absolute
/// path (the XDG rule: a relative one is ignored), else `$HOME/.config`; `None` without
/// either. `env` reads a variable (`std::env::var`, or a map in tests).
pub fn config_home(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let xdg = env("XDG_CONFIG_HOME").map(PathBuf::from).filter(|dir| dir.is_absolute());
    xdg.or_else(|| env("HOME").filter(|home| !home.is_empty()).map(|home| Path::new(&home).join(".config")))
}

/// Loads `DIR/*/SKILL.md` of every directory of `dirs`, in order. A directory that does
/// not exist is skipped quietly (most of the default ones usually do not). A malformed
/// SKILL.md is reported and skipped, and the others load. When two skills have one name,
/// the first loaded wins and the other is reported.
pub fn load_dirs(dirs: &[PathBuf]) -> Loaded {
    let mut loaded = Loaded::default();
    let mut seen_dirs: Vec<PathBuf> = Vec::new();
    for dir in dirs {
        // The same directory reached twice (`--skills .clawai/skills`, a symlink) would
        // otherwise report each of its skills as a duplicate of itself.
        let real = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone());
        if seen_dirs.contains(&real) {
            continue;
        }
        seen_dirs.push(real);
        for file in skill_files(dir, &mut loaded.problems) {
            match Skill::read(&file) {
                Ok(skill) => add(&mut loaded, skill),
                Err(problem) => loaded.problems.push(problem),
            }
        }
    }
    loaded
}

/// Adds `skill`, or reports it when its name is taken.
fn add(loaded: &mut Loaded, skill: Skill) {
    let Some(first) = loaded.get(skill.name()) else {
        loaded.skills.push(skill);
        return;
    };
    let (line, column) = skill.name_position();
    let message = format!(
        "a skill named `{}` is already loaded from {}, which wins; this one is skipped (give it another `name:`)",
        skill.name(),
        first.file().display()
    );
    loaded.problems.push(SkillError::at(skill.file(), line, column, message));
}

/// The `SKILL.md` files of `dir`'s folders, by folder name.
fn skill_files(dir: &Path, problems: &mut Vec<SkillError>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(error) => {
            problems.push(SkillError::whole(
                dir,
                format!("cannot read this skills directory ({error}); check that it is a readable directory"),
            ));
            return Vec::new();
        }
    };
    let mut folders: Vec<PathBuf> = entries.filter_map(Result::ok).map(|entry| entry.path()).collect();
    folders.sort();
    // A folder without a SKILL.md is not a skill (skills may keep helper folders beside).
    folders.into_iter().map(|folder| folder.join(SKILL_FILE)).filter(|file| file.is_file()).collect()
}
