//! `complete-goals [--retry-failed]` (docs/differences.md#r-3 with docs/engine.md#ge-3, docs/engine.md#ge-4)
//! and the `next` object of auto-advance.

use serde_json::{Value, json};

use super::{ledger_json, lock_plan};
use crate::goals::error::GoalError;
use crate::goals::journal::Head;
use crate::goals::plan::{GoalStatus, Plan};
use crate::goals::scheduler::{self, Outcome};
use crate::goals::txn::Write;
use crate::goals::{Engine, handoff};

/// The result of `complete-goals`.
#[derive(Debug)]
pub struct CompleteOutcome {
    /// The plan after the command.
    pub plan: Plan,
    /// What the scheduler decided.
    pub outcome: Outcome,
    /// `next`-style report (`resumed`/`goal`/`instruction` or `done`/`handoff`).
    pub report: Value,
    /// Plan revision.
    pub revision: u64,
    /// Ledger head.
    pub head: Head,
}

impl CompleteOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> Value {
        ledger_json(&self.head)
    }
}

/// The report object of a scheduler outcome (docs/differences.md#r-2, docs/differences.md#r-3, docs/engine.md#ge-3).
pub(crate) fn report(engine: &Engine, plan: &Plan, outcome: &Outcome) -> Value {
    match outcome {
        Outcome::Resumed(id) | Outcome::Started(id) => {
            let g = plan.goal(id).expect("scheduled goals exist");
            let instruction = handoff::instruction(engine, plan, g);
            let mut r = json!({
                "resumed": matches!(outcome, Outcome::Resumed(_)),
                "goal": Value::Object(g.0.clone()),
                "instruction": instruction,
                "state": outcome.state(),
            });
            // `compat/instructionString`: `instruction` is the handoff text;
            // the structured form moves to `instructionPayload`.
            if engine.profile.compat.instruction_string {
                let text = r["instruction"]["text"].clone();
                let payload = r["instruction"]["json"].clone();
                r["instruction"] = text;
                r["instructionPayload"] = payload;
            }
            r
        }
        Outcome::Complete => json!({
            "done": true, "blocked": false, "handoff": "", "state": "complete", "runComplete": true
        }),
        Outcome::BlockedOnUser(id) => {
            let g = plan.goal(id).expect("exists");
            json!({
                "done": true, "blocked": true, "handoff": handoff::blocked(engine, plan, g),
                "state": "blocked_on_user", "runComplete": false
            })
        }
        Outcome::Stalled(ids) => json!({
            "done": true, "blocked": false, "handoff": "", "state": "stalled",
            "runComplete": false, "stalledGoalIds": ids
        }),
    }
}

/// Runs the scheduler under the lock; writes only when a goal was started
/// (or recovery/migration entries are pending).
pub fn run(engine: &Engine, retry_failed: bool) -> Result<CompleteOutcome, GoalError> {
    let (locked, mut plan) = lock_plan(engine, "complete-goals")?;
    let mut entries = Vec::new();
    let now = locked.now.clone();
    let outcome = scheduler::run(engine, &mut plan, retry_failed, &now, &mut entries);
    if !entries.is_empty() || !plan.pending.is_empty() {
        let mut committed = locked.commit(Write::Plan(Box::new(plan)), entries)?;
        let plan = committed.plan.take().expect("plan written");
        return Ok(CompleteOutcome {
            report: report(engine, &plan, &outcome),
            plan,
            outcome,
            revision: committed.revision,
            head: committed.head,
        });
    }
    // `compat/resumeEntry`: resuming an in-progress goal leaves an
    // audit-only record (the plan is unchanged).
    if let (Outcome::Resumed(id), Some(kind)) = (&outcome, &engine.profile.compat.resume_entry) {
        let mut e = super::entry_named(&now, kind, Some(id));
        e.insert("status".into(), json!(GoalStatus::InProgress.as_str()));
        e.insert("message".into(), json!("Resuming the active goal."));
        let committed = locked.commit(
            Write::AuditOnly {
                revision: plan.revision(),
            },
            vec![e],
        )?;
        return Ok(CompleteOutcome {
            report: report(engine, &plan, &outcome),
            revision: committed.revision,
            plan,
            outcome,
            head: committed.head,
        });
    }
    let head = locked.view.head.clone();
    locked.finish()?;
    Ok(CompleteOutcome {
        report: report(engine, &plan, &outcome),
        revision: plan.revision(),
        plan,
        outcome,
        head,
    })
}
