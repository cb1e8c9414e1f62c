//! `record-evidence` (docs/differences.md#r-7 with docs/engine.md#ge-3, docs/engine.md#ge-4).

use serde_json::{Value, json};

use super::outcome::{CriterionRecord, EvidenceFile, GoalRecord, LedgerHead, LedgerRecord};
use super::{entry, goal_not_found, lock_plan_reaching, refuse_if_complete};
use crate::goals::Engine;
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::evidence_files::{self, Parsed};
use crate::goals::journal::LedgerKind;
use crate::goals::lifecycle::{self, Trigger};
use crate::goals::plan::{CriterionStatus, Plan, PlanRead};
use crate::goals::txn::{Committed, Write};

/// A `record-evidence` request.
#[derive(Debug, Clone)]
pub struct RecordRequest {
    /// `--goal-id`.
    pub goal_id: String,
    /// `--criterion-id`.
    pub criterion_id: String,
    /// `--status` (defaults from the first payload's verdict).
    pub status: Option<CriterionStatus>,
    /// `--evidence` (defaults to the first payload's summary).
    pub evidence: Option<String>,
    /// `--notes`.
    pub notes: Option<String>,
    /// `--evidence-file` paths.
    pub evidence_files: Vec<String>,
    /// `--accept-seeded <rationale>`.
    pub accept_seeded: Option<String>,
}

/// The result of `record-evidence`.
#[derive(Debug)]
pub struct RecordOutcome {
    /// The plan after the write.
    pub plan: Plan,
    /// The goal object as written.
    pub goal: GoalRecord,
    /// The criterion object as written.
    pub criterion: CriterionRecord,
    /// What was written.
    pub committed: Committed,
    /// `files` of the entry.
    pub files: Vec<EvidenceFile>,
    /// How the plan was read: from its cut-down body, [`RecordOutcome::plan`]
    /// holds of the goals the command did not change only what that body
    /// keeps of their criteria ([`Plan::is_partial`]; `goals.json` holds
    /// them whole).
    pub plan_read: PlanRead,
}

impl RecordOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.committed.head)
    }
    /// The entry appended for the evidence.
    pub fn ledger_entry(&self) -> LedgerRecord {
        LedgerRecord::from_value(
            self.committed
                .entries
                .last()
                .cloned()
                .unwrap_or(Value::Null),
        )
    }
}

/// Records a criterion verdict.
pub fn run(engine: &Engine, req: RecordRequest) -> Result<RecordOutcome, GoalError> {
    let (locked, mut plan, plan_read) =
        lock_plan_reaching(engine, "record-evidence", &[&req.goal_id])?;
    refuse_if_complete(engine, &plan, "record-evidence")?;
    let g = plan
        .goal(&req.goal_id)
        .ok_or_else(|| goal_not_found(engine, &req.goal_id, false))?;
    let parsed: Vec<Parsed> = req
        .evidence_files
        .iter()
        .map(|p| evidence_files::load(engine, p))
        .collect::<Result<_, _>>()?;
    let status = match (req.status, parsed.first()) {
        (Some(s), _) => s,
        (None, Some(p)) => CriterionStatus::parse(evidence_files::criterion_status(
            p.payload.verification.verdict,
        ))
        .expect("mapped statuses are criterion statuses"),
        (None, None) => {
            return Err(GoalError::new(
                ErrorKind::EvidenceStatusRequired {
                    flag: "--status".into(),
                },
                "Missing --status.",
            ));
        }
    };
    let existing = g.criterion(&req.criterion_id);
    let trigger = Trigger::RecordEvidence {
        pass: status == CriterionStatus::Pass,
        criterion_passed: existing.is_some_and(|c| c.status() == CriterionStatus::Pass),
    };
    lifecycle::check(&plan, g, trigger, &engine.profile)?;
    let Some(c) = existing else {
        return Err(GoalError::new(
            ErrorKind::CriterionNotFound {
                goal_id: req.goal_id.clone(),
                criterion_id: req.criterion_id.clone(),
            },
            format!("Success criterion not found: {}.", req.criterion_id),
        ));
    };
    for p in &parsed {
        evidence_files::check_scope(p, &req.goal_id, Some(&req.criterion_id))?;
        if req.status.is_some() {
            evidence_files::check_status(p, status.as_str())?;
        }
    }
    let evidence = evidence_files::evidence_or_summary(req.evidence.as_deref(), &parsed, false)?;
    let seeded = c.seeded(&engine.profile.criteria.seeded_markers);
    let accept_seeded = req
        .accept_seeded
        .as_deref()
        .map(str::trim)
        .filter(|r| !crate::text::is_blank(r));
    if status == CriterionStatus::Pass && seeded && accept_seeded.is_none() {
        return Err(GoalError::new(
            ErrorKind::CriterionSeeded {
                goal_id: req.goal_id.clone(),
                criterion_id: req.criterion_id.clone(),
            },
            format!(
                "Criterion {}/{} is still the seeded placeholder; revise it first (`{} steer --kind revise_criterion ...`) or pass --accept-seeded \"<rationale>\".",
                req.goal_id, req.criterion_id, engine.profile.command_prefix
            ),
        ));
    }
    let accepted = evidence_files::verify_all(
        engine,
        &plan,
        &req.goal_id,
        &parsed,
        status == CriterionStatus::Pass,
    )?;
    let prev = c.status();
    let now = locked.now.clone();
    let kind = match status {
        CriterionStatus::Pass => LedgerKind::EvidenceCaptured,
        CriterionStatus::Fail => LedgerKind::CriterionFailed,
        CriterionStatus::Blocked | CriterionStatus::Pending => LedgerKind::CriterionBlocked,
    };
    let mut goal = plan.goal_mut(&req.goal_id).expect("looked up");
    let crit = goal.criterion_mut(&req.criterion_id).expect("looked up");
    crit.insert("status".into(), json!(status.as_str()));
    crit.insert("capturedEvidence".into(), json!(evidence));
    crit.insert("capturedAt".into(), json!(now));
    if let Some(n) = req
        .notes
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty())
    {
        crit.insert("notes".into(), json!(n));
    }
    let criterion = CriterionRecord::from_map(crit.clone());
    goal.set_updated_at(&now);
    let goal_record = GoalRecord::of(goal.read());
    plan.set("updatedAt", json!(now));
    let mut e = entry(&now, kind, Some(&req.goal_id));
    e.insert("criterionId".into(), json!(req.criterion_id));
    e.insert("criterionStatus".into(), json!(status.as_str()));
    e.insert("evidence".into(), json!(evidence));
    e.insert("capturedEvidence".into(), json!(evidence));
    e.insert("before".into(), json!({"status": prev.as_str()}));
    e.insert(
        "after".into(),
        json!({
            "goalId": req.goal_id, "criterionId": req.criterion_id, "status": status.as_str(),
            "evidence": evidence, "capturedAt": now, "prevStatus": prev.as_str()
        }),
    );
    if let Some(r) = accept_seeded.filter(|_| seeded && status == CriterionStatus::Pass) {
        e.insert("acceptedSeeded".into(), json!(r));
    }
    if !accepted.files.is_empty() {
        e.insert("files".into(), json!(accepted.files));
        e.insert("evidencePayloads".into(), json!(accepted.payloads));
    }
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), vec![e])?;
    Ok(RecordOutcome {
        plan: committed.plan.take().expect("plan written"),
        goal: goal_record,
        criterion,
        files: EvidenceFile::from_values(&accepted.files),
        committed,
        plan_read,
    })
}
