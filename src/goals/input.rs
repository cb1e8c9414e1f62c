//! JSON-or-path inputs (docs/engine.md#ge-4): a trimmed value starting with
//! `{` or `[` (or `null` for host snapshots) is inline JSON; anything else is
//! a path inside the repository, opened through the sandbox.

use serde_json::Value;

use super::Engine;
use super::error::{ErrorKind, GoalError};
use crate::sandbox::open::{self, FileChecks, FileProblem};
use crate::sandbox::{PathLimits, RelPath};

/// Which error code an unreadable or invalid input raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputKind {
    /// `ULW_LOOP_JSON_INPUT_INVALID` (`--validation-batch-json`, …).
    Json,
    /// `ULW_LOOP_CODEX_GOAL_JSON_INVALID` (host-goal snapshots; `null` is inline).
    HostGoal,
    /// `ULW_LOOP_JSON_INPUT_INVALID` with the legacy code of the gate loader.
    Gate,
}

/// A file read through the sandbox, with what was read from its handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRecord {
    /// Repo-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// A loaded input.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The parsed document.
    pub value: Value,
    /// Its text.
    pub text: String,
    /// The file it came from, when it was a path.
    pub file: Option<FileRecord>,
}

fn invalid(kind: InputKind, flag: &str, detail: &str) -> GoalError {
    match kind {
        InputKind::Json => GoalError::new(
            ErrorKind::JsonInputInvalid {
                flag: flag.to_owned(),
                legacy: false,
            },
            format!("Invalid JSON input: {detail}"),
        ),
        InputKind::Gate => GoalError::new(
            ErrorKind::JsonInputInvalid {
                flag: flag.to_owned(),
                legacy: true,
            },
            format!("Quality gate input is not valid JSON: {detail}"),
        ),
        InputKind::HostGoal => GoalError::new(
            ErrorKind::CodexGoalJsonInvalid {
                flag: flag.to_owned(),
            },
            format!("Invalid {flag}: {detail}"),
        ),
    }
}

/// Whether `value` is inline JSON rather than a path.
pub(crate) fn is_inline(value: &str, kind: InputKind) -> bool {
    let t = value.trim();
    t.starts_with('{') || t.starts_with('[') || (kind == InputKind::HostGoal && t == "null")
}

/// Turns a user-supplied path into a repo-relative one: `./` prefixes are
/// dropped and an absolute path inside the repository root is made relative.
pub(crate) fn repo_path(engine: &Engine, raw: &str) -> Result<RelPath, String> {
    let mut s = raw.trim();
    if let Some(root) = engine.root_abs()
        && let Some(rest) = s.strip_prefix(root)
        && (rest.is_empty() || rest.starts_with('/'))
    {
        s = rest.trim_start_matches('/');
    }
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.trim_start_matches('/');
    }
    RelPath::parse(s, PathLimits::default()).map_err(|p| {
        format!(
            "{raw}: {} (paths must name a file inside the repository)",
            p.describe()
        )
    })
}

/// Reads a repository file through the sandbox: no symlink at any
/// component, a regular file, at most `max` bytes; hashed from the handle.
pub(crate) fn read_repo_file(
    engine: &Engine,
    flag: &str,
    raw: &str,
    max: u64,
    not_readable: &dyn Fn(String) -> GoalError,
) -> Result<(Vec<u8>, FileRecord), GoalError> {
    let rel = repo_path(engine, raw).map_err(not_readable)?;
    let (mut file, meta) = match open::open_leaf(engine.root(), &rel) {
        Ok(x) => x,
        Err(FileProblem::Missing) => {
            return Err(GoalError::new(
                ErrorKind::InputNotFound {
                    flag: flag.to_owned(),
                    path: raw.to_owned(),
                },
                format!("{flag}: no such file: {raw}."),
            ));
        }
        Err(FileProblem::Io(e)) => return Err(GoalError::io(rel.as_str(), "open", &e)),
        Err(p) => {
            let (code, msg) = crate::finding::problem_finding(&p);
            return Err(not_readable(format!("{raw}: {msg} ({code})")));
        }
    };
    if meta.len() > max {
        return Err(too_large(flag, meta.len(), max));
    }
    let checks = FileChecks {
        reject_hard_links: false,
        max_bytes: max,
        reject_empty: false,
    };
    if let Err(p) = open::check_handle(&meta, &checks) {
        let (code, msg) = crate::finding::problem_finding(&p);
        return Err(not_readable(format!("{raw}: {msg} ({code})")));
    }
    let mut kept = Vec::new();
    let hashed = open::hash_handle(&mut file, &meta, &checks, None, max as usize, &mut kept)
        .map_err(|p| match p {
            FileProblem::TooLarge { size, max } => too_large(flag, size, max),
            FileProblem::Io(e) => GoalError::io(rel.as_str(), "read", &e),
            other => {
                let (code, msg) = crate::finding::problem_finding(&other);
                not_readable(format!("{raw}: {msg} ({code})"))
            }
        })?;
    Ok((
        kept,
        FileRecord {
            path: rel.as_str().to_owned(),
            size: hashed.size,
            sha256: hashed.sha256,
        },
    ))
}

/// `ULW_LOOP_INPUT_TOO_LARGE`.
pub(crate) fn too_large(flag: &str, size: u64, max: u64) -> GoalError {
    GoalError::new(
        ErrorKind::InputTooLarge {
            flag: flag.to_owned(),
            size,
            max,
        },
        format!("{flag} is {size} bytes; the limit is {max}."),
    )
}

/// Loads a JSON-or-path input.
pub(crate) fn load(
    engine: &Engine,
    flag: &str,
    value: &str,
    kind: InputKind,
) -> Result<Loaded, GoalError> {
    let max = engine.profile.limits.max_input_bytes;
    let (bytes, file) = if is_inline(value, kind) {
        let t = value.trim();
        if t.len() as u64 > max {
            return Err(too_large(flag, t.len() as u64, max));
        }
        (t.as_bytes().to_vec(), None)
    } else {
        let (b, rec) = read_repo_file(engine, flag, value, max, &|d| invalid(kind, flag, &d))?;
        (b, Some(rec))
    };
    let parsed =
        crate::json::parse_strict(&bytes).map_err(|e| invalid(kind, flag, &e.to_string()))?;
    Ok(Loaded {
        value: parsed,
        text: String::from_utf8(bytes).expect("parse_strict accepted UTF-8"),
        file,
    })
}
