//! The ledger index (docs/state-formats.md#ge-2): `.ledger.idx`, a cache of the
//! ledger head, and `.ledger.keys`, the idempotency key index. Both are
//! caches: a missing or stale index costs one rebuild, never correctness.

use std::io::Write;

use cap_std::fs::{Dir, File};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::GoalError;
use super::journal::{self, Head, KeyLine, Scan};
use super::state;
use crate::store::{self, Durability};

/// The `.ledger.idx` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schemars(title = "ledger index (.ledger.idx)")]
pub(crate) struct IndexDoc {
    /// Format version (1).
    pub version: u32,
    /// Ledger size covered by this index (up to and including the last `\n`).
    pub ledger_bytes: u64,
    /// Number of records.
    pub records: u64,
    /// `seq` of the last chained record (0: none).
    pub last_seq: u64,
    /// `revision` of the last chained record (0: none).
    pub last_revision: u64,
    /// Offset of the last record.
    pub last_record_offset: Option<u64>,
    /// SHA-256 of the last record.
    pub last_record_sha256: Option<String>,
    /// Size of `.ledger.keys` covered by this index.
    pub keys_bytes: u64,
}

impl IndexDoc {
    fn head(&self) -> Head {
        Head {
            len: self.ledger_bytes,
            records: self.records,
            last_seq: self.last_seq,
            last_revision: self.last_revision,
            last_offset: self.last_record_offset,
            last_hash: self.last_record_sha256.clone(),
        }
    }
}

/// JSON Schema of `.ledger.idx`.
pub(crate) fn schema() -> Value {
    serde_json::to_value(schemars::schema_for!(IndexDoc)).expect("schemas serialise")
}

/// How the head was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// No ledger file.
    Missing,
    /// The index was valid.
    Index,
    /// The index was valid for a prefix; the suffix was parsed.
    Suffix,
    /// The whole ledger was scanned.
    FullScan,
}

/// The ledger as seen by a command.
#[derive(Debug, Clone)]
pub struct View {
    /// Head of the complete records.
    pub head: Head,
    /// Bytes after the last `\n`.
    pub trailing: Vec<u8>,
    /// Size of the ledger file.
    pub file_len: u64,
    /// How the head was obtained.
    pub source: Source,
    /// Key lines found beyond the index (to append under the lock).
    pub new_keys: Vec<KeyLine>,
    /// `.ledger.keys` size covered by the index (when it was trusted).
    pub keys_bytes: u64,
}

fn read_index(dir: &Dir, paths: &state::StatePaths) -> Option<IndexDoc> {
    let display = paths.file(state::INDEX);
    match state::read_file(dir, state::INDEX, &display, 64 * 1024) {
        Ok(Some(state::ReadOutcome::Bytes(b))) => serde_json::from_slice(&b).ok(),
        _ => None,
    }
}

/// Whether `.ledger.idx` still describes a prefix of the ledger `file` of
/// `len` bytes: `None` without a readable version-1 index (a cache may be
/// missing or torn), `Some(false)` when the index names a last record that
/// is no longer at its offset or a ledger longer than the file — the
/// ledger was rewritten after the engine last indexed it (the audit's
/// `LEDGER_INDEX_MISMATCH`).
pub(crate) fn describes_prefix(
    dir: &Dir,
    file: &mut File,
    len: u64,
    max_record: u64,
) -> Option<bool> {
    let bytes = match state::read_file(dir, state::INDEX, state::INDEX, 64 * 1024) {
        Ok(Some(state::ReadOutcome::Bytes(b))) => b,
        _ => return None,
    };
    let idx: IndexDoc = serde_json::from_slice(&bytes).ok()?;
    if idx.version != 1 {
        return None;
    }
    prefix_matches(file, &idx, len, max_record).ok()
}

fn keys_len(dir: &Dir) -> Option<u64> {
    match state::open_file(dir, state::KEYS, state::KEYS) {
        Ok(Some((_, m))) => Some(m.len()),
        Ok(None) => Some(0),
        Err(_) => None,
    }
}

