//! The per-user state and witness (docs/threat-model.md#tm-3).
//!
//! Trust-bearing hook state lives outside the workspace the gated agent
//! controls: `$XDG_STATE_HOME/evidence-gate/v1/<workspace-id>/` (default
//! `~/.local/state/…`; macOS `~/Library/Application Support/evidence-gate/…`;
//! Windows `%LOCALAPPDATA%\evidence-gate\…`). `<workspace-id>` is the first
//! 16 hex digits of SHA-256 of the canonical workspace root path, and
//! `workspace.json` in that directory names the path, so a collision (or a
//! copied state directory) is detected instead of silently shared.
//!
//! This module only resolves, creates and opens the directory; what is kept
//! in it (attempt counters, reuse claims, hook locks, the gate-ledger witness,
//! observed ledger heads, user prompts, diagnostics) belongs to the modules
//! that own those records. Every open goes through the [`Ambient`]
//! capability; below the directory handle nothing follows a symlink.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;
use serde_json::{Value, json};

use crate::ambient::{self, Ambient};
use crate::sandbox::{PathLimits, RelPath};

/// The layout version below the application directory.
const LAYOUT: &str = "v1";
/// The hooks' subdirectory of a workspace's per-user state directory.
pub(crate) const HOOKS_DIR: &str = "hooks";
/// The file naming the workspace a state directory belongs to.
pub(crate) const WORKSPACE_FILE: &str = "workspace.json";
/// Largest `workspace.json` read.
const MAX_WORKSPACE_FILE: u64 = 64 * 1024;

/// Why the per-user state directory could not be used.
#[derive(Debug)]
pub(crate) enum UserStateError {
    /// Neither the platform's state variable nor `HOME` is an absolute path.
    NoHome,
    /// The workspace's canonical root path is unknown (its path was not
    /// given or could not be resolved), so its state directory is too.
    RootUnknown,
    /// The state directory lies inside the workspace, where the agent can
    /// write it (`XDG_STATE_HOME` or `HOME` points into the repository).
    InsideWorkspace {
        /// The state directory.
        path: PathBuf,
    },
    /// `workspace.json` names another workspace (or is not ours).
    ForeignWorkspace {
        /// The state directory.
        path: PathBuf,
        /// What `workspace.json` names, if readable.
        names: Option<String>,
    },
    /// Creating or opening failed.
    Io {
        /// The path that failed.
        path: PathBuf,
        /// The error.
        error: io::Error,
    },
}

impl UserStateError {
    /// The one-line fix shown with the error.
    pub(crate) fn fix(&self) -> &'static str {
        match self {
            UserStateError::NoHome => "set HOME (or XDG_STATE_HOME) to an absolute path",
            UserStateError::RootUnknown => "run evidence-gate from an existing workspace directory",
            UserStateError::InsideWorkspace { .. } => {
                "point XDG_STATE_HOME (or HOME) at a directory outside the workspace"
            }
            UserStateError::ForeignWorkspace { .. } | UserStateError::Io { .. } => {
                "run `evidence-gate doctor --fix`"
            }
        }
    }

    /// The path concerned, when there is one.
    pub(crate) fn path(&self) -> Option<&Path> {
        match self {
            UserStateError::NoHome | UserStateError::RootUnknown => None,
            UserStateError::InsideWorkspace { path }
            | UserStateError::ForeignWorkspace { path, .. }
            | UserStateError::Io { path, .. } => Some(path),
        }
    }
}

impl fmt::Display for UserStateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UserStateError::NoHome => f.write_str(
                "the per-user state directory is unknown: neither XDG_STATE_HOME nor HOME is an absolute path",
            ),
            UserStateError::RootUnknown => f.write_str(
                "the per-user state directory is unknown: the workspace's path could not be resolved",
            ),
            UserStateError::InsideWorkspace { path } => write!(
                f,
                "the per-user state directory {} lies inside the workspace, where the agent can write it",
                path.display()
            ),
            UserStateError::ForeignWorkspace { path, names } => write!(
                f,
                "{} belongs to another workspace ({})",
                path.join(WORKSPACE_FILE).display(),
                names.as_deref().unwrap_or("unreadable")
            ),
            UserStateError::Io { path, error } => write!(f, "{}: {error}", path.display()),
        }
    }
}

