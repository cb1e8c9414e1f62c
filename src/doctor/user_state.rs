//! `state.user` and `state.tree`: the hooks' per-user state directory
//! (docs/threat-model.md#tm-3) and the in-tree remains the agent can sabotage.
//! Without `--fix` nothing is created or removed; with it, directories are
//! created, junk planted where hook state belongs is removed and the
//! gate-ledger mirror is restored from its witness.

use std::io;
use std::path::Path;
use std::time::Duration;

use cap_std::fs::Dir;
use serde_json::{Map, json};

use super::{Check, Status};
use crate::ambient::Ambient;
use crate::hooks::diagnostics::STATE_DIR;
use crate::hooks::gate_ledger;
use crate::hooks::receipt::{attempts, reuse};
use crate::hooks::witness::{self, HookState};
use crate::store::{LockOptions, MutationLock};
use crate::userstate;
use crate::workspace::Workspace;

/// Entries of `hooks/` that must be directories.
const DIRS: &[&str] = &[attempts::DIR, reuse::DIR, "goal-loop"];
/// Entries of `hooks/` that must be regular files when present.
const FILES: &[&str] = &[gate_ledger::FILE, witness::LOCK, witness::MIGRATED];
/// In-tree entries of earlier versions below `.omo/evidence-gate/`:
/// `(name, must be a directory)`.
const TREE: &[(&str, bool)] = &[
    (gate_ledger::FILE, false),
    (".mutation.lock", false),
    (attempts::DIR, true),
    (reuse::DIR, true),
];

/// Checks (and with `fix` repairs) the per-user state of `ws`, opened at
/// the ambient path `workspace`, and the in-tree mirror's directory.
pub(super) fn check(
    amb: &dyn Ambient,
    workspace: &Path,
    ws: &Workspace,
    fix: bool,
    checks: &mut Vec<Check>,
) {
    let Some(canonical) = ws.canonical_root() else {
        let e = ws
            .canonical_root_error()
            .map(ToString::to_string)
            .unwrap_or_default();
        checks.push(Check::new(
            "state.user",
            Status::Fail,
            format!("{}: {e}", workspace.display()),
        ));
        return;
    };
    user(amb, ws, canonical, fix, checks);
    tree(amb, ws, fix, checks);
}

fn user(amb: &dyn Ambient, ws: &Workspace, canonical: &Path, fix: bool, checks: &mut Vec<Check>) {
    let id = "state.user";
    let (Some(base), Some(path)) = (userstate::base_path(amb), ws.user_state_path(amb)) else {
        checks.push(
            Check::new(id, Status::Fail, "the per-user state directory is unknown")
                .hint("set HOME (or XDG_STATE_HOME) to an absolute path; until then every gated stop is blocked"),
        );
        return;
    };
    if path.starts_with(canonical) || base.starts_with(canonical) {
        checks.push(
            Check::new(
                id,
                Status::Fail,
                format!(
                    "{} lies inside the workspace, where the agent can write it",
                    path.display()
                ),
            )
            .hint("point XDG_STATE_HOME (or HOME) at a directory outside the workspace"),
        );
        return;
    }
    if !fix && amb.open_dir(&path).is_err() {
        checks.push(
            Check::new(
                id,
                Status::Warn,
                format!(
                    "{} does not exist yet (the first hook call creates it)",
                    path.display()
                ),
            )
            .hint("run `evidence-gate doctor --fix` to create it now"),
        );
        return;
    }
    let state = match ws.user_state(amb) {
        Ok(s) => s,
        Err(e) => {
            checks.push(Check::new(id, Status::Fail, e.to_string()).hint(e.fix()));
            return;
        }
    };
    let hooks = match if fix {
        state.subdir(witness::HOOKS_DIR).map(Some)
    } else {
        match state.dir().open_dir(witness::HOOKS_DIR) {
            Ok(d) => Ok(Some(d)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    } {
        Ok(h) => h,
        Err(e) => {
            checks.push(
                Check::new(id, Status::Fail, format!("{}/hooks: {e}", path.display()))
                    .hint("remove what stands there, then run `evidence-gate doctor --fix`"),
            );
            return;
        }
    };
    let mut problems = Vec::new();
    let mut repaired = Vec::new();
    if let Some(h) = &hooks {
        sweep(h, DIRS, FILES, fix, &mut problems, &mut repaired);
    }
    let shown = path.display();
    checks.push(if problems.is_empty() {
        let mut m = format!("{shown} is usable");
        if !repaired.is_empty() {
            m.push_str(&format!("; repaired: {}", repaired.join(", ")));
        }
        Check::new(id, Status::Ok, m)
    } else {
        Check::new(
            id,
            Status::Fail,
            format!("{shown}/hooks: {}", problems.join("; ")),
        )
        .hint(if fix {
            "remove these entries by hand; until then gated stops are blocked (HOOK_STATE_IO)"
        } else {
            "run `evidence-gate doctor --fix`"
        })
    });
}

/// Reports (and with `fix` removes) entries of the wrong kind: a non-directory
/// where a directory belongs, a non-regular file (FIFO, symlink, directory)
/// where a file belongs. Missing directories are created with `fix`.
fn sweep(
    dir: &Dir,
    dirs: &[&str],
    files: &[&str],
    fix: bool,
    problems: &mut Vec<String>,
    repaired: &mut Vec<String>,
) {
    for name in dirs {
        match dir.symlink_metadata(name) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                if fix && dir.remove_file(name).is_ok() && dir.create_dir(name).is_ok() {
                    repaired.push(format!("{name} (not a directory) replaced"));
                } else {
                    problems.push(format!("{name} is not a directory"));
                }
            }
            Err(_) => {
                if fix && dir.create_dir(name).is_ok() {
                    repaired.push(format!("{name}/ created"));
                }
            }
        }
    }
    for name in files {
        match dir.symlink_metadata(name) {
            Ok(m) if m.is_file() => {}
            Ok(m) => {
                let removed = fix
                    && if m.is_dir() {
                        dir.remove_dir_all(name).is_ok()
                    } else {
                        dir.remove_file(name).is_ok()
                    };
                if removed {
                    repaired.push(format!("{name} (not a regular file) removed"));
                } else {
                    problems.push(format!("{name} is not a regular file"));
                }
            }
            Err(_) => {}
        }
    }
}

