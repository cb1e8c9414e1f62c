//! Confined, no-follow, non-blocking opens and the handle-based checks
//! (pipeline steps 3–6).

use std::io::{self, Read};
use std::time::Instant;

use cap_fs_ext::{DirExt, FollowSymlinks, MetadataExt, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, File, Metadata, OpenOptions};
use sha2::{Digest, Sha256};

use super::path::RelPath;
use crate::digest::hex;

/// What the confined open or the handle checks found wrong with one file.
#[derive(Debug)]
pub enum FileProblem {
    /// A symlink at the named component (the leaf or a directory on the way).
    Symlink {
        /// Repo-relative path of the symlinked component.
        component: String,
    },
    /// cap-std reported an escape from the root.
    EscapesRoot,
    /// Nothing at the path, or a non-directory in the middle of it.
    Missing,
    /// Not a regular file (directory, FIFO, socket, device).
    NotRegular {
        /// What it is instead.
        kind: &'static str,
    },
    /// Size 0.
    Empty,
    /// Link count above 1 while hard links are rejected.
    HardLinked {
        /// The link count.
        nlink: u64,
    },
    /// Larger than the size cap.
    TooLarge {
        /// Observed size in bytes.
        size: u64,
        /// The cap.
        max: u64,
    },
    /// Size, modification time or identity changed while the file was read.
    Changed,
    /// The verification deadline passed while hashing.
    Deadline,
    /// Any other I/O failure (for example `EACCES`): the verifier could not decide.
    Io(io::Error),
}

/// Rules the handle checks apply.
#[derive(Debug, Clone, Copy)]
pub struct FileChecks {
    /// Reject link counts above 1.
    pub reject_hard_links: bool,
    /// Maximum size in bytes.
    pub max_bytes: u64,
    /// Reject zero-length files.
    pub reject_empty: bool,
}

impl Default for FileChecks {
    fn default() -> Self {
        FileChecks {
            reject_hard_links: true,
            max_bytes: 256 * 1024 * 1024,
            reject_empty: true,
        }
    }
}

/// A verified regular file: its digest and size as read from one handle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HashedFile {
    /// Bytes hashed (equal to the size before and after).
    pub size: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// Identity and content markers of an open handle, compared before and after
/// reading to detect concurrent modification.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(m: &Metadata) -> Stamp {
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            modified: m.modified().ok().map(|t| t.into_std()),
        }
    }
}

/// Opens the directory chain of `path` component by component without
/// following symlinks and returns the parent directory handle of the leaf.
pub fn open_parent(root: &Dir, path: &RelPath) -> Result<(Dir, String), FileProblem> {
    let comps: Vec<&str> = path.components().collect();
    let (leaf, dirs) = comps.split_last().expect("RelPath is never empty");
    let mut cur = root.try_clone().map_err(FileProblem::Io)?;
    let mut walked = String::new();
    for c in dirs {
        if !walked.is_empty() {
            walked.push('/');
        }
        walked.push_str(c);
        cur = match cur.open_dir_nofollow(c) {
            Ok(d) => d,
            Err(e) => return Err(classify(&cur, c, &walked, e, true)),
        };
    }
    Ok((cur, (*leaf).to_owned()))
}

/// Opens a directory below `root` without following a symlink at any component.
pub fn open_dir(root: &Dir, path: &RelPath) -> Result<Dir, FileProblem> {
    let (parent, leaf) = open_parent(root, path)?;
    parent
        .open_dir_nofollow(&leaf)
        .map_err(|e| classify(&parent, &leaf, path.as_str(), e, true))
}

/// Opens the leaf read-only, no-follow and non-blocking (a FIFO never hangs)
/// and returns the handle with its own metadata. No handle checks yet.
pub fn open_leaf(root: &Dir, path: &RelPath) -> Result<(File, Metadata), FileProblem> {
    let (parent, leaf) = open_parent(root, path)?;
    open_in(&parent, &leaf, path.as_str())
}

