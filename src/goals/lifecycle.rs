//! Lifecycle predicates (docs/differences.md#r-2 with docs/engine.md#ge-3) and the enforced
//! transition table of the CLI commands (docs/engine.md#ge-3).

use super::error::{ErrorKind, GoalError};
use super::plan::{CriterionStatus, Goal, GoalStatus, Overlay, Plan};
use super::profile::Profile;

/// `supersededResolved(g)`: superseded, and every replacement is complete, or waived.
pub(crate) fn superseded_resolved(plan: &Plan, g: Goal<'_>) -> bool {
    if g.overlay() != Some(Overlay::Superseded) {
        return false;
    }
    if g.waived() {
        return true;
    }
    let by = g.strings("supersededBy");
    !by.is_empty()
        && by.iter().all(|id| {
            plan.goal(id)
                .is_some_and(|r| r.status() == GoalStatus::Complete)
        })
}

/// `memberResolved(g)`: complete, or superseded-resolved.
pub(crate) fn member_resolved(plan: &Plan, g: Goal<'_>) -> bool {
    g.status() == GoalStatus::Complete || superseded_resolved(plan, g)
}

/// `completionBlocking(g)`.
pub(crate) fn completion_blocking(plan: &Plan, g: Goal<'_>) -> bool {
    match g.overlay() {
        Some(Overlay::Superseded) => !superseded_resolved(plan, g),
        Some(Overlay::Blocked) => true,
        None => g.status() != GoalStatus::Complete,
    }
}

/// A completion record with `status: "complete"` exists.
pub(crate) fn completion_recorded(plan: &Plan) -> bool {
    plan.completion()
        .and_then(|c| c.get("status"))
        .and_then(serde_json::Value::as_str)
        == Some(GoalStatus::Complete.as_str())
}

/// `runComplete(plan)`: a completion record, or no completion-blocking goal.
pub(crate) fn run_complete(plan: &Plan) -> bool {
    completion_recorded(plan) || !plan.goals().any(|g| completion_blocking(plan, g))
}

/// The first `in_progress` goal without overlay (the one a checkpoint would complete).
pub(crate) fn active_goal(plan: &Plan) -> Option<Goal<'_>> {
    plan.active_goal_id()
        .and_then(|id| plan.goal(id))
        .filter(|g| g.status() == GoalStatus::InProgress && g.overlay().is_none())
        .or_else(|| {
            plan.goals()
                .find(|g| g.status() == GoalStatus::InProgress && g.overlay().is_none())
        })
}

/// The first goal in plan order that is the final candidate
/// (docs/engine.md#ge-3), if any.
pub(crate) fn final_goal(plan: &Plan) -> Option<Goal<'_>> {
    plan.goals().find(|g| final_candidate(plan, *g))
}

/// `finalCandidate(plan, g)`: `g` blocks completion and no other goal does
/// (relative to `g`: a superseded goal replaced only by `g` and complete
/// goals does not block).
pub(crate) fn final_candidate(plan: &Plan, g: Goal<'_>) -> bool {
    if !completion_blocking(plan, g) {
        return false;
    }
    plan.goals()
        .filter(|c| c.id() != g.id())
        .all(|c| match c.overlay() {
            Some(Overlay::Superseded) => {
                if c.waived() {
                    return true;
                }
                let by = c.strings("supersededBy");
                !by.is_empty()
                    && by.iter().all(|id| {
                        *id == g.id()
                            || plan
                                .goal(id)
                                .is_some_and(|r| r.status() == GoalStatus::Complete)
                    })
            }
            _ => !completion_blocking(plan, c),
        })
}

/// Goals without overlay `superseded` (the plan-wide criteria check runs over them).
pub(crate) fn counted(g: Goal<'_>) -> bool {
    g.overlay() != Some(Overlay::Superseded)
}

