//! Diagnostic lines of the goal engine (docs/state-formats.md#ge-2: an index
//! rebuild is worth a line). Written best-effort to the diagnostics file that
//! `docs/hook-contracts.md` docs/engine.md#ge-1 defines, in the workspace's per-user state directory
//! (`<user state>/hooks/diagnostics.jsonl`, docs/threat-model.md#tm-3) where
//! `doctor` reads them and the gated agent cannot edit them; when that
//! directory is unusable, to the base per-user state directory, and never
//! into the workspace. The front end opens the target through the
//! [`Ambient`] ([`Sink::of`] for an assembled [`Workspace`], [`Sink::open`]
//! for a bare canonical root); a failure never changes a command's outcome.

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use cap_std::fs::Dir;
use serde_json::json;

use super::Engine;
use super::index::View;
use crate::ambient::Ambient;
use crate::userstate::{UserState, UserStateError};
use crate::workspace::Workspace;

/// Rotation threshold (the hooks' default `hooks.diagnostics_max_bytes`).
const MAX_BYTES: u64 = 1024 * 1024;

/// Records that `.ledger.idx` / `.ledger.keys` were rebuilt by a full scan.
pub(crate) fn index_rebuilt(engine: &Engine, command: &str, view: &View) {
    let line = json!({
        "v": 1,
        "ts": crate::time::rfc3339_ms(SystemTime::now()),
        "code": "LEDGER_INDEX_REBUILT",
        "level": "info",
        "event": command,
        "host": null,
        "profile": engine.profile.name,
        "session_id": engine.paths.sid,
        "outcome": null,
        "message": "The ledger index could not be trusted and was rebuilt by a full scan.",
        "detail": {"stateDir": engine.paths.dir, "ledgerBytes": view.head.len, "records": view.head.records},
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
    });
    engine.diagnostics().append(&line.to_string());
}

/// Where the engine's diagnostic lines go: an open per-user directory, or
/// nowhere (no per-user state directory is known or usable).
#[derive(Debug, Clone, Default)]
pub struct Sink(Option<Arc<Dir>>);

impl Sink {
    /// Opens (creating it if needed) `<user state>/hooks/` of the workspace
    /// whose canonical root is `canonical_root`; when that is unknown or
    /// unusable, the base per-user state directory unless it lies inside
    /// the workspace. Never a directory of the workspace.
    pub fn open(amb: &dyn Ambient, canonical_root: Option<&Path>) -> Sink {
        let user = match canonical_root {
            Some(root) => UserState::open(amb, root),
            None => Err(UserStateError::RootUnknown),
        };
        Sink::with(amb, user, canonical_root)
    }

    /// A sink writing to `dir`, a workspace's per-user `hooks/` directory
    /// already open.
    pub(crate) fn in_dir(dir: Dir) -> Sink {
        Sink(Some(Arc::new(dir)))
    }

    /// [`Sink::open`] for the workspace `ws`, at the per-user state
    /// [`Workspace::user_state`] opens.
    pub fn of(amb: &dyn Ambient, ws: &Workspace) -> Sink {
        Sink::with(amb, ws.user_state(amb), ws.canonical_root())
    }

    /// `<user>/hooks/`, else the base per-user state directory unless it
    /// lies inside the workspace at `canonical_root`.
    fn with(
        amb: &dyn Ambient,
        user: Result<UserState, UserStateError>,
        canonical_root: Option<&Path>,
    ) -> Sink {
        if let Some(dir) = user
            .ok()
            .and_then(|u| u.subdir(crate::userstate::HOOKS_DIR).ok())
        {
            return Sink(Some(Arc::new(dir)));
        }
        let base = crate::userstate::base_path(amb)
            .filter(|b| canonical_root.is_none_or(|r| !b.starts_with(r)));
        let dir = base.and_then(|b| {
            amb.create_dir_all(&b).ok()?;
            amb.open_dir(&b).ok()
        });
        Sink(dir.map(Arc::new))
    }

    /// [`Sink::open`] for the workspace at the ambient path `root`
    /// (canonicalized through `amb`; unknown when that fails).
    pub fn at(amb: &dyn Ambient, root: &Path) -> Sink {
        let canonical = amb.canonicalize(root).ok();
        Sink::open(amb, canonical.as_deref())
    }

    /// The per-user directory the sink writes to, when there is one (the
    /// engine's read-only commands keep their ledger-index cache there).
    pub fn dir(&self) -> Option<&Dir> {
        self.0.as_deref()
    }

    /// A sink that writes nothing.
    pub fn none() -> Sink {
        Sink(None)
    }

    fn append(&self, line: &str) {
        if let Some(dir) = &self.0 {
            crate::store::append_diagnostic(dir, line.as_bytes(), MAX_BYTES);
        }
    }
}

/// Records a caught panic (reported as `ULW_LOOP_UNEXPECTED`).
pub(crate) fn panicked(sink: &Sink, profile: &str, command: &str, message: &str) {
    let mut message = message.to_owned();
    message.truncate(500);
    let line = json!({
        "v": 1,
        "ts": crate::time::rfc3339_ms(SystemTime::now()),
        "code": "GOALS_PANIC",
        "level": "error",
        "event": command,
        "host": null,
        "profile": profile,
        "outcome": null,
        "message": message,
        "version": env!("CARGO_PKG_VERSION"),
        "pid": std::process::id(),
    });
    sink.append(&line.to_string());
}
