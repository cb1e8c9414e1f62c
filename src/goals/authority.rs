//! Session authority (`compat/sessionAuthority`, the `omx` profile): a
//! mutation runs only when the session environment variable agrees with the
//! workspace's session pointer file. With a pointer present, the variable
//! must be unset or name the pointer's session, and the pointer must be a
//! readable JSON object with a non-blank session id; without a pointer, a
//! set variable refuses `create-goals` (a new run needs a bound session)
//! unless a pointer in a directory above the project binds that session to
//! a working directory that holds the project (a session started at the
//! repository root, working in a nested project), and lets the other
//! mutations through.
//!
//! The pointer lives in the workspace, so the gated agent can write it: this
//! check keeps two sessions from mutating one run by mistake, it is not a
//! trust boundary. It only ever refuses; it never releases anything.

use std::io::Read;

use super::Engine;
use super::error::{ErrorKind, GoalError};
use crate::sandbox::open::{self, FileProblem};
use crate::sandbox::{PathLimits, RelPath};

/// The largest session pointer read.
const MAX_POINTER_BYTES: u64 = 64 * 1024;

/// Checks the session authority of a mutating `sub` (canonical name).
/// `bound_above(id)` tells whether a pointer above the project binds the
/// session `id` to a directory holding the project (read by the front end).
pub(crate) fn check(
    engine: &Engine,
    sub: &str,
    var: &dyn Fn(&str) -> Option<String>,
    bound_above: &dyn Fn(&str) -> bool,
) -> Result<(), GoalError> {
    let Some(a) = &engine.profile.compat.session_authority else {
        return Ok(());
    };
    let env = var(&a.env)
        .map(|v| v.trim().to_owned())
        .filter(|v| !v.is_empty());
    let refuse = |problem: String| {
        GoalError::new(
            ErrorKind::SessionAuthority {
                env: a.env.clone(),
                pointer: a.pointer.clone(),
                problem: problem.clone(),
            },
            format!(
                "Refusing {sub}: {problem}. Fix: make {} name the session that {} records (or unset it), then retry.",
                a.env, a.pointer
            ),
        )
    };
    let rel = RelPath::parse(&a.pointer, PathLimits::default())
        .map_err(|_| refuse(format!("{} is not a clean repo-relative path", a.pointer)))?;
    let bytes = match open::open_leaf(engine.root(), &rel) {
        Err(FileProblem::Missing) => {
            return match env {
                Some(id) if sub == "create-goals" && !bound_above(&id) => Err(refuse(format!(
                    "{}={id} is set but {} does not exist, so the session is not bound",
                    a.env, a.pointer
                ))),
                _ => Ok(()),
            };
        }
        Err(FileProblem::Io(e)) => return Err(GoalError::io(&a.pointer, "open", &e)),
        Err(p) => {
            let (code, msg) = crate::evidence::verify::problem_finding(&p);
            return Err(refuse(format!("{} is unusable: {msg} ({code})", a.pointer)));
        }
        Ok((file, _)) => {
            let mut buf = Vec::new();
            file.take(MAX_POINTER_BYTES + 1)
                .read_to_end(&mut buf)
                .map_err(|e| GoalError::io(&a.pointer, "read", &e))?;
            if buf.len() as u64 > MAX_POINTER_BYTES {
                return Err(refuse(format!(
                    "{} is larger than {MAX_POINTER_BYTES} bytes",
                    a.pointer
                )));
            }
            buf
        }
    };
    let recorded = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.get(&a.id_key)
                .and_then(|s| s.as_str())
                .map(str::trim)
                .map(str::to_owned)
        })
        .filter(|s| !s.is_empty());
    let Some(recorded) = recorded else {
        return Err(refuse(format!(
            "{} is unusable: not a JSON object with a non-blank `{}`",
            a.pointer, a.id_key
        )));
    };
    match env {
        Some(id) if id != recorded => Err(refuse(format!(
            "{}={id} does not match the session {recorded} that {} records",
            a.env, a.pointer
        ))),
        _ => Ok(()),
    }
}

/// Whether a session pointer (`pointer`, e.g. `.omx/state/session.json`) in
/// a directory strictly above `project` records the session `id` under
/// `id_key` and a `cwd` that is `project` or holds it, as OMX's session
/// discovery accepts it. `read` returns a file's bytes (bounded).
pub(crate) fn bound_above(
    project: &std::path::Path,
    pointer: &str,
    id_key: &str,
    id: &str,
    read: &dyn Fn(&std::path::Path) -> Option<Vec<u8>>,
    canonical: &dyn Fn(&std::path::Path) -> Option<std::path::PathBuf>,
) -> bool {
    project.ancestors().skip(1).any(|dir| {
        let Some(bytes) = read(&dir.join(pointer)) else {
            return false;
        };
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else {
            return false;
        };
        let names = v
            .get(id_key)
            .and_then(|s| s.as_str())
            .is_some_and(|s| s.trim() == id);
        let holds = v
            .get("cwd")
            .and_then(|c| c.as_str())
            .and_then(|c| canonical(std::path::Path::new(c)))
            .is_some_and(|c| project.starts_with(c));
        names && holds
    })
}
