//! The hooks' per-user state and the gate-ledger witness (docs/threat-model.md#tm-3).
//!
//! Attempt counters, reuse claims, the gate lock and the authoritative copy
//! of the gate ledger live in `<user state>/hooks/`, out of the workspace the
//! gated agent controls. The in-tree `.omo/evidence-gate/ledger.jsonl` is the
//! witness's mirror, kept for CI: every `subagent-stop` call compares the two
//! under the gate lock before deciding ([`HookState::reconcile`]). Records the
//! mirror lost are restored and `GATE_LEDGER_REWOUND` is recorded; records
//! the witness never wrote are dropped from the mirror (so no later decision
//! sees them) and `GATE_LEDGER_FORGED` is recorded with their digests. Both
//! records are appended to the witness and the mirror, so the next commit
//! carries them to CI.
//!
//! Migration: the first call on a workspace whose per-user state has no
//! `migrated.json` reads the counters and claims an earlier version kept in
//! `.omo/evidence-gate/{attempts,receipts}/` once, taking the larger counter
//! and the union of claims; afterwards the in-tree copies are never read
//! again (so nothing the agent plants there counts) and `doctor --fix`
//! removes them. When no witness exists yet, the in-tree gate ledger is its
//! only history and is adopted as the witness's start.

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, OpenOptions};
use serde_json::{Map, Value, json};

use super::gate_ledger::{self, GateLedgerKind};
use super::receipt::{attempts, reuse};
use crate::ambient::Ambient;
use crate::digest::sha256_hex;
use crate::sandbox::{PathLimits, RelPath};
use crate::store::DIAGNOSTICS_DIR as STATE_DIR;
use crate::store::{self, Durability};
use crate::userstate::{UserState, UserStateError};
use crate::workspace::Workspace;

pub(crate) use crate::userstate::HOOKS_DIR;
/// The gate lock inside [`HOOKS_DIR`].
pub(crate) const LOCK: &str = "gate.lock";
/// Written once the in-tree state of earlier versions was migrated.
pub(crate) const MIGRATED: &str = "migrated.json";
/// Largest ledger the reconciliation reads whole (mirror or witness).
const MAX_LEDGER: u64 = 64 * 1024 * 1024;
/// Bytes of the tail compared when the sizes agree.
const TAIL: u64 = 64 * 1024;
/// Legacy entries migrated at most (per directory).
const MAX_LEGACY: usize = 10_000;
/// Forged-record digests listed at most in one record.
const MAX_LISTED: usize = 50;

/// A fault in the hooks' trust state: the decision blocks on it (docs/threat-model.md#i2).
#[derive(Debug, Clone)]
pub(crate) struct StateFault {
    /// The file or directory at fault (ambient path or workspace-relative).
    pub path: String,
    /// What failed.
    pub what: String,
    /// The underlying error.
    pub error: String,
    /// The one-line fix.
    pub fix: &'static str,
}

impl StateFault {
    /// A fault whose fix is `evidence-gate doctor --fix`.
    pub(crate) fn io(path: impl Into<String>, what: &str, e: &dyn std::fmt::Display) -> StateFault {
        StateFault {
            path: path.into(),
            what: what.to_owned(),
            error: e.to_string(),
            fix: "run `evidence-gate doctor --fix`",
        }
    }

    fn user(e: &UserStateError) -> StateFault {
        StateFault {
            path: e
                .path()
                .map(|p| p.display().to_string())
                .unwrap_or_else(|| "$XDG_STATE_HOME".into()),
            what: "the per-user state directory is unusable".into(),
            error: e.to_string(),
            fix: e.fix(),
        }
    }
}

/// What a reconciliation found and repaired.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Reconciled {
    /// Witness records the mirror had lost (restored).
    pub rewound: u64,
    /// Mirror records the witness never wrote (dropped from the mirror).
    pub forged: u64,
}

/// The hooks' per-user state of one workspace, open.
#[derive(Debug)]
pub(crate) struct HookState {
    user: UserState,
    dir: Dir,
}

impl HookState {
    /// Opens (creating on first use) `<user state>/hooks/` of the workspace
    /// whose root is `root_path` (`canonical` when already known).
    pub(crate) fn open(
        amb: &dyn Ambient,
        root_path: &Path,
        canonical: Option<&Path>,
    ) -> Result<HookState, StateFault> {
        let canonical: PathBuf = match canonical {
            Some(p) => p.to_owned(),
            None => amb.canonicalize(root_path).map_err(|e| {
                StateFault::io(
                    root_path.display().to_string(),
                    "the workspace path could not be resolved",
                    &e,
                )
            })?,
        };
        HookState::in_user_state(UserState::open(amb, &canonical))
    }

