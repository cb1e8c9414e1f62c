//! `checkpoint` (docs/engine.md#ge-3): the pipeline whose order decides
//! which error wins, then the mutation, auto-advance (docs/engine.md#ge-3) and one commit.

use serde::Serialize;
use serde_json::{Map, Value, json};

mod criteria;
mod host;

use criteria::criteria_gate;
use host::{HostResult, reconcile_complete, reconcile_failure};

use super::complete::{Report, report};
use super::outcome::{EvidenceFile, GoalRecord, LedgerHead, LedgerRecord, Warning};
use super::{entry, goal_not_found, lock_plan_reaching, refuse_if_complete};
use crate::gate::{GateOutcome, GateScope};
use crate::goals::blockers::{self, Classifier};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::evidence_files::{self, Accepted, Parsed};
use crate::goals::gate;
use crate::goals::hostgoal;
use crate::goals::input::Loaded;
use crate::goals::journal::{Head, LedgerKind};
use crate::goals::lifecycle::{self, Permit, Trigger};
use crate::goals::plan::{GoalStatus, Plan, PlanRead};
use crate::goals::scheduler::{self, Outcome};
use crate::goals::txn::{Locked, Write};
use crate::goals::{Engine, batches};

/// The requested checkpoint status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckpointStatus {
    /// `complete`.
    Complete,
    /// `failed`.
    Failed,
    /// `blocked`.
    Blocked,
}

/// A `checkpoint` request (inputs already loaded by the front end).
#[derive(Debug, Clone)]
pub struct CheckpointRequest {
    /// `--goal-id`.
    pub goal_id: String,
    /// `--status`.
    pub status: CheckpointStatus,
    /// `--evidence`.
    pub evidence: Option<String>,
    /// `--evidence-file` paths.
    pub evidence_files: Vec<String>,
    /// The host-goal snapshot.
    pub host_goal: Option<Loaded>,
    /// `--quality-gate-json`.
    pub quality_gate: Option<Loaded>,
    /// `--accept-task-scoped-snapshot <rationale>`.
    pub accept_task_scoped: Option<String>,
    /// `--start-pending`.
    pub start_pending: bool,
    /// `--no-advance`.
    pub no_advance: bool,
    /// `--strict` (profiles with `compat/strictGate`): the final and batch
    /// gates are checked against the strict gate rules.
    pub strict: bool,
}

impl CheckpointRequest {
    /// `checkpoint --goal-id <goal_id> --status <status> --evidence
    /// <evidence>` and no other flag. Set the fields that apply after.
    pub fn new(
        goal_id: impl Into<String>,
        status: CheckpointStatus,
        evidence: impl Into<String>,
    ) -> CheckpointRequest {
        CheckpointRequest {
            goal_id: goal_id.into(),
            status,
            evidence: Some(evidence.into()),
            evidence_files: Vec::new(),
            host_goal: None,
            quality_gate: None,
            accept_task_scoped: None,
            start_pending: false,
            no_advance: false,
            strict: false,
        }
    }
}

/// The result of `checkpoint`.
#[derive(Debug)]
pub struct CheckpointOutcome {
    /// The plan after the write (and auto-advance).
    pub plan: Plan,
    /// The checkpointed goal as written.
    pub goal: GoalRecord,
    /// The main ledger entry.
    pub ledger_entry: LedgerRecord,
    /// Every entry appended, in order.
    pub ledger_entries: Vec<LedgerRecord>,
    /// The completion record, when the run completed.
    pub aggregate_completion: Option<Completion>,
    /// Auto-advance result.
    pub next: Option<Report>,
    /// `files` of the main entry.
    pub files: Vec<EvidenceFile>,
    /// Warnings of the checkpoint (gate, snapshot, workflow registry).
    pub warnings: Vec<Warning>,
    /// Plan revision after the write.
    pub revision: u64,
    /// Ledger head.
    pub head: Head,
    /// The goal's new status.
    pub status: GoalStatus,
    /// How the plan was read: from its cut-down body,
    /// [`CheckpointOutcome::plan`] holds of the goals the command did not
    /// change or schedule only what that body keeps of their criteria
    /// ([`Plan::is_partial`]; `goals.json` holds them whole).
    pub plan_read: PlanRead,
}

impl CheckpointOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.head)
    }
    /// The goal auto-advance resumed or started.
    pub fn next_goal_id(&self) -> Option<&str> {
        self.next.as_ref().and_then(Report::next_goal_id)
    }
}

