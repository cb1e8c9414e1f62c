//! The state directory: resolution of its repo-relative paths, and opening
//! it and its files without following symlinks (docs/state-formats.md#ge-2).
//!
//! A symlinked component, or an entry of the wrong type, is
//! `ULW_LOOP_STATE_UNSAFE`; any other I/O failure is `ULW_LOOP_IO_ERROR`.

use std::io::{self, Read};

use cap_fs_ext::DirExt;
use cap_std::fs::{Dir, File, Metadata};

use super::error::GoalError;
use crate::sandbox::open::{self, FileProblem};

/// File names inside a state directory.
pub(crate) const GOALS: &str = "goals.json";
/// The ledger.
pub(crate) const LEDGER: &str = "ledger.jsonl";
/// The brief.
pub(crate) const BRIEF: &str = "brief.md";
/// The mutation lock.
pub(crate) const LOCK: &str = ".mutation.lock";
/// The ledger head cache.
pub(crate) const INDEX: &str = ".ledger.idx";
/// The idempotency key index.
pub(crate) const KEYS: &str = ".ledger.keys";
/// Previous runs.
pub(crate) const ARCHIVE: &str = ".archive";
/// Marker of a `create-goals --force` switch in progress (docs/threat-model.md#i14):
/// the next lock holder finishes or undoes it.
pub(crate) const SWITCH: &str = ".force-switch.json";
/// The replaced run's ledger while a switch is in progress.
pub(crate) const SWITCH_LEDGER: &str = ".force-switch.ledger.jsonl";

/// `path` named from the git worktree root: `<prefix>/<path>`, or `path`
/// when the prefix is empty.
pub(crate) fn prefixed(prefix: &str, path: &str) -> String {
    if prefix.is_empty() {
        path.to_owned()
    } else {
        format!("{prefix}/{path}")
    }
}

/// Repo-relative paths of one scope's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatePaths {
    /// Normalised session id, if scoped.
    pub sid: Option<String>,
    /// `<stateDir>[/<sid>]`.
    pub dir: String,
    /// The project root's path from the git worktree root (`apps/web`), empty
    /// at the worktree root, outside a worktree, or when the profile does not
    /// name state paths from the worktree root (`compat/statePathPrefix`).
    pub prefix: String,
}

impl StatePaths {
    /// Paths for a profile's base directory and a session.
    pub fn new(base: &str, sid: Option<&str>) -> StatePaths {
        let dir = match sid {
            Some(s) => format!("{base}/{s}"),
            None => base.to_owned(),
        };
        StatePaths {
            sid: sid.map(str::to_owned),
            dir,
            prefix: String::new(),
        }
    }
    /// The same paths with the worktree-relative prefix of the project root.
    pub fn with_prefix(mut self, prefix: &str) -> StatePaths {
        prefix.clone_into(&mut self.prefix);
        self
    }
    /// `path` (repo-relative) named from the git worktree root.
    pub fn prefixed(&self, path: &str) -> String {
        prefixed(&self.prefix, path)
    }
    /// Repo-relative path of a file in the state directory.
    pub fn file(&self, name: &str) -> String {
        format!("{}/{name}", self.dir)
    }
    /// `…/goals.json`.
    pub fn goals(&self) -> String {
        self.file(GOALS)
    }
    /// `…/ledger.jsonl`.
    pub fn ledger(&self) -> String {
        self.file(LEDGER)
    }
    /// `…/brief.md`.
    pub fn brief(&self) -> String {
        self.file(BRIEF)
    }
}

