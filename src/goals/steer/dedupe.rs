//! Idempotency (docs/engine.md#ge-5): lookups of a proposal's idempotency
//! key (`k:`) and prompt signature (`p:`) in `.ledger.keys` — a
//! byte-substring pre-filter on the JSON-encoded key, then only candidate
//! lines are parsed; the ledger itself is never scanned — and among the
//! earlier items of the same batch.

use cap_std::fs::Dir;
use serde_json::Value;

use super::proposal::Proposal;
use super::resolve::Resolved;
use crate::goals::error::GoalError;
use crate::goals::journal;
use crate::goals::state::{self, ReadOutcome, StatePaths};

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
pub enum Hit {
    /// Same key, same proposal: a replay.
    Same(Prior),
    /// Same key, different proposal.
    Conflict(Prior),
}

/// `.ledger.keys` as read inside the mutation lock.
#[derive(Debug, Clone, Default)]
pub struct KeyIndex {
    bytes: Vec<u8>,
}

impl KeyIndex {
    /// Reads the first `keys_bytes` bytes of `.ledger.keys` (the part the
    /// ledger index vouches for).
    pub fn load(dir: &Dir, paths: &StatePaths, keys_bytes: u64) -> Result<KeyIndex, GoalError> {
        if keys_bytes == 0 {
            return Ok(KeyIndex::default());
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
        Ok(KeyIndex { bytes })
    }

    /// The first indexed entry under `key`.
    pub fn find(&self, key: &str) -> Option<Prior> {
        let needle = serde_json::to_string(key).expect("json");
        let finder = regex::bytes::Regex::new(&regex::escape(&needle)).expect("escaped literal");
        for m in finder.find_iter(&self.bytes) {
            let start = self.bytes[..m.start()]
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |i| i + 1);
            let end = self.bytes[m.end()..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(self.bytes.len(), |i| m.end() + i);
            let Ok(line) = serde_json::from_slice::<Value>(&self.bytes[start..end]) else {
                continue;
            };
            if line.get("k").and_then(Value::as_str) != Some(key) {
                continue;
            }
            return Some(Prior {
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
            });
        }
        None
    }
}

/// The namespaced keys of a proposal.
pub fn keys(p: &Proposal) -> Vec<String> {
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
pub fn lookup(
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
pub fn prior_audit(
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