    /// [`HookState::open`] for the workspace `ws`, in the per-user state
    /// [`Workspace::user_state`] opens.
    pub(crate) fn of(amb: &dyn Ambient, ws: &Workspace) -> Result<HookState, StateFault> {
        HookState::in_user_state(ws.user_state(amb))
    }

    fn in_user_state(user: Result<UserState, UserStateError>) -> Result<HookState, StateFault> {
        let user = user.map_err(|e| StateFault::user(&e))?;
        let dir = user.subdir(HOOKS_DIR).map_err(|e| {
            StateFault::io(
                user.path().join(HOOKS_DIR).display().to_string(),
                "the hooks' per-user state directory could not be opened",
                &e,
            )
        })?;
        Ok(HookState { user, dir })
    }

    /// The `hooks/` directory handle (counters, claims, lock, witness).
    pub(crate) fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The workspace's per-user state it lives in.
    pub(crate) fn user(&self) -> &UserState {
        &self.user
    }

    /// Creates (if needed) and opens `hooks/<rel>`, following no symlink.
    pub(crate) fn subdir(&self, rel: &str) -> io::Result<Dir> {
        self.user.subdir(&format!("{HOOKS_DIR}/{rel}"))
    }

    /// The ambient path of `hooks/<name>` (messages only).
    pub(crate) fn display(&self, name: &str) -> String {
        self.user
            .path()
            .join(HOOKS_DIR)
            .join(name)
            .display()
            .to_string()
    }

