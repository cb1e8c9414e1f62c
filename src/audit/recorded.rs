//! Recorded file digests (docs/state-formats.md#ge-2 `files`, docs/hook-contracts.md#h-3
//! receipts): collected while a ledger is verified, then re-hashed through
//! the sandbox.
//!
//! A path may be recorded many times (a deliverable changed by a later goal
//! is recorded again). The tree must match the *latest* recording of each
//! path, and no agent-written clock decides which one that is
//! (docs/threat-model.md#i11): within one ledger the last record in chain order
//! wins (`at`/`ts` are never compared); across ledgers nothing is superseded
//! by a later timestamp. Every goal ledger's last recording of a path must
//! match the file; a hook gate-ledger recording yields only to a goal
//! ledger's recording of the same path (the goal engine's recording decides),
//! and never excuses a goal-ledger mismatch.

use std::collections::{BTreeMap, HashMap};

use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::progress::Progress;
use super::scan::entry_kind;
use crate::finding::{Code, Finding, VerifiedFile};
use crate::finding::{lexical_code, problem_finding};
use crate::sandbox::open::{self, FileChecks, FileProblem, HashedFile};
use crate::sandbox::{PathLimits, RelPath, parallel};

/// One `{path, size, sha256}` recorded by a ledger entry.
#[derive(Debug, Clone)]
struct Recording {
    size: u64,
    sha256: String,
    line: u64,
    seq: Option<u64>,
    kind: Option<String>,
    role: Option<String>,
}

/// The last recording of every path in one ledger, plus malformed `files`.
#[derive(Debug)]
pub(crate) struct LedgerFiles {
    ledger: String,
    /// The hook gate ledger (its recordings yield to a goal ledger's).
    gate: bool,
    last: HashMap<String, Recording>,
    pub(crate) invalid: Vec<Finding>,
}

impl LedgerFiles {
    /// Recordings of the ledger shown as `ledger`.
    pub(crate) fn new(ledger: &str) -> LedgerFiles {
        LedgerFiles {
            ledger: ledger.to_owned(),
            gate: false,
            last: HashMap::new(),
            invalid: Vec::new(),
        }
    }

    /// Recordings of the hook gate ledger shown as `ledger`.
    pub(crate) fn gate(ledger: &str) -> LedgerFiles {
        LedgerFiles {
            gate: true,
            ..LedgerFiles::new(ledger)
        }
    }

    /// Records every element of the entry's `files` array.
    pub(crate) fn record_entry(&mut self, line: u64, entry: &Value) {
        self.record_files(line, FilesFact::of(entry));
    }

    /// [`LedgerFiles::record_entry`] of what [`FilesFact::of`] read of an
    /// entry (on another thread, where the entry was parsed).
    pub(crate) fn record_files(&mut self, line: u64, f: FilesFact) {
        match f.files {
            FilesField::Absent => {}
            FilesField::NotArray => self.invalid(line, "files", "is not an array"),
            FilesField::Items(items) => {
                for (i, item) in items.into_iter().enumerate() {
                    self.record_item(line, &format!("files[{i}]"), item, f.seq, f.kind.clone());
                }
            }
        }
    }

    /// Records one `{path, size, sha256}` object found at `field` of the entry.
    pub(crate) fn record(&mut self, line: u64, entry: &Value, item: &Value, field: &str) {
        self.record_item(
            line,
            field,
            ItemFact::of(item),
            entry.get("seq").and_then(Value::as_u64),
            entry_kind(entry).map(str::to_owned),
        );
    }

    fn record_item(
        &mut self,
        line: u64,
        field: &str,
        item: ItemFact,
        seq: Option<u64>,
        kind: Option<String>,
    ) {
        let ItemFact::Valid {
            path,
            size,
            sha256,
            role,
        } = item
        else {
            self.invalid(
                line,
                field,
                "is not an object with a string `path`, an integer `size` and a 64-hex `sha256`",
            );
            return;
        };
        self.last.insert(
            path,
            Recording {
                size,
                sha256,
                line,
                seq,
                kind,
                role,
            },
        );
    }

    fn invalid(&mut self, line: u64, field: &str, why: &str) {
        self.invalid.push(
            Finding::new(
                Code::LedgerFilesInvalid,
                Some(&self.ledger),
                format!("line {line}: `{field}` {why}"),
            )
            .with_detail(json!({"line": line, "field": field})),
        );
    }
}

/// What [`LedgerFiles::record_entry`] reads of an entry: its `files`, and,
/// when it has some, its `seq` and kind.
#[derive(Debug)]
pub(crate) struct FilesFact {
    files: FilesField,
    seq: Option<u64>,
    kind: Option<String>,
}

#[derive(Debug)]
enum FilesField {
    Absent,
    NotArray,
    Items(Vec<ItemFact>),
}

/// One element of `files` (or a receipt): its fields, or that it is not a
/// valid `{path, size, sha256}` object.
#[derive(Debug)]
enum ItemFact {
    Valid {
        path: String,
        size: u64,
        sha256: String,
        role: Option<String>,
    },
    Invalid,
}

impl FilesFact {
    pub(crate) fn of(entry: &Value) -> FilesFact {
        let files = match entry.get("files") {
            None => FilesField::Absent,
            Some(Value::Array(items)) => {
                FilesField::Items(items.iter().map(ItemFact::of).collect())
            }
            Some(_) => FilesField::NotArray,
        };
        let (seq, kind) = match &files {
            FilesField::Items(items) if !items.is_empty() => (
                entry.get("seq").and_then(Value::as_u64),
                entry_kind(entry).map(str::to_owned),
            ),
            _ => (None, None),
        };
        FilesFact { files, seq, kind }
    }
}

