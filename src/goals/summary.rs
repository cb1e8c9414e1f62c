//! The summary object several commands print (docs/differences.md#r-3, plus `runComplete`,
//! `completionBlocking` and `waived` of docs/engine.md#ge-4).

use serde_json::{Value, json};

use super::lifecycle;
use super::plan::{CriterionStatus, GoalStatus, Overlay, Plan};

/// Counts by raw status, criteria counts and the completion predicates.
pub(crate) fn summary(plan: &Plan) -> Value {
    let mut by_status = [0u64; 7];
    let (mut superseded, mut waived, mut blocking) = (0u64, 0u64, 0u64);
    let mut crit = [0u64; 4];
    let mut crit_total = 0u64;
    for g in plan.goals() {
        let i = GoalStatus::ALL
            .iter()
            .position(|s| *s == g.status())
            .expect("every status is listed");
        by_status[i] += 1;
        if g.overlay() == Some(Overlay::Superseded) {
            superseded += 1;
            if g.waived() {
                waived += 1;
            }
        }
        if lifecycle::completion_blocking(plan, g) {
            blocking += 1;
        }
        for c in g.criteria() {
            crit_total += 1;
            let j = CriterionStatus::ALL
                .iter()
                .position(|s| *s == c.status())
                .expect("every status is listed");
            crit[j] += 1;
        }
    }
    let count = |s: GoalStatus| {
        by_status[GoalStatus::ALL
            .iter()
            .position(|x| *x == s)
            .expect("listed")]
    };
    let ccount = |s: CriterionStatus| {
        crit[CriterionStatus::ALL
            .iter()
            .position(|x| *x == s)
            .expect("listed")]
    };
    json!({
        "total": plan.goal_count(),
        "pending": count(GoalStatus::Pending),
        "in_progress": count(GoalStatus::InProgress),
        "complete": count(GoalStatus::Complete),
        "failed": count(GoalStatus::Failed),
        "blocked": count(GoalStatus::Blocked),
        "review_blocked": count(GoalStatus::ReviewBlocked),
        "needs_user_decision": count(GoalStatus::NeedsUserDecision),
        "superseded": superseded,
        "criteria": {
            "total": crit_total,
            "pass": ccount(CriterionStatus::Pass),
            "pending": ccount(CriterionStatus::Pending),
            "fail": ccount(CriterionStatus::Fail),
            "blocked": ccount(CriterionStatus::Blocked),
        },
        "runComplete": lifecycle::run_complete(plan),
        "completionBlocking": blocking,
        "waived": waived,
    })
}

/// [`summary`] with the profile's `compat/camelSummary` additions: the counts
/// a camelCase reader expects (`inProgress`, `reviewBlocked` for unresolved
/// review blocks and `historicalReviewBlocked` for resolved ones,
/// `needsUserDecision`, `steeringBlocked`), `aggregateComplete` (a recorded
/// completion under a completion key), `artifactComplete` (the run is
/// complete) and `activeGoalId`.
pub(crate) fn for_engine(engine: &super::Engine, plan: &Plan) -> Value {
    let mut s = summary(plan);
    if !engine.profile.compat.camel_summary {
        return s;
    }
    let (mut active_rb, mut all_rb, mut steering_blocked) = (0u64, 0u64, 0u64);
    for g in plan.goals() {
        if g.status() == GoalStatus::ReviewBlocked {
            all_rb += 1;
            if lifecycle::completion_blocking(plan, g) {
                active_rb += 1;
            }
        }
        if g.overlay() == Some(Overlay::Blocked) {
            steering_blocked += 1;
        }
    }
    let recorded = engine.profile.completion_keys.iter().any(|k| {
        plan.doc()
            .get(k)
            .and_then(|c| c.get("status"))
            .and_then(Value::as_str)
            == Some(GoalStatus::Complete.as_str())
    });
    let m = s.as_object_mut().expect("an object");
    let extra = [
        ("inProgress", m["in_progress"].clone()),
        ("reviewBlocked", json!(active_rb)),
        ("historicalReviewBlocked", json!(all_rb - active_rb)),
        ("needsUserDecision", m["needs_user_decision"].clone()),
        ("steeringBlocked", json!(steering_blocked)),
        ("aggregateComplete", json!(recorded)),
        ("artifactComplete", m["runComplete"].clone()),
    ];
    for (k, v) in extra {
        m.insert(k.to_owned(), v);
    }
    if let Some(id) = plan.active_goal_id() {
        m.insert("activeGoalId".to_owned(), json!(id));
    }
    s
}
