//! Application of an accepted proposal (docs/differences.md#r-4 with docs/engine.md#ge-5),
//! on the caller's working copy of the plan, and batch membership
//! maintenance after a supersede with replacements (docs/differences.md#r-5).

use serde_json::{Map, Value, json};

use super::proposal::{Kind, Proposal};
use super::resolve::{Child, Resolved};
use crate::goals::batches;
use crate::goals::brief;
use crate::goals::plan::{
    CriterionStatus, GoalMut, GoalStatus, Overlay, Plan, UserModel, remove_key,
};
use crate::goals::profile::Profile;

/// What an application changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Applied {
    /// Ids of goals the proposal created, in plan order.
    pub created: Vec<String>,
    /// Whether `goals.json` must be written (everything but `annotate_ledger`).
    pub writes_plan: bool,
}

fn text<'a>(p: &'a Proposal, key: &str) -> &'a str {
    p.text(key).unwrap_or_default()
}

fn steering_marks(g: &mut GoalMut<'_>, p: &Proposal, now: &str) {
    g.set("steeringEvidence", json!(text(p, "evidence")))
        .set("steeringRationale", json!(text(p, "rationale")))
        .set_updated_at(now);
}

/// New goals with slugged ids numbered after the plan's largest ordinal
/// (offsets 1, 2, … computed before insertion) and seeded criteria.
fn new_goals(
    plan: &Plan,
    profile: &Profile,
    children: &[Child],
    evidence: &str,
    now: &str,
) -> Vec<Map<String, Value>> {
    let mut out: Vec<Map<String, Value>> = Vec::with_capacity(children.len());
    let mut next = brief::max_ordinal(plan.goals().map(|g| g.id())) + 1;
    for c in children {
        let taken =
            |id: &str| plan.goal(id).is_some() || out.iter().any(|g| g["id"].as_str() == Some(id));
        let (id, n) = brief::next_free_id(next, &c.title, &taken);
        next = n + 1;
        let mut g = brief::new_goal(n - 1, &c.title, &c.objective, profile.criteria.seed, now)
            .expect("children have non-blank title and objective");
        g.insert("id".into(), json!(id));
        g.insert("evidence".into(), json!(evidence));
        out.push(g);
    }
    out
}

fn clear_active(plan: &mut Plan, id: &str) {
    if plan.active_goal_id() == Some(id) {
        plan.remove("activeGoalId");
    }
}

/// Applies an accepted proposal to `plan`.
pub(crate) fn apply(
    plan: &mut Plan,
    profile: &Profile,
    p: &Proposal,
    r: &Resolved,
    now: &str,
) -> Applied {
    let mut applied = Applied {
        created: Vec::new(),
        writes_plan: p.kind != Kind::AnnotateLedger,
    };
    let target = r.target().map(str::to_owned);
    match p.kind {
        Kind::AnnotateLedger => return applied,
        Kind::AddSubgoal => {
            let child = Child {
                title: r.title.clone().unwrap_or_default(),
                objective: r.objective.clone().unwrap_or_default(),
            };
            for g in new_goals(plan, profile, &[child], text(p, "evidence"), now) {
                applied
                    .created
                    .push(g["id"].as_str().unwrap_or_default().to_owned());
                plan.push_goal(g);
            }
        }
        Kind::SplitSubgoal | Kind::MarkBlockedSuperseded => {
            let id = target.expect("validated");
            let children = r.children.clone().unwrap_or_default();
            if children.is_empty() {
                block_or_waive(plan, p, &id, now);
            } else {
                supersede(plan, profile, p, &id, &children, now, &mut applied);
            }
            clear_active(plan, &id);
        }
        Kind::ReorderPending => reorder(plan, r.pending_order.as_deref().unwrap_or_default()),
        Kind::RevisePendingWording => {
            let mut g = plan
                .goal_mut(&target.expect("validated"))
                .expect("validated");
            if let Some(t) = &r.revised_title {
                g.set("title", json!(t));
            }
            if let Some(o) = &r.revised_objective {
                g.set("objective", json!(o));
            }
            steering_marks(&mut g, p, now);
        }
        Kind::ReviseCriterion => {
            revise_criterion(plan, profile, p, &target.expect("validated"), now)
        }
        Kind::Unblock => {
            let mut g = plan
                .goal_mut(&target.expect("validated"))
                .expect("validated");
            g.set_status(GoalStatus::Pending)
                .clear_overlay()
                .clear_blockers()
                .set("unblockedAt", json!(now));
            if let Some(d) = p.text("userDecision") {
                g.set_user_decision(d);
            }
            steering_marks(&mut g, p, now);
        }
        Kind::ReviseBatch => revise_batch(plan, p, r),
    }
    plan.set("updatedAt", json!(now));
    applied
}

