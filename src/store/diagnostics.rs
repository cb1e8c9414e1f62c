//! The one writer of diagnostics files (`docs/hook-contracts.md` docs/engine.md#ge-1): best effort, one
//! `write` per record on an append-mode handle (records never interleave),
//! rotation to `.1` above the size cap, never following a symlink. Hooks and
//! the goal engine both write through it.

use std::io::Write;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};

/// Repo-relative directory of the diagnostics file.
pub(crate) const DIAGNOSTICS_DIR: &str = ".omo/evidence-gate";
/// The diagnostics file.
pub(crate) const DIAGNOSTICS_FILE: &str = "diagnostics.jsonl";
/// The rotated previous file.
pub(crate) const DIAGNOSTICS_ROTATED: &str = "diagnostics.jsonl.1";

/// Appends one record (`line` without its newline) to the diagnostics file in
/// `dir`, first rotating a file larger than `max_bytes`. Failures are ignored:
/// diagnostics never change a decision.
pub(crate) fn append_diagnostic(dir: &Dir, line: &[u8], max_bytes: u64) {
    if dir
        .symlink_metadata(DIAGNOSTICS_FILE)
        .is_ok_and(|m| m.is_file() && m.len() > max_bytes)
    {
        let _ = dir.rename(DIAGNOSTICS_FILE, dir, DIAGNOSTICS_ROTATED);
    }
    let mut opts = OpenOptions::new();
    opts.append(true)
        .create(true)
        .follow(FollowSymlinks::No)
        .nonblock(true);
    let Ok(mut f) = dir.open_with(DIAGNOSTICS_FILE, &opts) else {
        return;
    };
    if f.metadata().is_ok_and(|m| m.is_file()) {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        let _ = f.write_all(&bytes);
    }
}