fn open_ledger(dir: &Dir, paths: &state::StatePaths) -> Result<Option<(File, u64)>, GoalError> {
    let display = paths.ledger();
    Ok(state::open_file(dir, state::LEDGER, &display)?.map(|(f, m)| (f, m.len())))
}

/// Reads the head without writing anything: the index when it is valid (or
/// valid for a prefix, then the suffix is parsed in memory), else one scan.
pub(crate) fn view(
    dir: &Dir,
    paths: &state::StatePaths,
    max_record: u64,
) -> Result<View, GoalError> {
    view_of(dir, paths, state::LEDGER, max_record)
}

/// [`view`] of the ledger file `name` (the replaced run's ledger while an
/// interrupted `create-goals --force` is pending, see `txn::switch`).
pub(crate) fn view_of(
    dir: &Dir,
    paths: &state::StatePaths,
    name: &str,
    max_record: u64,
) -> Result<View, GoalError> {
    view_scanning(dir, paths, name, max_record, journal::scan_from)
}

/// A ledger region's scan: [`journal::scan_from`], or
/// [`journal::scan_head_from`] for a reader that needs no keys.
type ScanFn = fn(&mut File, Head, u64) -> std::io::Result<journal::Scan>;

fn view_scanning(
    dir: &Dir,
    paths: &state::StatePaths,
    name: &str,
    max_record: u64,
    scan_from: ScanFn,
) -> Result<View, GoalError> {
    let display = paths.file(name);
    let opened = state::open_file(dir, name, &display)?.map(|(f, m)| (f, m.len()));
    let Some((mut file, len)) = opened else {
        return Ok(View {
            head: Head::default(),
            trailing: Vec::new(),
            file_len: 0,
            source: Source::Missing,
            new_keys: Vec::new(),
            keys_bytes: 0,
        });
    };
    let io = |e: std::io::Error| GoalError::io(&display, "read", &e);
    if let Some(idx) = tree_index(dir, paths, &mut file, len, max_record).map_err(io)? {
        if idx.ledger_bytes == len {
            return Ok(View::at_index(&idx, len, idx.keys_bytes));
        }
        let scan = scan_from(&mut file, idx.head(), len).map_err(io)?;
        return Ok(from_scan(scan, len, Source::Suffix, idx.keys_bytes));
    }
    let scan = scan_from(&mut file, Head::default(), len).map_err(io)?;
    Ok(from_scan(scan, len, Source::FullScan, 0))
}

/// The head for a read-only command, which never writes the state
/// directory and never scans a whole ledger on every call: the in-tree index
/// when it is valid (or valid for a prefix); otherwise a copy of the index
/// kept in the per-user cache `cache` (keyed by `cache_key`, checked the
/// same way: the record it names must still hash to its digest at its
/// offset), brought up to date by parsing the suffix. Only when neither
/// describes the ledger (a fresh clone, Node-written state, a rewritten
/// ledger) is it scanned once, and the cache written for the next call.
/// Its scans read the head only ([`journal::scan_head_from`]: the records
/// counted, not decoded, and the chain's part read back from the end), so
/// the view's `new_keys` stay empty.
pub(crate) fn view_read_only(
    dir: &Dir,
    paths: &state::StatePaths,
    name: &str,
    max_record: u64,
    cache: Option<&Dir>,
    cache_key: &str,
) -> Result<View, GoalError> {
    let display = paths.file(name);
    let opened = state::open_file(dir, name, &display)?.map(|(f, m)| (f, m.len()));
    let Some((mut file, len)) = opened else {
        return view_scanning(dir, paths, name, max_record, journal::scan_head_from);
    };
    let io = |e: std::io::Error| GoalError::io(&display, "read", &e);
    if tree_index(dir, paths, &mut file, len, max_record)
        .map_err(io)?
        .is_some()
    {
        return view_scanning(dir, paths, name, max_record, journal::scan_head_from);
    }
    let Some(cache) = cache else {
        return view_scanning(dir, paths, name, max_record, journal::scan_head_from);
    };
    let cache_name = cached_index_name(cache_key);
    let cached = match state::read_file(cache, &cache_name, &cache_name, 64 * 1024) {
        Ok(Some(state::ReadOutcome::Bytes(b))) => serde_json::from_slice::<IndexDoc>(&b).ok(),
        _ => None,
    };
    let (scan, source) = match cached {
        Some(idx)
            if idx.version == 1
                && prefix_matches(&mut file, &idx, len, max_record).map_err(io)? =>
        {
            if idx.ledger_bytes == len {
                return Ok(View::at_index(&idx, len, 0));
            }
            let scan = journal::scan_head_from(&mut file, idx.head(), len).map_err(io)?;
            (scan, Source::Suffix)
        }
        _ => {
            let scan = journal::scan_head_from(&mut file, Head::default(), len).map_err(io)?;
            (scan, Source::FullScan)
        }
    };
    let doc = doc_of(&scan.head, 0);
    // A cache outside the workspace: failing to write it costs one scan.
    let _ = store::atomic_replace(
        cache,
        &cache_name,
        &serde_json::to_vec(&doc).expect("json"),
        Durability::Cache,
    );
    Ok(from_scan(scan, len, source, 0))
}

