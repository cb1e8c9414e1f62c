//! Durable writes inside a directory handle: atomic replace with fsync,
//! single-write appends with data sync, and the cross-process mutation lock
//! (docs/state-formats.md#ge-2). Shared by the goal engine and the hooks.

mod diagnostics;
mod lock;

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, File, OpenOptions};

pub(crate) use diagnostics::{
    DIAGNOSTICS_DIR, DIAGNOSTICS_FILE, DIAGNOSTICS_ROTATED, append_diagnostic,
};
pub(crate) use lock::{LockError, LockOptions, MutationLock};

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Whether a replace is made durable before returning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// `sync_all` the temp file and fsync the directory after the rename.
    Synced,
    /// No fsync (caches such as the ledger index: losing them costs a rebuild).
    Cache,
}

/// Name of the temp file used to replace `name`: `.<name>.<pid>.<epoch-ms>.<n>.tmp`.
pub(crate) fn temp_name(name: &str) -> String {
    format!(
        ".{name}.{}.{}.{}.tmp",
        std::process::id(),
        crate::time::epoch_ms(SystemTime::now()),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Replaces `name` in `dir` atomically: write a temp file created with
/// create-new in the same directory, sync it, rename it over `name`, fsync the
/// directory. On failure the temp file is removed and `name` is untouched.
pub(crate) fn atomic_replace(
    dir: &Dir,
    name: &str,
    bytes: &[u8],
    durability: Durability,
) -> io::Result<()> {
    atomic_replace_pieces(dir, name, &[bytes], durability)
}

/// [`atomic_replace`] with the content given as `pieces`, written in order
/// (a large file need not be copied into one buffer first).
pub(crate) fn atomic_replace_pieces(
    dir: &Dir,
    name: &str,
    pieces: &[&[u8]],
    durability: Durability,
) -> io::Result<()> {
    let tmp = temp_name(name);
    let result = (|| {
        write_new(dir, &tmp, pieces, durability)?;
        dir.rename(&tmp, dir, name)?;
        if durability == Durability::Synced {
            sync_dir(dir)?;
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = dir.remove_file(&tmp);
    }
    result
}

/// Creates `name` in `dir` with `bytes` only if it does not exist, never
/// leaving it torn: the content is written and synced under a temp name and
/// published with a hard link, which fails if `name` exists. Returns whether
/// this call created it.
pub(crate) fn create_exclusive(dir: &Dir, name: &str, bytes: &[u8]) -> io::Result<bool> {
    let tmp = temp_name(name);
    let result = (|| {
        write_new(dir, &tmp, &[bytes], Durability::Synced)?;
        match dir.hard_link(&tmp, dir, name) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            // A filesystem without hard links: create-new and write in place
            // (a crash may then leave it torn, which readers treat as absent).
            Err(_) => match write_new(dir, name, &[bytes], Durability::Synced) {
                Ok(()) => Ok(true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
                Err(e) => Err(e),
            },
        }
    })();
    let _ = dir.remove_file(&tmp);
    if result.as_ref().is_ok_and(|created| *created) {
        sync_dir(dir)?;
    }
    result
}

/// Copies the regular file `name` of `src` to `dst_name` in `dst` (no-follow,
/// non-blocking open; content written under a temp name, synced, renamed
/// into place). Returns `false` when `name` does not exist; a symlink or
/// non-regular entry is an error of kind `InvalidInput`.
pub(crate) fn copy_file(src: &Dir, name: &str, dst: &Dir, dst_name: &str) -> io::Result<bool> {
    let mut opts = OpenOptions::new();
    opts.read(true).follow(FollowSymlinks::No).nonblock(true);
    let mut from = match src.open_with(name, &opts) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    if !from.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a regular file"),
        ));
    }
    let tmp = temp_name(dst_name);
    let result = (|| {
        let mut w = OpenOptions::new();
        w.write(true).create_new(true).follow(FollowSymlinks::No);
        let mut to = dst.open_with(&tmp, &w)?;
        io::copy(&mut from, &mut to)?;
        to.sync_all()?;
        dst.rename(&tmp, dst, dst_name)
    })();
    if result.is_err() {
        let _ = dst.remove_file(&tmp);
    }
    result.map(|()| true)
}

/// Creates `name` (which must not exist; never through a symlink) holding
/// `bytes`, synced when `durability` asks for it.
fn write_new(dir: &Dir, name: &str, pieces: &[&[u8]], durability: Durability) -> io::Result<()> {
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true).follow(FollowSymlinks::No);
    let mut f = dir.open_with(name, &opts)?;
    for piece in pieces {
        f.write_all(piece)?;
    }
    if durability == Durability::Synced {
        f.sync_all()?;
    }
    Ok(())
}

