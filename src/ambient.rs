//! The one door to the ambient filesystem and environment.
//!
//! The library never opens a path on its own authority. The binaries hold
//! ambient authority and hand the library an [`Ambient`] implementation; the
//! library uses it to open the workspace root once (and, for hooks, the few
//! files that live outside it, such as host transcripts), then works only
//! through `cap_std::fs::Dir` handles. Tests substitute their own.

use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use cap_fs_ext::OpenOptionsSyncExt;
use cap_std::fs::{Dir, OpenOptions};

/// Capabilities the binaries grant the library.
pub trait Ambient: Sync {
    /// Opens a directory by ambient path (relative paths against the process
    /// working directory).
    fn open_dir(&self, path: &Path) -> io::Result<Dir>;
    /// Creates a directory and its parents by ambient path.
    fn create_dir_all(&self, path: &Path) -> io::Result<()>;
    /// The process working directory.
    fn current_dir(&self) -> io::Result<PathBuf>;
    /// An environment variable.
    fn var_os(&self, key: &str) -> Option<OsString>;
    /// The running executable.
    fn current_exe(&self) -> io::Result<PathBuf>;
    /// Ends the process at once with `code` (hook watchdog only).
    fn terminate(&self, code: i32) -> !;
    /// Runs the `git` command with `args` in the directory `dir` (no standard
    /// input) and returns what it printed: `verify-evidence --base` reads the
    /// base commit's tree from the repository's objects this way. The
    /// default grants no process spawning.
    fn git(&self, dir: &Path, args: &[&str]) -> io::Result<GitOutput> {
        let _ = (dir, args);
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "running git is not available here",
        ))
    }
    /// The canonical form of an ambient path (symlinks resolved); it names
    /// the per-user state of a workspace (docs/threat-model.md#tm-3).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
}

/// What one `git` run printed.
#[derive(Debug, Clone, Default)]
pub struct GitOutput {
    /// It exited with status 0.
    pub success: bool,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

/// The path of `dir` from the root of the git worktree holding it, with `/`
/// separators (`apps/web`): the nearest directory at or above `dir` (after
/// resolving symlinks) whose `.git` is a directory, or a file whose one line
/// is `gitdir: <path>`. Empty when `dir` is that root, is in no worktree, or
/// is not valid UTF-8.
pub fn worktree_prefix(amb: &dyn Ambient, dir: &Path) -> String {
    let dir = amb.canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let Some(root) = dir.ancestors().find(|d| is_worktree_root(amb, d)) else {
        return String::new();
    };
    let Ok(rel) = dir.strip_prefix(root) else {
        return String::new();
    };
    let mut parts = Vec::new();
    for c in rel.components() {
        match c.as_os_str().to_str() {
            Some(s) => parts.push(s),
            None => return String::new(),
        }
    }
    parts.join("/")
}

fn is_worktree_root(amb: &dyn Ambient, dir: &Path) -> bool {
    let Ok(d) = amb.open_dir(dir) else {
        return false;
    };
    let Ok(meta) = d.metadata(".git") else {
        return false;
    };
    if meta.is_dir() {
        return true;
    }
    if !meta.is_file() || meta.len() > 64 * 1024 {
        return false;
    }
    let Ok(text) = d.read_to_string(".git") else {
        return false;
    };
    let line = text.trim();
    let Some(head) = line.get(..7) else {
        return false;
    };
    let target = line[7..].trim_start();
    head.eq_ignore_ascii_case("gitdir:") && !target.is_empty() && !target.contains(['\n', '\r'])
}

/// Reads an environment variable as UTF-8 (non-UTF-8 values count as unset).
pub fn var(amb: &dyn Ambient, key: &str) -> Option<String> {
    amb.var_os(key).and_then(|v| v.into_string().ok())
}

/// Largest surface marker file read.
const MAX_MARKER: u64 = 64 * 1024;

/// The surface-resolution marker file `name` next to the running executable
/// (docs/gates.md#qg-2); any problem reading it counts as no marker.
pub fn read_marker(amb: &dyn Ambient, name: &str) -> Option<Vec<u8>> {
    let exe = amb.current_exe().ok()?;
    let path = exe.parent()?.join(name);
    read_file(amb, &path, MAX_MARKER).ok()
}

/// Why an ambient file could not be read.
#[derive(Debug)]
pub enum ReadError {
    /// No such file.
    NotFound,
    /// A directory, FIFO, socket or device.
    NotRegular,
    /// Larger than the cap (`size` is at least this large).
    TooLarge {
        /// Bytes seen.
        size: u64,
    },
    /// Any other failure.
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::NotFound => f.write_str("no such file"),
            ReadError::NotRegular => f.write_str("not a regular file"),
            ReadError::TooLarge { size } => write!(f, "too large ({size} bytes or more)"),
            ReadError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Splits an ambient path into its parent directory and file name.
pub fn split(path: &Path) -> Option<(PathBuf, OsString)> {
    let name = path.file_name()?.to_owned();
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Some((parent, name))
}

/// Reads a file named on the command line (`--rules FILE`, a payload path):
/// the user chose it, so a symlink at the leaf is followed, but the open is
/// non-blocking, the handle must be a regular file, and at most `max` bytes
/// are accepted.
pub fn read_file(amb: &dyn Ambient, path: &Path, max: u64) -> Result<Vec<u8>, ReadError> {
    let path = resolve_leaf_links(amb, path).map_err(map_io)?;
    let (parent, name) = split(&path).ok_or(ReadError::NotRegular)?;
    let dir = amb.open_dir(&parent).map_err(map_io)?;
    let mut opts = OpenOptions::new();
    opts.read(true).nonblock(true);
    let file = dir.open_with(&name, &opts).map_err(map_io)?;
    let meta = file.metadata().map_err(ReadError::Io)?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular);
    }
    read_capped(file, max)
}