/// The per-user cache file of a ledger: `ledger-index-<16 hex>.json`, the
/// digest of `key` (the workspace root, state directory and ledger name).
pub(crate) fn cached_index_name(key: &str) -> String {
    format!(
        "ledger-index-{}.json",
        &crate::digest::sha256_hex(key.as_bytes())[..16]
    )
}

fn doc_of(head: &Head, keys_bytes: u64) -> IndexDoc {
    IndexDoc {
        version: 1,
        ledger_bytes: head.len,
        records: head.records,
        last_seq: head.last_seq,
        last_revision: head.last_revision,
        last_record_offset: head.last_offset,
        last_record_sha256: head.last_hash.clone(),
        keys_bytes,
    }
}

/// The in-tree index when it describes the ledger (or a prefix of it) and
/// the key table it was written with.
fn tree_index(
    dir: &Dir,
    paths: &state::StatePaths,
    file: &mut File,
    len: u64,
    max_record: u64,
) -> std::io::Result<Option<IndexDoc>> {
    match read_index(dir, paths) {
        Some(idx)
            if idx.version == 1
                && keys_len(dir) == Some(idx.keys_bytes)
                && prefix_matches(file, &idx, len, max_record)? =>
        {
            Ok(Some(idx))
        }
        _ => Ok(None),
    }
}

impl View {
    /// The view an index gives of a ledger of `len` bytes that it covers
    /// entirely.
    fn at_index(idx: &IndexDoc, len: u64, keys_bytes: u64) -> View {
        View {
            head: idx.head(),
            trailing: Vec::new(),
            file_len: len,
            source: Source::Index,
            new_keys: Vec::new(),
            keys_bytes,
        }
    }
}

fn from_scan(scan: Scan, len: u64, source: Source, keys_bytes: u64) -> View {
    View {
        head: scan.head,
        trailing: scan.trailing,
        file_len: len,
        source,
        new_keys: scan.keys,
        keys_bytes,
    }
}

/// True when the index describes a prefix of the ledger: the file is at
/// least that long, the byte before the covered end is `\n`, and the last
/// indexed record still hashes to the recorded digest.
fn prefix_matches(
    file: &mut File,
    idx: &IndexDoc,
    len: u64,
    max_record: u64,
) -> std::io::Result<bool> {
    if len < idx.ledger_bytes {
        return Ok(false);
    }
    match (idx.last_record_offset, &idx.last_record_sha256) {
        (None, None) => Ok(idx.ledger_bytes == 0 && idx.records == 0),
        (Some(off), Some(hash)) => {
            if off >= idx.ledger_bytes {
                return Ok(false);
            }
            let Some(rec) = journal::record_at(file, off, max_record)? else {
                return Ok(false);
            };
            Ok(off + (rec.len() as u64) < idx.ledger_bytes
                && crate::ledger::record_hash(&rec) == *hash
                && ends_at_newline(file, idx.ledger_bytes)?)
        }
        _ => Ok(false),
    }
}

fn ends_at_newline(file: &mut File, at: u64) -> std::io::Result<bool> {
    use std::io::{Read, Seek, SeekFrom};
    if at == 0 {
        return Ok(true);
    }
    let mut b = [0u8; 1];
    file.seek(SeekFrom::Start(at - 1))?;
    file.read_exact(&mut b)?;
    Ok(b[0] == b'\n')
}

