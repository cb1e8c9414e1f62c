//! The summary object several commands print (docs/differences.md#r-3, plus `runComplete`,
//! `completionBlocking` and `waived` of docs/engine.md#ge-4).

use serde::Serialize;
use serde_json::Value;

use super::lifecycle;
use super::plan::{CriterionStatus, GoalStatus, Overlay, Plan};

/// The summary object: goals by raw status (snake_case keys, as the
/// anchor prints them), criteria by status and the completion predicates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Number of goals.
    pub total: u64,
    /// `pending` goals.
    pub pending: u64,
    /// `in_progress` goals.
    pub in_progress: u64,
    /// `complete` goals.
    pub complete: u64,
    /// `failed` goals.
    pub failed: u64,
    /// `blocked` goals.
    pub blocked: u64,
    /// `review_blocked` goals.
    pub review_blocked: u64,
    /// `needs_user_decision` goals.
    pub needs_user_decision: u64,
    /// Goals with the `superseded` overlay.
    pub superseded: u64,
    /// Criteria of every goal by status.
    pub criteria: CriteriaCounts,
    /// The run is complete.
    #[serde(rename = "runComplete")]
    pub run_complete: bool,
    /// Goals that still block completion.
    #[serde(rename = "completionBlocking")]
    pub completion_blocking: u64,
    /// Superseded goals whose criteria were waived.
    pub waived: u64,
    /// The `compat/camelSummary` additions.
    #[serde(flatten)]
    pub camel: Option<CamelCounts>,
}

/// `criteria` of the summary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CriteriaCounts {
    /// Every criterion.
    pub total: u64,
    /// `pass`.
    pub pass: u64,
    /// `pending`.
    pub pending: u64,
    /// `fail`.
    pub fail: u64,
    /// `blocked`.
    pub blocked: u64,
}

/// The counts a camelCase reader expects (`compat/camelSummary`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CamelCounts {
    /// `in_progress` again.
    pub in_progress: u64,
    /// Unresolved review blocks.
    pub review_blocked: u64,
    /// Resolved review blocks.
    pub historical_review_blocked: u64,
    /// `needs_user_decision` again.
    pub needs_user_decision: u64,
    /// Goals with the `blocked` overlay.
    pub steering_blocked: u64,
    /// A completion is recorded under a completion key.
    pub aggregate_complete: bool,
    /// The run is complete.
    pub artifact_complete: bool,
    /// The active goal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_goal_id: Option<String>,
}

/// Counts by raw status, criteria counts and the completion predicates.
pub(crate) fn summary(plan: &Plan) -> Summary {
    let mut by_status = [0u64; 7];
    let (mut superseded, mut waived, mut blocking) = (0u64, 0u64, 0u64);
    let mut crit = [0u64; 4];
    let mut crit_total = 0u64;
    for g in plan.goals() {
        // One pass over the goal's fields and each criterion's (a status
        // looked up once, not once per status compared with).
        let p = g.progress();
        let i = GoalStatus::ALL
            .iter()
            .position(|s| *s == p.status)
            .expect("every status is listed");
        by_status[i] += 1;
        if p.overlay == Some(Overlay::Superseded) {
            superseded += 1;
            if g.waived() {
                waived += 1;
            }
        }
        if lifecycle::completion_blocking(plan, g) {
            blocking += 1;
        }
        for (_, status) in p.criteria() {
            crit_total += 1;
            let j = CriterionStatus::ALL
                .iter()
                .position(|s| *s == status)
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
    Summary {
        total: plan.goal_count() as u64,
        pending: count(GoalStatus::Pending),
        in_progress: count(GoalStatus::InProgress),
        complete: count(GoalStatus::Complete),
        failed: count(GoalStatus::Failed),
        blocked: count(GoalStatus::Blocked),
        review_blocked: count(GoalStatus::ReviewBlocked),
        needs_user_decision: count(GoalStatus::NeedsUserDecision),
        superseded,
        criteria: CriteriaCounts {
            total: crit_total,
            pass: ccount(CriterionStatus::Pass),
            pending: ccount(CriterionStatus::Pending),
            fail: ccount(CriterionStatus::Fail),
            blocked: ccount(CriterionStatus::Blocked),
        },
        run_complete: lifecycle::run_complete(plan),
        completion_blocking: blocking,
        waived,
        camel: None,
    }
}

/// [`summary`] with the profile's `compat/camelSummary` additions: the counts
/// a camelCase reader expects (`inProgress`, `reviewBlocked` for unresolved
/// review blocks and `historicalReviewBlocked` for resolved ones,
/// `needsUserDecision`, `steeringBlocked`), `aggregateComplete` (a recorded
/// completion under a completion key), `artifactComplete` (the run is
/// complete) and `activeGoalId`.
pub(crate) fn for_engine(engine: &super::Engine, plan: &Plan) -> Summary {
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
    s.camel = Some(CamelCounts {
        in_progress: s.in_progress,
        review_blocked: active_rb,
        historical_review_blocked: all_rb - active_rb,
        needs_user_decision: s.needs_user_decision,
        steering_blocked,
        aggregate_complete: recorded,
        artifact_complete: s.run_complete,
        active_goal_id: plan.active_goal_id().map(str::to_owned),
    });
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts() -> Summary {
        Summary {
            total: 3,
            pending: 1,
            in_progress: 1,
            complete: 1,
            failed: 0,
            blocked: 0,
            review_blocked: 0,
            needs_user_decision: 0,
            superseded: 0,
            criteria: CriteriaCounts {
                total: 6,
                pass: 3,
                pending: 2,
                fail: 1,
                blocked: 0,
            },
            run_complete: false,
            completion_blocking: 2,
            waived: 0,
            camel: None,
        }
    }

    #[test]
    fn the_summary_keeps_the_printed_keys_and_order() {
        let text = serde_json::to_string(&counts()).unwrap();
        assert_eq!(
            text,
            r#"{"total":3,"pending":1,"in_progress":1,"complete":1,"failed":0,"blocked":0,"review_blocked":0,"needs_user_decision":0,"superseded":0,"criteria":{"total":6,"pass":3,"pending":2,"fail":1,"blocked":0},"runComplete":false,"completionBlocking":2,"waived":0}"#
        );
    }

    #[test]
    fn the_camel_counts_follow_the_snake_case_ones() {
        let mut s = counts();
        s.camel = Some(CamelCounts {
            in_progress: 1,
            review_blocked: 0,
            historical_review_blocked: 0,
            needs_user_decision: 0,
            steering_blocked: 0,
            aggregate_complete: false,
            artifact_complete: false,
            active_goal_id: None,
        });
        let v = serde_json::to_value(&s).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            &keys[12..],
            [
                "waived",
                "inProgress",
                "reviewBlocked",
                "historicalReviewBlocked",
                "needsUserDecision",
                "steeringBlocked",
                "aggregateComplete",
                "artifactComplete"
            ]
        );
        s.camel.as_mut().unwrap().active_goal_id = Some("G001".into());
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(
            v.as_object().unwrap().keys().next_back().unwrap(),
            "activeGoalId"
        );
    }
}