/// fsyncs a directory (so a rename or create inside it is durable).
pub(crate) fn sync_dir(dir: &Dir) -> io::Result<()> {
    // Directory handles may be `O_PATH`, which cannot be synced: open the
    // directory itself for reading through the same handle.
    #[cfg(unix)]
    {
        let mut opts = OpenOptions::new();
        opts.read(true);
        dir.open_with(".", &opts)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Opens `name` for appending without following a symlink; it must be a
/// regular file. Returns the handle and whether it was just created.
pub(crate) fn open_append(dir: &Dir, name: &str) -> io::Result<(File, bool)> {
    let mut opts = OpenOptions::new();
    opts.append(true).read(true).follow(FollowSymlinks::No);
    let (file, created) = match dir.open_with(name, &opts) {
        Ok(f) => (f, false),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut c = OpenOptions::new();
            c.append(true)
                .read(true)
                .create_new(true)
                .follow(FollowSymlinks::No);
            match dir.open_with(name, &c) {
                Ok(f) => (f, true),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    (dir.open_with(name, &opts)?, false)
                }
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok((file, created))
}

/// Appends `bytes` with one `write_all` and one data sync; fsyncs the
/// directory when the file was just created.
pub(crate) fn append_synced(
    dir: &Dir,
    file: &mut File,
    created: bool,
    bytes: &[u8],
) -> io::Result<()> {
    file.write_all(bytes)?;
    file.sync_data()?;
    if created {
        sync_dir(dir)?;
    }
    Ok(())
}

/// A data sync running on its own thread ([`append_sync_behind`]); the
/// bytes are durable once [`SyncPending::wait`] returns `Ok`.
#[derive(Debug)]
pub(crate) struct SyncPending(Option<std::thread::JoinHandle<io::Result<()>>>);

impl SyncPending {
    /// Waits for the sync; its error, or the thread's panic as an error.
    pub(crate) fn wait(self) -> io::Result<()> {
        match self.0 {
            Some(h) => h
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("the sync thread panicked"))),
            None => Ok(()),
        }
    }
}

/// [`append_synced`] whose sync runs on a thread while the caller goes on:
/// the write lands at once, the data sync (and the directory's, for a new
/// file) by [`SyncPending::wait`]. Where no thread can be started, the sync
/// runs here.
pub(crate) fn append_sync_behind(
    dir: &Dir,
    file: &mut File,
    created: bool,
    bytes: &[u8],
) -> io::Result<SyncPending> {
    file.write_all(bytes)?;
    let handles = file.try_clone().and_then(|f| {
        Ok((
            f,
            if created {
                Some(dir.try_clone()?)
            } else {
                None
            },
        ))
    });
    if let Ok((f, d)) = handles {
        let spawned = std::thread::Builder::new()
            .name("sync".into())
            .spawn(move || {
                f.sync_data()?;
                match d {
                    Some(d) => sync_dir(&d),
                    None => Ok(()),
                }
            });
        if let Ok(h) = spawned {
            return Ok(SyncPending(Some(h)));
        }
    }
    file.sync_data()?;
    if created {
        sync_dir(dir)?;
    }
    Ok(SyncPending(None))
}

/// Creates (if needed) and opens a chain of directories below `dir`, never
/// following a symlink; a symlinked component is an error of kind
/// `InvalidInput` naming it.
pub(crate) fn create_dirs(dir: &Dir, rel: &crate::sandbox::RelPath) -> io::Result<Dir> {
    use cap_fs_ext::DirExt;
    let mut cur = dir.try_clone()?;
    for c in rel.components() {
        match cur.create_dir(c) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        cur = match cur.open_dir_nofollow(c) {
            Ok(d) => d,
            Err(e) => {
                if cur
                    .symlink_metadata(c)
                    .is_ok_and(|m| m.file_type().is_symlink())
                {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("`{c}` is a symlink"),
                    ));
                }
                return Err(e);
            }
        };
    }
    Ok(cur)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    #[test]
    fn sync_works_on_nofollow_directory_handles() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let rel = crate::sandbox::RelPath::parse("a/b", Default::default()).unwrap();
        let sub = create_dirs(&dir, &rel).unwrap();
        sync_dir(&sub).unwrap();
        atomic_replace(&sub, "x", b"1", Durability::Synced).unwrap();
        let (mut f, created) = open_append(&sub, "l").unwrap();
        append_synced(&sub, &mut f, created, b"x\n").unwrap();
    }

    #[test]
    fn replace_and_append() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        atomic_replace(&dir, "a.json", b"one", Durability::Synced).unwrap();
        atomic_replace(&dir, "a.json", b"two", Durability::Cache).unwrap();
        assert_eq!(dir.read("a.json").unwrap(), b"two");
        let (mut f, created) = open_append(&dir, "l.jsonl").unwrap();
        assert!(created);
        append_synced(&dir, &mut f, created, b"x\n").unwrap();
        let (mut f, created) = open_append(&dir, "l.jsonl").unwrap();
        assert!(!created);
        append_synced(&dir, &mut f, created, b"y\n").unwrap();
        assert_eq!(dir.read("l.jsonl").unwrap(), b"x\ny\n");
        let names: Vec<_> = dir
            .entries()
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "no temp files left: {names:?}");
    }
}
