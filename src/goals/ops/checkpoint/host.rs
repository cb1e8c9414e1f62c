//! Host-goal reconciliation inside a checkpoint (docs/engine.md#ge-8, docs/engine.md#ge-7).

use serde_json::{Value, json};

use super::CheckpointRequest;
use crate::goals::error::GoalError;
use crate::goals::hostgoal::{self, Expect, HostStatus, Snapshot};
use crate::goals::ops::outcome::Warning;
use crate::goals::ops::status::complete_expectation;
use crate::goals::plan::{GoalStatus, Mode, Plan};
use crate::goals::{Engine, handoff, state};

/// What reconciliation contributes to the checkpoint entry.
pub(super) struct HostResult {
    pub(super) reconciliation: &'static str,
    pub(super) snapshot: Option<Value>,
    pub(super) task_scoped: Option<Value>,
    pub(super) warnings: Vec<Warning>,
}

fn warning(code: &str, message: String) -> Warning {
    Warning::new(code, message)
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

/// Host-goal reconciliation of a complete checkpoint (docs/engine.md#ge-8).
pub(super) fn reconcile_complete(
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
/// reconciled, never failing the command (docs/engine.md#ge-7).
pub(super) fn reconcile_failure(
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
