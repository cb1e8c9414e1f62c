//! The quality-gate step of the checkpoint pipeline (docs/engine.md#ge-3
//! steps 6–8) on top of [`crate::gate`]: which rules a plan uses, the plain
//! data context the validator gets, and the mapping of its outcome to the
//! engine's errors and ledger fields.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::error::{ErrorKind, GoalError};
use super::input::Loaded;
use super::plan::{Goal, GoalStatus, Plan};
use super::stop_view::{GoalAttempt, SpawnView};
use super::{Engine, batches, lifecycle};
use crate::ambient::Ambient;
use crate::evidence::Root;
use crate::finding::Code;
use crate::gate::run::{CannotCheck, CheckOptions, Document};
use crate::gate::surface::{self, SurfaceInputs};
use crate::gate::{BatchAlternative, GateContext, GateOutcome, GateScope, Scope, ScopeCriterion};
use crate::rules::{RuleSet, RulesError};
use crate::sandbox::RelPath;
use crate::workspace::Workspace;

fn rules_error(pointer: String, problem: String) -> GoalError {
    GoalError::from(RulesError {
        file: "rules".into(),
        pointer,
        problem,
    })
}

/// The gate rule name a new plan records as `gateRules` (docs/gates.md
/// docs/state-formats.md#ge-2): the profile's `gate/final`, resolving `surface` from the
/// environment, the repository setting, the marker file and the default.
pub(crate) fn rules_for_new_plan(engine: &Engine) -> Result<String, GoalError> {
    let book = engine.gates()?;
    let inputs = engine.surface_inputs();
    let selected = surface::select(
        &engine.profile.gate.final_rules,
        &book.common().surface_resolution,
        &SurfaceInputs {
            flag: None,
            env: inputs.env.as_deref(),
            repo: book.repo_surface(),
            marker: inputs.marker.as_deref(),
        },
    );
    if book.get(&selected.name).is_none() {
        return Err(rules_error(
            format!("/profiles/{}/gate/final", engine.profile.name),
            format!("names `{}`, which is not a gate rule file", selected.name),
        ));
    }
    Ok(selected.name)
}

/// The plan's `gateRules`, else (legacy plans) resolved now.
pub(crate) fn rules_of(engine: &Engine, plan: &Plan) -> Result<String, GoalError> {
    rules_named(engine, plan.str("gateRules"))
}

/// [`rules_of`] a plan whose `gateRules` is `recorded`.
pub(crate) fn rules_named(engine: &Engine, recorded: Option<&str>) -> Result<String, GoalError> {
    match recorded {
        Some(r) => Ok(r.to_owned()),
        None => rules_for_new_plan(engine),
    }
}

