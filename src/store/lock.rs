//! The cross-process mutation lock (docs/state-formats.md#ge-2, docs/threat-model.md#i3).
//!
//! Holding the lock means holding an OS advisory lock (`File::try_lock`) on an
//! open descriptor of `<dir>/<name>`; nothing else does. The lock file's
//! existence, content or modification time never means "held": a file left by
//! a crashed process or written by the agent is simply locked and reused. The
//! wait is bounded and jittered; the locked handle must still be the directory
//! entry (identity check); the file is deleted on release. A path that is not
//! a regular file (symlink, FIFO, directory, socket, device) is refused at
//! once: the open is non-blocking and never follows a symlink, so no file the
//! agent can create wedges a caller beyond the one bounded wait.
//!
//! Node tools take their lock by exclusive create without an OS lock; their
//! lock files are not honoured (docs/differences.md#goal-engine-ulw-loop-ultragoal):
//! a file is something the gated agent can forge.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant, SystemTime};

use cap_fs_ext::{FollowSymlinks, MetadataExt, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};

/// How to take the lock.
#[derive(Debug, Clone)]
pub(crate) struct LockOptions {
    /// Give up after this long.
    pub timeout: Duration,
    /// Recorded in the holder record.
    pub command: String,
}

/// Why the lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// Not acquired within the timeout.
    Timeout {
        /// How long we waited.
        waited_ms: u64,
        /// The holder record, if it could be read.
        holder: Option<Value>,
    },
    /// The lock path is a symlink or not a regular file.
    Unsafe {
        /// What it is: `"a symlink"`, `"a directory"`, `"a FIFO"` or
        /// `"not a regular file"`.
        what: &'static str,
    },
    /// Any other I/O error.
    Io(io::Error),
}

impl std::fmt::Display for LockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockError::Timeout { waited_ms, holder } => {
                let who = holder
                    .as_ref()
                    .and_then(|h| h.get("command").and_then(Value::as_str))
                    .map(|c| format!(" (held by `{c}`)"))
                    .unwrap_or_default();
                write!(
                    f,
                    "another process holds the lock{who}; waited {waited_ms} ms (retry when it finishes)"
                )
            }
            LockError::Unsafe { what } => {
                write!(f, "the lock file is {what}; remove it and retry")
            }
            LockError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// A held lock. Released (file deleted, then unlocked) by [`MutationLock::release`]
/// or on drop.
#[derive(Debug)]
pub(crate) struct MutationLock {
    dir: Dir,
    name: String,
    file: Option<std::fs::File>,
}

impl MutationLock {
    /// Acquires the lock on `dir/name` (see the module docs for the protocol).
    pub(crate) fn acquire(
        dir: &Dir,
        name: &str,
        opts: &LockOptions,
    ) -> Result<MutationLock, LockError> {
        // Reliability-drill build only (`--features drill-unlocked`, never a
        // default): no exclusion at all, to prove the concurrency drill can fail.
        #[cfg(feature = "drill-unlocked")]
        {
            let _ = opts;
            return Ok(MutationLock {
                dir: dir.try_clone().map_err(LockError::Io)?,
                name: name.to_owned(),
                file: None,
            });
        }
        #[cfg_attr(feature = "drill-unlocked", allow(unreachable_code))]
        let start = Instant::now();
        let mut backoff = Duration::from_millis(2);
        let mut seed =
            u64::from(std::process::id()) ^ (crate::time::epoch_ms(SystemTime::now()) << 8);
        let mut last_holder: Option<Value> = None;
        loop {
            match try_once(dir, name)? {
                Attempt::Acquired(file) => {
                    let mut lock = MutationLock {
                        dir: dir.try_clone().map_err(LockError::Io)?,
                        name: name.to_owned(),
                        file: Some(file),
                    };
                    lock.write_holder(&opts.command).map_err(LockError::Io)?;
                    return Ok(lock);
                }
                Attempt::Busy(holder) => {
                    if holder.is_some() {
                        last_holder = holder;
                    }
                }
            }
            let waited = start.elapsed();
            if waited >= opts.timeout {
                return Err(LockError::Timeout {
                    waited_ms: waited.as_millis() as u64,
                    holder: last_holder,
                });
            }
            // xorshift jitter in [backoff/2, backoff].
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let half = backoff.as_micros() as u64 / 2;
            let sleep = Duration::from_micros(half + seed % (half + 1));
            std::thread::sleep(sleep.min(opts.timeout.saturating_sub(waited)));
            backoff = (backoff * 2).min(Duration::from_millis(50));
        }
    }

