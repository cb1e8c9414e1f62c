//! `checkpoint` (goal-engine.md §3.4): the pipeline whose order decides
//! which error wins, then the mutation, auto-advance (§3.5) and one commit.

use serde_json::{Map, Value, json};

use super::complete::report;
use super::status::complete_expectation;
use super::{entry, goal_not_found, ledger_json, lock_plan, refuse_if_complete};
use crate::gate::GateScope;
use crate::goals::blockers::{self, Classifier};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::evidence_files::{self, Accepted, Parsed};
use crate::goals::gate;
use crate::goals::hostgoal::{self, Expect, HostStatus, Snapshot};
use crate::goals::input::Loaded;
use crate::goals::journal::Head;
use crate::goals::lifecycle::{self, Permit, Trigger};
use crate::goals::plan::{GoalStatus, Mode, Plan, remove_key};
use crate::goals::scheduler::{self, Outcome};
use crate::goals::txn::Write;
use crate::goals::{Engine, batches, handoff, state};

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
}

/// The result of `checkpoint`.
#[derive(Debug)]
pub struct CheckpointOutcome {
    /// The plan after the write (and auto-advance).
    pub plan: Plan,
    /// The checkpointed goal as written.
    pub goal: Value,
    /// The main ledger entry.
    pub ledger_entry: Value,
    /// Every entry appended, in order.
    pub ledger_entries: Vec<Value>,
    /// The completion record, when the run completed.
    pub aggregate_completion: Option<Value>,
    /// Auto-advance result.
    pub next: Option<Value>,
    /// `files` of the main entry.
    pub files: Vec<Value>,
    /// `[{code, message}]`.
    pub warnings: Vec<Value>,
    /// Plan revision after the write.
    pub revision: u64,
    /// Ledger head.
    pub head: Head,
    /// The goal's new status.
    pub status: String,
}

impl CheckpointOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> Value {
        ledger_json(&self.head)
    }
}

struct HostResult {
    reconciliation: &'static str,
    snapshot: Option<Value>,
    task_scoped: Option<Value>,
    warnings: Vec<Value>,
}

fn warning(code: &str, message: String) -> Value {
    json!({"code": code, "message": message})
}

