//! One module per subcommand. Each returns a typed outcome; the CLI renders it.

pub mod add;
pub mod checkpoint;
pub mod complete;
pub mod create;
pub mod criteria;
pub mod outcome;
pub mod record;
pub mod repair;
pub mod review;
pub mod status;
pub mod template;

use serde_json::{Map, Value, json};

use super::Engine;
use super::error::{ErrorKind, GoalError};
use super::journal::LedgerKind;
use super::lifecycle;
use super::plan::{Plan, PlanRead};
use super::txn::{Locked, OnMismatch};

/// A ledger entry skeleton `{at, kind, goalId?}`.
pub(crate) fn entry(now: &str, kind: LedgerKind, goal_id: Option<&str>) -> Map<String, Value> {
    entry_named(now, kind.as_str(), goal_id)
}

/// [`entry`] of a kind a profile names (an audit-only record no reader
/// interprets).
pub(crate) fn entry_named(now: &str, kind: &str, goal_id: Option<&str>) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("at".into(), json!(now));
    m.insert("kind".into(), json!(kind));
    if let Some(g) = goal_id {
        m.insert("goalId".into(), json!(g));
    }
    m
}

/// Locks the scope of a command that needs an existing plan, runs the
/// recovery check and reads the plan. A scope without a state directory is
/// `ULW_LOOP_PLAN_MISSING` without creating anything. The command changes
/// only the goals whose ids are in `reach`, and goals it reaches through
/// [`Plan::goal_mut`]: the plan may be read from its cut-down body
/// ([`Locked::read_plan_reaching`]).
pub(crate) fn lock_plan_reaching<'e>(
    engine: &'e Engine,
    command: &str,
    reach: &[&str],
) -> Result<(Locked<'e>, Plan, PlanRead), GoalError> {
    lock_plan_reaching_timed(engine, command, reach, engine.lock_timeout())
}

/// [`lock_plan_reaching`] with an explicit lock wait.
pub(crate) fn lock_plan_reaching_timed<'e>(
    engine: &'e Engine,
    command: &str,
    reach: &[&str],
    timeout: std::time::Duration,
) -> Result<(Locked<'e>, Plan, PlanRead), GoalError> {
    let Some(dir) = engine.state_dir()? else {
        return Err(super::plan::missing(&engine.paths, &engine.profile));
    };
    let mut locked = engine.lock_in(dir, command, timeout)?;
    let (plan, read) = locked.read_plan_reaching(reach)?;
    locked.reconcile(Some(&plan), OnMismatch::Refuse)?;
    Ok((locked, plan, read))
}

/// `ULW_LOOP_PLAN_COMPLETE` when the run is complete (docs/engine.md#ge-3).
pub(crate) fn refuse_if_complete(
    engine: &Engine,
    plan: &Plan,
    command: &str,
) -> Result<(), GoalError> {
    if !lifecycle::run_complete(plan) {
        return Ok(());
    }
    let completed_at = plan
        .completion()
        .and_then(|c| c.get("completedAt"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let p = &engine.profile;
    Err(GoalError::new(
        ErrorKind::PlanComplete {
            goals_path: engine.paths.goals(),
            completed_at,
            command: command.to_owned(),
        },
        format!(
            "The {} run at {} is complete; {command} would change a finished run. Start new work with `{} create-goals --session-id <new-id> ...` (or `--force`, which archives this run).",
            p.display_name,
            engine.paths.goals(),
            p.command_prefix
        ),
    ))
}

/// `ULW_LOOP_GOAL_NOT_FOUND` with the anchor's `Unknown <name> id` message
/// but no `legacyCode`: `criteria` and the template printer already used the
/// upper-case code (docs/engine.md#ge-4).
pub(crate) fn unknown_goal_id(engine: &Engine, id: &str) -> GoalError {
    GoalError::new(
        ErrorKind::GoalNotFound {
            goal_id: id.to_owned(),
            legacy: false,
        },
        format!("Unknown {} id: {id}.", engine.profile.display_name),
    )
}

/// `ULW_LOOP_GOAL_NOT_FOUND` in the engine's profile's words.
pub(crate) fn goal_not_found(engine: &Engine, id: &str, legacy: bool) -> GoalError {
    GoalError::goal_not_found(&engine.profile, id, legacy)
}
