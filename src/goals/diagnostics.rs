//! Diagnostic lines of the goal engine (goal-engine.md §2.6: an index
//! rebuild is worth a line). Written best-effort to the diagnostics file that
//! `hooks.md` §1.5 defines; a failure never changes a command's outcome.

use std::time::SystemTime;

use serde_json::json;

use super::Engine;
use super::index::View;
use crate::sandbox::{PathLimits, RelPath};
use crate::store::DIAGNOSTICS_DIR;

/// Rotation threshold (the hooks' default `hooks.diagnostics_max_bytes`).
const MAX_BYTES: u64 = 1024 * 1024;

/// Records that `.ledger.idx` / `.ledger.keys` were rebuilt by a full scan.
pub fn index_rebuilt(engine: &Engine, command: &str, view: &View) {
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
    append(engine.root(), &line.to_string());
}

fn append(root: &cap_std::fs::Dir, line: &str) {
    let Ok(rel) = RelPath::parse(DIAGNOSTICS_DIR, PathLimits::default()) else {
        return;
    };
    let Ok(dir) = crate::store::create_dirs(root, &rel) else {
        return;
    };
    crate::store::append_diagnostic(&dir, line.as_bytes(), MAX_BYTES);
}

/// Records a caught panic (reported as `ULW_LOOP_UNEXPECTED`).
pub fn panicked(root: &cap_std::fs::Dir, profile: &str, command: &str, message: &str) {
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
    append(root, &line.to_string());
}