/// Runs the checkpoint pipeline.
pub fn run(engine: &Engine, req: CheckpointRequest) -> Result<CheckpointOutcome, GoalError> {
    let (locked, mut plan) = lock_plan(engine, "checkpoint")?;
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
    let evidence = req
        .evidence
        .as_deref()
        .map(str::trim)
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .or_else(|| {
            parsed
                .first()
                .map(|p| p.payload.summary.trim().to_owned())
                .filter(|s| !s.is_empty())
        })
        .ok_or_else(|| {
            GoalError::new(
                ErrorKind::EvidenceRequired {
                    flag: None,
                    legacy: true,
                },
                "Evidence must be a non-empty string.",
            )
        })?;
    let accepted = evidence_files::verify_all(
        engine,
        &plan,
        &id,
        &parsed,
        req.status == CheckpointStatus::Complete,
    )?;

    let now = locked.now.clone();
    let mut entries = Vec::new();
    if permit == Permit::StartFirst {
        scheduler::start(engine, &mut plan, &id, None, &now, &mut entries);
    }
    let main_index = entries.len();
    let mut warnings = Vec::new();
    let mut completion = None;
    let mut is_final = false;
    let new_status;
    let mut main;
    match req.status {
        CheckpointStatus::Complete => {
            let g = plan.goal(&id).expect("looked up");
            is_final = lifecycle::final_candidate(&plan, g);
            let closes = batches::closes(&plan, &id).cloned();
            criteria_gate(engine, &plan, &id, is_final)?;
            let host = reconcile_complete(engine, &locked.dir, &plan, &req, &evidence, is_final);
            let gate_required = is_final || closes.is_some();
            let gate_scope = gate::context(engine, &plan, &id, is_final, closes.as_ref())?;
            let host = match host {
                Ok(h) => h,
                Err(snapshot_err) => {
                    if gate_required || req.quality_gate.is_some() {
                        let gate_err = match &req.quality_gate {
                            None => Some(gate::missing()),
                            Some(q) => gate::error(&gate::validate(engine, &plan, q, &gate_scope)?),
                        };
                        if let Some(ge) = gate_err {
                            return Err(gate::combined(&snapshot_err, &ge));
                        }
                    }
                    return Err(snapshot_err);
                }
            };
            if let Some(b) = &closes {
                batches::check_ready(&plan, b, &id)?;
                if req.quality_gate.is_none() {
                    return Err(GoalError::new(
                        ErrorKind::ValidationBatchGateRequired {
                            batch_id: batches::batch_id(b).to_owned(),
                        },
                        "Validation batch final checkpoint requires --quality-gate-json.",
                    ));
                }
            }
            if is_final && req.quality_gate.is_none() {
                return Err(gate::missing());
            }
            let mut gate_outcome = None;
            if let Some(q) = &req.quality_gate {
                let o = gate::validate(engine, &plan, q, &gate_scope)?;
                if let Some(e) = gate::error(&o) {
                    return Err(e);
                }
                if let Some(b) = &closes {
                    batches::check_criteria(&plan, b)?;
                    if !is_final {
                        gate::check_batch_coverage(&plan, b, &o)?;
                    }
                }
                gate_outcome = Some((o, q));
            }
            let gate_sha = gate_outcome.as_ref().map(|(o, _)| o.sha256().to_owned());
            let entry_evidence = match gate_outcome
                .as_ref()
                .and_then(|(o, _)| gate::watch_suffix(o))
            {
                Some(suffix) => format!("{evidence}{suffix}"),
                None => evidence.clone(),
            };

            let goal = plan.goal_mut(&id).expect("looked up");
            goal.insert("status".into(), json!("complete"));
            goal.insert("completedAt".into(), json!(now));
            goal.insert("evidence".into(), json!(evidence));
            for k in [
                "blockedReason",
                "blockerSignature",
                "blockerOccurrenceCount",
                "requiredExternalDecision",
                "nonRetriable",
                "failedAt",
                "failureReason",
                "blocker",
                "blockerEvidence",
                "blockerOccurrences",
                "blockedAt",
            ] {
                remove_key(goal, k);
            }
            goal.insert("updatedAt".into(), json!(now));
            if plan.active_goal_id() == Some(id.as_str()) {
                plan.remove("activeGoalId");
            }
            plan.set("updatedAt", json!(now));
            new_status = "complete".to_owned();
            main = entry(
                &now,
                if is_final {
                    "aggregate_completed"
                } else {
                    "goal_completed"
                },
                Some(&id),
            );
            main.insert("status".into(), json!("complete"));
            main.insert("evidence".into(), json!(entry_evidence));
            let max_snap = engine.profile.limits.max_embedded_snapshot_bytes;
            if let Some(s) = &host.snapshot {
                main.insert("codexGoal".into(), hostgoal::embed(s, max_snap));
            }
            let gate_files = gate_outcome
                .as_ref()
                .map(|(o, q)| gate::files(o, q))
                .unwrap_or_default();
            add_files(&mut main, &accepted, &gate_files);
            if let (Some((o, _)), GateScope::Plan(ctx)) = (&gate_outcome, &gate_scope) {
                main.insert(
                    "qualityGate".into(),
                    gate::embedded(o, engine.profile.limits.max_embedded_gate_bytes),
                );
                main.insert("gateScope".into(), json!(ctx.scope.ledger_tag()));
                main.insert("qualityGateSha256".into(), json!(o.sha256()));
                warnings.extend(gate::warnings(o));
            }
            main.insert("hostGoalReconciliation".into(), json!(host.reconciliation));
            if let Some(t) = host.task_scoped {
                main.insert("taskScopedAcceptance".into(), t);
            }
            warnings.extend(host.warnings);
            if let Some(b) = &closes {
                let bid = batches::batch_id(b).to_owned();
                batches::close(&mut plan, &bid, &id, &now);
            }
            if is_final {
                let record = json!({
                    "status": "complete",
                    "completedAt": now,
                    "evidence": evidence,
                    "codexGoal": host.snapshot.as_ref().map(|s| hostgoal::embed(s, max_snap)),
                    "revision": plan.revision() + 1,
                    "ledgerSeq": locked.seq_of(&plan, main_index),
                    "qualityGateSha256": gate_sha,
                });
                for k in &engine.profile.completion_keys {
                    plan.set(k, record.clone());
                }
                completion = Some(record);
            }
            entries.push(std::mem::take(&mut main));
            if let Some(b) = &closes {
                let mut bc = entry(&now, "batch_closed", Some(&id));
                bc.insert("message".into(), json!(batches::batch_id(b)));
                entries.push(bc);
            }
        }
        CheckpointStatus::Failed | CheckpointStatus::Blocked => {
            let host = reconcile_failure(engine, &plan, &req, &id);
            let classifier = Classifier::new(&engine.blockers);
            let signature = classifier.classify(&evidence);
            let escalate_after = engine.profile.blockers.escalate_after;
            let counts = signature
                .as_deref()
                .map(|s| blockers::counts(&plan, &id, s));
            let needs =
                counts.is_some_and(|(occ, goals)| occ >= escalate_after || goals >= escalate_after);
            let requested = if req.status == CheckpointStatus::Failed {
                "failed"
            } else {
                "blocked"
            };
            let status = if needs {
                "needs_user_decision"
            } else {
                requested
            };
            let goal = plan.goal_mut(&id).expect("looked up");
            goal.insert("status".into(), json!(status));
            goal.insert("updatedAt".into(), json!(now));
            if requested == "failed" || needs {
                goal.insert("failedAt".into(), json!(now));
                goal.insert("failureReason".into(), json!(evidence));
            }
            if requested == "blocked" || needs {
                goal.insert("blockedReason".into(), json!(evidence));
            }
            let decision = signature.as_deref().map(|s| classifier.decision(s));
            if let (Some(sig), Some((occ, _)), Some(d)) = (&signature, counts, &decision) {
                goal.insert("blockerSignature".into(), json!(sig));
                goal.insert("blockerOccurrenceCount".into(), json!(occ));
                goal.insert("requiredExternalDecision".into(), json!(d));
            }
            if needs {
                goal.insert("nonRetriable".into(), json!(true));
            }
            if plan.active_goal_id() == Some(id.as_str()) {
                plan.remove("activeGoalId");
            }
            plan.set("updatedAt", json!(now));
            new_status = status.to_owned();
            let kind = match status {
                "needs_user_decision" => "goal_needs_user_decision",
                "blocked" => "goal_blocked",
                _ => "goal_failed",
            };
            main = entry(&now, kind, Some(&id));
            main.insert("status".into(), json!(status));
            main.insert("evidence".into(), json!(evidence));
            if let (Some(sig), Some((occ, goals)), Some(d)) = (&signature, counts, &decision) {
                main.insert("blockerSignature".into(), json!(sig));
                main.insert("blockerOccurrenceCount".into(), json!(occ));
                main.insert("blockerGoalCount".into(), json!(goals));
                main.insert("requiredExternalDecision".into(), json!(d));
            }
            if let Some(s) = &host.snapshot {
                main.insert(
                    "codexGoal".into(),
                    hostgoal::embed(s, engine.profile.limits.max_embedded_snapshot_bytes),
                );
                main.insert("hostGoalReconciliation".into(), json!(host.reconciliation));
            }
            warnings.extend(host.warnings);
            add_files(&mut main, &accepted, &[]);
            entries.push(std::mem::take(&mut main));
        }
    }
    if !warnings.is_empty() {
        let codes: Vec<Value> = warnings.iter().map(|w| w["code"].clone()).collect();
        entries[main_index].insert("warnings".into(), Value::Array(codes));
    }
    let mut outcome = None;
    if req.status == CheckpointStatus::Complete && !is_final && !req.no_advance {
        outcome = Some(scheduler::run(engine, &mut plan, false, &now, &mut entries));
    }
    let goal = Value::Object(plan.goal(&id).expect("exists").0.clone());
    let passed = entries.len();
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), entries)?;
    let plan = committed.plan.take().expect("plan written");
    let prefix = committed.entries.len() - passed;
    let main_written = committed.entries[prefix + main_index].clone();
    let next = outcome.as_ref().map(|o: &Outcome| report(engine, &plan, o));
    Ok(CheckpointOutcome {
        goal,
        ledger_entry: main_written.clone(),
        files: main_written
            .get("files")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default(),
        ledger_entries: committed.entries.clone(),
        aggregate_completion: completion,
        next,
        warnings,
        revision: committed.revision,
        head: committed.head,
        status: new_status,
        plan,
    })
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

