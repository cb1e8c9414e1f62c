//! The scheduler (docs/engine.md#ge-3), run inside the caller's lock by
//! `complete-goals` and by checkpoint auto-advance.

use serde_json::{Map, Value, json};

use super::Engine;
use super::blockers::ATTEMPT_CLEARED_FIELDS;
use super::journal::LedgerKind;
use super::lifecycle;
use super::plan::{GoalStatus, Overlay, Plan};

/// What the scheduler decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The run is complete.
    Complete,
    /// An in-progress goal continues (no write).
    Resumed(String),
    /// A goal was started (pending, re-opened or retried).
    Started(String),
    /// Only goals that need a user decision remain (the first one).
    BlockedOnUser(String),
    /// Nothing can be scheduled; the completion-blocking goals.
    Stalled(Vec<String>),
}

impl Outcome {
    /// `state` of the JSON output.
    pub fn state(&self) -> &'static str {
        match self {
            Outcome::Complete => "complete",
            Outcome::Resumed(_) => "resumed",
            Outcome::Started(_) => "started",
            Outcome::BlockedOnUser(_) => "blocked_on_user",
            Outcome::Stalled(_) => "stalled",
        }
    }
}

/// Runs the scheduler; entries to append are pushed to `entries`.
pub(crate) fn run(
    engine: &Engine,
    plan: &mut Plan,
    retry_failed: bool,
    now: &str,
    entries: &mut Vec<Map<String, Value>>,
) -> Outcome {
    if lifecycle::run_complete(plan) {
        return Outcome::Complete;
    }
    let eligible = |plan: &Plan, s: GoalStatus| -> Option<String> {
        plan.goals()
            .find(|g| g.status() == s && g.overlay().is_none())
            .map(|g| g.id().to_owned())
    };
    if let Some(id) = eligible(plan, GoalStatus::InProgress) {
        return Outcome::Resumed(id);
    }
    if let Some(id) = eligible(plan, GoalStatus::Pending) {
        start(engine, plan, &id, None, now, entries);
        return Outcome::Started(id);
    }
    let reopen = plan
        .goals()
        .find(|g| {
            g.status() == GoalStatus::ReviewBlocked
                && g.overlay().is_none()
                && g.strings("reviewBlockedBy").iter().all(|r| {
                    plan.goal(r)
                        .is_some_and(|rg| lifecycle::member_resolved(plan, rg))
                })
        })
        .map(|g| g.id().to_owned());
    if let Some(id) = reopen {
        start(
            engine,
            plan,
            &id,
            Some(GoalStatus::ReviewBlocked),
            now,
            entries,
        );
        return Outcome::Started(id);
    }
    if retry_failed {
        let retry = plan
            .goals()
            .find(|g| {
                g.status() == GoalStatus::Failed && g.overlay().is_none() && !g.non_retriable()
            })
            .map(|g| (g.id().to_owned(), g.str("failureReason").map(str::to_owned)));
        if let Some((id, reason)) = retry {
            let mut e = entry(now, LedgerKind::GoalRetried, &id, GoalStatus::Pending);
            if let Some(r) = reason {
                e.insert("message".into(), json!(r));
            }
            entries.push(e);
            start(engine, plan, &id, None, now, entries);
            return Outcome::Started(id);
        }
    }
    if let Some(g) = plan.goals().find(|g| {
        g.status() == GoalStatus::NeedsUserDecision && g.overlay() != Some(Overlay::Superseded)
    }) {
        return Outcome::BlockedOnUser(g.id().to_owned());
    }
    Outcome::Stalled(
        plan.goals()
            .filter(|g| lifecycle::completion_blocking(plan, *g))
            .map(|g| g.id().to_owned())
            .collect(),
    )
}

fn entry(now: &str, kind: LedgerKind, goal_id: &str, status: GoalStatus) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("at".into(), json!(now));
    m.insert("kind".into(), json!(kind.as_str()));
    m.insert("goalId".into(), json!(goal_id));
    m.insert("status".into(), json!(status.as_str()));
    m
}

/// Starts a goal (docs/differences.md#r-2 step 6 with the docs/engine.md#ge-3 changes): new attempt, persisted
/// attempt directory; blocker signature and counters are kept for escalation.
pub(crate) fn start(
    engine: &Engine,
    plan: &mut Plan,
    id: &str,
    reopened_from: Option<GoalStatus>,
    now: &str,
    entries: &mut Vec<Map<String, Value>>,
) {
    let attempt = plan.goal(id).map_or(0, |g| g.attempt()) + 1;
    let dir = match plan.goal(id) {
        Some(g) => engine.next_attempt_dir(plan, g),
        None => engine.render_attempt_dir(&engine.attempt_sid(plan), id, attempt),
    };
    plan.goal_mut(id)
        .expect("scheduled goals exist")
        .set_status(GoalStatus::InProgress)
        .set_attempt(attempt)
        .set_started_at(now)
        .set_attempt_dir(&dir)
        .clear(ATTEMPT_CLEARED_FIELDS)
        .set_updated_at(now);
    plan.set("activeGoalId", json!(id));
    plan.set("updatedAt", json!(now));
    let mut e = entry(now, LedgerKind::GoalStarted, id, GoalStatus::InProgress);
    e.insert("message".into(), json!(format!("Attempt {attempt}")));
    if let Some(from) = reopened_from {
        e.insert("reopenedFrom".into(), json!(from.as_str()));
    }
    entries.push(e);
}
