//! `add-goal` (docs/differences.md#r-7 with docs/engine.md#ge-3, docs/engine.md#ge-4).

use serde_json::json;

use super::outcome::{GoalRecord, LedgerHead};
use super::{entry, lock_plan_reaching, refuse_if_complete};
use crate::goals::error::GoalError;
use crate::goals::journal::LedgerKind;
use crate::goals::plan::{GoalStatus, Plan, PlanRead};
use crate::goals::txn::{Committed, Write};
use crate::goals::{Engine, brief};

/// An `add-goal` request.
#[derive(Debug, Clone)]
pub struct AddRequest {
    /// `--title`.
    pub title: String,
    /// `--objective`.
    pub objective: String,
    /// `--evidence`.
    pub evidence: Option<String>,
    /// `--token-budget` (stored, never enforced).
    pub token_budget: Option<u64>,
}

/// The result of `add-goal`.
#[derive(Debug)]
pub struct AddOutcome {
    /// The plan after the write.
    pub plan: Plan,
    /// The new goal as written.
    pub goal: GoalRecord,
    /// What was written.
    pub committed: Committed,
    /// How the plan was read: from its cut-down body,
    /// [`AddOutcome::plan`] holds of the goals already there only what that
    /// body keeps of their criteria ([`Plan::is_partial`]; `goals.json`
    /// holds them whole).
    pub plan_read: PlanRead,
}

impl AddOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.committed.head)
    }
}

/// Appends a goal.
pub fn run(engine: &Engine, req: AddRequest) -> Result<AddOutcome, GoalError> {
    let (locked, mut plan, plan_read) = lock_plan_reaching(engine, "add-goal", &[])?;
    refuse_if_complete(engine, &plan, "add-goal")?;
    let now = locked.now.clone();
    // Hand-edited plans can hold an id the ordinal scheme would produce;
    // the next free ordinal keeps ids unique (a duplicate is a corrupt plan).
    let mut index = plan.goal_count();
    let mut goal = brief::new_goal(
        index,
        &req.title,
        &req.objective,
        engine.profile.criteria.seed,
        &now,
    )?;
    while plan.goal(goal["id"].as_str().unwrap_or_default()).is_some() {
        index += 1;
        goal = brief::new_goal(
            index,
            &req.title,
            &req.objective,
            engine.profile.criteria.seed,
            &now,
        )?;
    }
    if let Some(ev) = req
        .evidence
        .as_deref()
        .map(str::trim)
        .filter(|e| !crate::text::is_blank(e))
    {
        goal.insert("evidence".into(), json!(ev));
    }
    if let Some(b) = req.token_budget {
        goal.insert("tokenBudget".into(), json!(b));
    }
    let id = goal["id"].as_str().unwrap_or_default().to_owned();
    let title = goal["title"].clone();
    let mut e = entry(&now, LedgerKind::GoalAdded, Some(&id));
    e.insert("status".into(), json!(GoalStatus::Pending.as_str()));
    e.insert("message".into(), title);
    if let Some(ev) = goal.get("evidence") {
        e.insert("evidence".into(), ev.clone());
    }
    plan.push_goal(goal.clone());
    plan.set("updatedAt", json!(now));
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), vec![e])?;
    Ok(AddOutcome {
        plan: committed.plan.take().expect("plan written"),
        goal: GoalRecord::from_map(goal),
        committed,
        plan_read,
    })
}