fn block_or_waive(plan: &mut Plan, p: &Proposal, id: &str, now: &str) {
    let mut g = plan.goal_mut(id).expect("validated");
    match p.text("userDecision") {
        Some(decision) => {
            g.set_overlay(Overlay::Superseded)
                .set("supersededBy", json!([]))
                .set("waiver", json!({"userDecision": decision, "at": now}))
                .set_user_decision(decision);
        }
        None => {
            let reason = p
                .text("blockedReason")
                .unwrap_or_else(|| text(p, "rationale"));
            g.set_status(GoalStatus::Blocked)
                .set_overlay(Overlay::Blocked)
                .set_blocked_reason(reason);
        }
    }
    steering_marks(&mut g, p, now);
}

fn supersede(
    plan: &mut Plan,
    profile: &Profile,
    p: &Proposal,
    id: &str,
    children: &[Child],
    now: &str,
    applied: &mut Applied,
) {
    let mut goals = new_goals(plan, profile, children, text(p, "evidence"), now);
    for g in &mut goals {
        g.insert("supersedes".into(), json!([id]));
    }
    let ids: Vec<String> = goals
        .iter()
        .map(|g| g["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    let at = plan.goal_position(id).expect("validated") + 1;
    plan.edit_goals(|list| {
        for (i, g) in goals.into_iter().enumerate() {
            list.insert(at + i, Value::Object(g));
        }
    });
    let mut g = plan.goal_mut(id).expect("validated");
    g.set_overlay(Overlay::Superseded)
        .set("supersededBy", json!(ids));
    if let Some(d) = p.text("userDecision") {
        g.set_user_decision(d);
    }
    steering_marks(&mut g, p, now);
    replace_member(plan, id, &ids);
    applied.created = ids;
}

/// docs/differences.md#r-5: every open batch containing `id` gets the replacements in its
/// place; a replaced final becomes the last replacement. Closed batches
/// are immutable (docs/engine.md#ge-6).
pub(crate) fn replace_member(plan: &mut Plan, id: &str, replacements: &[String]) {
    let Some(list) = plan.batches_mut() else {
        return;
    };
    for b in list.iter_mut().filter_map(Value::as_object_mut) {
        if b.get("closedAt").is_some_and(Value::is_string) {
            continue;
        }
        let members: Vec<String> = batches::member_ids(b)
            .into_iter()
            .map(str::to_owned)
            .collect();
        if !members.iter().any(|m| m == id) {
            continue;
        }
        let mut next = Vec::with_capacity(members.len() + replacements.len());
        for m in members {
            if m == id {
                next.extend(replacements.iter().cloned());
            } else {
                next.push(m);
            }
        }
        b.insert("memberIds".into(), json!(next));
        if b.get("finalGoalId").and_then(Value::as_str) == Some(id)
            && let Some(last) = replacements.last()
        {
            b.insert("finalGoalId".into(), json!(last));
        }
    }
}

/// docs/engine.md#ge-5: the requested ids fill the first positions held by
/// pending goals without overlay, in the requested order; the other such
/// goals keep their relative order; every other goal keeps its index.
fn reorder(plan: &mut Plan, order: &[String]) {
    let positions: Vec<usize> = plan
        .goals()
        .enumerate()
        .filter(|(_, g)| {
            g.status() == crate::goals::plan::GoalStatus::Pending && g.overlay().is_none()
        })
        .map(|(i, _)| i)
        .collect();
    plan.edit_goals(|list| {
        let held: Vec<Value> = positions.iter().map(|&i| list[i].clone()).collect();
        let id_of = |g: &Value| g["id"].as_str().unwrap_or_default().to_owned();
        let mut arranged: Vec<Value> = order
            .iter()
            .filter_map(|id| held.iter().find(|g| id_of(g) == *id).cloned())
            .collect();
        arranged.extend(held.into_iter().filter(|g| !order.contains(&id_of(g))));
        for (pos, g) in positions.iter().zip(arranged) {
            list[*pos] = g;
        }
    });
}

fn revise_criterion(plan: &mut Plan, profile: &Profile, p: &Proposal, id: &str, now: &str) {
    let cid = text(p, "criterionId").to_owned();
    let model = p
        .fields
        .get("userModel")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| UserModel::parse(m).is_some());
    let markers = profile.criteria.seeded_markers.clone();
    let mut g = plan.goal_mut(id).expect("validated");
    let c = g.criterion_mut(&cid).expect("validated");
    let mut changed = false;
    for (key, value) in [
        ("scenario", p.text("scenario")),
        ("expectedEvidence", p.text("expectedEvidence")),
        ("userModel", model),
    ] {
        if let Some(v) = value
            && c.get(key).and_then(Value::as_str) != Some(v)
        {
            c.insert(key.into(), json!(v));
            changed = true;
        }
    }
    if changed {
        c.insert("status".into(), json!(CriterionStatus::Pending.as_str()));
        c.insert("capturedEvidence".into(), Value::Null);
        remove_key(c, "capturedAt");
    }
    remove_key(c, "seeded");
    // A legacy criterion counts as seeded by its expectedEvidence prefix;
    // an explicit `false` records that it has been revised.
    let still_marked = c
        .get("expectedEvidence")
        .and_then(Value::as_str)
        .is_some_and(|e| markers.iter().any(|m| e.starts_with(m.as_str())));
    if still_marked {
        c.insert("seeded".into(), json!(false));
    }
    g.set_updated_at(now);
}

fn revise_batch(plan: &mut Plan, p: &Proposal, r: &Resolved) {
    let bid = text(p, "batchId").to_owned();
    if plan.batches_mut().is_none() {
        plan.set("validationBatches", json!([]));
    }
    let list = plan.batches_mut().expect("just set");
    let pos = list
        .iter()
        .position(|b| b.get("batchId").and_then(Value::as_str) == Some(bid.as_str()));
    let mut members: Vec<String> = Vec::new();
    if let Some(ids) = &r.member_ids {
        for id in ids {
            if !members.contains(id) {
                members.push(id.clone());
            }
        }
    }
    match pos {
        Some(i) if r.member_ids.as_ref().is_some_and(Vec::is_empty) => {
            list.remove(i);
        }
        Some(i) => {
            let b = list[i].as_object_mut().expect("validated");
            if r.member_ids.is_some() {
                b.insert("memberIds".into(), json!(members));
            }
            let current: Vec<String> = batches::member_ids(b)
                .into_iter()
                .map(str::to_owned)
                .collect();
            let final_id = r.final_goal_id.clone().or_else(|| {
                b.get("finalGoalId")
                    .and_then(Value::as_str)
                    .filter(|f| current.iter().any(|m| m == f))
                    .map(str::to_owned)
            });
            b.insert("finalGoalId".into(), json!(final_id));
        }
        None => list.push(json!({
            "batchId": bid,
            "memberIds": members,
            "finalGoalId": r.final_goal_id,
        })),
    }
}
