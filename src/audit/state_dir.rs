//! The audit of one goal-engine state directory: the ledger's chain, the
//! plan, their agreement, completion claims and the archived runs.

use std::collections::BTreeMap;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::completion::{self, FinalEntry};
use super::layout::ProfileLayout;
use super::plan_file;
use super::progress::Progress;
use super::recorded::{FilesFact, LedgerFiles};
use super::scan::{Opened, entry_kind, open_state_file, scan_chain, scan_ledger_split};
use crate::finding::problem_finding;
use crate::finding::{Code, Finding, ReportBuilder, ReportKind};
use crate::goals::binding;
use crate::goals::journal::{Head, LedgerKind};
use crate::goals::plan::Plan;
use crate::goals::txn::{self, Consistency};
use crate::ledger::{Extract, ForeignSeverity, chain_fields};
use crate::sandbox::open::FileProblem;
use crate::sandbox::walk::{self, EntryKind};

/// Plan file name inside a state directory.
pub(crate) const GOALS: &str = "goals.json";
/// Ledger file name inside a state directory.
pub(crate) const LEDGER: &str = "ledger.jsonl";
/// Archive directory inside a state directory (docs/state-formats.md#ge-2).
const ARCHIVE: &str = ".archive";

/// The audit of one state directory, before recorded files are re-hashed.
pub(crate) struct Audited {
    pub(crate) report: ReportBuilder,
    pub(crate) files: LedgerFiles,
    /// A plan was read or ledger records were verified.
    pub(crate) checked: bool,
    pub(crate) records: u64,
    /// The plan read, when it decoded.
    pub(crate) plan: Option<Plan>,
}

/// What the ledger scan of the current run collected.
#[derive(Default)]
struct Collected {
    finals: Vec<FinalEntry>,
    first: Option<(u64, Value)>,
    landed: u64,
    /// Whether the ledger dropped the plan binding at its end (docs/threat-model.md#i7).
    downgrade: binding::Downgrade,
    /// `tamper_acknowledged` entries: `(line, seq, entry)`.
    acknowledged: Vec<(u64, Option<u64>, Value)>,
    /// Steering keys accepted by chained entries: key → (line, seq).
    accepted_keys: std::collections::HashMap<String, LineSeq>,
    /// A key accepted again: `(key, first (line, seq), again (line, seq))`.
    reaccepted: Vec<(String, LineSeq, LineSeq)>,
}

/// A ledger position: `(line, seq)`.
type LineSeq = (u64, u64);

/// What the audit reads of every goal-ledger record, read where the record
/// was parsed (a verification worker), so that the caller's thread, which
/// folds them in order, touches a record's tree only to keep a copy of the
/// rare ones (the first, completions, tamper acknowledgements).
#[derive(Debug)]
struct RecordFacts {
    files: FilesFact,
    kind: Kind,
    /// The chained `seq` ([`chain_fields`]).
    seq: Option<u64>,
    /// `seq` as a plain unsigned integer, chained or not.
    plain_seq: Option<u64>,
    revision: Option<u64>,
    /// A crash-recovery marker ([`txn::is_recovery_marker`]).
    recovery: bool,
    downgrade: Option<(u64, bool)>,
    /// The `k` of each steering key the record accepts (chained records).
    keys: Vec<String>,
}

/// The record kinds the fold treats apart.
#[derive(Debug, PartialEq, Eq)]
enum Kind {
    AggregateCompleted,
    TamperAcknowledged,
    Other,
}

