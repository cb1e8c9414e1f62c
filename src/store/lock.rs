//! The cross-process mutation lock (goal-engine.md §2.7).
//!
//! An OS advisory lock (`File::try_lock`) on `<dir>/<name>`, with a bounded,
//! jittered wait, an identity check (the locked handle must still be the
//! directory entry), takeover of stale lock files left by Node tools (which
//! use exclusive-create without an OS lock), and deletion of the file on
//! release so those tools never wait on it.

use std::io::{self, Read, Seek, SeekFrom, Write};
use std::time::{Duration, Instant, SystemTime};

use cap_fs_ext::{FollowSymlinks, MetadataExt, OpenOptionsFollowExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Value, json};

/// How to take the lock.
#[derive(Debug, Clone)]
pub struct LockOptions {
    /// Give up after this long.
    pub timeout: Duration,
    /// A Node tool's lock file older than this is stale and taken over.
    pub foreign_stale: Duration,
    /// Recorded in the holder record.
    pub command: String,
}

/// Why the lock was not taken.
#[derive(Debug)]
pub enum LockError {
    /// Not acquired within the timeout.
    Timeout {
        /// How long we waited.
        waited_ms: u64,
        /// The holder record, if it could be read.
        holder: Option<Value>,
    },
    /// The lock file is a symlink or not a regular file.
    Unsafe {
        /// What it is.
        what: &'static str,
    },
    /// Any other I/O error.
    Io(io::Error),
}

/// A held lock. Released (file deleted, then unlocked) by [`MutationLock::release`]
/// or on drop.
#[derive(Debug)]
pub struct MutationLock {
    dir: Dir,
    name: String,
    file: Option<std::fs::File>,
    /// A Node tool's stale lock that was taken over: `{holder, ageMs}`.
    pub broken: Option<Value>,
}

impl MutationLock {
    /// Acquires the lock on `dir/name` (see the module docs for the protocol).
    pub fn acquire(dir: &Dir, name: &str, opts: &LockOptions) -> Result<MutationLock, LockError> {
        // Reliability-drill build only (`--features drill-unlocked`, never a
        // default): no exclusion at all, to prove the concurrency drill can fail.
        #[cfg(feature = "drill-unlocked")]
        {
            let _ = opts;
            return Ok(MutationLock {
                dir: dir.try_clone().map_err(LockError::Io)?,
                name: name.to_owned(),
                file: None,
                broken: None,
            });
        }
        #[cfg_attr(feature = "drill-unlocked", allow(unreachable_code))]
        let start = Instant::now();
        let mut backoff = Duration::from_millis(2);
        let mut seed =
            u64::from(std::process::id()) ^ (crate::time::epoch_ms(SystemTime::now()) << 8);
        let mut last_holder: Option<Value> = None;
        loop {
            match try_once(dir, name, opts)? {
                Attempt::Acquired(file, broken) => {
                    let mut lock = MutationLock {
                        dir: dir.try_clone().map_err(LockError::Io)?,
                        name: name.to_owned(),
                        file: Some(file),
                        broken,
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
        f.set_len(0)?;
        f.seek(SeekFrom::Start(0))?;
        f.write_all(rec.to_string().as_bytes())
    }

    /// Deletes the lock file while still holding the lock, then unlocks.
    pub fn release(mut self) -> io::Result<()> {
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
    Acquired(std::fs::File, Option<Value>),
    Busy(Option<Value>),
}

fn try_once(dir: &Dir, name: &str, opts: &LockOptions) -> Result<Attempt, LockError> {
    let mut o = OpenOptions::new();
    o.read(true)
        .write(true)
        .create(true)
        .follow(FollowSymlinks::No);
    let file = match dir.open_with(name, &o) {
        Ok(f) => f,
        Err(e) => {
            if let Ok(m) = dir.symlink_metadata(name) {
                if m.file_type().is_symlink() {
                    return Err(LockError::Unsafe { what: "a symlink" });
                }
                if !m.is_file() {
                    return Err(LockError::Unsafe {
                        what: "not a regular file",
                    });
                }
            }
            // A releasing holder may be deleting the file right now.
            if e.kind() == io::ErrorKind::NotFound || e.kind() == io::ErrorKind::PermissionDenied {
                return Ok(Attempt::Busy(None));
            }
            return Err(LockError::Io(e));
        }
    };
    let meta = file.metadata().map_err(LockError::Io)?;
    if !meta.is_file() {
        return Err(LockError::Unsafe {
            what: "not a regular file",
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
    // A Node tool's exclusive-create lock: respect it until it is stale.
    let mut broken = None;
    if let Some(holder) = read_holder(&mut std_file) {
        let ours = holder.get("tool").and_then(Value::as_str) == Some("evidence-gate");
        if !ours && holder.get("pid").is_some_and(Value::is_number) {
            let age = meta
                .modified()
                .ok()
                .and_then(|t| SystemTime::now().duration_since(t.into_std()).ok())
                .unwrap_or_default();
            if age < opts.foreign_stale {
                let _ = std_file.unlock();
                return Ok(Attempt::Busy(Some(holder)));
            }
            broken = Some(json!({"holder": holder, "ageMs": age.as_millis() as u64}));
        }
    }
    Ok(Attempt::Acquired(std_file, broken))
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
            foreign_stale: Duration::from_secs(30),
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

    #[test]
    fn fresh_node_lock_is_respected_and_stale_one_is_broken() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        dir.write(".mutation.lock", br#"{"pid":1234,"createdAt":"x"}"#)
            .unwrap();
        assert!(matches!(
            MutationLock::acquire(&dir, ".mutation.lock", &opts(30)),
            Err(LockError::Timeout { .. })
        ));
        let stale = LockOptions {
            foreign_stale: Duration::ZERO,
            ..opts(30)
        };
        let lock = MutationLock::acquire(&dir, ".mutation.lock", &stale).unwrap();
        assert_eq!(lock.broken.as_ref().unwrap()["holder"]["pid"], 1234);
    }

    #[cfg(unix)]
    #[test]
    fn symlinked_lock_is_unsafe() {
        let tmp = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/tmp/elsewhere", tmp.path().join(".mutation.lock")).unwrap();
        let dir = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        assert!(matches!(
            MutationLock::acquire(&dir, ".mutation.lock", &opts(30)),
            Err(LockError::Unsafe { .. })
        ));
    }
}
