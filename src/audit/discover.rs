//! Finding the goal-engine state directories of every profile: the unscoped
//! `<stateDir>` and each session `<stateDir>/<sid>` that holds a plan or a
//! ledger (docs/state-formats.md#ge-2). Names starting with `.` are engine-private
//! (archives, index, lock) and never sessions.

use std::collections::BTreeMap;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

use super::layout::ProfileLayout;
use super::state_dir::{GOALS, LEDGER};
use crate::evidence::verify::problem_finding;
use crate::evidence::{Code, Finding};
use crate::sandbox::RelPath;
use crate::sandbox::open::{self, FileProblem};
use crate::sandbox::walk::{self, EntryKind};

/// A state directory to audit.
pub(crate) struct Target {
    /// Repo-relative path.
    pub(crate) display: String,
    /// Index of its profile.
    pub(crate) layout: usize,
    /// The opened directory.
    pub(crate) dir: Dir,
}

/// A state directory that cannot be audited, and why.
pub(crate) struct Refused {
    pub(crate) display: String,
    pub(crate) finding: Finding,
}

fn holds_state(dir: &Dir) -> bool {
    dir.symlink_metadata(GOALS).is_ok() || dir.symlink_metadata(LEDGER).is_ok()
}

fn refused(display: &str, p: &FileProblem) -> Refused {
    let (code, why) = problem_finding(p);
    Refused {
        display: display.to_owned(),
        finding: Finding::new(code, Some(display), format!("state directory: {why}")),
    }
}

/// Every state directory of every profile, sorted by path.
pub(crate) fn all(root: &Dir, layouts: &[ProfileLayout]) -> (Vec<Target>, Vec<Refused>) {
    let mut targets: BTreeMap<String, Target> = BTreeMap::new();
    let mut refusals = Vec::new();
    for (i, layout) in layouts.iter().enumerate() {
        let base = layout.state_dir.as_str();
        let dir = match open::open_dir(root, &layout.state_dir) {
            Ok(d) => d,
            Err(FileProblem::Missing) => continue,
            Err(p) => {
                refusals.push(refused(base, &p));
                continue;
            }
        };
        let mut entries = Vec::new();
        // One level (`descend` is always false): the depth bound is never met.
        if let Err(e) = walk::walk(
            &dir,
            base,
            &mut |_| false,
            &mut |e| entries.push(e.clone()),
            &mut |_| {},
        )
        .map(|w| debug_assert!(w.too_deep.is_empty()))
        {
            refusals.push(Refused {
                display: base.to_owned(),
                finding: Finding::new(
                    Code::IoError,
                    Some(&e.path),
                    format!("could not list the state directory: {}", e.error),
                ),
            });
        }
        for e in entries {
            let name = e.path.rsplit('/').next().unwrap_or_default();
            // The unscoped plan and ledger are state files, never sessions;
            // the state-directory audit reports them when they are symlinks.
            if name.starts_with('.') || name == GOALS || name == LEDGER {
                continue;
            }
            match e.kind {
                EntryKind::Dir => match dir.open_dir_nofollow(name) {
                    Ok(sub) if holds_state(&sub) => {
                        targets.entry(e.path.clone()).or_insert(Target {
                            display: e.path.clone(),
                            layout: i,
                            dir: sub,
                        });
                    }
                    Ok(_) => {}
                    Err(err) => refusals.push(refused(&e.path, &FileProblem::Io(err))),
                },
                EntryKind::Symlink if walk::points_to_dir(&dir, name) => refusals.push(refused(
                    &e.path,
                    &FileProblem::Symlink {
                        component: e.path.clone(),
                    },
                )),
                _ => {}
            }
        }
        if holds_state(&dir) {
            targets.entry(base.to_owned()).or_insert(Target {
                display: base.to_owned(),
                layout: i,
                dir,
            });
        }
    }
    (targets.into_values().collect(), refusals)
}

/// The profile a `--plan-dir` belongs to: the one whose state directory is
/// the directory itself or its nearest ancestor.
pub fn layout_for(layouts: &[ProfileLayout], dir: &RelPath) -> Option<usize> {
    layouts
        .iter()
        .enumerate()
        .filter(|(_, l)| dir == &l.state_dir || dir.is_strictly_below(&l.state_dir))
        .max_by_key(|(_, l)| l.state_dir.as_str().len())
        .map(|(i, _)| i)
}

/// The named state directories (`--plan-dir`), each opened or refused. One
/// that holds neither a plan nor a ledger is refused with `NOTHING_TO_VERIFY`.
pub(crate) fn named(
    root: &Dir,
    layouts: &[ProfileLayout],
    dirs: &[RelPath],
) -> (Vec<Target>, Vec<Refused>) {
    let mut targets = Vec::new();
    let mut refusals = Vec::new();
    for rel in dirs {
        let display = rel.as_str();
        let Some(layout) = layout_for(layouts, rel) else {
            refusals.push(Refused {
                display: display.to_owned(),
                finding: Finding::new(
                    Code::NothingToVerify,
                    Some(display),
                    "the directory lies under no profile's state directory",
                ),
            });
            continue;
        };
        match open::open_dir(root, rel) {
            Ok(dir) if holds_state(&dir) => targets.push(Target {
                display: display.to_owned(),
                layout,
                dir,
            }),
            Ok(_) | Err(FileProblem::Missing) => refusals.push(Refused {
                display: display.to_owned(),
                finding: Finding::new(
                    Code::NothingToVerify,
                    Some(display),
                    format!("no {GOALS} or {LEDGER} in this directory"),
                ),
            }),
            Err(p) => refusals.push(refused(display, &p)),
        }
    }
    (targets, refusals)
}
