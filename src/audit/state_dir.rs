//! The audit of one goal-engine state directory: the ledger's chain, the
//! plan, their agreement, completion claims and the archived runs.

use std::collections::BTreeMap;

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::completion::{self, FinalEntry};
use super::consistency::{self, Consistency, LedgerHead};
use super::layout::ProfileLayout;
use super::plan_file::{self, PlanDoc};
use super::progress::Progress;
use super::recorded::LedgerFiles;
use super::scan::{Opened, entry_kind, open_state_file, scan_ledger};
use crate::evidence::verify::problem_finding;
use crate::evidence::{Code, Finding, ReportBuilder, ReportKind};
use crate::ledger::chain_fields;
use crate::sandbox::open::FileProblem;
use crate::sandbox::walk::{self, EntryKind};

/// Plan file name inside a state directory.
pub(crate) const GOALS: &str = "goals.json";
/// Ledger file name inside a state directory.
pub(crate) const LEDGER: &str = "ledger.jsonl";
/// Archive directory inside a state directory (goal-engine.md §2.9).
const ARCHIVE: &str = ".archive";

/// The audit of one state directory, before recorded files are re-hashed.
pub(crate) struct Audited {
    pub(crate) report: ReportBuilder,
    pub(crate) files: LedgerFiles,
    /// A plan was read or ledger records were verified.
    pub(crate) checked: bool,
    pub(crate) records: u64,
}

/// What the ledger scan of the current run collected.
#[derive(Default)]
struct Collected {
    finals: Vec<FinalEntry>,
    first: Option<(u64, Value)>,
    landed: u64,
}