fn criteria_of(plan: &Plan, ids: &[&str]) -> Vec<ScopeCriterion> {
    ids.iter()
        .filter_map(|id| plan.goal(id))
        .filter(|g| lifecycle::counted(*g))
        .flat_map(|g| {
            g.criteria()
                .map(|c| ScopeCriterion::new(g.id(), c.id(), c.status().as_str()))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The directory gate artifacts must lie below: the goal's attempt directory
/// for layout-v2 plans, else the profile's evidence root.
pub(crate) fn scope_dir(
    engine: &Engine,
    plan: &Plan,
    goal_id: Option<&str>,
) -> Result<RelPath, GoalError> {
    let dir = match goal_id.and_then(|id| plan.goal(id)) {
        Some(g) if plan.layout_v2() => engine.attempt_dir(plan, g),
        _ => engine.profile.evidence_root.clone(),
    };
    scope_path(engine, dir)
}

/// [`scope_dir`] of goal `g` read from the hooks' view of a plan.
pub(crate) fn view_scope_dir(
    engine: &Engine,
    view: &SpawnView,
    g: &GoalAttempt,
) -> Result<RelPath, GoalError> {
    let dir = if view.layout_v2 {
        engine.attempt_dir_of(view.attempt_session.as_deref(), g)
    } else {
        engine.profile.evidence_root.clone()
    };
    scope_path(engine, dir)
}

/// The attempt directory a gate for `g` is written for, when that is not
/// the current one: a pending goal is completed only through `checkpoint
/// --start-pending`, which starts the next attempt before the gate is
/// checked. `None` for every other goal (and for legacy layouts).
pub(crate) fn next_attempt_scope(engine: &Engine, plan: &Plan, g: Goal<'_>) -> Option<String> {
    (plan.layout_v2() && g.status() == GoalStatus::Pending && g.overlay().is_none())
        .then(|| engine.next_attempt_dir(plan, g))
}

/// [`scope_dir`] for a directory already chosen.
pub(crate) fn scope_path(engine: &Engine, dir: String) -> Result<RelPath, GoalError> {
    RelPath::parse(&dir, engine.evidence_rules().limits.path_limits()).map_err(|p| {
        GoalError::new(
            ErrorKind::PlanCorrupt {
                goals_path: engine.paths.goals(),
                pointer: "/goals/attemptDir".into(),
                problem: format!("attempt directory `{dir}`: {}", p.describe()),
            },
            format!("The attempt directory `{dir}` is not a clean repo-relative path."),
        )
    })
}

/// The scope of a gate for goal `id` (docs/gates.md#qg-5).
pub(crate) fn scope_of(is_final: bool, closes: Option<&Map<String, Value>>) -> Scope {
    if is_final {
        Scope::Run
    } else if let Some(b) = closes {
        Scope::Batch {
            id: batches::batch_id(b).to_owned(),
        }
    } else {
        Scope::Goal
    }
}

/// The scope criteria: run — every counted goal; batch — the batch's
/// counted members; goal — the goal itself.
pub(crate) fn scope_criteria(
    plan: &Plan,
    id: &str,
    scope: &Scope,
    closes: Option<&Map<String, Value>>,
) -> Vec<ScopeCriterion> {
    match scope {
        Scope::Run => {
            let ids: Vec<&str> = plan.goals().map(|g| g.id()).collect();
            criteria_of(plan, &ids)
        }
        Scope::Batch { .. } => {
            criteria_of(plan, &closes.map(batches::member_ids).unwrap_or_default())
        }
        Scope::Goal => criteria_of(plan, &[id]),
    }
}

/// The plan-context scope handed to the validator.
pub(crate) fn context(
    engine: &Engine,
    plan: &Plan,
    id: &str,
    is_final: bool,
    closes: Option<&Map<String, Value>>,
) -> Result<GateScope, GoalError> {
    let scope = scope_of(is_final, closes);
    let criteria = scope_criteria(plan, id, &scope, closes);
    let batch_alternative = match (&scope, closes) {
        (Scope::Run, Some(b)) => Some(BatchAlternative {
            batch_id: batches::batch_id(b).to_owned(),
            criteria: criteria_of(plan, &batches::member_ids(b)),
        }),
        _ => None,
    };
    Ok(GateScope::Plan(GateContext {
        scope,
        goal_id: id.to_owned(),
        scope_dir: scope_dir(engine, plan, Some(id))?,
        criteria,
        batch_alternative,
        checkpoint: true,
        plan_gate_rules: plan.str("gateRules").map(str::to_owned),
    }))
}

/// The plan context of `gate check --goal-id` (docs/gates.md#qg-8): the
/// plan read without a lock and without writing, the goal's scope, scope
/// directory and scope criteria, and the plan's gate rule name.
pub(crate) fn check_context(
    engine: &Engine,
    goal_id: &str,
) -> Result<(GateScope, String), GoalError> {
    let dir = engine.state_dir()?;
    let plan = super::plan::read(
        dir.as_ref(),
        &engine.paths,
        &engine.profile,
        &engine.now().1,
    )?;
    let g = plan
        .goal(goal_id)
        .ok_or_else(|| GoalError::goal_not_found(&engine.profile, goal_id, false))?;
    let is_final = lifecycle::final_candidate(&plan, g);
    let closes = batches::closes(&plan, g.id());
    let mut scope = context(engine, &plan, g.id(), is_final, closes)?;
    if let GateScope::Plan(ctx) = &mut scope {
        ctx.checkpoint = false;
        // Checked as `checkpoint --start-pending` will check it.
        if let Some(dir) = next_attempt_scope(engine, &plan, g) {
            ctx.scope_dir = scope_path(engine, dir)?;
        }
    }
    Ok((scope, rules_of(engine, &plan)?))
}

/// `gate check --goal-id`: validates the gate `document` of `ws` in the
/// plan context of goal `goal_id` — the plan is read without a lock and
/// without writing, its gate rules apply unless `opts.surface` names
/// others, and the goal's scope is checked as `checkpoint --start-pending`
/// will check it. `root_path` is the ambient path `ws` was opened at and
/// `session_id` the profile's session flag, if given (else the
/// environment's scope). The engine's diagnostics go to the per-user state
/// of `ws`'s canonical root ([`crate::workspace::WorkspaceOptions::root_path`]).
/// A missing or corrupt plan, or an unknown goal, cannot be checked.
pub fn check_gate_in_plan(
    amb: &dyn Ambient,
    ws: Workspace,
    root_path: &Path,
    document: Document<'_>,
    opts: &CheckOptions<'_>,
    goal_id: &str,
    session_id: Option<&str>,
) -> Result<GateOutcome, CannotCheck> {
    // The workspace is handed on whole; its canonical root names the
    // engine's diagnostics sink, opened only once the plan is read.
    let canonical_root = ws.canonical_root().map(Path::to_path_buf);
    let plan = |root: &Root, rules: &RuleSet| -> Result<(GateScope, String), CannotCheck> {
        let dir = root.dir().try_clone().map_err(|e| {
            CannotCheck::new(
                Some(Code::IoError),
                format!("cannot reopen the repository: {e}"),
            )
        })?;
        let goal_error = |e: GoalError| CannotCheck {
            code: None,
            message: format!("{}: {}", e.code(), e.message),
            details: Some(json!({"code": e.code(), "details": e.details()})),
        };
        let explicit = session_id.map(Some);
        let sink = super::diagnostics::Sink::open(amb, canonical_root.as_deref());
        let engine = Engine::open(
            amb,
            (dir, root_path),
            rules,
            opts.profile,
            explicit,
            None,
            sink,
        )
        .map_err(goal_error)?;
        check_context(&engine, goal_id).map_err(goal_error)
    };
    crate::gate::run::check_with(amb, ws, document, opts, Some(&plan))
}

/// Runs the gate validator on a supplied gate (`strict`: `checkpoint
/// --strict` under a profile with `compat/strictGate`).
pub(crate) fn validate(
    engine: &Engine,
    plan: &Plan,
    gate: &Loaded,
    scope: &GateScope,
    strict: bool,
) -> Result<GateOutcome, GoalError> {
    let name = match (strict, &engine.profile.compat.strict_gate) {
        // `checkpoint --strict` (`compat/strictGate`): the strict rules,
        // which require everything the plan's rules do and more.
        (true, Some(strict)) => strict.clone(),
        _ => rules_of(engine, plan)?,
    };
    let book = engine.gates()?;
    let rules = book.get(&name).ok_or_else(|| {
        rules_error(
            "/gates".into(),
            format!("the plan's gateRules `{name}` names no gate rule file"),
        )
    })?;
    let dir = engine
        .root()
        .try_clone()
        .map_err(|e| GoalError::io(".", "open", &e))?;
    let root = Root::new(dir, engine.evidence_rules())?
        .with_evidence_root(&engine.profile.evidence_root)
        .map_err(|p| {
            rules_error(
                format!("/profiles/{}/evidenceRoot", engine.profile.name),
                p.describe().into(),
            )
        })?;
    Ok(crate::gate::validate(
        &root,
        rules,
        gate.text.as_bytes(),
        scope,
    ))
}

/// `ULW_LOOP_QUALITY_GATE_INVALID` for a gate that did not pass.
pub(crate) fn error(outcome: &GateOutcome) -> Option<GoalError> {
    outcome.rejection().map(|r| {
        GoalError::new(
            ErrorKind::QualityGateInvalid { details: r.details },
            r.message,
        )
    })
}

/// `ULW_LOOP_QUALITY_GATE_INVALID` for a required gate that is absent (docs/differences.md#r-6).
pub(crate) fn missing() -> GoalError {
    GoalError::new(
        ErrorKind::QualityGateInvalid {
            details: json!({"field": "qualityGate", "code": "GATE_SECTION_MISSING", "findings": []}),
        },
        "Final quality gate requires qualityGate evidence; pass --quality-gate-json with the gate JSON or a path to it.",
    )
}

/// The combined snapshot + gate error (docs/engine.md#ge-3 step 6).
pub(crate) fn combined(snapshot: &GoalError, gate: &GoalError) -> GoalError {
    let mut details = gate.details().unwrap_or_else(|| json!({}));
    details["hostGoal"] = snapshot.details().unwrap_or(Value::Null);
    GoalError::new(
        ErrorKind::QualityGateInvalid { details },
        format!("{}\n{}", snapshot.message, gate.message),
    )
}

/// The batch cross-check of docs/differences.md#r-5 step 4 for a batch-scope gate: the gate's
/// `criteriaCoverage` counts must equal the members' recomputed counts.
pub(crate) fn check_batch_coverage(
    plan: &Plan,
    b: &Map<String, Value>,
    outcome: &GateOutcome,
) -> Result<(), GoalError> {
    let Some(cov) = outcome.normalized().get("criteriaCoverage") else {
        return Ok(());
    };
    let criteria = criteria_of(plan, &batches::member_ids(b));
    let (total, pass) = crate::gate::context::counts(&criteria);
    let stated = (
        cov.get("totalCriteria").and_then(Value::as_u64),
        cov.get("passCount").and_then(Value::as_u64),
    );
    if stated == (Some(total), Some(pass)) {
        return Ok(());
    }
    let batch_id = batches::batch_id(b).to_owned();
    Err(GoalError::new(
        ErrorKind::ValidationBatchGateMismatch {
            details: json!({
                "batchId": batch_id,
                "expected": {"totalCriteria": total, "passCount": pass},
                "actual": cov,
                "scope": format!("batch:{batch_id}"),
            }),
        },
        "Validation batch gate coverage does not match member criteria.",
    ))
}

/// The normalised gate as recorded in a ledger entry: verbatim, or a digest
/// stand-in when larger than `maxEmbeddedGateBytes`.
pub(crate) fn embedded(outcome: &GateOutcome, max: u64) -> Value {
    let text = serde_json::to_string(outcome.normalized()).expect("json");
    if text.len() as u64 > max {
        json!({"omitted": true, "size": text.len(), "sha256": outcome.sha256()})
    } else {
        outcome.normalized().clone()
    }
}

/// ` | codeQuality=WATCH: <codeReview.evidence>` when the gate's code review
/// is `WATCH` (docs/differences.md#r-1).
pub(crate) fn watch_suffix(outcome: &GateOutcome) -> Option<String> {
    let cr = outcome.normalized().get("codeReview")?;
    (cr.get("codeQualityStatus").and_then(Value::as_str) == Some("WATCH")).then(|| {
        format!(
            " | codeQuality=WATCH: {}",
            cr.get("evidence")
                .and_then(Value::as_str)
                .unwrap_or_default()
        )
    })
}

/// The gate's accepted files as ledger `files` elements (plus the document
/// itself, role `gate`, when it was read from a path).
pub(crate) fn files(outcome: &GateOutcome, gate: &Loaded) -> Vec<Value> {
    let mut out: Vec<Value> = outcome
        .files()
        .iter()
        .map(|f| serde_json::to_value(f).expect("json"))
        .collect();
    if let Some(f) = &gate.file {
        out.push(json!({"path": f.path, "size": f.size, "sha256": f.sha256, "role": "gate"}));
    }
    out
}

/// Warnings of a passing gate as `{code, message}`.
pub(crate) fn warnings(outcome: &GateOutcome) -> Vec<super::warning::Warning> {
    outcome
        .warnings()
        .map(|f| super::warning::Warning::new(f.code.name(), f.message.clone()))
        .collect()
}
