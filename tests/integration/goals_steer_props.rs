//! Property: no accepted sequence of steering proposals reduces the number
//! of criteria of a goal, completes a goal, or weakens a criterion's
//! `essential` flag (goal-engine.md §5.4 "no easier completion"; quality
//! bar). Random plans and random proposals of every kind go through the
//! canonical parser and the engine's pure judge-and-apply core.

use evidence_gate::goals::profile::{Profile, Profiles};
use evidence_gate::goals::steer::{self, Channel, Defaults, Kind};
use evidence_gate::goals::{Plan, StatePaths};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const STATUSES: &[&str] = &[
    "pending",
    "in_progress",
    "complete",
    "failed",
    "blocked",
    "review_blocked",
    "needs_user_decision",
];
const CRITERION: &[&str] = &["pending", "pass", "fail", "blocked"];
const MODELS: &[&str] = &["happy", "edge", "regression", "adversarial", "", "angry"];

fn profile() -> Profile {
    let rules = evidence_gate::rules::RuleSet::embedded().unwrap();
    let p: Profiles = rules.family().unwrap();
    p.0["ulw-loop"].clone()
}

#[derive(Debug, Clone)]
struct GoalSpec {
    status: usize,
    overlay: usize,
    criteria: Vec<(usize, Option<bool>)>,
}

fn goal_spec() -> impl Strategy<Value = GoalSpec> {
    (
        // Half the goals pending, so that pending-only kinds get accepted.
        prop_oneof![Just(0usize), 0..STATUSES.len()],
        0..4usize,
        proptest::collection::vec(
            (0..CRITERION.len(), proptest::option::of(any::<bool>())),
            0..4,
        ),
    )
        .prop_map(|(status, overlay, criteria)| GoalSpec {
            status,
            overlay,
            criteria,
        })
}

fn plan_of(goals: &[GoalSpec], batch: bool) -> Plan {
    let list: Vec<Value> = goals
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let id = format!("G{:03}", i + 1);
            let criteria: Vec<Value> = g
                .criteria
                .iter()
                .enumerate()
                .map(|(j, (s, essential))| {
                    let mut c = json!({
                        "id": format!("C{:03}", j + 1), "scenario": "s", "userModel": "happy",
                        "expectedEvidence": "e", "capturedEvidence": null, "status": CRITERION[*s],
                    });
                    if let Some(e) = essential {
                        c["essential"] = json!(e);
                    }
                    c
                })
                .collect();
            let mut v = json!({
                "id": id, "title": format!("goal {i}"), "objective": "o",
                "status": STATUSES[g.status], "successCriteria": criteria, "attempt": 1,
                "createdAt": "t", "updatedAt": "t",
            });
            match g.overlay {
                1 => v["steeringStatus"] = json!("blocked"),
                2 => {
                    v["steeringStatus"] = json!("superseded");
                    v["supersededBy"] = json!([]);
                    v["waiver"] = json!({"userDecision": "drop", "at": "t"});
                }
                _ => {}
            }
            v
        })
        .collect();
    let mut doc =
        json!({"version": 1, "codexGoalMode": "aggregate", "goals": list, "updatedAt": "t"});
    if batch && goals.len() >= 2 {
        doc["validationBatches"] =
            json!([{"batchId": "VB1", "memberIds": ["G001", "G002"], "finalGoalId": "G002"}]);
    }
    let p = profile();
    let paths = StatePaths::new(&p.state_dir, None);
    Plan::decode(&serde_json::to_vec(&doc).unwrap(), &paths, &p, "now").unwrap()
}

fn pick_id(n: usize, k: usize) -> String {
    if k >= n {
        "G999".to_owned()
    } else {
        format!("G{:03}", k + 1)
    }
}

/// The fields a kind takes (the §5.4 matrix), so that most random
/// proposals get past it and reach the kind-specific invariants.
fn fields_of(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::AddSubgoal => &["title", "objective"],
        Kind::SplitSubgoal => &["goalId", "childGoals"],
        Kind::ReorderPending => &["pendingOrder"],
        Kind::RevisePendingWording => &["goalId", "revisedTitle", "objective"],
        Kind::ReviseCriterion => &[
            "goalId",
            "criterionId",
            "scenario",
            "expectedEvidence",
            "userModel",
        ],
        Kind::AnnotateLedger => &["goalId", "criterionId"],
        Kind::MarkBlockedSuperseded => &["goalId", "childGoals", "blockedReason", "userDecision"],
        Kind::Unblock => &["goalId", "userDecision"],
        Kind::ReviseBatch => &["batchId", "memberIds", "finalGoalId", "userDecision"],
    }
}