/// The completion record of a run's final checkpoint, stored under each of
/// the profile's completion keys (docs/state-formats.md#ge-2).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// `complete`.
    pub status: GoalStatus,
    /// When.
    pub completed_at: String,
    /// The checkpoint's evidence.
    pub evidence: String,
    /// The embedded host-goal snapshot (the host's document, bounded).
    pub codex_goal: Option<Value>,
    /// The plan revision the completion is written at.
    pub revision: u64,
    /// `seq` of the completing ledger entry.
    pub ledger_seq: u64,
    /// SHA-256 of the quality gate document.
    pub quality_gate_sha256: Option<String>,
}

/// Runs the checkpoint pipeline.
pub fn run(engine: &Engine, req: CheckpointRequest) -> Result<CheckpointOutcome, GoalError> {
    let (locked, mut plan, plan_read) = lock_plan_reaching(engine, "checkpoint", &[&req.goal_id])?;
    refuse_if_complete(engine, &plan, "checkpoint")?;
    let id = req.goal_id.clone();
    let g = plan
        .goal(&id)
        .ok_or_else(|| goal_not_found(engine, &id, true))?;
    let trigger = match req.status {
        CheckpointStatus::Complete => Trigger::CheckpointComplete {
            start_pending: req.start_pending,
        },
        CheckpointStatus::Failed => Trigger::CheckpointFailed,
        CheckpointStatus::Blocked => Trigger::CheckpointBlocked,
    };
    let permit = lifecycle::check(&plan, g, trigger, &engine.profile)?;

    let parsed: Vec<Parsed> = req
        .evidence_files
        .iter()
        .map(|p| evidence_files::load(engine, p))
        .collect::<Result<_, _>>()?;
    for p in &parsed {
        evidence_files::check_scope(p, &id, None)?;
    }
    let evidence = evidence_files::evidence_or_summary(req.evidence.as_deref(), &parsed, true)?;
    let accepted = evidence_files::verify_all(
        engine,
        &plan,
        &id,
        &parsed,
        req.status == CheckpointStatus::Complete,
    )?;

    let now = locked.now.clone();
    let mut w = Written::default();
    if permit == Permit::StartFirst {
        scheduler::start(engine, &mut plan, &id, None, &now, &mut w.entries);
    }
    w.main_index = w.entries.len();
    let c = Step {
        engine,
        locked: &locked,
        req: &req,
        id: &id,
        evidence: &evidence,
        accepted: &accepted,
        now: &now,
    };
    let (new_status, completion) = match req.status {
        CheckpointStatus::Complete => (GoalStatus::Complete, complete(&c, &mut plan, &mut w)?),
        CheckpointStatus::Blocked if engine.profile.compat.blocked_non_terminal => {
            (blocker_note(&c, &mut plan, &mut w), None)
        }
        CheckpointStatus::Failed | CheckpointStatus::Blocked => {
            (failed_or_blocked(&c, &mut plan, &mut w), None)
        }
    };
    let is_final = completion.is_some();
    let Written {
        mut entries,
        main_index,
        mut warnings,
    } = w;
    if !warnings.is_empty() {
        let codes: Vec<Value> = warnings.iter().map(|w| json!(w.code)).collect();
        entries[main_index].insert("warnings".into(), Value::Array(codes));
    }
    let mut outcome = None;
    if req.status == CheckpointStatus::Complete && !is_final && !req.no_advance {
        outcome = Some(scheduler::run(engine, &mut plan, false, &now, &mut entries));
    }
    // The report hands the scheduled goal's criteria over in full.
    if let Some(Outcome::Resumed(next) | Outcome::Started(next) | Outcome::BlockedOnUser(next)) =
        &outcome
    {
        plan.read_goal(next, &engine.paths)?;
    }
    let goal = GoalRecord::of(plan.goal(&id).expect("exists"));
    let passed = entries.len();
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), entries)?;
    let plan = committed.plan.take().expect("plan written");
    let prefix = committed.entries.len() - passed;
    let main_written = LedgerRecord::from_value(committed.entries[prefix + main_index].clone());
    let next = outcome.as_ref().map(|o: &Outcome| report(engine, &plan, o));
    if completion.is_some()
        && let Err(e) = crate::goals::workflow::complete_own(engine, &now)
    {
        warnings.push(Warning::new(
            "WORKFLOW_REGISTRY_STALE",
            format!(
                "The run is complete, but its workflow registration could not be released: {}",
                e.message
            ),
        ));
    }
    Ok(CheckpointOutcome {
        goal,
        files: main_written.files(),
        ledger_entry: main_written,
        ledger_entries: std::mem::take(&mut committed.entries)
            .into_iter()
            .map(LedgerRecord::from_value)
            .collect(),
        aggregate_completion: completion,
        next,
        warnings,
        revision: committed.revision,
        head: committed.head,
        status: new_status,
        plan,
        plan_read,
    })
}