    fn write_holder(&mut self, command: &str) -> io::Result<()> {
        let rec = json!({
            "pid": std::process::id(),
            "createdAt": crate::time::rfc3339_ms(SystemTime::now()),
            "tool": "evidence-gate",
            "command": command,
        });
        let f = self.file.as_mut().expect("held");
        let bytes = rec.to_string();
        // Written over whatever the file held, then cut to its length: a
        // truncation to zero would make ext4 flush the file's blocks when it
        // is closed (its replace-by-truncate heuristic), a synchronous write
        // on every lock of a file that is deleted at release anyway.
        f.seek(SeekFrom::Start(0))?;
        f.write_all(bytes.as_bytes())?;
        f.set_len(bytes.len() as u64)
    }

    /// Deletes the lock file while still holding the lock, then unlocks.
    pub(crate) fn release(mut self) -> io::Result<()> {
        self.release_inner()
    }

    fn release_inner(&mut self) -> io::Result<()> {
        if let Some(f) = self.file.take() {
            let removed = self.dir.remove_file(&self.name);
            let _ = f.unlock();
            drop(f);
            removed?;
        }
        Ok(())
    }
}

impl Drop for MutationLock {
    fn drop(&mut self) {
        let _ = self.release_inner();
    }
}

enum Attempt {
    Acquired(std::fs::File),
    Busy(Option<Value>),
}

/// What a non-regular entry at the lock path is.
fn describe(m: &cap_std::fs::Metadata) -> &'static str {
    let ft = m.file_type();
    if ft.is_symlink() {
        "a symlink"
    } else if ft.is_dir() {
        "a directory"
    } else if is_fifo(&ft) {
        "a FIFO"
    } else {
        "not a regular file"
    }
}

#[cfg(unix)]
fn is_fifo(ft: &cap_std::fs::FileType) -> bool {
    use cap_std::fs::FileTypeExt;
    ft.is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &cap_std::fs::FileType) -> bool {
    false
}

fn try_once(dir: &Dir, name: &str) -> Result<Attempt, LockError> {
    // Non-blocking and no-follow: a FIFO opens at once (and is refused
    // below), a symlink fails to open.
    let mut o = OpenOptions::new();
    o.read(true)
        .write(true)
        .create(true)
        .follow(FollowSymlinks::No)
        .nonblock(true);
    let file = match dir.open_with(name, &o) {
        Ok(f) => f,
        Err(e) => {
            if let Ok(m) = dir.symlink_metadata(name)
                && !m.is_file()
            {
                return Err(LockError::Unsafe { what: describe(&m) });
            }
            // A releasing holder may be deleting the file right now (on
            // Windows a file pending deletion refuses opens).
            if e.kind() == io::ErrorKind::NotFound
                || (cfg!(windows) && e.kind() == io::ErrorKind::PermissionDenied)
            {
                return Ok(Attempt::Busy(None));
            }
            return Err(LockError::Io(e));
        }
    };
    let meta = file.metadata().map_err(LockError::Io)?;
    if !meta.is_file() {
        return Err(LockError::Unsafe {
            what: describe(&meta),
        });
    }
    let mut std_file = file.into_std();
    match std_file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = read_holder(&mut std_file);
            return Ok(Attempt::Busy(holder));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
    }
    // Identity: the handle must still be what the name points to.
    match dir.symlink_metadata(name) {
        Ok(m) if m.dev() == meta.dev() && m.ino() == meta.ino() && m.is_file() => {}
        _ => {
            let _ = std_file.unlock();
            return Ok(Attempt::Busy(None));
        }
    }
    // Whatever the file holds (a Node tool's holder record, a forged one,
    // a future modification time) is not a lock: the OS lock is ours.
    Ok(Attempt::Acquired(std_file))
}

