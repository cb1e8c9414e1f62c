//! Lexical validation of repository-relative paths (pipeline step 1).
//!
//! A [`RelPath`] can only be built by [`RelPath::parse`], so holding one proves
//! that the path is non-empty, relative, free of control characters,
//! backslashes, `.`/`..`/empty components and trailing slashes, equal to its
//! `path_clean` form, and within the length limits. Such a path can name
//! nothing outside the directory it is resolved against, provided every
//! component is opened without following symlinks (see [`super::open`]).

use std::fmt;

/// Why a path string was rejected before any file access.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LexicalProblem {
    /// The path is empty.
    Empty,
    /// NUL or another control character.
    ControlChar,
    /// A backslash (never a separator here, and ambiguous across platforms).
    Backslash,
    /// Leading `/`, a drive letter or a UNC prefix.
    Absolute,
    /// A `..` component.
    Traversal,
    /// `.` components, empty components or a trailing `/`.
    NotClean,
    /// Longer than the path limit or a component longer than its limit.
    TooLong,
}

impl LexicalProblem {
    /// One-sentence explanation used in findings.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Empty => "the path is empty",
            Self::ControlChar => {
                "the path contains NUL, another control character or a bidirectional control"
            }
            Self::Backslash => "the path contains a backslash; use forward slashes",
            Self::Absolute => "the path is absolute; paths are relative to the workspace root",
            Self::Traversal => "the path contains a `..` component",
            Self::NotClean => {
                "the path is not in clean form (`.` or empty components, or a trailing `/`)"
            }
            Self::TooLong => "the path or one of its components exceeds the length limit",
        }
    }
}

/// Length limits for lexical validation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathLimits {
    /// Maximum bytes of the whole path.
    pub max_path_bytes: usize,
    /// Maximum bytes of one component.
    pub max_component_bytes: usize,
}

impl Default for PathLimits {
    fn default() -> Self {
        PathLimits {
            max_path_bytes: 4096,
            max_component_bytes: 255,
        }
    }
}

/// A lexically valid, repository-relative, forward-slash path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RelPath(String);

impl RelPath {
    /// Validates `s` (pipeline step 1 without the policy-specific prefixes).
    pub fn parse(s: &str, limits: PathLimits) -> Result<RelPath, LexicalProblem> {
        if s.is_empty() {
            return Err(LexicalProblem::Empty);
        }
        // A bidi control makes a path read differently from what it names
        // (docs/threat-model.md#i6): refused like any other control character.
        if s.chars()
            .any(|c| c.is_control() || crate::text::is_bidi_control(c))
        {
            return Err(LexicalProblem::ControlChar);
        }
        if s.contains('\\') {
            return Err(LexicalProblem::Backslash);
        }
        if s.starts_with('/') || has_drive_prefix(s) {
            return Err(LexicalProblem::Absolute);
        }
        if s.split('/').any(|c| c == "..") {
            return Err(LexicalProblem::Traversal);
        }
        if s.split('/').any(|c| c.is_empty() || c == ".") {
            return Err(LexicalProblem::NotClean);
        }
        // Belt and braces: the path must already be what path_clean makes of it.
        if path_clean::clean(s).to_str() != Some(s) {
            return Err(LexicalProblem::NotClean);
        }
        if s.len() > limits.max_path_bytes
            || s.split('/').any(|c| c.len() > limits.max_component_bytes)
        {
            return Err(LexicalProblem::TooLong);
        }
        Ok(RelPath(s.to_owned()))
    }

    /// The path as given.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its `/`-separated components (never empty, never `.` or `..`).
    pub fn components(&self) -> impl DoubleEndedIterator<Item = &str> + Clone {
        self.0.split('/')
    }

    /// Joins a validated child component list onto this path.
    pub fn join(&self, child: &RelPath) -> RelPath {
        RelPath(format!("{}/{}", self.0, child.0))
    }