impl std::error::Error for UserStateError {}

/// The application's per-user state directory (`…/evidence-gate`), without
/// the layout version; `None` when no absolute base is known.
pub(crate) fn base_path(amb: &dyn Ambient) -> Option<PathBuf> {
    let abs = |k: &str| {
        ambient::var(amb, k)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if cfg!(windows) {
        return abs("LOCALAPPDATA").map(|p| p.join("evidence-gate"));
    }
    if cfg!(target_os = "macos") {
        return abs("HOME").map(|h| h.join("Library/Application Support/evidence-gate"));
    }
    abs("XDG_STATE_HOME")
        .map(|p| p.join("evidence-gate"))
        .or_else(|| abs("HOME").map(|h| h.join(".local/state/evidence-gate")))
}

/// The state directory of the workspace whose canonical root is
/// `canonical_root` below the application directory `base`:
/// `<base>/v1/<workspace-id>`.
pub(crate) fn workspace_dir_in(base: &Path, canonical_root: &Path) -> PathBuf {
    base.join(LAYOUT).join(workspace_id(canonical_root))
}

/// [`workspace_dir_in`] the application's per-user state directory; `None`
/// when no absolute base is known. Resolved only: nothing is created.
pub(crate) fn workspace_path(amb: &dyn Ambient, canonical_root: &Path) -> Option<PathBuf> {
    Some(workspace_dir_in(&base_path(amb)?, canonical_root))
}

/// The workspace id: the first 16 hex digits of SHA-256 of the canonical
/// root path's bytes.
pub fn workspace_id(canonical_root: &Path) -> String {
    let bytes = canonical_root.as_os_str().as_encoded_bytes();
    crate::digest::sha256_hex(bytes)[..16].to_owned()
}

/// The per-user state directory of one workspace, open.
#[derive(Debug)]
pub(crate) struct UserState {
    dir: Dir,
    path: PathBuf,
    workspace_id: String,
}

impl UserState {
    /// Resolves, creates (mode of the process umask) and opens the state
    /// directory of the workspace whose canonical root is `canonical_root`,
    /// writing `workspace.json` on first use and checking it afterwards.
    pub(crate) fn open(
        amb: &dyn Ambient,
        canonical_root: &Path,
    ) -> Result<UserState, UserStateError> {
        let base = base_path(amb).ok_or(UserStateError::NoHome)?;
        let id = workspace_id(canonical_root);
        let path = workspace_dir_in(&base, canonical_root);
        if inside(&base, canonical_root) {
            return Err(UserStateError::InsideWorkspace { path });
        }
        let io = |error: io::Error| UserStateError::Io {
            path: path.clone(),
            error,
        };
        amb.create_dir_all(&path).map_err(io)?;
        let dir = amb.open_dir(&path).map_err(io)?;
        let state = UserState {
            dir,
            path,
            workspace_id: id,
        };
        state.claim(canonical_root)?;
        Ok(state)
    }

    fn claim(&self, canonical_root: &Path) -> Result<(), UserStateError> {
        let root = canonical_root.to_string_lossy().into_owned();
        let record = json!({
            "version": 1,
            "root": root,
            "id": self.workspace_id,
        });
        let mut bytes = serde_json::to_vec_pretty(&record).expect("a JSON object serializes");
        bytes.push(b'\n');
        let io = |error: io::Error| UserStateError::Io {
            path: self.path.join(WORKSPACE_FILE),
            error,
        };
        let names = || {
            read_small(&self.dir, WORKSPACE_FILE)
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v.get("root").and_then(Value::as_str).map(str::to_owned))
        };
        // The common case, every call after the first: the claim is already
        // there and names this root. Reading it first keeps a synced create
        // (and its fsyncs) off every command's path.
        if names().as_deref() == Some(root.as_str()) {
            return Ok(());
        }
        if crate::store::create_exclusive(&self.dir, WORKSPACE_FILE, &bytes).map_err(io)? {
            return Ok(());
        }
        let names = names();
        if names.as_deref() == Some(root.as_str()) {
            Ok(())
        } else {
            Err(UserStateError::ForeignWorkspace {
                path: self.path.clone(),
                names,
            })
        }
    }

    /// The directory handle.
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The directory's ambient path (for messages only).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Creates (if needed) and opens a subdirectory chain such as
    /// `hooks/attempts`, following no symlink.
    pub(crate) fn subdir(&self, rel: &str) -> io::Result<Dir> {
        let rel = RelPath::parse(rel, PathLimits::default())
            .map_err(|f| io::Error::new(io::ErrorKind::InvalidInput, format!("{rel}: {f:?}")))?;
        crate::store::create_dirs(&self.dir, &rel)
    }
}

