//! `record-review-blockers` (docs/differences.md#r-7 with docs/engine.md#ge-3): a non-clean
//! final review turns the final goal `review_blocked` and appends a
//! resolution goal; the scheduler re-opens the blocked goal once its
//! resolution goals are resolved (no dead end).

use serde_json::{Value, json};

use super::outcome::{GoalRecord, LedgerHead, LedgerRecord};
use super::{entry, goal_not_found, lock_plan_reaching, refuse_if_complete};
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::evidence_files::{self, Parsed};
use crate::goals::hostgoal::{self, Expect, HostStatus};
use crate::goals::input::Loaded;
use crate::goals::journal::LedgerKind;
use crate::goals::plan::{GoalStatus, Mode, Plan, PlanRead};
use crate::goals::txn::{Committed, Write};
use crate::goals::{Engine, brief, handoff, lifecycle};

/// A `record-review-blockers` request.
#[derive(Debug, Clone)]
pub struct ReviewRequest {
    /// `--goal-id` (the final goal whose review was not clean).
    pub goal_id: String,
    /// `--title` of the resolution goal.
    pub title: String,
    /// `--objective` of the resolution goal.
    pub objective: String,
    /// `--evidence`: the review findings.
    pub evidence: String,
    /// The host-goal snapshot (an *active* goal is expected).
    pub host_goal: Option<Loaded>,
    /// `--evidence-file` paths (reviewer reports).
    pub evidence_files: Vec<String>,
}

/// The result of `record-review-blockers`.
#[derive(Debug)]
pub struct ReviewOutcome {
    /// The plan after the write.
    pub plan: Plan,
    /// The goal now `review_blocked`, as written.
    pub blocked_goal: GoalRecord,
    /// The new resolution goal, as written.
    pub goal: GoalRecord,
    /// What was written.
    pub committed: Committed,
    /// How the plan was read: from its cut-down body,
    /// [`ReviewOutcome::plan`] holds of the goals the command did not
    /// change only what that body keeps of their criteria
    /// ([`Plan::is_partial`]; `goals.json` holds them whole).
    pub plan_read: PlanRead,
}

impl ReviewOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.committed.head)
    }
    /// Every entry appended, in order.
    pub fn ledger_entries(&self) -> Vec<LedgerRecord> {
        self.committed
            .entries
            .iter()
            .cloned()
            .map(LedgerRecord::from_value)
            .collect()
    }
}

/// `G<n>-<slug>` with `n` one above the largest `G<digits>` prefix in the plan.
fn next_id(plan: &Plan, title: &str) -> String {
    let max = brief::max_ordinal(plan.goals().map(|g| g.id()));
    brief::next_free_id(max + 1, title, &|id| plan.goal(id).is_some()).0
}