impl ItemFact {
    fn of(item: &Value) -> ItemFact {
        let path = item.get("path").and_then(Value::as_str);
        let size = item.get("size").and_then(Value::as_u64);
        let sha = item
            .get("sha256")
            .and_then(Value::as_str)
            .filter(|s| crate::digest::is_sha256_hex(s));
        match (path, size, sha) {
            (Some(path), Some(size), Some(sha)) => ItemFact::Valid {
                path: path.to_owned(),
                size,
                sha256: sha.to_owned(),
                role: item.get("role").and_then(Value::as_str).map(str::to_owned),
            },
            _ => ItemFact::Invalid,
        }
    }
}

/// What the re-hash found for one ledger.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    /// Findings about recorded files (`path` = the file; `detail.ledgerLine`).
    pub(crate) findings: Vec<Finding>,
    /// Recorded files that still match.
    pub(crate) files: Vec<VerifiedFile>,
    /// Recordings checked (not superseded).
    pub(crate) checked: usize,
}

/// Totals of one re-hash run.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Totals {
    pub(crate) files: usize,
    pub(crate) bytes: u64,
}

/// Hashes files in batches so that progress is reported between batches
/// from the calling thread; each batch still uses every core.
const BATCH: usize = 64;

/// Re-hashes the live recordings of every ledger; one [`Outcome`] per ledger,
/// in the same order.
pub(crate) fn check(
    root: &Dir,
    limits: PathLimits,
    checks: FileChecks,
    ledgers: &[LedgerFiles],
    progress: &mut dyn Progress,
) -> (Vec<Outcome>, Totals) {
    let mut out: Vec<Outcome> = ledgers.iter().map(|_| Outcome::default()).collect();
    let mut jobs: BTreeMap<&str, Vec<(usize, &Recording)>> = BTreeMap::new();
    for (i, l) in ledgers.iter().enumerate() {
        for (path, rec) in &l.last {
            // Never by timestamp (docs/threat-model.md#i11): a gate-ledger recording yields to a
            // goal ledger's recording of the same path; a goal ledger's
            // recording yields to nothing.
            let superseded = l.gate
                && ledgers
                    .iter()
                    .any(|other| !other.gate && other.last.contains_key(path));
            if !superseded {
                jobs.entry(path.as_str()).or_default().push((i, rec));
            }
        }
    }
    let mut valid: Vec<(&str, RelPath)> = Vec::new();
    for (path, recs) in &jobs {
        match RelPath::parse(path, limits) {
            Ok(p) => valid.push((path, p)),
            Err(lp) => {
                for (i, rec) in recs {
                    out[*i].checked += 1;
                    out[*i].findings.push(
                        finding(
                            lexical_code(lp),
                            path,
                            &ledgers[*i].ledger,
                            rec,
                            format!("is not an acceptable path: {}", lp.describe()),
                        )
                        .0,
                    );
                }
            }
        }
    }
    progress.phase("re-hashing recorded files", "files", valid.len() as u64);
    let mut totals = Totals::default();
    for batch in valid.chunks(BATCH) {
        let results: Vec<Result<HashedFile, FileProblem>> =
            parallel::map_runs(batch, open::ParentCache::default, |parents, (_, p)| {
                open::verify_file_cached(root, p, &checks, None, parents)
            });
        for ((path, _), result) in batch.iter().zip(results) {
            if let Ok(h) = &result {
                totals.files += 1;
                totals.bytes += h.size;
            }
            for (i, rec) in &jobs[path] {
                let o = &mut out[*i];
                o.checked += 1;
                match &result {
                    Ok(h) if h.sha256 == rec.sha256 && h.size == rec.size => {
                        o.files.push(VerifiedFile {
                            path: (*path).to_owned(),
                            size: h.size,
                            sha256: h.sha256.clone(),
                        });
                    }
                    Ok(h) => {
                        let (f, mut detail) = finding(
                            Code::LedgerDigestMismatch,
                            path,
                            &ledgers[*i].ledger,
                            rec,
                            format!(
                                "now has {} bytes and SHA-256 {}; it changed after it was recorded",
                                h.size, h.sha256
                            ),
                        );
                        detail["actual"] = json!({"size": h.size, "sha256": h.sha256});
                        o.findings.push(f.with_detail(detail));
                    }
                    Err(FileProblem::Missing) => o.findings.push(
                        finding(
                            Code::LedgerFileMissing,
                            path,
                            &ledgers[*i].ledger,
                            rec,
                            "no longer exists".into(),
                        )
                        .0,
                    ),
                    Err(p) => {
                        let (code, why) = problem_finding(p);
                        o.findings
                            .push(finding(code, path, &ledgers[*i].ledger, rec, why).0);
                    }
                }
            }
        }
        progress.advance(batch.len() as u64);
    }
    (out, totals)
}

/// A finding about a recorded file, with the recording in `detail`. Returns
/// the detail too, for callers that add to it.
fn finding(
    code: Code,
    path: &str,
    ledger: &str,
    rec: &Recording,
    what: String,
) -> (Finding, Value) {
    let detail = json!({
        "ledger": ledger,
        "ledgerLine": rec.line,
        "seq": rec.seq,
        "kind": rec.kind,
        "role": rec.role,
        "recorded": {"size": rec.size, "sha256": rec.sha256},
    });
    let kind = rec
        .kind
        .as_deref()
        .map(|k| format!(", {k}"))
        .unwrap_or_default();
    let f = Finding::new(
        code,
        Some(path),
        format!(
            "recorded by {ledger} line {}{kind} ({} bytes, SHA-256 {}); {what}",
            rec.line, rec.size, rec.sha256
        ),
    )
    .with_detail(detail.clone());
    (f, detail)
}
