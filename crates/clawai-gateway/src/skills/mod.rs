//! Skills: `SKILL.md` files that scope which tools a session sees.
//!
//! A skill is a folder holding a `SKILL.md`: YAML frontmatter between `---` lines
//! (`name`, `description`, `version`, `variables`, `allowed-tools`, `user-invocable`,
//! `argument-hint`; other keys, such as Claude Code's own, are ignored) and a body, a
//! template with `{{variable}}` placeholders. The gateway serves each skill as a prompt
//! and a tool named `skill__NAME`; its `allowed-tools` globs pick which tools a session
//! sees while it is active.
//!
//! * [`skill`]: one skill, read and served ([`Skill`]).
//! * [`load`]: the skill directories and loading them ([`load_dirs`], [`default_dirs`]).
//! * `frontmatter`: a SKILL.md cut in two, and its YAML read.
//! * `template`: `{{variable}}` rendering.
//! * `pattern`: the `allowed-tools` globs.
//! * [`error`]: what is reported for a skill that cannot load ([`SkillError`]).

pub mod error;
mod frontmatter;
pub mod load;
mod pattern;
pub mod skill;
mod template;

pub use error::SkillError;
pub use load::{Loaded, config_home, default_dirs, load_dirs};
pub use skill::{Skill, Variable};

#[cfg(test)]
mod tests;