/// Opens the directory chain `rel` below `root`; `create` makes missing
/// components. `Ok(None)` when a component is missing and `create` is false.
pub(crate) fn open_chain(root: &Dir, rel: &str, create: bool) -> Result<Option<Dir>, GoalError> {
    let mut cur = root
        .try_clone()
        .map_err(|e| GoalError::io(".", "open", &e))?;
    let mut walked = String::new();
    for c in rel.split('/') {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(c);
        cur = match cur.open_dir_nofollow(c) {
            Ok(d) => d,
            Err(e) => match cur.symlink_metadata(c) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(GoalError::unsafe_state(
                        &walked,
                        "PATH_SYMLINK",
                        "it is a symlink",
                    ));
                }
                Ok(m) if !m.is_dir() => {
                    return Err(GoalError::unsafe_state(
                        &walked,
                        "NOT_REGULAR_FILE",
                        "it is not a directory",
                    ));
                }
                Err(le) if le.kind() == io::ErrorKind::NotFound => {
                    if !create {
                        return Ok(None);
                    }
                    match cur.create_dir(c) {
                        Ok(()) => {}
                        Err(ce) if ce.kind() == io::ErrorKind::AlreadyExists => {}
                        Err(ce) => return Err(GoalError::io(&walked, "create directory", &ce)),
                    }
                    match cur.open_dir_nofollow(c) {
                        Ok(d) => d,
                        Err(oe) => return Err(GoalError::io(&walked, "open directory", &oe)),
                    }
                }
                _ => return Err(GoalError::io(&walked, "open directory", &e)),
            },
        };
    }
    Ok(Some(cur))
}

/// Opens a state file for reading, no-follow and non-blocking. `Ok(None)` when
/// it does not exist; a symlink or non-regular entry is `ULW_LOOP_STATE_UNSAFE`.
pub(crate) fn open_file(
    dir: &Dir,
    name: &str,
    display: &str,
) -> Result<Option<(File, Metadata)>, GoalError> {
    match open::open_in(dir, name, display) {
        Ok((f, m)) => {
            if !m.is_file() {
                return Err(GoalError::unsafe_state(
                    display,
                    "NOT_REGULAR_FILE",
                    "it is not a regular file",
                ));
            }
            Ok(Some((f, m)))
        }
        Err(FileProblem::Missing) => Ok(None),
        Err(p) => Err(problem(display, p)),
    }
}

/// Maps a sandbox problem on a state or input path to the engine's codes.
pub(crate) fn problem(display: &str, p: FileProblem) -> GoalError {
    match p {
        FileProblem::Symlink { .. } => {
            GoalError::unsafe_state(display, "PATH_SYMLINK", "it is a symlink")
        }
        FileProblem::NotRegular { kind } => GoalError::unsafe_state(
            display,
            "NOT_REGULAR_FILE",
            &format!("it is not a regular file (a {kind})"),
        ),
        FileProblem::EscapesRoot => {
            GoalError::unsafe_state(display, "PATH_ESCAPES_ROOT", "it leads outside the root")
        }
        FileProblem::Io(e) => GoalError::io(display, "open", &e),
        other => {
            let (code, msg) = crate::finding::problem_finding(&other);
            GoalError::unsafe_state(display, code.name(), &msg)
        }
    }
}

/// Reads a whole state file of at most `max` bytes. `Ok(None)` when missing.
pub(crate) fn read_file(
    dir: &Dir,
    name: &str,
    display: &str,
    max: u64,
) -> Result<Option<ReadOutcome>, GoalError> {
    let Some((file, meta)) = open_file(dir, name, display)? else {
        return Ok(None);
    };
    if meta.len() > max {
        return Ok(Some(ReadOutcome::TooLarge { size: meta.len() }));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    // Through the standard library's file, which reads into the buffer's
    // spare capacity as it is (a file type of another crate has it zeroed
    // first: 1.8 MB for a 1,000-goal plan).
    file.into_std()
        .take(max + 1)
        .read_to_end(&mut buf)
        .map_err(|e| GoalError::io(display, "read", &e))?;
    if buf.len() as u64 > max {
        return Ok(Some(ReadOutcome::TooLarge {
            size: buf.len() as u64,
        }));
    }
    Ok(Some(ReadOutcome::Bytes(buf)))
}

/// What [`read_file`] found.
#[derive(Debug)]
pub(crate) enum ReadOutcome {
    /// The content.
    Bytes(Vec<u8>),
    /// Over the cap.
    TooLarge {
        /// Bytes seen.
        size: u64,
    },
}