/// A random proposal object: a kind, a random subset of its fields, and
/// now and then a field it does not take; goal references hit existing
/// and unknown goals.
fn proposal(n: usize) -> impl Strategy<Value = Value> {
    (
        0..Kind::ALL.len(),
        proptest::collection::vec(any::<bool>(), 8),
        proptest::collection::vec(0..n + 1, 4),
        0..MODELS.len(),
        0..4usize,
        0..20usize,
    )
        .prop_map(move |(k, on, ids, model, c, foreign)| {
            let kind = Kind::ALL[k];
            let id = |i: usize| pick_id(n, ids[i]);
            let value = |name: &str| -> Value {
                match name {
                    "goalId" => json!(id(0)),
                    "title" => json!("new title"),
                    "objective" => json!("new objective"),
                    "childGoals" => json!([{"title": "child", "objective": "c"}]),
                    "pendingOrder" if on[6] => json!([id(1)]),
                    "pendingOrder" => json!([id(1), id(2)]),
                    "criterionId" => json!(format!("C{:03}", c + 1)),
                    "scenario" => json!("changed scenario"),
                    "expectedEvidence" => json!("changed evidence"),
                    "userModel" => json!(MODELS[model]),
                    "blockedReason" => json!("why"),
                    "userDecision" => json!("the user decided"),
                    "batchId" => json!(if on[7] { "VB1" } else { "VB2" }),
                    "memberIds" => json!([id(2), id(3)]),
                    "finalGoalId" => json!(id(3)),
                    "revisedTitle" => json!("revised"),
                    other => panic!("no generator for {other}"),
                }
            };
            let mut m = Map::new();
            m.insert("kind".into(), json!(kind.as_str()));
            m.insert("evidence".into(), json!("observed"));
            m.insert("rationale".into(), json!("because"));
            for (i, f) in fields_of(kind).iter().enumerate() {
                if on[i] || ["goalId", "batchId", "pendingOrder"].contains(f) {
                    m.insert((*f).into(), value(f));
                }
            }
            let all = [
                "title",
                "childGoals",
                "userDecision",
                "memberIds",
                "scenario",
            ];
            if let Some(f) = all.get(foreign) {
                m.insert((*f).into(), value(f));
            }
            Value::Object(m)
        })
}

struct Seen {
    status: String,
    criteria: Vec<(String, Option<Value>, bool)>,
}

fn seen(plan: &Plan) -> Vec<(String, Seen)> {
    plan.goals()
        .map(|g| {
            (
                g.id().to_owned(),
                Seen {
                    status: g.status().as_str().to_owned(),
                    criteria: g
                        .criteria()
                        .map(|c| {
                            (
                                c.id().to_owned(),
                                c.0.get("essential").cloned(),
                                c.essential(),
                            )
                        })
                        .collect(),
                },
            )
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn accepted_steering_never_makes_completion_easier(
        goals in proptest::collection::vec(goal_spec(), 1..5),
        batch in any::<bool>(),
        proposals in (1usize..6).prop_flat_map(|n| proptest::collection::vec(proposal(n), 1..8)),
    ) {
        let profile = profile();
        let mut plan = plan_of(&goals, batch);
        for value in &proposals {
            let Ok(p) = steer::parse_proposal(value, Channel::Library, &Defaults::none(), None) else {
                continue;
            };
            let before = seen(&plan);
            let bytes = plan.encode();
            let j = steer::judge_and_apply(&mut plan, &profile, &p, "2026-05-01T00:00:00.000Z");
            if !j.accepted() {
                prop_assert_eq!(plan.encode(), bytes, "a rejected proposal changes nothing");
                continue;
            }
            for (id, old) in &before {
                let g = plan.goal(id);
                prop_assert!(g.is_some(), "goal {} was deleted by {:?}", id, p.kind);
                let g = g.unwrap();
                prop_assert!(
                    g.criteria_len() >= old.criteria.len(),
                    "{:?} reduced the criteria of {}", p.kind, id
                );
                if old.status != "complete" {
                    prop_assert_ne!(g.status().as_str(), "complete", "{:?} completed {}", p.kind, id);
                }
                for (cid, raw, essential) in &old.criteria {
                    let c = g.criterion(cid);
                    prop_assert!(c.is_some(), "criterion {}/{} deleted", id, cid);
                    let c = c.unwrap();
                    prop_assert_eq!(c.0.get("essential"), raw.as_ref(), "essential changed on {}/{}", id, cid);
                    prop_assert!(!essential || c.essential(), "essential weakened on {}/{}", id, cid);
                }
            }
        }
    }
}