impl RecordFacts {
    /// The facts, and whether the fold needs the record's tree: it keeps a
    /// copy of completions and tamper acknowledgements (and of the first
    /// record, which the chain verifier always keeps).
    /// The top-level members [`RecordFacts::of`] reads (a unit test checks
    /// that it reads no other).
    const MEMBERS: &'static [&'static str] = &[
        "kind",
        "event",
        "seq",
        "prev",
        "revision",
        "files",
        "steering",
        "proposalDigest",
        "mutationKind",
        "idempotencyKey",
        "repair",
        binding::PLAN_SHA256,
    ];

    fn extract(v: &Value) -> (RecordFacts, bool) {
        let f = RecordFacts::of(v);
        let keep = f.kind != Kind::Other;
        (f, keep)
    }

    fn of(v: &Value) -> RecordFacts {
        let kind = match entry_kind(v) {
            Some(k) if k == LedgerKind::AggregateCompleted.as_str() => Kind::AggregateCompleted,
            Some(k) if k == binding::TAMPER_ACKNOWLEDGED => Kind::TamperAcknowledged,
            _ => Kind::Other,
        };
        let seq = chain_fields(v).map(|(seq, _)| seq);
        let keys = match seq {
            Some(_) => crate::goals::journal::keys_of(v, None)
                .into_iter()
                .filter_map(|k| k.0.get("k").and_then(Value::as_str).map(str::to_owned))
                .collect(),
            None => Vec::new(),
        };
        RecordFacts {
            files: FilesFact::of(v),
            kind,
            seq,
            plain_seq: v.get("seq").and_then(Value::as_u64),
            revision: v.get("revision").and_then(Value::as_u64),
            recovery: txn::is_recovery_marker(v),
            downgrade: binding::Downgrade::fact(v),
            keys,
        }
    }
}

/// How one state directory is judged: the audit's flags and what the
/// other ledgers established.
pub(crate) struct Judging<'a> {
    /// `--allow-legacy`: a wholly unchained ledger is a warning.
    pub allow_legacy: bool,
    /// `--strict`.
    pub strict: bool,
    /// Re-validates a recorded final gate (docs/threat-model.md#i10).
    pub gates: &'a Revalidate<'a>,
    /// User decisions the gate ledger backs (docs/threat-model.md#i12).
    pub verified: &'a super::decisions::Verified,
}

