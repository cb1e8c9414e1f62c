//! The hook gate ledger (docs/hook-contracts.md#h-3): chain intact, accepted receipts and
//! their deliverables recorded for re-hashing, no receipt digest accepted for
//! two claimants, waivers and overrides reported.

use std::collections::HashMap;

use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::progress::Progress;
use super::recorded::LedgerFiles;
use super::scan::{Opened, entry_kind, open_state_file, scan_ledger};
use crate::finding::problem_finding;
use crate::finding::{Code, Finding, ReportBuilder, ReportKind, Severity};
use crate::hooks::receipt::reuse::Claimant;
use crate::ledger::ForeignSeverity;
use crate::sandbox::open::{self, FileProblem};
use crate::sandbox::{PathLimits, RelPath};

pub use crate::hooks::diagnostics::STATE_DIR;
pub use crate::hooks::gate_ledger::FILE;
use crate::hooks::gate_ledger::GateLedgerKind;

/// The audit of the gate ledger, before recorded files are re-hashed.
pub(crate) struct Audited {
    pub(crate) report: ReportBuilder,
    pub(crate) files: LedgerFiles,
    pub(crate) checked: bool,
    pub(crate) records: u64,
}

/// Audits `.omo/evidence-gate/ledger.jsonl`; `None` when it does not exist.
pub(crate) fn audit(
    root: &Dir,
    strict: bool,
    allow_legacy: bool,
    progress: &mut dyn Progress,
) -> Option<Audited> {
    let display = format!("{STATE_DIR}/{FILE}");
    let rel = RelPath::parse(STATE_DIR, PathLimits::default()).expect("constant");
    let mut report = ReportBuilder::new(&display, ReportKind::GateLedger);
    let dir = match open::open_dir(root, &rel) {
        Ok(d) => d,
        Err(FileProblem::Missing) => return None,
        Err(p) => {
            let (code, why) = problem_finding(&p);
            report.push(Finding::new(code, Some(STATE_DIR), why));
            return Some(Audited {
                report,
                files: LedgerFiles::gate(&display),
                checked: false,
                records: 0,
            });
        }
    };
    let (file, size) = match open_state_file(&dir, FILE, &display) {
        Opened::Absent => return None,
        Opened::Problem(f) => {
            report.push(f);
            return Some(Audited {
                report,
                files: LedgerFiles::gate(&display),
                checked: false,
                records: 0,
            });
        }
        Opened::File(f, size) => (f, size),
    };
    let mut files = LedgerFiles::gate(&display);
    let mut accepted: HashMap<String, (u64, Claimant)> = HashMap::new();
    let mut findings = Vec::new();
    let escalate = |f: Finding| {
        if strict {
            f.with_severity(Severity::Error)
        } else {
            f
        }
    };
    progress.phase(&format!("verifying {display}"), "bytes", size);
    let mut visit = |line: u64, v: &Value| {
        files.record_entry(line, v);
        let who = || {
            v.get("agent_type")
                .and_then(Value::as_str)
                .unwrap_or("a worker")
                .to_owned()
        };
        let codes: Vec<Value> = v
            .get("findings")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|f| f.get("code").cloned())
            .collect();
        match entry_kind(v).and_then(GateLedgerKind::parse) {
            Some(GateLedgerKind::ReceiptAccepted) => {
                let Some(receipt) = v.get("receipt").filter(|r| r.is_object()) else {
                    findings.push(
                        Finding::new(
                            Code::LedgerFilesInvalid,
                            Some(&display),
                            format!("line {line}: a `receipt_accepted` entry has no `receipt` object"),
                        )
                        .with_detail(json!({"line": line, "field": "receipt"})),
                    );
                    return;
                };
                let listed = v
                    .get("files")
                    .and_then(Value::as_array)
                    .is_some_and(|fs| fs.iter().any(|f| f.get("path") == receipt.get("path")));
                if !listed {
                    files.record(line, v, receipt, "receipt");
                }
                // The normalized digest reuse protection keys on (docs/threat-model.md#i4); entries
                // of older builds carry only the exact one.
                let Some(sha) = receipt
                    .get("normalized_sha256")
                    .or_else(|| receipt.get("sha256"))
                    .and_then(Value::as_str)
                else {
                    return;
                };
                let me = Claimant::of(v);
                match accepted.get(sha) {
                    Some((first, them)) if !them.same_stop(&me) => findings.push(
                        Finding::new(
                            Code::LedgerReceiptReused,
                            receipt.get("path").and_then(Value::as_str),
                            format!(
                                "line {line}: receipt digest {sha} was already accepted at line {first} for another agent or turn"
                            ),
                        )
                        .with_detail(json!({"ledger": display, "ledgerLine": line, "firstLine": first, "sha256": sha})),
                    ),
                    Some(_) => {}
                    None => {
                        accepted.insert(sha.to_owned(), (line, me));
                    }
                }
            }
            Some(GateLedgerKind::ReceiptWaived) => findings.push(escalate(
                Finding::new(
                    Code::LedgerReceiptWaived,
                    Some(&display),
                    format!(
                        "line {line}: {} stopped without accepted evidence; the receipt was waived ({})",
                        who(),
                        v.get("reason").and_then(Value::as_str).unwrap_or("no reason recorded")
                    ),
                )
                .with_detail(json!({"line": line, "findings": codes})),
            )),
            Some(GateLedgerKind::ReceiptOverride) => findings.push(escalate(
                Finding::new(
                    Code::LedgerReceiptOverride,
                    Some(&display),
                    format!(
                        "line {line}: {} stopped without accepted evidence after the attempt cap",
                        who()
                    ),
                )
                .with_detail(json!({"line": line, "count": v.get("count"), "findings": codes})),
            )),
            Some(GateLedgerKind::GateLedgerRewound) => findings.push(escalate(
                Finding::new(
                    Code::GateLedgerRewound,
                    Some(&display),
                    format!(
                        "line {line}: the hook restored {} record(s) of this ledger from its per-user witness: someone deleted or truncated it",
                        v.get("restored_records").and_then(Value::as_u64).unwrap_or(0)
                    ),
                )
                .with_detail(json!({"line": line, "restored_records": v.get("restored_records")})),
            )),
            Some(GateLedgerKind::GateLedgerForged) => findings.push(escalate(
                Finding::new(
                    Code::GateLedgerForged,
                    Some(&display),
                    format!(
                        "line {line}: the hook dropped {} record(s) from this ledger that its per-user witness never wrote",
                        v.get("forged_records").and_then(Value::as_u64).unwrap_or(0)
                    ),
                )
                .with_detail(json!({"line": line, "forged_records": v.get("forged_records"), "forged_sha256": v.get("forged_sha256")})),
            )),
            // Read by the user-decision check (`super::decisions`); entries
            // of unknown kinds carry nothing the audit checks.
            Some(GateLedgerKind::UserDecisionVerified) | None => {}
        }
    };
    let records = match scan_ledger(file, &display, ForeignSeverity::Error, progress, &mut visit) {
        Ok(s) => {
            for f in s.findings {
                report.push(super::state_dir::legacy(f, allow_legacy));
            }
            s.chain.records
        }
        Err(f) => {
            report.push(*f);
            0
        }
    };
    for f in files.invalid.drain(..).chain(findings) {
        report.push(f);
    }
    if records == 0 && report.findings().is_empty() {
        report.push(Finding::new(
            Code::NothingToVerify,
            Some(&display),
            "the gate ledger holds no record; pass --allow-empty to accept that",
        ));
    }
    Some(Audited {
        report,
        files,
        checked: records > 0,
        records,
    })
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::audit::decisions::Verified;
    use crate::audit::progress::Silent;
    use crate::hooks::gate_ledger::append;

    /// Every kind a hook writes is one the audit recognises: each entry
    /// yields the audit's finding for it, or (a verified user decision) is
    /// read by the user-decision check.
    #[test]
    fn the_audit_recognises_every_kind_the_hooks_write() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        root.create_dir_all(STATE_DIR).unwrap();
        let state = root.open_dir(STATE_DIR).unwrap();
        for &kind in GateLedgerKind::ALL {
            let mut e = serde_json::Map::new();
            e.insert("kind".into(), json!(kind.as_str()));
            e.insert("goalId".into(), json!("G1"));
            e.insert("decisionSha256".into(), json!(kind.as_str()));
            append(&state, e).unwrap();
        }
        let audited = audit(&root, false, false, &mut Silent).expect("the ledger exists");
        let codes: Vec<Code> = audited.report.findings().iter().map(|f| f.code).collect();
        let verified = Verified::read(&root, &mut Silent);
        for &kind in GateLedgerKind::ALL {
            let seen = match kind {
                // No `receipt` object: the audit reads the entry and says so.
                GateLedgerKind::ReceiptAccepted => codes.contains(&Code::LedgerFilesInvalid),
                GateLedgerKind::ReceiptWaived => codes.contains(&Code::LedgerReceiptWaived),
                GateLedgerKind::ReceiptOverride => codes.contains(&Code::LedgerReceiptOverride),
                GateLedgerKind::GateLedgerRewound => codes.contains(&Code::GateLedgerRewound),
                GateLedgerKind::GateLedgerForged => codes.contains(&Code::GateLedgerForged),
                GateLedgerKind::UserDecisionVerified => verified.count() == 1,
            };
            assert!(seen, "{} not recognised: {codes:?}", kind.as_str());
        }
        assert_eq!(audited.records, GateLedgerKind::ALL.len() as u64);
    }
}