/// [`open_leaf`] relative to an already-confined directory handle.
pub fn open_in(parent: &Dir, leaf: &str, display: &str) -> Result<(File, Metadata), FileProblem> {
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No).nonblock(true);
    let file = parent
        .open_with(leaf, &opts)
        .map_err(|e| classify(parent, leaf, display, e, false))?;
    let meta = file.metadata().map_err(FileProblem::Io)?;
    Ok((file, meta))
}

/// Applies the handle checks of step 4 to metadata from an open handle.
pub fn check_handle(meta: &Metadata, checks: &FileChecks) -> Result<(), FileProblem> {
    let ft = meta.file_type();
    if !ft.is_file() {
        return Err(FileProblem::NotRegular {
            kind: kind_name(&ft),
        });
    }
    if checks.reject_empty && meta.len() == 0 {
        return Err(FileProblem::Empty);
    }
    if checks.reject_hard_links && meta.nlink() > 1 {
        return Err(FileProblem::HardLinked {
            nlink: meta.nlink(),
        });
    }
    if meta.len() > checks.max_bytes {
        return Err(FileProblem::TooLarge {
            size: meta.len(),
            max: checks.max_bytes,
        });
    }
    Ok(())
}

/// Streams SHA-256 from the handle (step 5) and re-checks its metadata
/// (step 6). `keep` receives up to that many leading bytes for inspection.
pub fn hash_handle(
    file: &mut File,
    before: &Metadata,
    checks: &FileChecks,
    deadline: Option<Instant>,
    keep: usize,
    kept: &mut Vec<u8>,
) -> Result<HashedFile, FileProblem> {
    hash_handle_with(file, before, checks, deadline, keep, kept, &mut |_| {})
}

/// [`hash_handle`], also handing every chunk read to `sink` (a second
/// digest over the same single read, e.g. a normalized one).
pub fn hash_handle_with(
    file: &mut File,
    before: &Metadata,
    checks: &FileChecks,
    deadline: Option<Instant>,
    keep: usize,
    kept: &mut Vec<u8>,
    sink: &mut dyn FnMut(&[u8]),
) -> Result<HashedFile, FileProblem> {
    HASH_BUF.with_borrow_mut(|buf| {
        if buf.len() != HASH_BUF_BYTES {
            buf.resize(HASH_BUF_BYTES, 0);
        }
        hash_into(file, before, checks, deadline, keep, kept, sink, buf)
    })
}

/// Bytes read per `read` while hashing. 256 KiB measured best on the
/// reference machine among 64 KiB … 1 MiB (`benches/perf.rs` prints the
/// sweep): large enough that syscalls are a small share, small enough that
/// the bytes read are still in L2 when SHA-256 consumes them.
pub const HASH_BUF_BYTES: usize = 256 * 1024;

thread_local! {
    /// One read buffer per thread (each verifier worker), allocated and
    /// zeroed once instead of once per file.
    static HASH_BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

#[allow(clippy::too_many_arguments)]
fn hash_into(
    file: &mut File,
    before: &Metadata,
    checks: &FileChecks,
    deadline: Option<Instant>,
    keep: usize,
    kept: &mut Vec<u8>,
    sink: &mut dyn FnMut(&[u8]),
    buf: &mut [u8],
) -> Result<HashedFile, FileProblem> {
    let start = Stamp::of(before);
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    loop {
        let n = match file.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(FileProblem::Io(e)),
        };
        total += n as u64;
        if total > checks.max_bytes {
            return Err(FileProblem::TooLarge {
                size: total,
                max: checks.max_bytes,
            });
        }
        if kept.len() < keep {
            let take = (keep - kept.len()).min(n);
            kept.extend_from_slice(&buf[..take]);
        }
        hasher.update(&buf[..n]);
        sink(&buf[..n]);
        if deadline.is_some_and(|d| Instant::now() > d) {
            return Err(FileProblem::Deadline);
        }
    }
    let after = file.metadata().map_err(FileProblem::Io)?;
    if Stamp::of(&after) != start || total != start.len {
        return Err(FileProblem::Changed);
    }
    Ok(HashedFile {
        size: total,
        sha256: hex(&hasher.finalize()),
    })
}