/// What the branches of one checkpoint share: the command, its verified
/// inputs and the held lock.
struct Step<'a> {
    engine: &'a Engine,
    locked: &'a Locked<'a>,
    req: &'a CheckpointRequest,
    id: &'a str,
    evidence: &'a str,
    accepted: &'a Accepted,
    now: &'a str,
}

/// What the branches append: the ledger entries, the index of the main one
/// and the reply's warnings.
#[derive(Default)]
struct Written {
    entries: Vec<Map<String, Value>>,
    main_index: usize,
    warnings: Vec<Warning>,
}

/// Everything `--status complete` checks before it writes: the criteria,
/// the host-goal snapshot, the batch and the quality gate.
struct CompleteChecks<'r> {
    is_final: bool,
    closes: Option<Map<String, Value>>,
    host: HostResult,
    gate_scope: GateScope,
    gate_outcome: Option<(GateOutcome, &'r Loaded)>,
}

fn complete_checks<'r>(c: &Step<'r>, plan: &Plan) -> Result<CompleteChecks<'r>, GoalError> {
    let g = plan.goal(c.id).expect("looked up");
    let is_final = lifecycle::final_candidate(plan, g);
    let closes = batches::closes(plan, c.id).cloned();
    criteria_gate(c.engine, plan, c.id, is_final)?;
    let host = reconcile_complete(c.engine, &c.locked.dir, plan, c.req, c.evidence, is_final);
    let gate_required = is_final || closes.is_some();
    let gate_scope = gate::context(c.engine, plan, c.id, is_final, closes.as_ref())?;
    let host = match host {
        Ok(h) => h,
        Err(snapshot_err) => {
            if gate_required || c.req.quality_gate.is_some() {
                let gate_err = match &c.req.quality_gate {
                    None => Some(gate::missing()),
                    Some(q) => gate::error(&gate::validate(
                        c.engine,
                        plan,
                        q,
                        &gate_scope,
                        c.req.strict,
                    )?),
                };
                if let Some(ge) = gate_err {
                    return Err(gate::combined(&snapshot_err, &ge));
                }
            }
            return Err(snapshot_err);
        }
    };
    if let Some(b) = &closes {
        batches::check_ready(plan, b, c.id)?;
        if c.req.quality_gate.is_none() {
            return Err(GoalError::new(
                ErrorKind::ValidationBatchGateRequired {
                    batch_id: batches::batch_id(b).to_owned(),
                },
                "Validation batch final checkpoint requires --quality-gate-json.",
            ));
        }
    }
    if is_final && c.req.quality_gate.is_none() {
        return Err(gate::missing());
    }
    let mut gate_outcome = None;
    if let Some(q) = &c.req.quality_gate {
        let o = gate::validate(c.engine, plan, q, &gate_scope, c.req.strict)?;
        if let Some(e) = gate::error(&o) {
            return Err(e);
        }
        if let Some(b) = &closes {
            batches::check_criteria(plan, b)?;
            if !is_final {
                gate::check_batch_coverage(plan, b, &o)?;
            }
        }
        gate_outcome = Some((o, q));
    }
    Ok(CompleteChecks {
        is_final,
        closes,
        host,
        gate_scope,
        gate_outcome,
    })
}

