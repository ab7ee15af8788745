//! What goes wrong with a skill: always a file, and where in it when that is known.

use std::fmt;
use std::path::PathBuf;

/// A skill that could not be loaded (or was skipped), with where and what to do.
///
/// `line` and `column` count from 1 in the SKILL.md file itself (the frontmatter's
/// opening `---` is line 1); both are 0 when the problem is not at one place in the file
/// (it cannot be read, or it is a directory's problem).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SkillError {
    /// The SKILL.md file (or skills directory) the problem is in.
    pub file: PathBuf,
    /// The line, from 1; 0 when not known.
    pub line: usize,
    /// The column, from 1; 0 when not known.
    pub column: usize,
    /// What is wrong and what to do.
    pub message: String,
}

impl SkillError {
    /// A problem at `line`:`column` of `file`.
    pub(crate) fn at(file: impl Into<PathBuf>, line: usize, column: usize, message: impl Into<String>) -> Self {
        SkillError { file: file.into(), line, column, message: message.into() }
    }

    /// A problem with the whole of `file` (it cannot be read, say).
    pub(crate) fn whole(file: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Self::at(file, 0, 0, message)
    }
}

impl fmt::Display for SkillError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `FILE:LINE:COLUMN: message`, the shape editors and terminals turn into a link.
        if self.line == 0 {
            write!(f, "{}: {}", self.file.display(), self.message)
        } else {
            write!(f, "{}:{}:{}: {}", self.file.display(), self.line, self.column.max(1), self.message)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_and_column_when_known() {
        let at = SkillError::at("/s/a/SKILL.md", 3, 7, "bad");
        assert_eq!(at.to_string(), "/s/a/SKILL.md:3:7: bad");
        let whole = SkillError::whole("/s/a/SKILL.md", "cannot read");
        assert_eq!(whole.to_string(), "/s/a/SKILL.md: cannot read");
    }
}
