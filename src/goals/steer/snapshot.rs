//! Compact plan snapshots for steering audits (docs/differences.md#r-4): the plan's
//! `updatedAt`, `activeGoalId`, goal count and ids in order, and only the
//! goals the mutation changed — never whole plans, and computed only over
//! the goals the proposal could touch (docs/engine.md#ge-11).

use serde_json::{Map, Value, json};

use crate::goals::plan::Plan;

/// The plan-level part of a snapshot and the candidate goals before a mutation.
#[derive(Debug, Clone)]
pub(crate) struct Before {
    header: Map<String, Value>,
    goals: Vec<(String, Value)>,
}

fn header(plan: &Plan) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "updatedAt".into(),
        plan.doc().get("updatedAt").cloned().unwrap_or(Value::Null),
    );
    if let Some(a) = plan.active_goal_id() {
        m.insert("activeGoalId".into(), json!(a));
    }
    m.insert("goalCount".into(), json!(plan.goal_count()));
    m.insert(
        "goalIds".into(),
        json!(plan.goals().map(|g| g.id()).collect::<Vec<_>>()),
    );
    m
}

/// The object of a goal a snapshot holds (whole, never cut down).
fn object(g: crate::goals::plan::Goal<'_>) -> Value {
    debug_assert!(!g.is_cut(), "a cut-down goal in a steering snapshot");
    Value::Object(g.0.clone())
}

/// Captures the plan header and the goals `candidates` names, before a mutation.
pub(crate) fn before(plan: &Plan, candidates: &[String]) -> Before {
    Before {
        header: header(plan),
        goals: candidates
            .iter()
            .filter_map(|id| Some((id.clone(), object(plan.goal(id)?))))
            .collect(),
    }
}

/// The `(before, after)` snapshots once `plan` holds the mutation; `created`
/// are the ids the mutation added.
pub(crate) fn pair(b: Before, plan: &Plan, created: &[String]) -> (Value, Value) {
    let mut changed_before = Vec::new();
    let mut changed_ids: Vec<&str> = Vec::new();
    for (id, old) in &b.goals {
        let now = plan.goal(id).map(object);
        if now.as_ref() != Some(old) {
            changed_before.push(old.clone());
            changed_ids.push(id);
        }
    }
    for id in created {
        if !changed_ids.contains(&id.as_str()) {
            changed_ids.push(id);
        }
    }
    let mut after_goals: Vec<(usize, Value)> = changed_ids
        .iter()
        .filter_map(|id| Some((plan.goal_position(id)?, object(plan.goal(id)?))))
        .collect();
    after_goals.sort_by_key(|(i, _)| *i);
    let mut before = b.header;
    before.insert("goals".into(), Value::Array(changed_before));
    let mut after = header(plan);
    after.insert(
        "goals".into(),
        Value::Array(after_goals.into_iter().map(|(_, g)| g).collect()),
    );
    (Value::Object(before), Value::Object(after))
}