/// `--status complete`: the goal completes; the final goal records the run's
/// completion, which is returned.
fn complete(
    c: &Step<'_>,
    plan: &mut Plan,
    w: &mut Written,
) -> Result<Option<Completion>, GoalError> {
    let CompleteChecks {
        is_final,
        closes,
        host,
        gate_scope,
        gate_outcome,
    } = complete_checks(c, plan)?;
    let mut completion = None;
    let gate_sha = gate_outcome.as_ref().map(|(o, _)| o.sha256().to_owned());
    let entry_evidence = match gate_outcome
        .as_ref()
        .and_then(|(o, _)| gate::watch_suffix(o))
    {
        Some(suffix) => format!("{}{suffix}", c.evidence),
        None => c.evidence.to_owned(),
    };

    plan.goal_mut(c.id)
        .expect("looked up")
        .set_status(GoalStatus::Complete)
        .set_completed_at(c.now)
        .set_evidence(c.evidence)
        .clear_blockers()
        .set_updated_at(c.now);
    if plan.active_goal_id() == Some(c.id) {
        plan.remove("activeGoalId");
    }
    plan.set("updatedAt", json!(c.now));
    let mut main = entry(
        c.now,
        if is_final {
            LedgerKind::AggregateCompleted
        } else {
            LedgerKind::GoalCompleted
        },
        Some(c.id),
    );
    main.insert("status".into(), json!(GoalStatus::Complete.as_str()));
    main.insert("evidence".into(), json!(entry_evidence));
    let max_snap = c.engine.profile.limits.max_embedded_snapshot_bytes;
    if let Some(s) = &host.snapshot {
        main.insert("codexGoal".into(), hostgoal::embed(s, max_snap));
    }
    let gate_files = gate_outcome
        .as_ref()
        .map(|(o, q)| gate::files(o, q))
        .unwrap_or_default();
    add_files(&mut main, c.accepted, &gate_files);
    if let (Some((o, _)), GateScope::Plan(ctx)) = (&gate_outcome, &gate_scope) {
        main.insert(
            "qualityGate".into(),
            gate::embedded(o, c.engine.profile.limits.max_embedded_gate_bytes),
        );
        main.insert("gateScope".into(), json!(ctx.scope.ledger_tag()));
        main.insert("qualityGateSha256".into(), json!(o.sha256()));
        w.warnings.extend(gate::warnings(o));
    }
    main.insert("hostGoalReconciliation".into(), json!(host.reconciliation));
    if let Some(t) = host.task_scoped {
        main.insert("taskScopedAcceptance".into(), t);
    }
    w.warnings.extend(host.warnings);
    if let Some(b) = &closes {
        let bid = batches::batch_id(b).to_owned();
        batches::close(plan, &bid, c.id, c.now);
    }
    // `compat/perGoalCompletion`: the final goal also gets its own
    // `goal_completed` entry, before `aggregate_completed`.
    if is_final && c.engine.profile.compat.per_goal_completion {
        let mut own = entry(c.now, LedgerKind::GoalCompleted, Some(c.id));
        for k in ["status", "evidence", "codexGoal"] {
            if let Some(v) = main.get(k) {
                own.insert(k.into(), v.clone());
            }
        }
        w.entries.push(own);
        w.main_index += 1;
    }
    if is_final {
        let record = Completion {
            status: GoalStatus::Complete,
            completed_at: c.now.to_owned(),
            evidence: c.evidence.to_owned(),
            codex_goal: host.snapshot.as_ref().map(|s| hostgoal::embed(s, max_snap)),
            revision: plan.revision() + 1,
            ledger_seq: c.locked.seq_of(plan, w.main_index),
            quality_gate_sha256: gate_sha,
        };
        let stored = serde_json::to_value(&record).expect("a completion serialises");
        for k in &c.engine.profile.completion_keys {
            plan.set(k, stored.clone());
        }
        completion = Some(record);
    }
    w.entries.push(std::mem::take(&mut main));
    if let Some(b) = &closes {
        let mut bc = entry(c.now, LedgerKind::BatchClosed, Some(c.id));
        bc.insert("message".into(), json!(batches::batch_id(b)));
        w.entries.push(bc);
    }
    Ok(completion)
}