/// Unresolved criteria of the essential set (docs/differences.md#r-1), and whether the
/// essential gate passes.
pub(crate) fn essential_gate(
    g: Goal<'_>,
    profile: &Profile,
) -> (bool, Vec<(String, CriterionStatus)>) {
    let all: Vec<_> = g.criteria().collect();
    let mut set: Vec<_> = all.iter().filter(|c| c.essential()).collect();
    if set.is_empty()
        && let Some(h) = all.iter().find(|c| c.user_model() == "happy")
    {
        set.push(h);
    }
    let unresolved: Vec<_> = set
        .iter()
        .filter(|c| c.status() != CriterionStatus::Pass)
        .map(|c| (c.id().to_owned(), c.status()))
        .collect();
    let ok = if set.is_empty() {
        !profile.criteria.require_non_empty
    } else {
        unresolved.is_empty()
    };
    (ok, unresolved)
}

/// Unresolved criteria of the goal, and whether the all-criteria gate passes.
pub(crate) fn all_criteria_gate(
    g: Goal<'_>,
    profile: &Profile,
) -> (bool, Vec<(String, CriterionStatus)>) {
    let unresolved: Vec<_> = g
        .criteria()
        .filter(|c| c.status() != CriterionStatus::Pass)
        .map(|c| (c.id().to_owned(), c.status()))
        .collect();
    let ok = if g.criteria_len() == 0 {
        !profile.criteria.require_non_empty
    } else {
        unresolved.is_empty()
    };
    (ok, unresolved)
}

/// A CLI command that changes a goal (the rows of docs/engine.md#ge-3 this engine enforces
/// at the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// `checkpoint --status complete` (`start_pending`: `--start-pending`).
    CheckpointComplete {
        /// `--start-pending` was given.
        start_pending: bool,
    },
    /// `checkpoint --status failed`.
    CheckpointFailed,
    /// `checkpoint --status blocked`.
    CheckpointBlocked,
    /// `record-evidence` (`pass`: the recorded status is `pass`;
    /// `criterion_passed`: the criterion is already `pass`).
    RecordEvidence {
        /// Recording `pass`.
        pass: bool,
        /// The criterion is `pass` already.
        criterion_passed: bool,
    },
}

impl Trigger {
    fn command(self) -> &'static str {
        match self {
            Trigger::CheckpointComplete { .. } => "checkpoint --status complete",
            Trigger::CheckpointFailed => "checkpoint --status failed",
            Trigger::CheckpointBlocked => "checkpoint --status blocked",
            Trigger::RecordEvidence { .. } => "record-evidence",
        }
    }
}

/// What a permitted checkpoint-complete of a pending goal must do first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Permit {
    /// The row allows the trigger as is.
    Allowed,
    /// Allowed after the scheduler-style start of the pending goal.
    StartFirst,
}