/// The criteria gate of a complete checkpoint (R§2.5 step 2, goal-engine.md §3.4 step 5).
fn criteria_gate(engine: &Engine, plan: &Plan, id: &str, is_final: bool) -> Result<(), GoalError> {
    let p = &engine.profile;
    let g = plan.goal(id).expect("looked up");
    let fail = |details: Value, message: String| {
        Err(GoalError::new(
            ErrorKind::CriteriaNotAllPass { details },
            message,
        ))
    };
    let list = |u: &[(String, crate::goals::plan::CriterionStatus)]| -> Vec<Value> {
        u.iter()
            .map(|(cid, s)| json!({"id": cid, "status": s.as_str()}))
            .collect()
    };
    if is_final {
        let (ok, unresolved) = lifecycle::all_criteria_gate(g, p);
        if !ok {
            return fail(
                json!({"goalId": id, "unresolved": list(&unresolved)}),
                format!("Goal {id} has unresolved success criteria."),
            );
        }
        let mut all = Vec::new();
        let mut any_failed = false;
        for other in plan.goals().filter(|o| lifecycle::counted(*o)) {
            let (ok, unresolved) = lifecycle::all_criteria_gate(other, p);
            if !ok {
                any_failed = true;
                if unresolved.is_empty() {
                    all.push(json!({"goalId": other.id(), "id": null, "status": "none"}));
                }
                for (cid, s) in unresolved {
                    all.push(json!({"goalId": other.id(), "id": cid, "status": s.as_str()}));
                }
            }
        }
        if any_failed {
            let mut word = p.display_name.clone();
            if let Some(first) = word.get(..1) {
                word = first.to_uppercase() + &word[1..];
            }
            return fail(
                json!({"unresolved": all}),
                format!("{word} aggregate has unresolved success criteria."),
            );
        }
        batches::check_all_closed(plan, id)?;
    } else if plan.mode() == Mode::Aggregate {
        let (ok, unresolved) = lifecycle::essential_gate(g, p);
        if !ok {
            return fail(
                json!({"goalId": id, "unresolved": list(&unresolved)}),
                format!("Goal {id} has unresolved essential success criteria."),
            );
        }
    } else {
        let (ok, unresolved) = lifecycle::all_criteria_gate(g, p);
        if !ok {
            return fail(
                json!({"goalId": id, "unresolved": list(&unresolved)}),
                format!("Goal {id} has unresolved success criteria."),
            );
        }
    }
    Ok(())
}