    /// Migrates the in-tree counters and claims of earlier versions once
    /// (see the module docs). A fault here blocks: the marker is written only
    /// after everything was copied.
    pub(crate) fn migrate(&self, root: &Dir, ttl: Duration) -> Result<(), StateFault> {
        match self.dir.symlink_metadata(MIGRATED) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(StateFault::io(self.display(MIGRATED), "unreadable", &e)),
        }
        if let Some(legacy) = open_legacy(root) {
            self.migrate_counters(&legacy, ttl)?;
            self.migrate_claims(&legacy)?;
        }
        let marker = json!({"v": 1, "at": crate::time::rfc3339_ms(std::time::SystemTime::now())});
        store::atomic_replace(
            &self.dir,
            MIGRATED,
            marker.to_string().as_bytes(),
            Durability::Synced,
        )
        .map_err(|e| {
            StateFault::io(
                self.display(MIGRATED),
                "the migration marker could not be written",
                &e,
            )
        })
    }

    fn migrate_counters(&self, legacy: &Dir, ttl: Duration) -> Result<(), StateFault> {
        for name in legacy_names(legacy, attempts::DIR) {
            let old = attempts::read(legacy, &name, ttl);
            if old == 0 || attempts::read(&self.dir, &name, ttl) >= old {
                continue;
            }
            let owner = attempts::Owner {
                session_id: None,
                agent_id: None,
                agent_type: None,
            };
            attempts::write(&self.dir, &name, &owner, old, &[]).map_err(|e| {
                StateFault::io(
                    self.display(attempts::DIR),
                    "a migrated attempt counter could not be written",
                    &e,
                )
            })?;
        }
        Ok(())
    }

    fn migrate_claims(&self, legacy: &Dir) -> Result<(), StateFault> {
        let names = legacy_names(legacy, reuse::DIR);
        if names.is_empty() {
            return Ok(());
        }
        let Ok(src) = legacy.open_dir(reuse::DIR) else {
            return Ok(());
        };
        let rel = RelPath::parse(reuse::DIR, PathLimits::default()).expect("constant");
        let dst = store::create_dirs(&self.dir, &rel).map_err(|e| {
            StateFault::io(
                self.display(reuse::DIR),
                "the claims directory could not be created",
                &e,
            )
        })?;
        for name in names {
            let Ok(bytes) = read_regular(&src, &name, 64 * 1024) else {
                continue;
            };
            if serde_json::from_slice::<Value>(&bytes).is_err() {
                continue;
            }
            store::create_exclusive(&dst, &name, &bytes).map_err(|e| {
                StateFault::io(
                    self.display(reuse::DIR),
                    "a migrated reuse claim could not be written",
                    &e,
                )
            })?;
        }
        Ok(())
    }

    /// Compares the in-tree mirror with the witness and repairs the mirror
    /// (the caller holds the gate lock). `base` is the entry the repair
    /// records start from (host, session, agent, rules digest).
    pub(crate) fn reconcile(
        &self,
        root: &Dir,
        base: &Map<String, Value>,
    ) -> Result<Reconciled, StateFault> {
        let mirror_display = format!("{STATE_DIR}/{}", gate_ledger::FILE);
        let witness_display = self.display(gate_ledger::FILE);
        let mirror_dir = open_mirror_dir(root).map_err(|e| {
            StateFault::io(
                STATE_DIR,
                "the gate-ledger mirror's directory is unusable",
                &e,
            )
        })?;
        if self.agrees(&mirror_dir)? {
            return Ok(Reconciled::default());
        }
        let mirror = read_mirror(&mirror_dir).map_err(|e| {
            StateFault::io(&mirror_display, "the gate-ledger mirror is unusable", &e)
        })?;
        let witness = match read_whole(&self.dir, gate_ledger::FILE) {
            Ok(Some(w)) => w,
            Ok(None) => {
                // First use: the mirror is the only history there is.
                let start = mirror.unwrap_or_default();
                if !start.is_empty() {
                    store::atomic_replace(&self.dir, gate_ledger::FILE, &start, Durability::Synced)
                        .map_err(|e| {
                            StateFault::io(&witness_display, "the witness could not be started", &e)
                        })?;
                }
                return Ok(Reconciled::default());
            }
            Err(e) => {
                return Err(StateFault::io(
                    &witness_display,
                    "the witness is unreadable",
                    &e,
                ));
            }
        };
        let mirror = mirror.unwrap_or_default();
        if mirror == witness {
            return Ok(Reconciled::default());
        }
        let common = common_prefix(&witness, &mirror);
        let missing = &witness[common..];
        let extra = &mirror[common..];
        let out = Reconciled {
            rewound: count_records(missing),
            forged: count_records(extra),
        };
        let mut entries = Vec::new();
        if out.rewound > 0 || (extra.is_empty() && !missing.is_empty()) {
            let mut e = base.clone();
            e.insert(
                "kind".into(),
                json!(GateLedgerKind::GateLedgerRewound.as_str()),
            );
            e.insert("code".into(), json!("GATE_LEDGER_REWOUND"));
            e.insert("restored_records".into(), json!(out.rewound));
            e.insert("mirror_bytes".into(), json!(mirror.len()));
            e.insert("witness_bytes".into(), json!(witness.len()));
            entries.push(e);
        }
        if !extra.is_empty() {
            let digests: Vec<String> = extra
                .split(|b| *b == b'\n')
                .filter(|l| crate::ledger::is_record(l))
                .take(MAX_LISTED)
                .map(crate::ledger::record_hash)
                .collect();
            let mut e = base.clone();
            e.insert(
                "kind".into(),
                json!(GateLedgerKind::GateLedgerForged.as_str()),
            );
            e.insert("code".into(), json!("GATE_LEDGER_FORGED"));
            e.insert("forged_records".into(), json!(out.forged));
            e.insert("forged_sha256".into(), json!(digests));
            e.insert("forged_bytes".into(), json!(extra.len()));
            entries.push(e);
        }
        for e in entries {
            gate_ledger::append(&self.dir, e).map_err(|e| {
                StateFault::io(&witness_display, "the witness could not be appended", &e)
            })?;
        }
        let restored = read_whole(&self.dir, gate_ledger::FILE)
            .map_err(|e| StateFault::io(&witness_display, "the witness is unreadable", &e))?
            .unwrap_or_default();
        store::atomic_replace(
            &mirror_dir,
            gate_ledger::FILE,
            &restored,
            Durability::Synced,
        )
        .map_err(|e| {
            StateFault::io(
                &mirror_display,
                "the gate-ledger mirror could not be restored",
                &e,
            )
        })?;
        Ok(out)
    }

    /// The fast check: both are regular files of the same size whose last
    /// [`TAIL`] bytes have the same digest.
    fn agrees(&self, mirror_dir: &Dir) -> Result<bool, StateFault> {
        let w = size_and_tail(&self.dir, gate_ledger::FILE).map_err(|e| {
            StateFault::io(
                self.display(gate_ledger::FILE),
                "the witness is unreadable",
                &e,
            )
        })?;
        let Ok(m) = size_and_tail(mirror_dir, gate_ledger::FILE) else {
            return Ok(false);
        };
        Ok(
            matches!((w, m), (Some((ws, wt)), Some((ms, mt))) if ws == ms
            && crate::digest::sha256_hex(&wt) == crate::digest::sha256_hex(&mt)),
        )
    }

    /// Appends one entry to the witness and the same bytes to the mirror
    /// (the caller holds the gate lock and reconciled first). Returns its `seq`.
    pub(crate) fn append(&self, root: &Dir, entry: Map<String, Value>) -> Result<u64, StateFault> {
        let (seq, bytes) = gate_ledger::append_bytes(&self.dir, entry).map_err(|e| {
            StateFault::io(
                self.display(gate_ledger::FILE),
                "the witness could not be appended",
                &e,
            )
        })?;
        let mirror_display = format!("{STATE_DIR}/{}", gate_ledger::FILE);
        let fault = |e: io::Error| {
            StateFault::io(
                &mirror_display,
                "the gate-ledger mirror could not be appended",
                &e,
            )
        };
        let dir = open_mirror_dir(root).map_err(fault)?;
        let (mut file, created) = store::open_append(&dir, gate_ledger::FILE).map_err(fault)?;
        store::append_synced(&dir, &mut file, created, &bytes).map_err(fault)?;
        Ok(seq)
    }
}