/// `compat/blockedNonTerminal`: a blocker note; the goal stays in progress
/// and active, nothing is classified or escalated.
fn blocker_note(c: &Step<'_>, plan: &mut Plan, w: &mut Written) -> GoalStatus {
    let host = reconcile_failure(c.engine, plan, c.req, c.id);
    plan.goal_mut(c.id)
        .expect("looked up")
        .set_updated_at(c.now);
    plan.set("activeGoalId", json!(c.id));
    plan.set("updatedAt", json!(c.now));
    let mut main = entry(c.now, LedgerKind::GoalBlocked, Some(c.id));
    main.insert("status".into(), json!(GoalStatus::InProgress.as_str()));
    main.insert("evidence".into(), json!(c.evidence));
    if let Some(s) = &host.snapshot {
        main.insert(
            "codexGoal".into(),
            hostgoal::embed(s, c.engine.profile.limits.max_embedded_snapshot_bytes),
        );
        main.insert("hostGoalReconciliation".into(), json!(host.reconciliation));
    }
    main.insert(
        "message".into(),
        json!("Non-terminal blocker recorded; the goal stays in progress."),
    );
    w.warnings.extend(host.warnings);
    add_files(&mut main, c.accepted, &[]);
    w.entries.push(std::mem::take(&mut main));
    GoalStatus::InProgress
}

/// `--status failed|blocked`: the evidence is classified and a repeated
/// blocker escalates to `needs_user_decision`.
fn failed_or_blocked(c: &Step<'_>, plan: &mut Plan, w: &mut Written) -> GoalStatus {
    let host = reconcile_failure(c.engine, plan, c.req, c.id);
    let classifier = Classifier::new(c.engine.blockers());
    let signature = classifier.classify(c.evidence);
    let escalate_after = c.engine.profile.blockers.escalate_after;
    let counts = signature
        .as_deref()
        .map(|s| blockers::counts(plan, c.id, s));
    let needs = counts.is_some_and(|(occ, goals)| occ >= escalate_after || goals >= escalate_after);
    let requested = if c.req.status == CheckpointStatus::Failed {
        GoalStatus::Failed
    } else {
        GoalStatus::Blocked
    };
    let status = if needs {
        GoalStatus::NeedsUserDecision
    } else {
        requested
    };
    let mut goal = plan.goal_mut(c.id).expect("looked up");
    goal.set_status(status).set_updated_at(c.now);
    if requested == GoalStatus::Failed || needs {
        goal.set_failed(c.now, c.evidence);
    }
    if requested == GoalStatus::Blocked || needs {
        goal.set_blocked_reason(c.evidence);
    }
    let decision = signature.as_deref().map(|s| classifier.decision(s));
    if let (Some(sig), Some((occ, _)), Some(d)) = (&signature, counts, &decision) {
        goal.set_blocker(sig, occ, d);
    }
    if needs {
        goal.set_non_retriable();
    }
    if plan.active_goal_id() == Some(c.id) {
        plan.remove("activeGoalId");
    }
    plan.set("updatedAt", json!(c.now));
    let kind = match status {
        GoalStatus::NeedsUserDecision => LedgerKind::GoalNeedsUserDecision,
        GoalStatus::Blocked => LedgerKind::GoalBlocked,
        _ => LedgerKind::GoalFailed,
    };
    let mut main = entry(c.now, kind, Some(c.id));
    main.insert("status".into(), json!(status.as_str()));
    main.insert("evidence".into(), json!(c.evidence));
    if let (Some(sig), Some((occ, goals)), Some(d)) = (&signature, counts, &decision) {
        main.insert("blockerSignature".into(), json!(sig));
        main.insert("blockerOccurrenceCount".into(), json!(occ));
        main.insert("blockerGoalCount".into(), json!(goals));
        main.insert("requiredExternalDecision".into(), json!(d));
    }
    if let Some(s) = &host.snapshot {
        main.insert(
            "codexGoal".into(),
            hostgoal::embed(s, c.engine.profile.limits.max_embedded_snapshot_bytes),
        );
        main.insert("hostGoalReconciliation".into(), json!(host.reconciliation));
    }
    w.warnings.extend(host.warnings);
    add_files(&mut main, c.accepted, &[]);
    w.entries.push(std::mem::take(&mut main));
    status
}

fn add_files(main: &mut Map<String, Value>, accepted: &Accepted, gate_files: &[Value]) {
    let mut files: Vec<Value> = accepted.files.clone();
    for f in gate_files {
        if !files.iter().any(|x| x["path"] == f["path"]) {
            files.push(f.clone());
        }
    }
    files.sort_by(|a, b| {
        a["path"]
            .as_str()
            .unwrap_or_default()
            .as_bytes()
            .cmp(b["path"].as_str().unwrap_or_default().as_bytes())
    });
    if !files.is_empty() {
        main.insert("files".into(), Value::Array(files));
    }
    if !accepted.payloads.is_empty() {
        main.insert("evidencePayloads".into(), json!(accepted.payloads));
    }
}
