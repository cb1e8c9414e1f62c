//! Idempotency (docs/engine.md#ge-5): lookups of a proposal's idempotency
//! key (`k:`) and prompt signature (`p:`) in `.ledger.keys` — a
//! byte-substring pre-filter on the JSON-encoded key, then only candidate
//! lines are parsed; the ledger itself is never scanned — and among the
//! earlier items of the same batch. Lookups go through the hashed table
//! `.ledger.keyhash` (O(1) in the key history); a hit is only believed
//! when the ledger record it points to carries it.

use cap_std::fs::Dir;
use serde_json::Value;

use std::collections::HashMap;

use super::proposal::Proposal;
use super::resolve::Resolved;
use crate::goals::error::GoalError;
use crate::goals::index::View;
use crate::goals::journal;
use crate::goals::keyhash;
use crate::goals::state::{self, ReadOutcome, StatePaths};
use crate::goals::txn::Locked;

/// Where an earlier accepted proposal with the same key was recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// A ledger entry (`seq`; the record's byte offset when indexed).
    Ledger {
        /// Its `seq` (legacy entries have none).
        seq: Option<u64>,
        /// Its byte offset in the ledger.
        offset: Option<u64>,
    },
    /// An earlier item of the batch being applied.
    Batch {
        /// The item's index.
        item: usize,
    },
}

/// An earlier accepted proposal under the same key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prior {
    /// The namespaced key (`k:<idempotencyKey>` or `p:<promptSignature>`).
    pub key: String,
    /// Its proposal digest (`None`: a legacy entry).
    pub digest: Option<String>,
    /// Its mutation kind.
    pub mutation_kind: Option<String>,
    /// Its targets.
    pub targets: Vec<String>,
    /// Where it was recorded.
    pub origin: Origin,
}

/// The outcome of a lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Hit {
    /// Same key, same proposal: a replay.
    Same(Prior),
    /// Same key, different proposal.
    Conflict(Prior),
}

/// The idempotency keys a command looks up, resolved inside the mutation
/// lock: through the hashed table (`.ledger.keyhash`, [`keyhash`]) with
/// every hit checked against its ledger record, or, when the table cannot
/// be used even after a rebuild from the ledger, by a scan of `.ledger.keys`.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyIndex {
    found: HashMap<String, Option<Prior>>,
    /// `.ledger.keys` bytes when the table could not be used.
    bytes: Option<Vec<u8>>,
}

/// The table disagreed with `.ledger.keys` or the ledger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Inconsistent;

impl KeyIndex {
    /// Resolves `keys` through the hashed table. `Ok(Err(Inconsistent))`
    /// when the table, `.ledger.keys` and the ledger disagree (the caller
    /// rebuilds the index from the ledger and asks again).
    pub(crate) fn lookup_all(
        dir: &Dir,
        view: &View,
        max_record: u64,
        keys: &[String],
    ) -> Result<KeyIndex, Inconsistent> {
        let src = keyhash::Sources {
            dir,
            keys_bytes: view.keys_bytes,
            ledger_len: view.head.len,
            max_record,
        };
        let mut found = HashMap::new();
        let mut rebuilt = false;
        for key in keys {
            loop {
                match keyhash::lookup(&src, key) {
                    Ok(keyhash::Lookup::Found(line)) => {
                        found.insert(key.clone(), line.map(|l| prior_of(key, &l)));
                        break;
                    }
                    Ok(keyhash::Lookup::Stale) if !rebuilt => {
                        rebuilt = true;
                        if keyhash::rebuild_from_keys(dir, view.keys_bytes).is_err() {
                            return Err(Inconsistent);
                        }
                    }
                    Ok(_) | Err(_) => return Err(Inconsistent),
                }
            }
        }
        Ok(KeyIndex { found, bytes: None })
    }

    /// Reads the first `keys_bytes` bytes of `.ledger.keys` (the part the
    /// ledger index vouches for), to be scanned per lookup.
    pub(crate) fn load(
        dir: &Dir,
        paths: &StatePaths,
        keys_bytes: u64,
    ) -> Result<KeyIndex, GoalError> {
        if keys_bytes == 0 {
            return Ok(KeyIndex {
                found: HashMap::new(),
                bytes: Some(Vec::new()),
            });
        }
        let display = paths.file(state::KEYS);
        let mut bytes = match state::read_file(dir, state::KEYS, &display, keys_bytes)? {
            Some(ReadOutcome::Bytes(b)) => b,
            Some(ReadOutcome::TooLarge { .. }) => {
                let (f, _) = state::open_file(dir, state::KEYS, &display)?.expect("it exists");
                let mut b = Vec::with_capacity(keys_bytes as usize);
                std::io::Read::read_to_end(&mut std::io::Read::take(f, keys_bytes), &mut b)
                    .map_err(|e| GoalError::io(&display, "read", &e))?;
                b
            }
            None => Vec::new(),
        };
        bytes.truncate(keys_bytes as usize);
        Ok(KeyIndex {
            found: HashMap::new(),
            bytes: Some(bytes),
        })
    }