/// Per-user directory of observed goal-ledger heads.
pub(crate) const HEADS_DIR: &str = "heads";

/// A goal ledger's head as a hook saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Head {
    /// The state directory, workspace-relative.
    pub state_dir: String,
    /// `seq` of the last chained record.
    pub seq: u64,
    /// SHA-256 of the last record's bytes.
    pub sha256: String,
}

/// The head of `<state dir>/ledger.jsonl` (tail read only); `None` when the
/// ledger is absent or holds no chained record.
pub(crate) fn ledger_head(state: &Dir, state_dir: &str) -> Option<Head> {
    let mut o = OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No).nonblock(true);
    let mut f = state.open_with("ledger.jsonl", &o).ok()?;
    if !f.metadata().ok()?.is_file() {
        return None;
    }
    let tail = crate::ledger::read_tail(&mut f, 256 * 1024).ok()?;
    Some(Head {
        state_dir: state_dir.to_owned(),
        seq: tail.last_seq?,
        sha256: tail.last_record_hash?,
    })
}

fn head_file(state_dir: &str) -> String {
    format!(
        "{}.json",
        &crate::digest::sha256_hex(state_dir.as_bytes())[..16]
    )
}

impl HookState {
    /// Records `head` as observed (docs/threat-model.md#tm-3 "ledger heads
    /// observed"): kept when its `seq` is not below the one recorded. A head
    /// recorded already, byte for byte, is not written again (no synced
    /// replace on every stop of an idle ledger).
    pub(crate) fn observe_head(&self, head: &Head) -> io::Result<()> {
        let dir = self.subdir(HEADS_DIR)?;
        let name = head_file(&head.state_dir);
        let new =
            json!({"v": 1, "stateDir": head.state_dir, "seq": head.seq, "sha256": head.sha256})
                .to_string();
        if let Ok(bytes) = read_regular(&dir, &name, 64 * 1024) {
            if bytes == new.as_bytes() {
                return Ok(());
            }
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes)
                && v.get("seq").and_then(Value::as_u64) > Some(head.seq)
            {
                return Ok(());
            }
        }
        store::atomic_replace(&dir, &name, new.as_bytes(), Durability::Synced)
    }

    /// `seq` of the head last observed for the goal ledger of `state_dir`.
    pub(crate) fn observed_seq(&self, state_dir: &str) -> Option<u64> {
        let dir = self.subdir(HEADS_DIR).ok()?;
        let bytes = read_regular(&dir, &head_file(state_dir), 64 * 1024).ok()?;
        let v: Value = serde_json::from_slice(&bytes).ok()?;
        if v.get("stateDir")?.as_str()? != state_dir {
            return None;
        }
        v.get("seq")?.as_u64()
    }
}

