//! `criteria --goal-id` (read-only, docs/differences.md#r-3).

use super::outcome::CriterionRecord;
use super::unknown_goal_id;
use crate::goals::Engine;
use crate::goals::error::GoalError;
use crate::goals::plan::{self, Plan};

/// The result of `criteria`.
#[derive(Debug)]
pub struct CriteriaOutcome {
    /// The plan as read.
    pub plan: Plan,
    /// The goal id.
    pub goal_id: String,
    /// The criteria objects as stored.
    pub criteria: Vec<CriterionRecord>,
}

/// Lists a goal's criteria. Writes nothing.
pub fn run(engine: &Engine, goal_id: &str) -> Result<CriteriaOutcome, GoalError> {
    let dir = engine.state_dir()?;
    let plan = plan::read(
        dir.as_ref(),
        &engine.paths,
        &engine.profile,
        &engine.now().1,
    )?;
    let g = plan
        .goal(goal_id)
        .ok_or_else(|| unknown_goal_id(engine, goal_id))?;
    let criteria = g.criteria().map(CriterionRecord::of).collect();
    Ok(CriteriaOutcome {
        goal_id: goal_id.to_owned(),
        criteria,
        plan,
    })
}