/// Audits the state directory `display` (repo-relative) opened as `dir`.
pub(crate) fn audit(
    dir: &Dir,
    display: &str,
    layout: &ProfileLayout,
    judging: &Judging<'_>,
    progress: &mut dyn Progress,
) -> Audited {
    let Judging {
        allow_legacy,
        strict,
        gates,
        verified,
    } = *judging;
    let mut report = ReportBuilder::new(display, ReportKind::Plan);
    let goals_display = format!("{display}/{GOALS}");
    let ledger_display = format!("{display}/{LEDGER}");
    let plan = match plan_file::read(dir, display, layout) {
        Ok(p) => p,
        Err(f) => {
            report.push(*f);
            None
        }
    };
    let plan_unreadable = plan.is_none() && dir.symlink_metadata(GOALS).is_ok();
    let lm = plan
        .as_ref()
        .and_then(Plan::last_mutation)
        .map(|(revision, from_seq, _)| (revision, from_seq));
    let mut files = LedgerFiles::new(&ledger_display);
    let mut got = Collected::default();
    let mut head: Option<(Head, bool)> = None;
    let mut wholly_unchained = false;
    match open_state_file(dir, LEDGER, &ledger_display) {
        Opened::Absent => {}
        Opened::Problem(f) => report.push(f),
        Opened::File(file, size) => {
            progress.phase(&format!("verifying {ledger_display}"), "bytes", size);
            let mut fold = |line: u64, v: &Value, f: RecordFacts| {
                files.record_files(line, f.files);
                if got.first.is_none() {
                    got.first = Some((line, v.clone()));
                }
                if f.kind == Kind::AggregateCompleted {
                    got.finals.push(FinalEntry::of(line, v));
                }
                got.downgrade.feed_fact(f.downgrade);
                if let Some(seq) = f.seq {
                    for key in f.keys {
                        match got.accepted_keys.get(&key) {
                            Some(first) => {
                                got.reaccepted.push((key, *first, (line, seq)));
                            }
                            None => {
                                got.accepted_keys.insert(key, (line, seq));
                            }
                        }
                    }
                }
                if f.kind == Kind::TamperAcknowledged {
                    got.acknowledged.push((line, f.plain_seq, v.clone()));
                }
                if let (Some((revision, from_seq)), Some(seq)) = (lm, f.seq)
                    && seq >= from_seq
                    && f.revision == Some(revision)
                    && !f.recovery
                {
                    got.landed += 1;
                }
            };
            // docs/threat-model.md#i10: after the first chained record an
            // unchained one is an error, whatever the profile's
            // `ledger.foreignRecords` says.
            match scan_ledger_split(
                file,
                &ledger_display,
                ForeignSeverity::Error,
                progress,
                &Extract {
                    members: Some(RecordFacts::MEMBERS),
                    read: &RecordFacts::extract,
                },
                &mut fold,
            ) {
                Ok(s) => {
                    let torn = s.findings.iter().any(|f| f.code == Code::LedgerTornTail);
                    wholly_unchained = s.chain.records > 0 && s.chain.chained == 0;
                    for f in s.findings {
                        report.push(legacy(f, allow_legacy));
                    }
                    if let Some(f) = index_mismatch(dir, display, &ledger_display) {
                        report.push(f);
                    }
                    head = Some((
                        Head {
                            len: s.chain.bytes,
                            records: s.chain.records,
                            last_seq: s.chain.last_seq.unwrap_or(0),
                            last_revision: s.chain.last_revision.unwrap_or(0),
                            last_offset: None,
                            last_hash: s.chain.head.clone(),
                        },
                        torn,
                    ));
                }
                Err(f) => report.push(*f),
            }
        }
    }
    for f in files.invalid.drain(..) {
        report.push(f);
    }
    for (key, (line0, seq0), (line, seq)) in &got.reaccepted {
        report.push(
            Finding::new(
                Code::SteeringKeyReaccepted,
                Some(&ledger_display),
                format!(
                    "line {line} (seq {seq}): steering key `{key}` was already accepted at line {line0} (seq {seq0}); the proposal was applied twice (the key index was edited?)"
                ),
            )
            .with_detail(json!({"line": line, "seq": seq, "key": key, "firstLine": line0, "firstSeq": seq0})),
        );
    }
    let records = head.as_ref().map_or(0, |(h, _)| h.records);
    if !plan_unreadable {
        let pending = agreement(
            &mut report,
            plan.as_ref(),
            head.as_ref(),
            got.landed,
            display,
        );
        if let Some(p) = &plan {
            bound(&mut report, dir, display, p, pending, &got.downgrade);
        }
    }
    for (line, seq, e) in &got.acknowledged {
        let f = Finding::new(
            Code::TamperAcknowledged,
            Some(&ledger_display),
            format!(
                "line {line}: `repair --accept-tampered` adopted a plan its ledger did not vouch for ({}); rationale: {}",
                e.pointer("/tamper/codes")
                    .and_then(Value::as_array)
                    .map(|c| c.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                    .unwrap_or_default(),
                e.get("rationale").and_then(Value::as_str).unwrap_or("none")
            ),
        )
        .with_detail(json!({"line": line, "seq": seq, "tamper": e.get("tamper")}));
        report.push(if strict {
            f.with_severity(crate::finding::Severity::Error)
        } else {
            f
        });
    }
    if let Some(p) = &plan {
        let last_seq = head.as_ref().map_or(0, |(h, _)| h.last_seq);
        let legacy_ok = allow_legacy && wholly_unchained;
        let rules_name = p.str("gateRules").map(str::to_owned);
        let revalidate = |gate: &Value| {
            rules_name
                .as_deref()
                .and_then(|name| gates(layout, name, gate))
        };
        for f in completion::check(
            p,
            &got.finals,
            last_seq,
            legacy_ok,
            &goals_display,
            &revalidate,
        ) {
            report.push(f);
        }
        for f in super::decisions::check(p, verified, strict, &goals_display) {
            report.push(f);
        }
    }
    let archives = archives(dir, display, allow_legacy, progress, &mut report);
    if let Some((line, first)) = &got.first {
        archive_link(
            &mut report,
            display,
            &ledger_display,
            *line,
            first,
            &archives,
        );
    }
    let checked = plan.is_some() || records > 0;
    if !checked && report.findings().is_empty() {
        report.push(Finding::new(
            Code::NothingToVerify,
            Some(display),
            "the state directory holds neither a plan nor any ledger record; pass --allow-empty to accept that",
        ));
    }
    Audited {
        report,
        files,
        checked,
        records,
        plan,
    }
}

/// Re-validates a recorded final gate with the named gate rules in the
/// profile's evidence root: why it fails, or `None`.
pub(crate) type Revalidate<'a> = dyn Fn(&ProfileLayout, &str, &Value) -> Option<String> + 'a;

/// `LEDGER_NOT_CHAINED` (docs/threat-model.md#i10): an error that names its fix,
/// or, with `--allow-legacy`, a warning that says the ledger was accepted as
/// legacy.
pub(crate) fn legacy(f: Finding, allow_legacy: bool) -> Finding {
    if f.code != Code::LedgerNotChained {
        return f;
    }
    if allow_legacy {
        let message = format!(
            "{}; accepted as a legacy (Node-written) ledger because of --allow-legacy",
            f.message
        );
        Finding {
            message,
            ..f.with_severity(crate::finding::Severity::Warning)
        }
    } else {
        let message = format!(
            "{}: nothing proves its records were not rewritten. A Node-written ledger passes with `--allow-legacy`; otherwise the chain was stripped",
            f.message
        );
        Finding { message, ..f }
    }
}

/// `LEDGER_INDEX_MISMATCH`: the chain verifies from its first record, but
/// the last record can be edited in place without breaking it (nothing
/// follows it); the engine's `.ledger.idx` remembers that record's offset and
/// digest. A missing or unreadable index (a cache) proves nothing either way.
fn index_mismatch(dir: &Dir, display: &str, ledger_display: &str) -> Option<Finding> {
    let Opened::File(mut file, len) = open_state_file(dir, LEDGER, ledger_display) else {
        return None;
    };
    if crate::goals::index::describes_prefix(dir, &mut file, len, u64::from(u32::MAX))? {
        return None;
    }
    Some(Finding::new(
        Code::LedgerIndexMismatch,
        Some(ledger_display),
        format!(
            "{display}/.ledger.idx names a last record that {ledger_display} no longer holds: the ledger was rewritten after the goal engine last wrote it (review it, then `repair --rebuild-index`)"
        ),
    ))
}

/// `PLAN_TAMPERED` / `LEDGER_TAMPERED` (docs/threat-model.md#i7), judged by the
/// goal engine's own binding check over the ledger's newest records, and
/// `PLAN_NOT_BOUND` for legacy state.
fn bound(
    report: &mut ReportBuilder,
    dir: &Dir,
    display: &str,
    plan: &Plan,
    pending: bool,
    downgrade: &binding::Downgrade,
) {
    let ledger_display = format!("{display}/{LEDGER}");
    let goals_display = format!("{display}/{GOALS}");
    let tail = match open_state_file(dir, LEDGER, &ledger_display) {
        Opened::File(mut file, size) => {
            let named = binding::named_head(plan.doc());
            let read = binding::read_tail_file(
                &mut file,
                size,
                named.as_ref().map(|h| h.seq),
                usize::MAX,
                u64::MAX,
            );
            match read {
                Ok(t) => t,
                Err(e) => {
                    report.push(Finding::new(
                        Code::IoError,
                        Some(&ledger_display),
                        format!("cannot read the end of `{ledger_display}`: {e}"),
                    ));
                    return;
                }
            }
        }
        _ => binding::Tail::default(),
    };
    let b = binding::judge_plan(plan, &tail, pending);
    let detail = b.to_json();
    let fix = "restore goals.json and ledger.jsonl from version control, or adopt the plan on the record with `repair --accept-tampered --rationale …`";
    if let Some(r) = &b.plan_tampered {
        report.push(
            Finding::new(
                Code::PlanTampered,
                Some(&goals_display),
                format!("{r}; {fix}"),
            )
            .with_detail(detail.clone()),
        );
    }
    let ledger_reason = b.ledger_tampered.clone().or_else(|| downgrade.finding());
    if let Some(r) = ledger_reason {
        report.push(
            Finding::new(
                Code::LedgerTampered,
                Some(&ledger_display),
                format!("{r}; {fix}"),
            )
            .with_detail(detail),
        );
    }
    if b.state == binding::State::Legacy {
        report.push(Finding::new(
            Code::PlanNotBound,
            Some(&goals_display),
            "neither the plan nor its ledger carries planSha256/ledgerHead (Node-written or older state): a hand edit of this plan cannot be detected until the goal engine next writes it",
        ));
    }
}

/// `LEDGER_BEHIND_PLAN` / `LEDGER_PLAN_MISMATCH` (docs/state-formats.md#ge-2),
/// decided by the goal engine's own recovery-check comparison (docs/verify.md#ev-2).
/// Returns whether entries of the plan's `lastMutation` are pending.
fn agreement(
    report: &mut ReportBuilder,
    plan: Option<&Plan>,
    head: Option<&(Head, bool)>,
    landed: u64,
    display: &str,
) -> bool {
    let empty = Head::default();
    let (ledger_head, torn) = head.map_or((&empty, false), |(h, t)| (h, *t));
    let a = txn::assess(plan, ledger_head, torn, &mut |_, _, _| landed as usize);
    let ledger = format!("{display}/{LEDGER}");
    let detail = json!({
        "planRevision": a.plan_revision,
        "ledgerRevision": a.ledger_revision,
        "lastSeq": a.last_seq,
    });
    let pending = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
    match a.consistency {
        Consistency::Ok => {}
        // A torn tail alone is reported by the chain verification.
        Consistency::Recoverable if a.missing.is_empty() => {}
        Consistency::Recoverable => {
            let missing = a.missing.len();
            report.push(
                Finding::new(
                    Code::LedgerBehindPlan,
                    Some(&ledger),
                    format!(
                        "the plan (revision {}) carries {missing} ledger entr{} that never reached the ledger (a crash between the plan write and the append); the next mutation or `repair` appends them",
                        a.plan_revision,
                        if missing == 1 { "y" } else { "ies" }
                    ),
                )
                .with_detail(detail),
            );
        }
        Consistency::Mismatch => {
            let what = match (plan.is_some(), head.is_some()) {
                (false, _) => format!(
                    "the ledger's last chained record has revision {} but there is no plan",
                    a.ledger_revision
                ),
                (true, false) => format!(
                    "the plan is at revision {} but there is no ledger",
                    a.plan_revision
                ),
                (true, true) => format!(
                    "the plan is at revision {} but the ledger's last chained record has revision {} (seq {})",
                    a.plan_revision, a.ledger_revision, a.last_seq
                ),
            };
            report.push(
                Finding::new(Code::LedgerPlanMismatch, Some(&ledger), what).with_detail(detail),
            );
        }
    }
    pending
}

/// Verifies the chain of every archived ledger (`.archive/<stamp>/ledger.jsonl`)
/// and returns the hash of each one's last record, by archive directory.
/// Files recorded by archived runs are not re-hashed: a newer run replaced them.
fn archives(
    dir: &Dir,
    display: &str,
    allow_legacy: bool,
    progress: &mut dyn Progress,
    report: &mut ReportBuilder,
) -> BTreeMap<String, Option<String>> {
    let mut heads = BTreeMap::new();
    let archive_display = format!("{display}/{ARCHIVE}");
    let adir = match dir.open_dir_nofollow(ARCHIVE) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return heads,
        Err(e) => {
            let p = if dir
                .symlink_metadata(ARCHIVE)
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                FileProblem::Symlink {
                    component: archive_display.clone(),
                }
            } else {
                FileProblem::Io(e)
            };
            let (code, why) = problem_finding(&p);
            report.push(Finding::new(code, Some(&archive_display), why));
            return heads;
        }
    };
    let mut entries = Vec::new();
    // One level (`descend` is always false): the depth bound is never met.
    if let Err(e) = walk::walk(
        &adir,
        &archive_display,
        &mut |_| false,
        &mut |e| entries.push(e.clone()),
        &mut |_| {},
    )
    .map(|w| debug_assert!(w.too_deep.is_empty()))
    {
        report.push(Finding::new(
            Code::IoError,
            Some(&e.path),
            format!("could not list the archive directory: {}", e.error),
        ));
    }
    for e in entries {
        let name = e.path.rsplit('/').next().unwrap_or_default().to_owned();
        match e.kind {
            EntryKind::Dir => {}
            EntryKind::Symlink => {
                report.push(Finding::new(
                    Code::PathSymlink,
                    Some(&e.path),
                    "an archived run is a symlink; symlinks are never followed",
                ));
                continue;
            }
            _ => continue,
        }
        let Ok(run) = adir.open_dir_nofollow(&name) else {
            continue;
        };
        let ledger = format!("{}/{LEDGER}", e.path);
        let head = match open_state_file(&run, LEDGER, &ledger) {
            Opened::Absent => None,
            Opened::Problem(f) => {
                report.push(f);
                None
            }
            Opened::File(file, size) => {
                progress.phase(&format!("verifying {ledger}"), "bytes", size);
                match scan_chain(file, &ledger, ForeignSeverity::Error, progress) {
                    Ok(s) => {
                        for f in s.findings {
                            report.push(legacy(f, allow_legacy));
                        }
                        s.chain.head
                    }
                    Err(f) => {
                        report.push(*f);
                        None
                    }
                }
            }
        };
        heads.insert(e.path, head);
    }
    heads
}