/// The heads observed for the workspace whose per-user state directory is
/// `state` ([`crate::workspace::Workspace::user_state_path`]), read without
/// creating anything; empty on a machine with no per-user state (CI).
pub(crate) fn observed_heads(amb: &dyn Ambient, state: &Path) -> Vec<Head> {
    let path = state.join(HOOKS_DIR).join(HEADS_DIR);
    let Ok(dir) = amb.open_dir(&path) else {
        return Vec::new();
    };
    let Ok(entries) = dir.entries() else {
        return Vec::new();
    };
    let mut out: Vec<Head> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .take(MAX_LEGACY)
        .filter_map(|n| read_regular(&dir, &n, 64 * 1024).ok())
        .filter_map(|b| serde_json::from_slice::<Value>(&b).ok())
        .filter_map(|v| {
            Some(Head {
                state_dir: v.get("stateDir")?.as_str()?.to_owned(),
                seq: v.get("seq")?.as_u64()?,
                sha256: v.get("sha256")?.as_str()?.to_owned(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.state_dir.cmp(&b.state_dir));
    out
}

/// `.omo/evidence-gate/` of an earlier version, when it is a directory.
fn open_legacy(root: &Dir) -> Option<Dir> {
    let rel = RelPath::parse(STATE_DIR, PathLimits::default()).expect("constant");
    crate::sandbox::open::open_dir(root, &rel).ok()
}

/// Regular-file names in `legacy/<sub>/` (bounded).
fn legacy_names(legacy: &Dir, sub: &str) -> Vec<String> {
    let Ok(dir) = legacy.open_dir(sub) else {
        return Vec::new();
    };
    let Ok(entries) = dir.entries() else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .take(MAX_LEGACY)
        .collect()
}

/// Creates (if needed) and opens `.omo/evidence-gate/` without following a
/// symlink; a regular file or FIFO planted there is an error.
fn open_mirror_dir(root: &Dir) -> io::Result<Dir> {
    let rel = RelPath::parse(STATE_DIR, PathLimits::default()).expect("constant");
    store::create_dirs(root, &rel)
}

/// The mirror's bytes; `None` when absent. A symlink, FIFO or other
/// non-regular entry planted in its place is removed (the witness restores
/// the content); a directory is an error for `doctor --fix`.
fn read_mirror(dir: &Dir) -> io::Result<Option<Vec<u8>>> {
    match dir.symlink_metadata(gate_ledger::FILE) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
        Ok(m) if m.is_file() => {}
        Ok(m) if m.is_dir() => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a directory stands where the gate ledger should be",
            ));
        }
        Ok(_) => {
            dir.remove_file(gate_ledger::FILE)?;
            return Ok(None);
        }
    }
    read_whole(dir, gate_ledger::FILE)
}

/// A regular file's whole content (up to [`MAX_LEDGER`]); `None` when absent.
fn read_whole(dir: &Dir, name: &str) -> io::Result<Option<Vec<u8>>> {
    match read_regular(dir, name, MAX_LEDGER) {
        Ok(b) => Ok(Some(b)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn read_regular(dir: &Dir, name: &str, max: u64) -> io::Result<Vec<u8>> {
    let mut o = OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No).nonblock(true);
    let mut f = dir.open_with(name, &o)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    let mut buf = Vec::with_capacity(meta.len() as usize);
    f.seek(SeekFrom::Start(0))?;
    Read::by_ref(&mut f).take(max).read_to_end(&mut buf)?;
    Ok(buf)
}

/// The longest common prefix of `a` and `b` that ends at a line boundary.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    let n = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if n == a.len() && n == b.len() {
        return n;
    }
    a[..n]
        .iter()
        .rposition(|c| *c == b'\n')
        .map_or(0, |i| i + 1)
}

fn count_records(bytes: &[u8]) -> u64 {
    bytes
        .split(|b| *b == b'\n')
        .filter(|l| crate::ledger::is_record(l))
        .count() as u64
}

/// A regular file's size and last [`TAIL`] bytes; `None` when absent.
fn size_and_tail(dir: &Dir, name: &str) -> io::Result<Option<(u64, Vec<u8>)>> {
    let mut o = OpenOptions::new();
    o.read(true).follow(FollowSymlinks::No).nonblock(true);
    let mut f = match dir.open_with(name, &o) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    let size = meta.len();
    f.seek(SeekFrom::Start(size.saturating_sub(TAIL)))?;
    let mut buf = Vec::new();
    Read::by_ref(&mut f).take(TAIL).read_to_end(&mut buf)?;
    Ok(Some((size, buf)))
}

/// The side-file key of a goal: its id when that is a plain name, else `h`
/// and 12 hex digits of its SHA-256, so a crafted id never names a path.
pub(crate) fn goal_key(id: &str) -> String {
    let plain = (1..=80).contains(&id.len())
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if plain {
        id.to_owned()
    } else {
        format!("h{}", &sha256_hex(id.as_bytes())[..12])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_prefix_ends_at_a_line() {
        assert_eq!(common_prefix(b"a\nb\n", b"a\nb\n"), 4);
        assert_eq!(common_prefix(b"a\nb\n", b"a\n"), 2);
        assert_eq!(common_prefix(b"a\nbc\n", b"a\nbd\n"), 2);
        assert_eq!(common_prefix(b"a\nb\n", b"a\nb\nc\n"), 4);
        assert_eq!(common_prefix(b"ab\n", b""), 0);
        assert_eq!(count_records(b"a\n\n b\n  \n"), 2);
    }
}