    /// True when `self` lies strictly below `dir`, compared component by
    /// component (`a1x/f` is not below `a1`).
    pub fn is_strictly_below(&self, dir: &RelPath) -> bool {
        let mut mine = self.components();
        for d in dir.components() {
            if mine.next() != Some(d) {
                return false;
            }
        }
        mine.next().is_some()
    }

    /// True when the first components of `self` equal `prefix`'s, ignoring
    /// ASCII case (used for forbidden locations on case-insensitive disks).
    pub fn starts_with_ignore_case(&self, prefix: &str) -> bool {
        let prefix = prefix.trim_end_matches('/');
        if prefix.is_empty() {
            return false;
        }
        let mut mine = self.components();
        prefix
            .split('/')
            .all(|p| mine.next().is_some_and(|c| c.eq_ignore_ascii_case(p)))
    }
}

impl fmt::Display for RelPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

fn has_drive_prefix(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<RelPath, LexicalProblem> {
        RelPath::parse(s, PathLimits::default())
    }

    #[test]
    fn accepts_clean_relative_paths() {
        assert_eq!(p("src/lib.rs").unwrap().as_str(), "src/lib.rs");
        assert!(p(".hidden/x").is_ok());
        assert!(p("a..b/c").is_ok());
    }

    #[test]
    fn rejects_each_problem_with_its_code() {
        assert_eq!(p(""), Err(LexicalProblem::Empty));
        assert_eq!(p("a\0b"), Err(LexicalProblem::ControlChar));
        assert_eq!(p("a\nb"), Err(LexicalProblem::ControlChar));
        // Bidi controls (docs/threat-model.md#i6): a right-to-left override hides what a path names.
        for c in [
            '\u{061C}', '\u{200E}', '\u{200F}', '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}',
        ] {
            assert_eq!(
                p(&format!("src/a{c}b.rs")),
                Err(LexicalProblem::ControlChar),
                "{c:?}"
            );
        }
        // Other non-ASCII names stay valid (a joiner in an emoji, accents, CJK).
        for ok in [
            "docs/Überprüft.md",
            "src/完了.rs",
            "img/\u{1F469}\u{200D}\u{1F4BB}.png",
        ] {
            assert!(p(ok).is_ok(), "{ok}");
        }
        assert_eq!(p("a\\b"), Err(LexicalProblem::Backslash));
        assert_eq!(p("/etc/passwd"), Err(LexicalProblem::Absolute));
        assert_eq!(p("C:/x"), Err(LexicalProblem::Absolute));
        assert_eq!(p("//server/share"), Err(LexicalProblem::Absolute));
        assert_eq!(p("a/../b"), Err(LexicalProblem::Traversal));
        assert_eq!(p(".."), Err(LexicalProblem::Traversal));
        assert_eq!(p("./a"), Err(LexicalProblem::NotClean));
        assert_eq!(p("a//b"), Err(LexicalProblem::NotClean));
        assert_eq!(p("a/"), Err(LexicalProblem::NotClean));
        assert_eq!(p("a/."), Err(LexicalProblem::NotClean));
        assert_eq!(p(&"x".repeat(256)), Err(LexicalProblem::TooLong));
        assert_eq!(p(&"a/".repeat(2100)[..4199]), Err(LexicalProblem::TooLong));
    }

    #[test]
    fn below_is_component_wise() {
        let dir = p("e/a1").unwrap();
        assert!(p("e/a1/x").unwrap().is_strictly_below(&dir));
        assert!(!p("e/a1").unwrap().is_strictly_below(&dir));
        assert!(!p("e/a1x/y").unwrap().is_strictly_below(&dir));
        assert!(p(".GIT/config").unwrap().starts_with_ignore_case(".git"));
        assert!(
            p(".omo/ulw-loop/goals.json")
                .unwrap()
                .starts_with_ignore_case(".omo/ulw-loop/")
        );
        assert!(
            !p(".omo/ulw-loopx")
                .unwrap()
                .starts_with_ignore_case(".omo/ulw-loop/")
        );
    }
}
