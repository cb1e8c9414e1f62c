//! `complete-goals [--retry-failed]` (docs/differences.md#r-3 with docs/engine.md#ge-3, docs/engine.md#ge-4)
//! and the `next` object of auto-advance.

use serde_json::json;

use super::lock_plan_reaching;
use super::outcome::{GoalRecord, LedgerHead};
use crate::goals::Engine;
use crate::goals::error::GoalError;
use crate::goals::handoff::{self, Instruction};
use crate::goals::journal::Head;
use crate::goals::plan::{GoalStatus, Plan, PlanRead};
use crate::goals::scheduler::{self, Outcome};
use crate::goals::txn::Write;

/// The result of `complete-goals`.
#[derive(Debug)]
pub struct CompleteOutcome {
    /// The plan after the command.
    pub plan: Plan,
    /// What the scheduler decided.
    pub outcome: Outcome,
    /// The scheduled goal and its instruction, or why nothing was scheduled.
    pub report: Report,
    /// Plan revision.
    pub revision: u64,
    /// Ledger head.
    pub head: Head,
    /// How the plan was read: from its cut-down body,
    /// [`CompleteOutcome::plan`] holds of the goals the command did not
    /// start or schedule only what that body keeps of their criteria
    /// ([`Plan::is_partial`]; `goals.json` holds them whole).
    pub plan_read: PlanRead,
}

impl CompleteOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.head)
    }
}

/// What the scheduler decided, with what its reply shows
/// (docs/differences.md#r-2, docs/differences.md#r-3, docs/engine.md#ge-3).
#[derive(Debug, Clone, PartialEq)]
pub enum Report {
    /// The in-progress goal goes on.
    Resumed {
        /// The goal as stored.
        goal: GoalRecord,
        /// Its instruction.
        instruction: Instruction,
    },
    /// A goal was started.
    Started {
        /// The goal as stored.
        goal: GoalRecord,
        /// Its instruction.
        instruction: Instruction,
    },
    /// The run is complete.
    Complete,
    /// A goal waits for a user decision.
    BlockedOnUser {
        /// The waiting goal.
        goal_id: String,
        /// The blocked-decision handoff.
        handoff: String,
    },
    /// Nothing can be scheduled.
    Stalled {
        /// The completion-blocking goals.
        goal_ids: Vec<String>,
    },
}

impl Report {
    /// `state`: `resumed`, `started`, `complete`, `blocked_on_user` or `stalled`.
    pub fn state(&self) -> &'static str {
        match self {
            Report::Resumed { .. } => "resumed",
            Report::Started { .. } => "started",
            Report::Complete => "complete",
            Report::BlockedOnUser { .. } => "blocked_on_user",
            Report::Stalled { .. } => "stalled",
        }
    }
    /// The resumed or started goal.
    pub fn goal(&self) -> Option<&GoalRecord> {
        match self {
            Report::Resumed { goal, .. } | Report::Started { goal, .. } => Some(goal),
            _ => None,
        }
    }
    /// The id of the resumed or started goal.
    pub fn next_goal_id(&self) -> Option<&str> {
        self.goal().map(GoalRecord::id)
    }
    /// The instruction of the resumed or started goal.
    pub fn instruction(&self) -> Option<&Instruction> {
        match self {
            Report::Resumed { instruction, .. } | Report::Started { instruction, .. } => {
                Some(instruction)
            }
            _ => None,
        }
    }
    /// Nothing was scheduled (`done` of the reply).
    pub fn done(&self) -> bool {
        self.goal().is_none()
    }
}

/// The report of a scheduler outcome.
pub(crate) fn report(engine: &Engine, plan: &Plan, outcome: &Outcome) -> Report {
    match outcome {
        Outcome::Resumed(id) | Outcome::Started(id) => {
            let g = plan.goal(id).expect("scheduled goals exist");
            let goal = GoalRecord::of(g);
            let instruction = handoff::instruction(engine, plan, g);
            if matches!(outcome, Outcome::Resumed(_)) {
                Report::Resumed { goal, instruction }
            } else {
                Report::Started { goal, instruction }
            }
        }
        Outcome::Complete => Report::Complete,
        Outcome::BlockedOnUser(id) => {
            let g = plan.goal(id).expect("exists");
            Report::BlockedOnUser {
                goal_id: id.clone(),
                handoff: handoff::blocked(engine, plan, g),
            }
        }
        Outcome::Stalled(ids) => Report::Stalled {
            goal_ids: ids.clone(),
        },
    }
}

/// Runs the scheduler under the lock; writes only when a goal was started
/// (or recovery/migration entries are pending).
pub fn run(engine: &Engine, retry_failed: bool) -> Result<CompleteOutcome, GoalError> {
    // The goal the scheduler starts is read whole when it changes it.
    let (locked, mut plan, plan_read) = lock_plan_reaching(engine, "complete-goals", &[])?;
    let mut entries = Vec::new();
    let now = locked.now.clone();
    let outcome = scheduler::run(engine, &mut plan, retry_failed, &now, &mut entries);
    // The report hands the scheduled goal's criteria over in full.
    if let Outcome::Resumed(id) | Outcome::Started(id) | Outcome::BlockedOnUser(id) = &outcome {
        plan.read_goal(id, &engine.paths)?;
    }
    if !entries.is_empty() || !plan.pending.is_empty() {
        let mut committed = locked.commit(Write::Plan(Box::new(plan)), entries)?;
        let plan = committed.plan.take().expect("plan written");
        return Ok(CompleteOutcome {
            report: report(engine, &plan, &outcome),
            plan,
            outcome,
            revision: committed.revision,
            head: committed.head,
            plan_read,
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
            plan_read,
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
        plan_read,
    })
}
