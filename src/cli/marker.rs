//! The surface-resolution marker file next to the running executable
//! (docs/gates.md), read by `gate check` and the goal engine's gate.

use crate::ambient::{self, Ambient};

/// The marker file next to the running executable (docs/gates.md#qg-2); any problem
/// reading it falls through to the default.
pub(crate) fn read_marker(amb: &dyn Ambient, name: &str) -> Option<Vec<u8>> {
    let exe = amb.current_exe().ok()?;
    let path = exe.parent()?.join(name);
    ambient::read_file(amb, &path, 64 * 1024).ok()
}
