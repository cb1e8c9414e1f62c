//! `repair` (docs/engine.md#ge-4): `--check` (read-only chain and plan
//! verification), the recovery check under the lock, `--accept-plan` and
//! `--rebuild-index`.

use std::io::BufReader;

use serde_json::{Value, json};

use serde::Serialize;

use super::entry;
use super::outcome::{LedgerHead, LedgerRecord};
use crate::finding::{Code, Severity};
use crate::goals::error::GoalError;
use crate::goals::journal::{Head, LedgerKind};
use crate::goals::plan::{self, Plan};
use crate::goals::profile::ForeignRecords;
use crate::goals::txn::{self, Consistency, OnMismatch, Write};
use crate::goals::{Engine, binding, state};
use crate::ledger::{ForeignSeverity, verify_chain};

/// What `repair` should do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RepairMode {
    /// `--check`: read-only verification.
    Check,
    /// Default: the recovery check under the lock.
    Recover,
    /// `--accept-plan --rationale <text>`.
    AcceptPlan(String),
    /// `--accept-tampered --rationale <text>` (docs/threat-model.md#i7).
    AcceptTampered(String),
    /// `--rebuild-index`.
    RebuildIndex,
}

/// The result of `repair`.
#[derive(Debug)]
pub struct RepairOutcome {
    /// No error finding (check) / consistent afterwards (other modes).
    pub ok: bool,
    /// `--check` findings.
    pub findings: Vec<RepairFinding>,
    /// Actions taken (entries appended, index rebuilt).
    pub actions: Vec<RepairAction>,
    /// Plan/ledger agreement afterwards.
    pub consistency: Consistency,
    /// Plan revision afterwards.
    pub revision: u64,
    /// Ledger head afterwards.
    pub head: Option<Head>,
}

impl RepairOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> Option<LedgerHead> {
        self.head.as_ref().map(LedgerHead::from)
    }
}

/// One `repair --check` finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RepairFinding {
    /// The finding code.
    #[serde(serialize_with = "code_name")]
    pub code: Code,
    /// How serious.
    pub severity: Severity,
    /// The sentence.
    pub message: String,
    /// The ledger line, when the finding is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    /// The record's `seq`, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub seq: Option<u64>,
}

fn code_name<S: serde::Serializer>(c: &Code, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(c.name())
}

/// One thing `repair` did.
#[derive(Debug, Clone, PartialEq)]
pub enum RepairAction {
    /// The ledger index was rebuilt from the ledger.
    IndexRebuilt {
        /// Records indexed.
        records: u64,
    },
    /// An interrupted `create-goals --force` was finished or undone.
    ForceSwitch {
        /// `force_switch_finished` or `force_switch_undone`.
        kind: String,
        /// The archive of the replaced run.
        archive: String,
    },
    /// A ledger entry was appended (recovered from the plan, or the
    /// acknowledging entry of `--accept-plan` / `--accept-tampered`).
    Appended(LedgerRecord),
}

impl RepairAction {
    /// `kind`.
    pub fn kind(&self) -> &str {
        match self {
            RepairAction::IndexRebuilt { .. } => "index_rebuilt",
            RepairAction::ForceSwitch { kind, .. } => kind,
            RepairAction::Appended(e) => e.kind_str().unwrap_or_default(),
        }
    }
    /// The appended entry's `repair` object.
    pub fn repair(&self) -> Option<&Value> {
        match self {
            RepairAction::Appended(e) => e.get("repair"),
            _ => None,
        }
    }
}

/// Runs `repair`.
pub fn run(engine: &Engine, mode: RepairMode) -> Result<RepairOutcome, GoalError> {
    match mode {
        RepairMode::Check => check(engine),
        RepairMode::Recover => recover(engine, false),
        RepairMode::RebuildIndex => recover(engine, true),
        RepairMode::AcceptPlan(rationale) => accept_plan(engine, &rationale),
        RepairMode::AcceptTampered(rationale) => accept_tampered(engine, &rationale),
    }
}

fn finding(
    code: Code,
    severity: Severity,
    line: Option<u64>,
    seq: Option<u64>,
    message: String,
) -> RepairFinding {
    RepairFinding {
        code,
        severity,
        message,
        line,
        seq,
    }
}