fn read_holder(f: &mut std::fs::File) -> Option<Value> {
    let mut buf = Vec::new();
    f.seek(SeekFrom::Start(0)).ok()?;
    f.take(64 * 1024).read_to_end(&mut buf).ok()?;
    serde_json::from_slice::<Value>(&buf)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;

    fn opts(ms: u64) -> LockOptions {
        LockOptions {
            timeout: Duration::from_millis(ms),
            command: "test".into(),
        }
    }

    #[test]
    fn second_acquirer_times_out_then_succeeds_after_release() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let held = MutationLock::acquire(&dir, ".mutation.lock", &opts(100)).unwrap();
        match MutationLock::acquire(&dir, ".mutation.lock", &opts(50)) {
            Err(LockError::Timeout { holder, .. }) => {
                assert_eq!(holder.unwrap()["tool"], "evidence-gate");
            }
            other => panic!("expected timeout, got {other:?}"),
        }
        held.release().unwrap();
        assert!(!dir.exists(".mutation.lock"));
        let again = MutationLock::acquire(&dir, ".mutation.lock", &opts(50)).unwrap();
        drop(again);
        assert!(!dir.exists(".mutation.lock"));
    }

    /// A waiter keeps trying within its wait and takes the lock once the
    /// holder releases (and deletes) the file: it then holds a live lock file
    /// of its own that excludes a third process.
    #[test]
    fn a_waiter_takes_the_lock_when_the_holder_releases() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let held = MutationLock::acquire(&dir, ".mutation.lock", &opts(100)).unwrap();
        let waiter = {
            let dir = dir.try_clone().unwrap();
            std::thread::spawn(move || MutationLock::acquire(&dir, ".mutation.lock", &opts(60_000)))
        };
        std::thread::sleep(Duration::from_millis(50));
        held.release().unwrap();
        let got = waiter.join().unwrap().unwrap();
        assert!(dir.exists(".mutation.lock"));
        assert!(matches!(
            MutationLock::acquire(&dir, ".mutation.lock", &opts(30)),
            Err(LockError::Timeout { .. })
        ));
        got.release().unwrap();
        assert!(!dir.exists(".mutation.lock"));
    }

    /// docs/threat-model.md#i3: a holder record and a modification time in the future are not a
    /// lock (today's main waited on such a file forever).
    #[test]
    fn a_forged_future_dated_holder_file_is_not_a_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        dir.write(".mutation.lock", br#"{"pid":1234,"createdAt":"x"}"#)
            .unwrap();
        let future = SystemTime::now() + Duration::from_secs(365 * 24 * 3600);
        std::fs::File::options()
            .write(true)
            .open(tmp.path().join(".mutation.lock"))
            .unwrap()
            .set_modified(future)
            .unwrap();
        let lock = MutationLock::acquire(&dir, ".mutation.lock", &opts(30)).unwrap();
        // The honest holder is still excluded by the OS lock.
        assert!(matches!(
            MutationLock::acquire(&dir, ".mutation.lock", &opts(30)),
            Err(LockError::Timeout { .. })
        ));
        lock.release().unwrap();
        assert!(!dir.exists(".mutation.lock"));
    }

    /// The holder record replaces a longer leftover whole (it is written over
    /// the old bytes and the file cut to its length): a waiter reads our
    /// record, not its prefix followed by the leftover's tail.
    #[test]
    fn the_holder_record_replaces_a_longer_leftover_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let leftover = format!(r#"{{"pid":1,"command":"{}"}}"#, "x".repeat(4096));
        dir.write(".mutation.lock", leftover.as_bytes()).unwrap();
        let lock = MutationLock::acquire(&dir, ".mutation.lock", &opts(30)).unwrap();
        let bytes = std::fs::read(tmp.path().join(".mutation.lock")).unwrap();
        let holder: Value = serde_json::from_slice(&bytes).expect("one whole JSON record");
        assert_eq!(holder["command"], "test");
        assert_eq!(holder["pid"], u64::from(std::process::id()));
        match MutationLock::acquire(&dir, ".mutation.lock", &opts(20)) {
            Err(LockError::Timeout { holder, .. }) => {
                assert_eq!(holder.unwrap()["tool"], "evidence-gate")
            }
            other => panic!("expected timeout, got {other:?}"),
        }
        lock.release().unwrap();
    }
    #[cfg(unix)]
    #[test]
    fn a_fifo_or_directory_at_the_lock_path_is_refused_without_blocking() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let fifo = tmp.path().join(".mutation.lock");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        // A blocking open of a FIFO would wait for a writer forever; the
        // timeout is long so that only an immediate refusal passes quickly.
        match MutationLock::acquire(&dir, ".mutation.lock", &opts(60_000)) {
            Err(LockError::Unsafe { what }) => assert_eq!(what, "a FIFO"),
            other => panic!("expected Unsafe, got {other:?}"),
        }
        std::fs::remove_file(&fifo).unwrap();
        std::fs::create_dir(&fifo).unwrap();
        match MutationLock::acquire(&dir, ".mutation.lock", &opts(60_000)) {
            Err(LockError::Unsafe { what }) => assert_eq!(what, "a directory"),
            other => panic!("expected Unsafe, got {other:?}"),
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_lock_is_unsafe() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp/elsewhere", tmp.path().join(".mutation.lock")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        assert!(matches!(
            MutationLock::acquire(&dir, ".mutation.lock", &opts(60_000)),
            Err(LockError::Unsafe { what: "a symlink" })
        ));
    }
}