fn tree(amb: &dyn Ambient, ws: &Workspace, fix: bool, checks: &mut Vec<Check>) {
    let id = "state.tree";
    let root = ws.dir();
    let mut problems = Vec::new();
    let mut repaired = Vec::new();
    let omo = root.open_dir(".omo");
    let planted = omo
        .as_ref()
        .ok()
        .and_then(|d| d.symlink_metadata("evidence-gate").ok())
        .is_some_and(|m| !m.is_dir());
    if planted {
        let removed = fix
            && omo
                .as_ref()
                .is_ok_and(|d| d.remove_file("evidence-gate").is_ok());
        if removed {
            repaired.push(format!("{STATE_DIR} (not a directory) removed"));
        } else {
            problems.push(format!("{STATE_DIR} is not a directory"));
        }
    }
    if let Ok(Ok(dir)) = omo.as_ref().map(|d| d.open_dir("evidence-gate")) {
        let dirs: Vec<&str> = TREE.iter().filter(|(_, d)| *d).map(|(n, _)| *n).collect();
        let files: Vec<&str> = TREE.iter().filter(|(_, d)| !*d).map(|(n, _)| *n).collect();
        // Old directories are only checked for their kind, never created.
        for name in &dirs {
            if dir.symlink_metadata(name).is_ok_and(|m| !m.is_dir()) {
                if fix && dir.remove_file(name).is_ok() {
                    repaired.push(format!("{STATE_DIR}/{name} (not a directory) removed"));
                } else {
                    problems.push(format!("{STATE_DIR}/{name} is not a directory"));
                }
            }
        }
        sweep(&dir, &[], &files, fix, &mut problems, &mut repaired);
    }
    if fix && problems.is_empty() {
        match restore_mirror(amb, ws) {
            Ok(Some(r)) if r.rewound > 0 || r.forged > 0 => repaired.push(format!(
                "gate-ledger mirror restored ({} record(s) missing, {} not written by the witness)",
                r.rewound, r.forged
            )),
            Ok(_) => {}
            Err(e) => problems.push(e),
        }
    }
    checks.push(if problems.is_empty() {
        let mut m = format!("no junk where {STATE_DIR}/ keeps the gate-ledger mirror");
        if !repaired.is_empty() {
            m = format!("repaired: {}", repaired.join(", "));
        }
        Check::new(id, Status::Ok, m)
    } else {
        Check::new(id, Status::Fail, problems.join("; ")).hint(if fix {
            "remove these entries by hand; until then gated stops are blocked (HOOK_STATE_IO)"
        } else {
            "run `evidence-gate doctor --fix`"
        })
    });
}

/// Restores the mirror from the witness under the gate lock (recording a
/// rewind or forgery as a hook call would). `None` when there is no witness.
fn restore_mirror(
    amb: &dyn Ambient,
    ws: &Workspace,
) -> Result<Option<witness::Reconciled>, String> {
    let hs = HookState::of(amb, ws).map_err(|f| format!("{}: {}", f.path, f.error))?;
    let root = ws.dir();
    if hs.dir().symlink_metadata(gate_ledger::FILE).is_err() {
        return Ok(None);
    }
    let opts = LockOptions {
        timeout: Duration::from_millis(2000),
        command: "doctor --fix".into(),
    };
    let lock = MutationLock::acquire(hs.dir(), witness::LOCK, &opts)
        .map_err(|e| format!("the gate lock: {e}"))?;
    let mut base = Map::new();
    base.insert("host".into(), json!("doctor"));
    base.insert(
        "ts".into(),
        json!(crate::time::rfc3339_ms(std::time::SystemTime::now())),
    );
    let r = hs
        .reconcile(root, &base)
        .map_err(|f| format!("{}: {} ({})", f.path, f.what, f.error));
    let _ = lock.release();
    r.map(Some)
}