/// Audits the state directory `display` (repo-relative) opened as `dir`.
pub(crate) fn audit(
    dir: &Dir,
    display: &str,
    layout: &ProfileLayout,
    completion_keys: &[String],
    progress: &mut dyn Progress,
) -> Audited {
    let mut report = ReportBuilder::new(display, ReportKind::Plan);
    let goals_display = format!("{display}/{GOALS}");
    let ledger_display = format!("{display}/{LEDGER}");
    let plan = match plan_file::read(dir, &goals_display, layout, completion_keys) {
        Ok(p) => p,
        Err(f) => {
            report.push(*f);
            None
        }
    };
    let plan_unreadable = plan.is_none() && dir.symlink_metadata(GOALS).is_ok();
    let lm = plan.as_ref().and_then(PlanDoc::last_mutation);
    let mut files = LedgerFiles::new(&ledger_display);
    let mut got = Collected::default();
    let mut head: Option<(LedgerHead, u64, bool)> = None;
    match open_state_file(dir, LEDGER, &ledger_display) {
        Opened::Absent => {}
        Opened::Problem(f) => report.push(f),
        Opened::File(file, size) => {
            progress.phase(&format!("verifying {ledger_display}"), "bytes", size);
            let mut visit = |line: u64, v: &Value| {
                files.record_entry(line, v);
                if got.first.is_none() {
                    got.first = Some((line, v.clone()));
                }
                let kind = entry_kind(v);
                if kind == Some("aggregate_completed") {
                    got.finals.push(FinalEntry::of(line, v));
                }
                if let (Some(lm), Some((seq, _))) = (lm, chain_fields(v))
                    && seq >= lm.from_seq
                    && v.get("revision").and_then(Value::as_u64) == Some(lm.revision)
                    && kind != Some("ledger_repaired")
                {
                    got.landed += 1;
                }
            };
            match scan_ledger(
                file,
                &ledger_display,
                layout.foreign_records,
                progress,
                &mut visit,
            ) {
                Ok(s) => {
                    let torn = s.findings.iter().any(|f| f.code == Code::LedgerTornTail);
                    for f in s.findings {
                        report.push(f);
                    }
                    head = Some((
                        LedgerHead {
                            last_seq: s.chain.last_seq.unwrap_or(0),
                            last_revision: s.chain.last_revision.unwrap_or(0),
                        },
                        s.chain.records,
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
    let records = head.map_or(0, |(_, n, _)| n);
    if !plan_unreadable {
        agreement(&mut report, plan.as_ref(), lm, head, got.landed, display);
    }
    if let Some(p) = &plan {
        let last_seq = head.map_or(0, |(h, _, _)| h.last_seq);
        for f in completion::check(p, &got.finals, last_seq, &goals_display) {
            report.push(f);
        }
    }
    let archives = archives(dir, display, layout, progress, &mut report);
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
            "the state directory holds neither a plan nor any ledger record",
        ));
    }
    Audited {
        report,
        files,
        checked,
        records,
    }
}

/// `LEDGER_BEHIND_PLAN` / `LEDGER_PLAN_MISMATCH` (goal-engine.md §2.5.4, §2.8).
fn agreement(
    report: &mut ReportBuilder,
    plan: Option<&PlanDoc>,
    lm: Option<plan_file::LastMutation>,
    head: Option<(LedgerHead, u64, bool)>,
    landed: u64,
    display: &str,
) {
    let ledger_head = head.map(|(h, _, _)| h).unwrap_or_default();
    let rp = plan.map_or(0, PlanDoc::revision);
    let ledger = format!("{display}/{LEDGER}");
    let detail = json!({
        "planRevision": rp,
        "ledgerRevision": ledger_head.last_revision,
        "lastSeq": ledger_head.last_seq,
    });
    match consistency::assess(rp, lm, ledger_head, landed) {
        Consistency::Ok => {}
        Consistency::Recoverable { missing } => report.push(
            Finding::new(
                Code::LedgerBehindPlan,
                Some(&ledger),
                format!(
                    "the plan (revision {rp}) carries {missing} ledger entr{} that never reached the ledger (a crash between the plan write and the append); the next mutation or `repair` appends them",
                    if missing == 1 { "y" } else { "ies" }
                ),
            )
            .with_detail(detail),
        ),
        Consistency::Mismatch => {
            let what = match (plan.is_some(), head.is_some()) {
                (false, _) => format!(
                    "the ledger's last chained record has revision {} but there is no plan",
                    ledger_head.last_revision
                ),
                (true, false) => format!("the plan is at revision {rp} but there is no ledger"),
                (true, true) => format!(
                    "the plan is at revision {rp} but the ledger's last chained record has revision {} (seq {})",
                    ledger_head.last_revision, ledger_head.last_seq
                ),
            };
            report.push(
                Finding::new(Code::LedgerPlanMismatch, Some(&ledger), what).with_detail(detail),
            );
        }
    }
}

/// Verifies the chain of every archived ledger (`.archive/<stamp>/ledger.jsonl`)
/// and returns the hash of each one's last record, by archive directory.
/// Files recorded by archived runs are not re-hashed: a newer run replaced them.
fn archives(
    dir: &Dir,
    display: &str,
    layout: &ProfileLayout,
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
    if let Err(e) = walk::walk(
        &adir,
        &archive_display,
        &mut |_| false,
        &mut |e| entries.push(e.clone()),
        &mut |_| {},
    ) {
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
                match scan_ledger(
                    file,
                    &ledger,
                    layout.foreign_records,
                    progress,
                    &mut |_, _| {},
                ) {
                    Ok(s) => {
                        for f in s.findings {
                            report.push(f);
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
/// record (goal-engine.md §2.9 step 4).
fn archive_link(
    report: &mut ReportBuilder,
    display: &str,
    ledger: &str,
    line: u64,
    first: &Value,
    heads: &BTreeMap<String, Option<String>>,
) {
    if entry_kind(first) != Some("plan_created") {
        return;
    }
    let Some(replaced) = first.get("replaced") else {
        return;
    };
    let (Some(archive), Some(expected)) = (
        replaced.get("archive").and_then(Value::as_str),
        replaced.get("previousHead").and_then(Value::as_str),
    ) else {
        return;
    };
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