/// Checks the docs/engine.md#ge-3 row of `trigger` for `g`.
pub(crate) fn check(
    plan: &Plan,
    g: Goal<'_>,
    trigger: Trigger,
    profile: &Profile,
) -> Result<Permit, GoalError> {
    let status = g.status();
    let overlay = g.overlay();
    let prefix = &profile.command_prefix;
    let sid_opt = plan
        .session_id(profile)
        .map(|s| format!(" --session-id {s}"))
        .unwrap_or_default();
    let deny = |allowed: &[&str], suggested: Option<String>, why: String| {
        let mut message = format!(
            "Goal {} is {}{}; {} is allowed only from {}.",
            g.id(),
            status.as_str(),
            overlay
                .map(|o| format!(" (steering overlay {})", o.as_str()))
                .unwrap_or_default(),
            trigger.command(),
            allowed.join(" or "),
        );
        if !why.is_empty() {
            message.push(' ');
            message.push_str(&why);
        }
        if let Some(s) = &suggested {
            message.push_str(&format!(" Next: `{s}`."));
        }
        Err(GoalError::new(
            ErrorKind::TransitionInvalid {
                goal_id: g.id().to_owned(),
                from: status.as_str().to_owned(),
                overlay: overlay.map(|o| o.as_str().to_owned()),
                command: trigger.command().to_owned(),
                allowed_from: allowed.iter().map(|s| (*s).to_owned()).collect(),
                suggested_command: suggested,
                legacy: false,
            },
            message,
        ))
    };
    let overlay_note = || match overlay {
        Some(Overlay::Superseded) => "A superseded goal accepts no further changes.".to_owned(),
        Some(Overlay::Blocked) => format!(
            "It is blocked by steering; lift it with `{prefix} steer{sid_opt} --kind unblock --goal-id {}`.",
            g.id()
        ),
        None => String::new(),
    };
    let unblock = || {
        Some(format!(
            "{prefix} steer{sid_opt} --kind unblock --goal-id {} --user-decision \"...\" --evidence \"...\" --rationale \"...\"",
            g.id()
        ))
    };
    match trigger {
        Trigger::CheckpointComplete { start_pending } => {
            let allowed = ["in_progress", "pending (with --start-pending)"];
            if overlay.is_some() {
                return deny(&allowed, None, overlay_note());
            }
            match status {
                GoalStatus::InProgress => Ok(Permit::Allowed),
                GoalStatus::Pending if start_pending => {
                    match plan
                        .goals()
                        .find(|o| o.id() != g.id() && o.status() == GoalStatus::InProgress && o.overlay().is_none())
                    {
                        Some(other) => deny(
                            &allowed,
                            None,
                            format!(
                                "--start-pending requires that no other goal is in progress, but {} is.",
                                other.id()
                            ),
                        ),
                        None => Ok(Permit::StartFirst),
                    }
                }
                GoalStatus::Pending => deny(
                    &allowed,
                    Some(format!("{prefix} complete-goals{sid_opt}")),
                    "Start it first, or pass --start-pending.".into(),
                ),
                GoalStatus::Complete => deny(&allowed, None, "complete is terminal.".into()),
                GoalStatus::NeedsUserDecision | GoalStatus::Blocked => deny(
                    &allowed,
                    unblock(),
                    "A user decision (steer --kind unblock or mark_blocked_superseded) must come first."
                        .into(),
                ),
                GoalStatus::Failed => deny(
                    &allowed,
                    Some(format!("{prefix} complete-goals{sid_opt} --retry-failed")),
                    "Retry it first.".into(),
                ),
                GoalStatus::ReviewBlocked => deny(
                    &allowed,
                    Some(format!("{prefix} complete-goals{sid_opt}")),
                    "Complete its review-blocker resolution goals; the scheduler then re-opens it."
                        .into(),
                ),
            }
        }
        // A non-terminal blocker (`compat/blockedNonTerminal`) notes work in
        // progress: only an in-progress goal takes one.
        Trigger::CheckpointBlocked if profile.compat.blocked_non_terminal => {
            let allowed = ["in_progress"];
            if overlay.is_some() {
                return deny(&allowed, None, overlay_note());
            }
            match status {
                GoalStatus::InProgress => Ok(Permit::Allowed),
                _ => deny(
                    &allowed,
                    None,
                    "Start or resume the goal before recording a blocker.".into(),
                ),
            }
        }
        Trigger::CheckpointFailed | Trigger::CheckpointBlocked => {
            let allowed = ["pending", "in_progress"];
            if overlay.is_some() {
                return deny(&allowed, None, overlay_note());
            }
            match status {
                GoalStatus::Pending | GoalStatus::InProgress => Ok(Permit::Allowed),
                GoalStatus::Complete => deny(&allowed, None, "complete is terminal.".into()),
                _ => deny(&allowed, None, String::new()),
            }
        }
        Trigger::RecordEvidence {
            pass,
            criterion_passed,
        } => {
            let allowed = [
                "in_progress",
                "complete (late pass of a criterion not yet passed)",
            ];
            if overlay.is_some() {
                return deny(&allowed, None, overlay_note());
            }
            match status {
                GoalStatus::InProgress => Ok(Permit::Allowed),
                GoalStatus::Complete if pass && !criterion_passed => Ok(Permit::Allowed),
                GoalStatus::Complete => deny(
                    &allowed,
                    None,
                    "A complete goal's criteria can only gain a late pass, never lose one.".into(),
                ),
                GoalStatus::Pending => deny(
                    &allowed,
                    Some(format!("{prefix} complete-goals{sid_opt}")),
                    "Start the goal before recording evidence.".into(),
                ),
                _ => deny(&allowed, None, String::new()),
            }
        }
    }
}