fn check(engine: &Engine) -> Result<RepairOutcome, GoalError> {
    let dir = engine.state_dir()?;
    let plan = plan::read(
        dir.as_ref(),
        &engine.paths,
        &engine.profile,
        &engine.now().1,
    )?;
    let dir = dir.expect("a plan was read");
    // The replaced run's ledger while an interrupted create-goals --force
    // has not yet put the new plan in place (txn::switch).
    let ledger_file =
        txn::switch::ledger_name(&dir, &engine.paths, engine.profile.limits.max_plan_bytes);
    let display = engine.paths.file(ledger_file);
    let foreign = match engine.profile.ledger.foreign_records {
        ForeignRecords::Error => ForeignSeverity::Error,
        ForeignRecords::Warning => ForeignSeverity::Warning,
    };
    let mut findings = Vec::new();
    let mut first: Option<Value> = None;
    let mut head = Head::default();
    let mut torn = false;
    let mut downgrade = binding::Downgrade::default();
    let mut acknowledged = Vec::new();
    if let Some((file, _)) = state::open_file(&dir, ledger_file, &display)? {
        let mut reader = BufReader::with_capacity(256 * 1024, file);
        let rep = verify_chain(&mut reader, foreign, &mut |line, v| {
            if first.is_none() {
                first = Some(v.clone());
            }
            downgrade.feed(v);
            if v.get("kind").and_then(Value::as_str) == Some(binding::TAMPER_ACKNOWLEDGED) {
                acknowledged.push((line, v.get("seq").and_then(Value::as_u64)));
            }
        })
        .map_err(|e| GoalError::io(&display, "read", &e))?;
        for f in &rep.findings {
            torn |= matches!(
                f.finding.code,
                Code::LedgerTornTail | Code::LedgerUnterminated
            );
            // The engine continues legacy (Node-written) ledgers; only the
            // CI audit makes an unchained ledger an error (docs/threat-model.md#i10).
            let severity = if f.finding.code == Code::LedgerNotChained {
                Severity::Warning
            } else {
                f.finding.severity
            };
            findings.push(finding(
                f.finding.code,
                severity,
                f.line,
                f.seq,
                f.finding.message.clone(),
            ));
        }
        head.last_seq = rep.last_seq.unwrap_or(0);
        head.last_revision = rep.last_revision.unwrap_or(0);
        head.records = rep.records;
        head.last_hash = rep.head.clone();
    }
    let lm_landed = |rev: u64, from: u64, want: usize| -> usize {
        let view = crate::goals::index::view_of(
            &dir,
            &engine.paths,
            ledger_file,
            engine.profile.limits.max_ledger_record_bytes,
        );
        view.map(|v| txn::count_landed_in(&dir, ledger_file, &v.head, rev, from, want, u64::MAX))
            .unwrap_or(0)
    };
    let a = txn::assess(Some(&plan), &head, torn, &mut |r, f, w| lm_landed(r, f, w));
    let behind = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
    if behind {
        findings.push(finding(
            Code::LedgerBehindPlan,
            Severity::Warning,
            None,
            None,
            format!(
                "the plan (revision {}) carries {} ledger entr{} that never reached the ledger; `repair` appends them",
                a.plan_revision,
                a.missing.len(),
                if a.missing.len() == 1 { "y" } else { "ies" }
            ),
        ));
    }
    if a.consistency == Consistency::Mismatch {
        findings.push(finding(
            Code::LedgerPlanMismatch,
            Severity::Error,
            None,
            None,
            format!(
                "the plan is at revision {} but the ledger's last chained record has revision {} (seq {})",
                a.plan_revision, a.ledger_revision, a.last_seq
            ),
        ));
    }
    if let Some(f) = archive_finding(engine, &dir, first.as_ref()) {
        findings.push(f);
    }
    // docs/threat-model.md#i7: the plan and its ledger vouch for each other.
    let max = engine.profile.limits.max_ledger_record_bytes;
    let view = crate::goals::index::view_of(&dir, &engine.paths, ledger_file, max)?;
    let b = txn::judge_in(&dir, ledger_file, &engine.paths, &view.head, &plan, behind)?;
    for (code, message) in binding_findings(&b, &downgrade) {
        findings.push(finding(code, Severity::Error, None, None, message));
    }
    if b.state == binding::State::Legacy {
        findings.push(finding(
            Code::PlanNotBound,
            Severity::Info,
            None,
            None,
            "neither the plan nor its ledger carries planSha256/ledgerHead (Node-written or older state); the next engine mutation binds them".into(),
        ));
    }
    for (line, seq) in acknowledged {
        findings.push(finding(
            Code::TamperAcknowledged,
            Severity::Warning,
            Some(line),
            seq,
            "repair --accept-tampered adopted a plan its ledger did not vouch for".into(),
        ));
    }
    let ok = !findings.iter().any(|f| f.severity == Severity::Error);
    Ok(RepairOutcome {
        ok,
        findings,
        actions: Vec::new(),
        consistency: a.consistency,
        revision: plan.revision(),
        head: Some(head),
    })
}