/// Most leaf symlinks followed in a chain (the kernel's own limit is 40).
const MAX_LEAF_LINKS: usize = 16;

/// `path` with symlinks at its leaf followed (a dotfile manager's
/// `~/.claude/settings.json -> ~/dotfiles/claude.json`): a directory handle
/// does not follow a link that leaves it, so the target is read and resolved
/// against the link's own directory. A missing leaf (or directory) is
/// returned as it is;
/// more than [`MAX_LEAF_LINKS`] links in a chain is an error.
pub fn resolve_leaf_links(amb: &dyn Ambient, path: &Path) -> io::Result<PathBuf> {
    let mut current = path.to_path_buf();
    for _ in 0..MAX_LEAF_LINKS {
        let Some((parent, name)) = split(&current) else {
            return Ok(current);
        };
        let dir = match amb.open_dir(&parent) {
            Ok(d) => d,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        };
        match dir.symlink_metadata(&name) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = dir.read_link_contents(&name)?;
                current = if target.is_absolute() {
                    target
                } else {
                    parent.join(target)
                };
            }
            Ok(_) => return Ok(current),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(current),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other(format!(
        "{}: more than {MAX_LEAF_LINKS} symbolic links in a chain",
        path.display()
    )))
}

/// Reads at most `max` bytes; more is [`ReadError::TooLarge`].
pub fn read_capped(r: impl Read, max: u64) -> Result<Vec<u8>, ReadError> {
    let mut buf = Vec::new();
    r.take(max.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(ReadError::Io)?;
    if buf.len() as u64 > max {
        return Err(ReadError::TooLarge {
            size: buf.len() as u64,
        });
    }
    Ok(buf)
}

fn map_io(e: io::Error) -> ReadError {
    match e.kind() {
        io::ErrorKind::NotFound => ReadError::NotFound,
        io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => ReadError::NotRegular,
        _ => ReadError::Io(e),
    }
}

/// An [`Ambient`] for unit tests: the real file system, and only the
/// environment variables the test names.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) mod test_double {
    use std::collections::HashMap;
    use std::ffi::OsString;
    use std::io;
    use std::path::{Path, PathBuf};

    use cap_std::fs::Dir;

    use super::Ambient;

    /// The environment is `vars`; `terminate` panics.
    pub(crate) struct Fake {
        pub(crate) vars: HashMap<String, OsString>,
    }

    impl Ambient for Fake {
        fn open_dir(&self, path: &Path) -> io::Result<Dir> {
            Dir::open_ambient_dir(path, cap_std::ambient_authority())
        }
        fn create_dir_all(&self, path: &Path) -> io::Result<()> {
            std::fs::create_dir_all(path)
        }
        fn current_dir(&self) -> io::Result<PathBuf> {
            std::env::current_dir()
        }
        fn var_os(&self, key: &str) -> Option<OsString> {
            self.vars.get(key).cloned()
        }
        fn current_exe(&self) -> io::Result<PathBuf> {
            std::env::current_exe()
        }
        fn terminate(&self, code: i32) -> ! {
            panic!("terminate({code})")
        }
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            std::fs::canonicalize(path)
        }
    }
}