fn brief_reader<'a>(
    dir: &'a cap_std::fs::Dir,
    engine: &'a Engine,
) -> impl Fn() -> Option<String> + 'a {
    move || match state::read_file(
        dir,
        state::BRIEF,
        &engine.paths.brief(),
        engine.profile.limits.max_brief_bytes,
    ) {
        Ok(Some(state::ReadOutcome::Bytes(b))) => String::from_utf8(b).ok(),
        _ => None,
    }
}

/// Host-goal reconciliation of a complete checkpoint (goal-engine.md §8).
fn reconcile_complete(
    engine: &Engine,
    dir: &cap_std::fs::Dir,
    plan: &Plan,
    req: &CheckpointRequest,
    evidence: &str,
    is_final: bool,
) -> Result<HostResult, GoalError> {
    let Some(loaded) = &req.host_goal else {
        return Ok(HostResult {
            reconciliation: "skipped",
            snapshot: None,
            task_scoped: None,
            warnings: Vec::new(),
        });
    };
    let g = plan.goal(&req.goal_id).expect("looked up");
    let snap = hostgoal::parse(loaded.value.clone());
    let e = complete_expectation(engine, plan, g);
    let out = hostgoal::reconcile(Some(&snap), &e, &engine.profile);
    if out.ok() {
        return Ok(HostResult {
            reconciliation: "ok",
            snapshot: Some(snap.raw.clone()),
            task_scoped: None,
            warnings: Vec::new(),
        });
    }
    let aggregate = plan.mode() == Mode::Aggregate;
    let facts = hostgoal::FallbackFacts {
        aggregate,
        active_in_progress: g.status() == GoalStatus::InProgress
            && plan.active_goal_id() == Some(g.id()),
        is_final,
        goal_id: g.id(),
        evidence,
        state_dir: &engine.profile.state_dir,
    };
    let brief = brief_reader(dir, engine);
    let eligible = hostgoal::fallback(&snap, &e.expected, facts, &brief);
    let rationale = req
        .accept_task_scoped
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    if let (Some(kind), Some(r)) = (eligible, rationale) {
        let noun = &engine.profile.host_goal.noun;
        return Ok(HostResult {
            reconciliation: "task_scoped",
            snapshot: Some(snap.raw.clone()),
            task_scoped: Some(json!({
                "kind": kind.as_str(),
                "rationale": r,
                "snapshotObjective": snap.objective,
                "expectedObjective": e.expected,
            })),
            warnings: vec![warning(
                "HOST_GOAL_TASK_SCOPED",
                format!(
                    "The {noun} snapshot was accepted as task-scoped ({}): {r}",
                    kind.as_str()
                ),
            )],
        });
    }
    Err(mismatch(
        engine,
        plan,
        &snap,
        &e,
        &out,
        eligible,
        is_final,
        aggregate,
        &req.goal_id,
    ))
}

