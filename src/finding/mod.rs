//! Findings and their stable codes: the bottom layer every other layer
//! reports through. [`code`] is the catalogue, [`report`] the findings,
//! verdicts and reports built from them, and [`lexical_code`] /
//! [`problem_finding`] map the sandbox's refusals to codes, so that the
//! rules, the ledger, the verifier, the gate, the goal engine, the hooks and
//! the audit all name a refused path the same way.

pub mod code;
pub mod report;

pub use code::{Class, Code};
pub use report::{
    Finding, Report, ReportBuilder, ReportKind, Severity, Stats, Verdict, VerifiedFile,
};

use crate::sandbox::LexicalProblem;
use crate::sandbox::open::FileProblem;

/// Maps a lexical problem to its finding code.
pub fn lexical_code(p: LexicalProblem) -> Code {
    match p {
        LexicalProblem::Empty => Code::PathEmpty,
        LexicalProblem::ControlChar => Code::PathControlChar,
        LexicalProblem::Backslash => Code::PathBackslash,
        LexicalProblem::Absolute => Code::PathAbsolute,
        LexicalProblem::Traversal => Code::PathTraversal,
        LexicalProblem::NotClean => Code::PathNotClean,
        LexicalProblem::TooLong => Code::PathTooLong,
    }
}

/// Maps a sandbox file problem to its finding code and message.
pub fn problem_finding(p: &FileProblem) -> (Code, String) {
    match p {
        FileProblem::Symlink { component } => (
            Code::PathSymlink,
            format!("`{component}` is a symlink; symlinks are never followed"),
        ),
        FileProblem::EscapesRoot => (
            Code::PathEscapesRoot,
            "the path leads outside the root".into(),
        ),
        FileProblem::Missing => (Code::FileMissing, "no such file".into()),
        FileProblem::NotRegular { kind } => (
            Code::NotRegularFile,
            format!("not a regular file (a {kind})"),
        ),
        FileProblem::Empty => (Code::FileEmpty, "the file is empty".into()),
        FileProblem::HardLinked { nlink } => (
            Code::FileHardlinked,
            format!("the file has {nlink} hard links; it may be reachable from outside the root"),
        ),
        FileProblem::TooLarge { size, max } => (
            Code::FileTooLarge,
            format!("the file is at least {size} bytes; the limit is {max}"),
        ),
        FileProblem::Changed => (
            Code::FileChangedDuringCheck,
            "the file changed while it was being verified".into(),
        ),
        FileProblem::Deadline => (Code::VerifyTimeout, "verification ran out of time".into()),
        FileProblem::Io(e) => (Code::IoError, format!("could not read the file: {e}")),
    }
}