/// Records the review blockers.
pub fn run(engine: &Engine, req: ReviewRequest) -> Result<ReviewOutcome, GoalError> {
    let (locked, mut plan, plan_read) =
        lock_plan_reaching(engine, "record-review-blockers", &[&req.goal_id])?;
    refuse_if_complete(engine, &plan, "record-review-blockers")?;
    let g = plan
        .goal(&req.goal_id)
        .ok_or_else(|| goal_not_found(engine, &req.goal_id, true))?;
    if g.status() != GoalStatus::InProgress || g.overlay().is_some() {
        return Err(GoalError::new(
            ErrorKind::TransitionInvalid {
                goal_id: g.id().to_owned(),
                from: g.status().as_str().to_owned(),
                overlay: g.overlay().map(|o| o.as_str().to_owned()),
                command: "record-review-blockers".into(),
                allowed_from: vec![GoalStatus::InProgress.as_str().into()],
                suggested_command: None,
                legacy: true,
            },
            format!("{} is {}.", g.id(), g.status().as_str()),
        ));
    }
    if !lifecycle::final_candidate(&plan, g) {
        return Err(GoalError::new(
            ErrorKind::NotFinalStory {
                goal_id: g.id().to_owned(),
            },
            format!("{} is not final.", g.id()),
        ));
    }
    let snapshot = match &req.host_goal {
        Some(loaded) => {
            let snap = hostgoal::parse(loaded.value.clone());
            let aggregate = plan.mode() == Mode::Aggregate;
            let e = Expect {
                expected: handoff::expected_objective(engine, &plan, g),
                accepted: if aggregate {
                    plan.objective_aliases()
                        .into_iter()
                        .map(str::to_owned)
                        .collect()
                } else {
                    Vec::new()
                },
                allowed: vec![HostStatus::Active],
                require_snapshot: true,
                require_complete: false,
            };
            let out = hostgoal::reconcile(Some(&snap), &e, &engine.profile);
            if !out.ok() {
                let suggested = format!(
                    "{} status{} --json",
                    engine.profile.command_prefix,
                    engine.session_opt(&plan)
                );
                return Err(hostgoal::mismatch_error(
                    &out,
                    Some(&snap),
                    &e,
                    None,
                    None,
                    suggested,
                ));
            }
            Some(hostgoal::embed(
                &snap.raw,
                engine.profile.limits.max_embedded_snapshot_bytes,
            ))
        }
        None => None,
    };
    let parsed: Vec<Parsed> = req
        .evidence_files
        .iter()
        .map(|p| evidence_files::load(engine, p))
        .collect::<Result<_, _>>()?;
    for p in &parsed {
        evidence_files::check_scope(p, &req.goal_id, None)?;
    }
    let accepted = evidence_files::verify_all(engine, &plan, &req.goal_id, &parsed, false)?;

    let now = locked.now.clone();
    let index = plan.goal_count();
    let new_id = next_id(&plan, &req.title);
    let mut new_goal = brief::new_goal(
        index,
        &req.title,
        &req.objective,
        engine.profile.criteria.seed,
        &now,
    )?;
    new_goal.insert("id".into(), json!(new_id));
    new_goal.insert("resolves".into(), json!([req.goal_id]));
    let mut goal = plan.goal_mut(&req.goal_id).expect("looked up");
    // The failed review also takes back the completion.
    goal.clear_blockers()
        .clear(&["completedAt"])
        .set_status(GoalStatus::ReviewBlocked)
        .set("reviewBlockedAt", json!(now))
        .set_evidence(&req.evidence)
        .set("reviewBlockedBy", json!([new_id]))
        .set_updated_at(&now);
    let blocked_goal = GoalRecord::of(goal.read());
    if plan.active_goal_id() == Some(req.goal_id.as_str()) {
        plan.remove("activeGoalId");
    }
    plan.push_goal(new_goal.clone());
    plan.set("updatedAt", json!(now));
    let snap = snapshot.unwrap_or(Value::Null);
    let mut blocked = entry(&now, LedgerKind::GoalReviewBlocked, Some(&req.goal_id));
    blocked.insert("status".into(), json!(GoalStatus::ReviewBlocked.as_str()));
    blocked.insert("evidence".into(), json!(req.evidence));
    blocked.insert("codexGoal".into(), snap.clone());
    if !accepted.files.is_empty() {
        blocked.insert("files".into(), json!(accepted.files));
        blocked.insert("evidencePayloads".into(), json!(accepted.payloads));
    }
    let mut added = entry(&now, LedgerKind::GoalAdded, Some(&new_id));
    added.insert("status".into(), json!(GoalStatus::Pending.as_str()));
    added.insert("evidence".into(), json!(req.evidence));
    added.insert("message".into(), new_goal["title"].clone());
    let mut recorded = entry(&now, LedgerKind::BlockerRecorded, Some(&req.goal_id));
    recorded.insert("status".into(), json!(GoalStatus::ReviewBlocked.as_str()));
    recorded.insert("evidence".into(), json!(req.evidence));
    recorded.insert("codexGoal".into(), snap);
    recorded.insert(
        "message".into(),
        json!(format!("Review blockers recorded; appended {new_id}.")),
    );
    let mut entries = Vec::new();
    // `compat/reviewFailedEntry`: the failed final review gets its own
    // record first.
    if let Some(kind) = &engine.profile.compat.review_failed_entry {
        let mut failed = super::entry_named(&now, kind, Some(&req.goal_id));
        failed.insert("status".into(), json!(GoalStatus::ReviewBlocked.as_str()));
        failed.insert("evidence".into(), json!(req.evidence));
        failed.insert("codexGoal".into(), blocked["codexGoal"].clone());
        failed.insert(
            "message".into(),
            json!(format!(
                "The final review was not clean; {new_id} resolves its blockers."
            )),
        );
        entries.push(failed);
    }
    entries.extend([blocked, added, recorded]);
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), entries)?;
    Ok(ReviewOutcome {
        plan: committed.plan.take().expect("plan written"),
        blocked_goal,
        goal: GoalRecord::from_map(new_goal),
        committed,
        plan_read,
    })
}