/// `PLAN_TAMPERED` / `LEDGER_TAMPERED` of a binding and of a ledger whose
/// last chained record dropped the binding.
pub(crate) fn binding_findings(
    b: &binding::Binding,
    downgrade: &binding::Downgrade,
) -> Vec<(Code, String)> {
    let mut out = Vec::new();
    if let Some(r) = &b.plan_tampered {
        out.push((Code::PlanTampered, r.clone()));
    }
    if let Some(r) = &b.ledger_tampered {
        out.push((Code::LedgerTampered, r.clone()));
    } else if let Some(r) = downgrade.finding() {
        out.push((Code::LedgerTampered, r));
    }
    out
}

/// `LEDGER_ARCHIVE_MISMATCH`: the first record's `replaced.previousHead`
/// must be the hash of the archived ledger's last record.
fn archive_finding(
    engine: &Engine,
    dir: &cap_std::fs::Dir,
    first: Option<&Value>,
) -> Option<RepairFinding> {
    let first = first?;
    if first.get("kind").and_then(Value::as_str) != Some(LedgerKind::PlanCreated.as_str()) {
        return None;
    }
    let replaced = first.get("replaced")?;
    let archive = replaced.get("archive")?.as_str()?;
    let expected = crate::ledger::previous_head_sha256(replaced)?;
    // State-relative (`.archive/<name>`), or repo-relative as earlier
    // versions wrote it.
    let rel = if archive.starts_with(&format!("{}/", state::ARCHIVE)) {
        archive
    } else {
        archive.strip_prefix(&format!("{}/", engine.paths.dir))?
    };
    let actual = state::open_chain(dir, rel, false)
        .ok()
        .flatten()
        .and_then(|d| state::open_file(&d, state::LEDGER, archive).ok().flatten())
        .and_then(|(mut f, _)| crate::ledger::read_tail(&mut f, u64::MAX).ok())
        .and_then(|t| t.last_record_hash);
    if actual.as_deref() == Some(expected) {
        return None;
    }
    Some(finding(
        Code::LedgerArchiveMismatch,
        Severity::Error,
        Some(1),
        None,
        format!(
            "plan_created.replaced.previousHead is {expected} but the last record of {archive}/ledger.jsonl hashes to {}",
            actual
                .as_deref()
                .unwrap_or("nothing (the archived ledger is missing)")
        ),
    ))
}

fn action_of(e: &Value) -> RepairAction {
    RepairAction::Appended(LedgerRecord::from_value(e.clone()))
}