/// True when `path` is `root` or lies below it (component-wise, on the
/// lexical paths: the state base is not canonicalized, a symlinked base into
/// the workspace is caught by `doctor`).
fn inside(path: &Path, root: &Path) -> bool {
    path.starts_with(root)
}

fn read_small(dir: &Dir, name: &str) -> io::Result<Vec<u8>> {
    use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
    use std::io::Read;
    let mut o = cap_std::fs::OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No).nonblock(true);
    let f = dir.open_with(name, &o)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a regular file",
        ));
    }
    // Sized from the metadata (one read and the one that sees the end,
    // instead of a few doubling ones); a file that grew is still read up
    // to the cap.
    let mut buf = Vec::with_capacity(meta.len().min(MAX_WORKSPACE_FILE) as usize + 1);
    f.take(MAX_WORKSPACE_FILE).read_to_end(&mut buf)?;
    Ok(buf)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    use crate::ambient::test_double::Fake;

    fn fake(state: &Path) -> Fake {
        let mut vars = HashMap::new();
        vars.insert("XDG_STATE_HOME".into(), state.as_os_str().to_owned());
        vars.insert("HOME".into(), state.as_os_str().to_owned());
        Fake { vars }
    }

    #[test]
    fn id_is_sixteen_hex_digits_of_the_root_digest() {
        let id = workspace_id(Path::new("/work/repo"));
        assert_eq!(id.len(), 16);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(id, workspace_id(Path::new("/work/repo2")));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn opens_claims_and_reopens() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let amb = fake(state.path());
        let s = UserState::open(&amb, ws.path()).unwrap();
        let expected = state
            .path()
            .join("evidence-gate/v1")
            .join(workspace_id(ws.path()));
        assert_eq!(s.path(), expected);
        let rec: Value =
            serde_json::from_slice(&std::fs::read(expected.join(WORKSPACE_FILE)).unwrap()).unwrap();
        assert_eq!(rec["root"], ws.path().to_str().unwrap());
        drop(s);
        let again = UserState::open(&amb, ws.path()).unwrap();
        again.subdir("hooks/attempts").unwrap();
        assert!(expected.join("hooks/attempts").is_dir());
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn reopening_a_claimed_state_writes_nothing() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let amb = fake(state.path());
        let s = UserState::open(&amb, ws.path()).unwrap();
        let dir_mtime = || std::fs::metadata(s.path()).unwrap().modified().unwrap();
        let before = dir_mtime();
        // Past the kernel's coarse timestamp tick, so a write would show.
        std::thread::sleep(std::time::Duration::from_millis(50));
        UserState::open(&amb, ws.path()).unwrap();
        assert_eq!(
            dir_mtime(),
            before,
            "a claim already in place is read, not written again (no temp file, no fsync)"
        );
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn a_state_home_inside_the_workspace_is_refused() {
        let ws = tempfile::tempdir().unwrap();
        let amb = fake(&ws.path().join(".state"));
        assert!(matches!(
            UserState::open(&amb, ws.path()),
            Err(UserStateError::InsideWorkspace { .. })
        ));
    }

    #[cfg(all(unix, not(target_os = "macos")))]
    #[test]
    fn a_workspace_file_naming_another_root_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let amb = fake(state.path());
        let s = UserState::open(&amb, ws.path()).unwrap();
        std::fs::write(
            s.path().join(WORKSPACE_FILE),
            br#"{"version":1,"root":"/elsewhere"}"#,
        )
        .unwrap();
        assert!(matches!(
            UserState::open(&amb, ws.path()),
            Err(UserStateError::ForeignWorkspace { .. })
        ));
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_subdirectory_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        let amb = fake(state.path());
        let s = UserState::open(&amb, ws.path()).unwrap();
        std::os::unix::fs::symlink(ws.path(), s.path().join("hooks")).unwrap();
        assert!(s.subdir("hooks/attempts").is_err());
    }
}
