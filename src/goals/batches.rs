//! Validation batches: parsing at `create-goals` (docs/differences.md#r-5) and the readiness
//! rules a closing checkpoint enforces (docs/differences.md#r-5, docs/engine.md#ge-6).
//! Steering of batches (`revise_batch`) lives with steering.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::error::{ErrorKind, GoalError};
use super::lifecycle;
use super::plan::{CriterionStatus, GoalStatus, Overlay, Plan};

fn invalid(msg: &str) -> GoalError {
    GoalError::new(ErrorKind::ValidationBatchInvalid, msg)
}

/// Parses and validates the batch declaration against the derived goal ids.
pub(crate) fn parse(value: &Value, goal_ids: &[String]) -> Result<Vec<Value>, GoalError> {
    let Some(list) = value.as_array() else {
        return Err(invalid("--validation-batch-json must be a JSON array."));
    };
    let mut shaped = Vec::new();
    for item in list {
        let Some(o) = item.as_object() else {
            return Err(invalid("validation batch entries must be objects."));
        };
        let batch_id = o
            .get("batchId")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid("validation batch requires batchId."))?;
        let members: Option<Vec<String>> =
            o.get("memberIds").and_then(Value::as_array).and_then(|a| {
                a.iter()
                    .map(|m| {
                        m.as_str()
                            .map(str::trim)
                            .filter(|s| !s.is_empty())
                            .map(str::to_owned)
                    })
                    .collect()
            });
        let members = members
            .filter(|m| m.len() >= 2)
            .ok_or_else(|| invalid("validation batch requires at least two memberIds."))?;
        let final_id = o
            .get("finalGoalId")
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid("validation batch requires finalGoalId."))?;
        shaped.push((batch_id.to_owned(), members, final_id.to_owned()));
    }
    let mut seen_batches = HashSet::new();
    let mut used = HashSet::new();
    let mut out = Vec::new();
    for (batch_id, members, final_id) in shaped {
        if !seen_batches.insert(batch_id.clone()) {
            return Err(invalid(&format!(
                "duplicate validation batch id: {batch_id}."
            )));
        }
        let unique: HashSet<&String> = members.iter().collect();
        if unique.len() != members.len() {
            return Err(invalid(&format!(
                "validation batch {batch_id} has duplicate memberIds."
            )));
        }
        if !members.contains(&final_id) {
            return Err(GoalError::new(
                ErrorKind::ValidationBatchFinalNotMember {
                    batch_id: batch_id.clone(),
                },
                format!("validation batch {batch_id} finalGoalId {final_id} is not a member."),
            ));
        }
        for m in &members {
            if !goal_ids.contains(m) {
                return Err(GoalError::new(
                    ErrorKind::ValidationBatchMemberUnknown {
                        batch_id: batch_id.clone(),
                        member_id: m.clone(),
                    },
                    format!("validation batch {batch_id} references unknown goal {m}."),
                ));
            }
            if !used.insert(m.clone()) {
                return Err(GoalError::new(
                    ErrorKind::ValidationBatchOverlap {
                        batch_id: batch_id.clone(),
                        member_id: m.clone(),
                    },
                    format!(
                        "validation batch {batch_id} member {m} already belongs to another batch."
                    ),
                ));
            }
        }
        out.push(json!({"batchId": batch_id, "memberIds": members, "finalGoalId": final_id}));
    }
    Ok(out)
}

/// The first batch whose members contain `goal_id`.
pub(crate) fn batch_of<'p>(plan: &'p Plan, goal_id: &str) -> Option<&'p Map<String, Value>> {
    plan.batches()
        .into_iter()
        .find(|b| member_ids(b).contains(&goal_id))
}

/// Member ids of a batch.
pub(crate) fn member_ids(b: &Map<String, Value>) -> Vec<&str> {
    b.get("memberIds")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The batch id.
pub(crate) fn batch_id(b: &Map<String, Value>) -> &str {
    b.get("batchId").and_then(Value::as_str).unwrap_or("")
}

/// Whether the goal closes its batch (it is the batch's final member).
pub(crate) fn closes<'p>(plan: &'p Plan, goal_id: &str) -> Option<&'p Map<String, Value>> {
    batch_of(plan, goal_id)
        .filter(|b| b.get("finalGoalId").and_then(Value::as_str) == Some(goal_id))
}