/// The whole per-file pipeline after lexical and policy checks: confined open,
/// handle checks, streaming hash, re-check.
pub fn verify_file(
    root: &Dir,
    path: &RelPath,
    checks: &FileChecks,
    deadline: Option<Instant>,
) -> Result<HashedFile, FileProblem> {
    let (mut file, meta) = open_leaf(root, path)?;
    check_handle(&meta, checks)?;
    hash_handle(&mut file, &meta, checks, deadline, 0, &mut Vec::new())
}

/// The parent directory of the last file a worker opened, kept open for
/// its siblings: files are handed out in sorted runs, so most files of a
/// tree are opened with one `openat` below a handle already held instead
/// of re-walking every component.
#[derive(Default)]
pub struct ParentCache {
    held: Option<(String, Dir)>,
}

impl ParentCache {
    /// The parent of `path` (opened without following symlinks, exactly as
    /// [`open_parent`] does) and the leaf name.
    fn parent<'c>(
        &'c mut self,
        root: &Dir,
        path: &RelPath,
    ) -> Result<(&'c Dir, String), FileProblem> {
        let (parent, leaf) = match path.as_str().rsplit_once('/') {
            Some((p, l)) => (p, l),
            None => ("", path.as_str()),
        };
        let hit = matches!(&self.held, Some((p, _)) if p == parent);
        if !hit {
            self.held = None;
            let (dir, _) = open_parent(root, path)?;
            self.held = Some((parent.to_owned(), dir));
        }
        let (_, dir) = self.held.as_ref().expect("held");
        Ok((dir, leaf.to_owned()))
    }
}

/// [`verify_file`] reusing `cache`'s parent handle for siblings.
pub fn verify_file_cached(
    root: &Dir,
    path: &RelPath,
    checks: &FileChecks,
    deadline: Option<Instant>,
    cache: &mut ParentCache,
) -> Result<HashedFile, FileProblem> {
    let (parent, leaf) = cache.parent(root, path)?;
    let (mut file, meta) = open_in(parent, &leaf, path.as_str())?;
    check_handle(&meta, checks)?;
    hash_handle(&mut file, &meta, checks, deadline, 0, &mut Vec::new())
}

fn kind_name(ft: &cap_std::fs::FileType) -> &'static str {
    use cap_fs_ext::FileTypeExt;
    if ft.is_dir() {
        "directory"
    } else if ft.is_symlink() {
        "symlink"
    } else if ft.is_fifo() {
        "FIFO"
    } else if ft.is_socket() {
        "socket"
    } else if ft.is_block_device() || ft.is_char_device() {
        "device"
    } else {
        "special file"
    }
}

/// Maps an open error to a finding, using an lstat of the component to tell a
/// symlink from other causes (error numbers differ between platforms).
fn classify(parent: &Dir, name: &str, display: &str, e: io::Error, is_dir: bool) -> FileProblem {
    if e.kind() == io::ErrorKind::NotFound {
        return FileProblem::Missing;
    }
    if is_escape(&e) {
        return FileProblem::EscapesRoot;
    }
    match parent.symlink_metadata(name) {
        Ok(m) if m.file_type().is_symlink() => FileProblem::Symlink {
            component: display.to_owned(),
        },
        // A non-directory in the middle of the path: nothing is there.
        Ok(m) if is_dir && !m.is_dir() => FileProblem::Missing,
        Ok(m) if !is_dir && !m.is_file() => FileProblem::NotRegular {
            kind: kind_name(&m.file_type()),
        },
        Err(le) if le.kind() == io::ErrorKind::NotFound => FileProblem::Missing,
        _ => FileProblem::Io(e),
    }
}

/// cap-std reports sandbox escapes as `PermissionDenied` with this message.
pub(crate) fn is_escape(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
        && e.to_string()
            .contains("a path led outside of the filesystem")
}
