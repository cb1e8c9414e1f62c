//! The criteria gate of a complete checkpoint (docs/differences.md#r-2 step 2).

use serde_json::{Value, json};

use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::plan::{Mode, Plan};
use crate::goals::{Engine, batches, lifecycle};

/// The criteria gate of a complete checkpoint (docs/differences.md#r-2 step 2, docs/engine.md#ge-3 step 5).
pub(super) fn criteria_gate(
    engine: &Engine,
    plan: &Plan,
    id: &str,
    is_final: bool,
) -> Result<(), GoalError> {
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
