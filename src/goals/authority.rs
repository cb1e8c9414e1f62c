//! Session authority (`compat/sessionAuthority`, the `omx` profile): a
//! mutation runs only when the session environment variable agrees with the
//! workspace's session pointer file. With a pointer present, the variable
//! must be unset or name the pointer's session, and the pointer must be a
//! readable JSON object with a non-blank session id; without a pointer, a
//! set variable refuses `create-goals` (a new run needs a bound session)
//! and lets the other mutations through.
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
pub fn check(
    engine: &Engine,
    sub: &str,
    var: &dyn Fn(&str) -> Option<String>,
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
                Some(id) if sub == "create-goals" => Err(refuse(format!(
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