    /// The first indexed entry under `key`.
    pub(crate) fn find(&self, key: &str) -> Option<Prior> {
        if let Some(hit) = self.found.get(key) {
            return hit.clone();
        }
        let bytes = self.bytes.as_deref()?;
        let needle = serde_json::to_string(key).expect("json");
        let finder = crate::scan::Finder::new(needle.as_bytes());
        for start_of_match in finder.find_iter(bytes) {
            let start = bytes[..start_of_match]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let after = start_of_match + needle.len();
            let end = bytes[after..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |i| after + i);
            let Ok(line) = serde_json::from_slice::<Value>(&bytes[start..end]) else {
                continue;
            };
            if line.get("k").and_then(Value::as_str) != Some(key) {
                continue;
            }
            return Some(prior_of(key, &line));
        }
        None
    }
}

/// The prior entry a key line describes.
fn prior_of(key: &str, line: &Value) -> Prior {
    Prior {
        key: key.to_owned(),
        digest: line.get("d").and_then(Value::as_str).map(str::to_owned),
        mutation_kind: line.get("m").and_then(Value::as_str).map(str::to_owned),
        targets: line
            .get("t")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default(),
        origin: Origin::Ledger {
            seq: line.get("s").and_then(Value::as_u64),
            offset: line.get("o").and_then(Value::as_u64),
        },
    }
}

/// Resolves the keys of `proposals` inside the lock: the hashed table; when
/// it disagrees with the ledger, the index is rebuilt from the ledger (a
/// `LEDGER_INDEX_REBUILT` diagnostic) and the table asked again; when even
/// that fails, `.ledger.keys` is scanned.
pub(crate) fn resolve(
    locked: &mut Locked<'_>,
    proposals: &[&Proposal],
    command: &str,
) -> Result<KeyIndex, GoalError> {
    let keys: Vec<String> = proposals.iter().flat_map(|p| keys(p)).collect();
    let engine = locked.engine();
    let max_record = engine.profile.limits.max_ledger_record_bytes;
    if keys.is_empty() {
        return Ok(KeyIndex::default());
    }
    if let Ok(index) = KeyIndex::lookup_all(&locked.dir, &locked.view, max_record, &keys) {
        return Ok(index);
    }
    locked.rebuild_index(command)?;
    if let Ok(index) = KeyIndex::lookup_all(&locked.dir, &locked.view, max_record, &keys) {
        return Ok(index);
    }
    KeyIndex::load(&locked.dir, &engine.paths, locked.view.keys_bytes)
}

/// The namespaced keys of a proposal.
pub(crate) fn keys(p: &Proposal) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(k) = p.text("idempotencyKey") {
        out.push(format!("k:{k}"));
    }
    if let Some(s) = p.text("promptSignature") {
        out.push(format!("p:{s}"));
    }
    out
}

fn same(prior: &Prior, p: &Proposal, r: &Resolved, digest: &str) -> bool {
    match &prior.digest {
        Some(d) => d == digest,
        None => {
            prior.mutation_kind.as_deref() == Some(p.kind.as_str()) && prior.targets == r.targets
        }
    }
}

/// Looks the proposal's keys up among `batch` (earlier accepted items of
/// this batch) and then the key index. A replay under either key wins
/// over a conflict under the other.
pub(crate) fn lookup(
    index: &KeyIndex,
    batch: &[Prior],
    p: &Proposal,
    r: &Resolved,
    digest: &str,
) -> Option<Hit> {
    let mut conflict = None;
    for key in keys(p) {
        let prior = batch
            .iter()
            .find(|b| b.key == key)
            .cloned()
            .or_else(|| index.find(&key));
        if let Some(prior) = prior {
            if same(&prior, p, r, digest) {
                return Some(Hit::Same(prior));
            }
            conflict.get_or_insert(prior);
        }
    }
    conflict.map(Hit::Conflict)
}

/// The prior entry's audit (its `steering` object without `before`/`after`),
/// read with one seek at the indexed offset; `None` when it is not indexed
/// with an offset or the record there is not that entry.
pub(crate) fn prior_audit(
    dir: &Dir,
    paths: &StatePaths,
    prior: &Prior,
    max_record: u64,
) -> Result<Option<Value>, GoalError> {
    let Origin::Ledger {
        seq,
        offset: Some(offset),
    } = prior.origin
    else {
        return Ok(None);
    };
    let display = paths.ledger();
    let Some((mut f, _)) = state::open_file(dir, state::LEDGER, &display)? else {
        return Ok(None);
    };
    let Some(bytes) = journal::record_at(&mut f, offset, max_record)
        .map_err(|e| GoalError::io(&display, "read", &e))?
    else {
        return Ok(None);
    };
    let Ok(entry) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(None);
    };
    if entry.get("seq").and_then(Value::as_u64) != seq {
        return Ok(None);
    }
    let Some(Value::Object(mut audit)) = entry.get("steering").cloned() else {
        return Ok(None);
    };
    audit.shift_remove("before");
    audit.shift_remove("after");
    Ok(Some(Value::Object(audit)))
}