fn is_closed(b: &Map<String, Value>) -> bool {
    b.get("closedAt").is_some_and(Value::is_string)
}

fn open_members<'p>(plan: &'p Plan, b: &'p Map<String, Value>, resolved: &str) -> Vec<&'p str> {
    member_ids(b)
        .into_iter()
        .filter(|m| *m != resolved)
        .filter(|m| {
            !plan
                .goal(m)
                .is_some_and(|g| lifecycle::member_resolved(plan, g))
        })
        .collect()
}

fn requires_decision<'p>(plan: &'p Plan, ids: &[&'p str]) -> Vec<&'p str> {
    ids.iter()
        .copied()
        .filter(|m| {
            plan.goal(m).is_some_and(|g| {
                g.overlay() == Some(Overlay::Blocked) || g.status() == GoalStatus::NeedsUserDecision
            })
        })
        .collect()
}

fn decision_note(ids: &[&str]) -> String {
    if ids.is_empty() {
        String::new()
    } else {
        format!(
            " Members {} require a user decision (steer --kind unblock, mark_blocked_superseded or revise_batch).",
            ids.join(", ")
        )
    }
}

/// Run-final closure rule (docs/differences.md#r-5): every batch is closed treating the goal
/// being completed as resolved.
pub(crate) fn check_all_closed(plan: &Plan, completing: &str) -> Result<(), GoalError> {
    let mut open = Vec::new();
    let mut decide = Vec::new();
    for b in plan.batches() {
        if is_closed(b) {
            continue;
        }
        let members = open_members(plan, b, completing);
        if !members.is_empty() {
            decide.extend(requires_decision(plan, &members));
            open.push(batch_id(b));
        }
    }
    if open.is_empty() {
        return Ok(());
    }
    Err(GoalError::new(
        ErrorKind::ValidationBatchOpen {
            details: json!({"batchIds": open, "requiresDecision": decide}),
        },
        format!("Validation batches remain open.{}", decision_note(&decide)),
    ))
}

/// Batch-final readiness (docs/differences.md#r-5): the other members are resolved.
pub(crate) fn check_ready(
    plan: &Plan,
    b: &Map<String, Value>,
    completing: &str,
) -> Result<(), GoalError> {
    let open = open_members(plan, b, completing);
    if open.is_empty() {
        return Ok(());
    }
    let decide = requires_decision(plan, &open);
    Err(GoalError::new(
        ErrorKind::ValidationBatchOpen {
            details: json!({"batchId": batch_id(b), "open": open, "requiresDecision": decide}),
        },
        format!(
            "Validation batch has unresolved members.{}",
            decision_note(&decide)
        ),
    ))
}

/// Every member criterion is `pass` (docs/differences.md#r-5 step 3). Superseded members
/// are not counted (docs/engine.md#ge-3): a waived member's criteria can
/// never be recorded, and the gate's coverage skips them as well.
pub(crate) fn check_criteria(plan: &Plan, b: &Map<String, Value>) -> Result<(), GoalError> {
    let mut pending = Vec::new();
    for m in member_ids(b) {
        if let Some(g) = plan.goal(m).filter(|g| lifecycle::counted(*g)) {
            for c in g.criteria() {
                if c.status() != CriterionStatus::Pass {
                    pending.push(format!("{m}:{}", c.id()));
                }
            }
        }
    }
    if pending.is_empty() {
        return Ok(());
    }
    Err(GoalError::new(
        ErrorKind::ValidationBatchCriteriaPending {
            batch_id: batch_id(b).to_owned(),
            pending,
        },
        "Validation batch criteria remain pending.",
    ))
}

/// Marks a batch closed by `goal_id` (docs/state-formats.md#ge-2).
pub(crate) fn close(plan: &mut Plan, batch: &str, goal_id: &str, now: &str) {
    if let Some(list) = plan.batches_mut() {
        for b in list.iter_mut().filter_map(Value::as_object_mut) {
            if b.get("batchId").and_then(Value::as_str) == Some(batch) {
                b.insert("closedAt".into(), json!(now));
                b.insert("closedByGoalId".into(), json!(goal_id));
            }
        }
    }
}