#[allow(clippy::too_many_arguments)]
fn mismatch(
    engine: &Engine,
    plan: &Plan,
    snap: &Snapshot,
    e: &Expect,
    out: &hostgoal::Outcome,
    eligible: Option<hostgoal::TaskScoped>,
    is_final: bool,
    aggregate: bool,
    goal_id: &str,
) -> GoalError {
    let p = &engine.profile;
    let sid = engine.session_opt(plan);
    let flag = &p.host_goal.flag;
    let hint = (aggregate && snap.status == HostStatus::Complete && snap.objective.is_some()).then(|| {
        let head = if is_final {
            "Final task-scoped aggregate reconciliation requires the checkpoint goal to be the active in-progress final goal and the completed snapshot objective to map to the brief or a plan artifact."
        } else {
            "Completed task-scoped aggregate reconciliation requires the active in-progress goal, evidence naming the goal id and the plan's goals.json or ledger.jsonl, completed implementation plus validation or review evidence, and an objective that maps to the plan."
        };
        let flag_note = match eligible {
            Some(_) => " Those conditions hold here: pass --accept-task-scoped-snapshot \"<rationale>\" to accept this snapshot deliberately (it is audited).".to_owned(),
            None => " Even then it is accepted only with --accept-task-scoped-snapshot \"<rationale>\".".to_owned(),
        };
        format!(
            "{head}{flag_note} Otherwise do not repeat --status complete with this snapshot: record a non-terminal blocker with `{} checkpoint{sid} --goal-id {goal_id} --status blocked --evidence \"<why the host goal does not match>\" {flag} \"<snapshot>\"` and continue from a host-goal context without a conflicting goal.",
            p.command_prefix
        )
    });
    let suggested = if snap.status == HostStatus::Complete || !snap.available {
        format!(
            "{} checkpoint{sid} --goal-id {goal_id} --status blocked --evidence \"<why the host goal does not match>\" {flag} \"<snapshot>\"",
            p.command_prefix
        )
    } else {
        format!(
            "{} checkpoint{sid} --goal-id {goal_id} --status complete --evidence \"...\" {flag} \"<fresh snapshot>\"",
            p.command_prefix
        )
    };
    hostgoal::mismatch_error(out, Some(snap), e, eligible, hint, suggested)
}

/// A snapshot given with a failed/blocked checkpoint is recorded and
/// reconciled, never failing the command (goal-engine.md §7.1).
fn reconcile_failure(
    engine: &Engine,
    plan: &Plan,
    req: &CheckpointRequest,
    id: &str,
) -> HostResult {
    let Some(loaded) = &req.host_goal else {
        return HostResult {
            reconciliation: "skipped",
            snapshot: None,
            task_scoped: None,
            warnings: Vec::new(),
        };
    };
    let g = plan.goal(id).expect("looked up");
    let snap = hostgoal::parse(loaded.value.clone());
    let e = Expect {
        expected: handoff::expected_objective(engine, plan, g),
        accepted: if plan.mode() == Mode::Aggregate {
            plan.objective_aliases()
                .into_iter()
                .map(str::to_owned)
                .collect()
        } else {
            Vec::new()
        },
        allowed: Vec::new(),
        require_snapshot: true,
        require_complete: false,
    };
    let out = hostgoal::reconcile(Some(&snap), &e, &engine.profile);
    if out.ok() {
        HostResult {
            reconciliation: "ok",
            snapshot: Some(snap.raw),
            task_scoped: None,
            warnings: Vec::new(),
        }
    } else {
        HostResult {
            reconciliation: "mismatch",
            snapshot: Some(snap.raw),
            task_scoped: None,
            warnings: vec![warning("HOST_GOAL_MISMATCH", out.message())],
        }
    }
}