/// Inside a mutation's lock: brings the index up to date with the ledger
/// (appending suffix keys, or rebuilding both files after a full scan).
/// Returns the view and whether a full rebuild happened.
pub(crate) fn refresh(
    dir: &Dir,
    paths: &state::StatePaths,
    max_record: u64,
    force_rebuild: bool,
) -> Result<(View, bool), GoalError> {
    let mut v = view(dir, paths, max_record)?;
    if force_rebuild && v.source != Source::FullScan && v.source != Source::Missing {
        let display = paths.ledger();
        let (mut file, len) = open_ledger(dir, paths)?.expect("exists");
        let scan = journal::scan_from(&mut file, Head::default(), len)
            .map_err(|e| GoalError::io(&display, "read", &e))?;
        v = from_scan(scan, len, Source::FullScan, 0);
    }
    let rebuilt = v.source == Source::FullScan;
    match v.source {
        Source::Index => {}
        Source::Missing => {
            remove_quietly(dir, state::INDEX);
            remove_quietly(dir, state::KEYS);
            remove_quietly(dir, super::keyhash::FILE);
            v.keys_bytes = 0;
        }
        Source::Suffix => {
            v.keys_bytes = append_keys(dir, paths, v.keys_bytes, &v.new_keys)?;
            v.new_keys.clear();
            write(dir, paths, &v.head, v.keys_bytes)?;
        }
        Source::FullScan => {
            let mut bytes = Vec::new();
            for k in &v.new_keys {
                bytes.extend_from_slice(serde_json::to_string(&k.0).expect("json").as_bytes());
                bytes.push(b'\n');
            }
            store::atomic_replace(dir, state::KEYS, &bytes, Durability::Cache)
                .map_err(|e| GoalError::io(&paths.file(state::KEYS), "write", &e))?;
            // A cache: a table that could not be written is rebuilt from
            // `.ledger.keys` by the next lookup.
            let _ = super::keyhash::rebuild_from_lines(dir, &v.new_keys);
            v.keys_bytes = bytes.len() as u64;
            v.new_keys.clear();
            write(dir, paths, &v.head, v.keys_bytes)?;
        }
    }
    Ok((v, rebuilt))
}

/// Appends key lines to `.ledger.keys`; returns its new size.
pub(crate) fn append_keys(
    dir: &Dir,
    paths: &state::StatePaths,
    keys_bytes: u64,
    keys: &[KeyLine],
) -> Result<u64, GoalError> {
    if keys.is_empty() {
        return Ok(keys_bytes);
    }
    let display = paths.file(state::KEYS);
    let mut bytes = Vec::new();
    for k in keys {
        bytes.extend_from_slice(serde_json::to_string(&k.0).expect("json").as_bytes());
        bytes.push(b'\n');
    }
    let (mut f, _) =
        store::open_append(dir, state::KEYS).map_err(|e| GoalError::io(&display, "open", &e))?;
    f.write_all(&bytes)
        .map_err(|e| GoalError::io(&display, "append to", &e))?;
    // A cache: a table that could not be updated no longer covers the key
    // bytes the ledger index names, so the next lookup rebuilds it.
    let _ = super::keyhash::append(dir, keys_bytes, &bytes);
    Ok(keys_bytes + bytes.len() as u64)
}

/// Writes `.ledger.idx` (atomic, no fsync).
pub(crate) fn write(
    dir: &Dir,
    paths: &state::StatePaths,
    head: &Head,
    keys_bytes: u64,
) -> Result<(), GoalError> {
    let bytes = serde_json::to_vec(&doc_of(head, keys_bytes)).expect("json");
    store::atomic_replace(dir, state::INDEX, &bytes, Durability::Cache)
        .map_err(|e| GoalError::io(&paths.file(state::INDEX), "write", &e))
}

/// Removes a cache file, ignoring a missing one.
pub(crate) fn remove_quietly(dir: &Dir, name: &str) {
    let _ = dir.remove_file(name);
}