/// `LEDGER_ARCHIVE_MISMATCH`: a first `plan_created` record's
/// `replaced.previousHead` must be the hash of the archived ledger's last
/// record (docs/state-formats.md#ge-2 step 4).
fn archive_link(
    report: &mut ReportBuilder,
    display: &str,
    ledger: &str,
    line: u64,
    first: &Value,
    heads: &BTreeMap<String, Option<String>>,
) {
    if entry_kind(first) != Some(LedgerKind::PlanCreated.as_str()) {
        return;
    }
    let Some(replaced) = first.get("replaced") else {
        return;
    };
    let (Some(named), Some(expected)) = (
        replaced.get("archive").and_then(Value::as_str),
        crate::ledger::previous_head_sha256(replaced),
    ) else {
        return;
    };
    // State-relative (`.archive/<name>`), or repo-relative as earlier
    // versions wrote it.
    let archive = if named.starts_with(&format!("{ARCHIVE}/")) {
        format!("{display}/{named}")
    } else {
        named.to_owned()
    };
    let archive = archive.as_str();
    let inside = archive
        .strip_prefix(display)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|r| r.starts_with(&format!("{ARCHIVE}/")));
    let actual = heads.get(archive).cloned().flatten();
    if inside && actual.as_deref() == Some(expected) {
        return;
    }
    report.push(
        Finding::new(
            Code::LedgerArchiveMismatch,
            Some(ledger),
            format!(
                "line {line}: plan_created.replaced.previousHead is {expected} but the last record of {archive}/{LEDGER} hashes to {}",
                actual.as_deref().unwrap_or("nothing (the archived ledger is missing)")
            ),
        )
        .with_detail(json!({"line": line, "archive": archive, "expected": expected, "actual": actual})),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json::{Members, object_members};

    /// `RecordFacts::of` reads no member outside `MEMBERS`: the facts of
    /// every kind of record are the same read whole or read through
    /// `object_members`, which builds only those (the audit's workers do).
    #[test]
    fn record_facts_read_only_their_members() {
        let prev = "a".repeat(64);
        let sha = "b".repeat(64);
        let steering = json!({
            "invariant": {"accepted": true}, "targetGoalIds": ["G001"],
            "promptSignature": "sig", "idempotencyKey": "inner", "proposalDigest": "d1"
        });
        let records = [
            json!({"seq": 1, "prev": prev, "kind": "evidence_captured", "revision": 3,
                   "files": [{"path": "a.txt", "size": 3, "sha256": sha, "role": "log"}, {"path": 7}],
                   "planSha256": sha, "goalId": "G001", "note": {"x": [1, 2]}}),
            json!({"seq": 2, "prev": prev, "event": "steering_accepted", "steering": steering,
                   "idempotencyKey": "outer", "proposalDigest": "d2", "mutationKind": "annotate_ledger",
                   "revision": 4}),
            json!({"seq": 3, "prev": prev, "kind": "criteria_revised", "steering": steering}),
            json!({"seq": 4, "prev": prev, "kind": "batch_updated", "steering": steering,
                   "mutationKind": "batch"}),
            json!({"seq": 5, "prev": prev, "kind": LedgerKind::AggregateCompleted.as_str(),
                   "files": "not an array", "revision": 9}),
            json!({"seq": 6, "prev": prev, "kind": binding::TAMPER_ACKNOWLEDGED, "planSha256": 1}),
            json!({"seq": 7, "prev": prev, "kind": LedgerKind::LedgerRepaired.as_str(),
                   "repair": {"recoveredCount": 2}, "revision": 9}),
            json!({"seq": 8, "kind": "evidence_captured", "files": []}),
            json!({"kind": "steering_accepted", "steering": steering, "seq": "9"}),
            json!({"seq": 0, "prev": "short", "files": [{"path": "b", "size": 1, "sha256": sha}]}),
        ];
        for mut record in records {
            // A member the facts do not read, which is not built.
            record["at"] = json!("2026-05-01T12:00:00.000Z");
            let whole = format!("{:?}", RecordFacts::extract(&record));
            let text = serde_json::to_vec(&record).unwrap();
            let Members::Chosen(chosen) = object_members(&text, RecordFacts::MEMBERS) else {
                panic!("{record}");
            };
            assert!(!chosen.contains_key("at"));
            let part = format!("{:?}", RecordFacts::extract(&Value::Object(chosen)));
            assert_eq!(part, whole, "{record}");
        }
    }
}