fn recover(engine: &Engine, rebuild: bool) -> Result<RepairOutcome, GoalError> {
    if engine.state_dir()?.is_none() {
        return Err(plan::missing(&engine.paths, &engine.profile));
    }
    let mut locked = engine.lock_with("repair", rebuild)?;
    let plan = locked.read_plan()?;
    let a = locked.reconcile(Some(&plan), OnMismatch::RefuseTampered)?;
    let mut actions: Vec<RepairAction> = locked.repaired.iter().map(action_of).collect();
    if let Some(s) = &locked.switch_recovered {
        let field = |k: &str| {
            s.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        actions.insert(
            0,
            RepairAction::ForceSwitch {
                kind: field("kind"),
                archive: field("archive"),
            },
        );
    }
    if locked.rebuilt_index {
        actions.insert(
            0,
            RepairAction::IndexRebuilt {
                records: locked.view.head.records,
            },
        );
    }
    let consistency = if a.consistency == Consistency::Mismatch {
        Consistency::Mismatch
    } else {
        Consistency::Ok
    };
    let head = locked.view.head.clone();
    locked.finish()?;
    Ok(RepairOutcome {
        ok: consistency != Consistency::Mismatch,
        findings: Vec::new(),
        actions,
        consistency,
        revision: plan.revision(),
        head: Some(head),
    })
}

fn accept_plan(engine: &Engine, rationale: &str) -> Result<RepairOutcome, GoalError> {
    if engine.state_dir()?.is_none() {
        return Err(plan::missing(&engine.paths, &engine.profile));
    }
    let mut locked = engine.lock("repair")?;
    let mut plan: Plan = locked.read_plan()?;
    let a = locked.reconcile(Some(&plan), OnMismatch::RefuseTampered)?;
    let actions: Vec<RepairAction> = locked.repaired.iter().map(action_of).collect();
    if a.consistency != Consistency::Mismatch {
        let head = locked.view.head.clone();
        locked.finish()?;
        return Ok(RepairOutcome {
            ok: true,
            findings: Vec::new(),
            actions,
            consistency: Consistency::Ok,
            revision: plan.revision(),
            head: Some(head),
        });
    }
    let plan_sha = match state::read_file(
        &locked.dir,
        state::GOALS,
        &engine.paths.goals(),
        engine.profile.limits.max_plan_bytes,
    )? {
        Some(state::ReadOutcome::Bytes(b)) => crate::digest::sha256_hex(&b),
        _ => String::new(),
    };
    let base = a.plan_revision.max(a.ledger_revision);
    plan.set("revision", json!(base));
    let mut e = entry(&locked.now, LedgerKind::LedgerRepaired, None);
    e.insert(
        "message".into(),
        json!("Plan/ledger mismatch resolved by accepting the plan."),
    );
    e.insert(
        "repair".into(),
        json!({
            "reason": "plan_ledger_mismatch",
            "planRevision": a.plan_revision,
            "ledgerRevision": a.ledger_revision,
            "planSha256": plan_sha,
            "rationale": rationale,
        }),
    );
    adopt(locked, plan, e, actions)
}

/// `repair --accept-tampered --rationale <text>` (docs/threat-model.md#i7): adopts
/// a plan its ledger does not vouch for, deliberately and on the record. One
/// chained `tamper_acknowledged` entry carries the recorded and actual plan
/// digests and the named and found ledger heads; the plan is rewritten as a
/// new revision bound to it. A plan that is not tampered is left alone.
fn accept_tampered(engine: &Engine, rationale: &str) -> Result<RepairOutcome, GoalError> {
    if engine.state_dir()?.is_none() {
        return Err(plan::missing(&engine.paths, &engine.profile));
    }
    let mut locked = engine.lock("repair")?;
    let mut plan: Plan = locked.read_plan()?;
    let a = locked.reconcile(Some(&plan), OnMismatch::Ignore)?;
    let actions: Vec<RepairAction> = locked.repaired.iter().map(action_of).collect();
    let Some(b) = locked.binding.clone().filter(|b| b.tampered()) else {
        let head = locked.view.head.clone();
        locked.finish()?;
        return Ok(RepairOutcome {
            ok: a.consistency != Consistency::Mismatch,
            findings: Vec::new(),
            actions,
            consistency: a.consistency,
            revision: plan.revision(),
            head: Some(head),
        });
    };
    let base = a.plan_revision.max(a.ledger_revision);
    plan.set("revision", json!(base));
    let codes = b.codes().join(" and ");
    let mut e = entry(&locked.now, LedgerKind::TamperAcknowledged, None);
    e.insert(
        "message".into(),
        json!(format!(
            "{codes} acknowledged: the plan as found was adopted by `repair --accept-tampered`."
        )),
    );
    e.insert("rationale".into(), json!(rationale));
    e.insert("tamper".into(), b.to_json());
    adopt(locked, plan, e, actions)
}

/// Writes `plan` as a new revision with the acknowledging `entry` and
/// reports the adoption (`--accept-plan`, `--accept-tampered`).
fn adopt(
    locked: crate::goals::txn::Locked<'_>,
    plan: Plan,
    entry: serde_json::Map<String, Value>,
    mut actions: Vec<RepairAction>,
) -> Result<RepairOutcome, GoalError> {
    let committed = locked.commit(Write::Plan(Box::new(plan)), vec![entry])?;
    actions.extend(committed.entries.iter().map(action_of));
    Ok(RepairOutcome {
        ok: true,
        findings: Vec::new(),
        actions,
        consistency: Consistency::Ok,
        revision: committed.revision,
        head: Some(committed.head),
    })
}
