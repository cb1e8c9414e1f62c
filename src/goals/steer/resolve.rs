//! Field resolution (docs/differences.md#r-4 with docs/engine.md#ge-5): which goal a proposal
//! targets, its children, pending order, revised wording and batch fields,
//! the conflicts between a field and its `after` counterpart, and the
//! effect object whose digest identifies the proposal (docs/engine.md#ge-5).

use serde_json::{Map, Value, json};

use super::proposal::{Kind, Proposal};

/// A replacement or child goal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Child {
    /// Title.
    pub title: String,
    /// Objective.
    pub objective: String,
}

/// The resolved fields of a proposal.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Resolved {
    /// Distinct target ids from `targetGoalIds`, `targetGoalId` and `goalId`.
    pub targets: Vec<String>,
    /// `childGoals`, else `after.children`.
    pub children: Option<Vec<Child>>,
    /// `pendingOrder`, else `after.pendingGoalIds`, else `pendingGoalIds`.
    pub pending_order: Option<Vec<String>>,
    /// `add_subgoal`: `title`, else `after.title` (and `objective` likewise).
    pub title: Option<String>,
    /// See [`Resolved::title`].
    pub objective: Option<String>,
    /// `revise_pending_wording`: `revisedTitle`, else `title`, else `after.title`.
    pub revised_title: Option<String>,
    /// See [`Resolved::revised_title`].
    pub revised_objective: Option<String>,
    /// `memberIds`, else `after.memberIds`.
    pub member_ids: Option<Vec<String>>,
    /// `finalGoalId`, else `after.finalGoalId`.
    pub final_goal_id: Option<String>,
    /// Fields given both directly and in `after` with different values.
    pub conflicts: Vec<&'static str>,
}

impl Resolved {
    /// The first target.
    pub(crate) fn target(&self) -> Option<&str> {
        self.targets.first().map(String::as_str)
    }
}

fn owned(list: Option<Vec<&str>>) -> Option<Vec<String>> {
    list.map(|l| l.into_iter().map(str::to_owned).collect())
}

fn strs(v: &Value) -> Option<Vec<&str>> {
    v.as_array()?.iter().map(Value::as_str).collect()
}

fn children_of(v: Option<&Value>) -> Option<Vec<Child>> {
    let list = v?.as_array()?;
    Some(
        list.iter()
            .filter_map(|c| {
                Some(Child {
                    title: c.get("title")?.as_str()?.to_owned(),
                    objective: c.get("objective")?.as_str()?.to_owned(),
                })
            })
            .collect(),
    )
}

fn pick<T: PartialEq + Clone>(
    direct: Option<T>,
    in_after: Option<T>,
    name: &'static str,
    conflicts: &mut Vec<&'static str>,
) -> Option<T> {
    if let (Some(d), Some(a)) = (&direct, &in_after)
        && d != a
    {
        conflicts.push(name);
    }
    direct.or(in_after)
}

/// Resolves the fields of `p`.
pub(crate) fn resolve(p: &Proposal) -> Resolved {
    let mut r = Resolved::default();
    let push_target = |id: &str, r: &mut Resolved| {
        if !r.targets.iter().any(|t| t == id) {
            r.targets.push(id.to_owned());
        }
    };
    for id in p.strings("targetGoalIds").unwrap_or_default() {
        push_target(id, &mut r);
    }
    for key in ["targetGoalId", "goalId"] {
        if let Some(id) = p.text(key) {
            push_target(id, &mut r);
        }
    }
    let after = p.after();
    let after_text = |k: &str| after.and_then(|a| a.get(k)).and_then(Value::as_str);
    let after_strings = |k: &str| owned(after.and_then(|a| a.get(k)).and_then(strs));
    let mut conflicts = Vec::new();

    let direct_children = children_of(p.fields.get("childGoals")).filter(|c| !c.is_empty());
    let after_children = children_of(after.and_then(|a| a.get("children")));
    r.children = pick(
        direct_children,
        after_children,
        "childGoals",
        &mut conflicts,
    );

    let order = owned(p.strings("pendingOrder")).filter(|o| !o.is_empty());
    let top_pending = owned(p.strings("pendingGoalIds"));
    let after_pending = after_strings("pendingGoalIds");
    let direct = match (order, top_pending) {
        (Some(o), Some(t)) => {
            if o != t {
                conflicts.push("pendingGoalIds");
            }
            Some(o)
        }
        (o, t) => o.or(t),
    };
    r.pending_order = pick(direct, after_pending, "pendingOrder", &mut conflicts);

    let title = p.text("title").map(str::to_owned);
    let objective = p.text("objective").map(str::to_owned);
    let a_title = after_text("title").map(str::to_owned);
    let a_objective = after_text("objective").map(str::to_owned);
    if p.kind == Kind::RevisePendingWording {
        let rt = p.text("revisedTitle").map(str::to_owned);
        let ro = p.text("revisedObjective").map(str::to_owned);
        let t = pick(rt, title, "revisedTitle", &mut conflicts);
        let o = pick(ro, objective, "revisedObjective", &mut conflicts);
        r.revised_title = pick(t, a_title, "title", &mut conflicts);
        r.revised_objective = pick(o, a_objective, "objective", &mut conflicts);
    } else {
        r.title = pick(title, a_title, "title", &mut conflicts);
        r.objective = pick(objective, a_objective, "objective", &mut conflicts);
    }

    r.member_ids = pick(
        owned(p.strings("memberIds")),
        after_strings("memberIds"),
        "memberIds",
        &mut conflicts,
    );
    r.final_goal_id = pick(
        p.text("finalGoalId").map(str::to_owned),
        after_text("finalGoalId").map(str::to_owned),
        "finalGoalId",
        &mut conflicts,
    );
    conflicts.dedup();
    r.conflicts = conflicts;
    r
}

/// The effect object (docs/engine.md#ge-5): `kind`, resolved `targets` and
/// the resolved kind fields, absent fields omitted; `annotate_ledger` adds
/// `evidence` and `rationale` (its only effect is the note).
pub(crate) fn effect(p: &Proposal, r: &Resolved) -> Value {
    let mut m = Map::new();
    m.insert("kind".into(), json!(p.kind.as_str()));
    m.insert("targets".into(), json!(r.targets));
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            m.insert(k.into(), v);
        }
    };
    put("title", r.title.as_ref().map(|v| json!(v)));
    put("objective", r.objective.as_ref().map(|v| json!(v)));
    put(
        "children",
        r.children.as_ref().map(|c| {
            json!(
                c.iter()
                    .map(|c| json!({"title": c.title, "objective": c.objective}))
                    .collect::<Vec<_>>()
            )
        }),
    );
    put("pendingOrder", r.pending_order.as_ref().map(|v| json!(v)));
    put("revisedTitle", r.revised_title.as_ref().map(|v| json!(v)));
    put(
        "revisedObjective",
        r.revised_objective.as_ref().map(|v| json!(v)),
    );
    for k in [
        "criterionId",
        "scenario",
        "expectedEvidence",
        "userModel",
        "blockedReason",
        "userDecision",
        "batchId",
    ] {
        put(k, p.fields.get(k).cloned());
    }
    put("memberIds", r.member_ids.as_ref().map(|v| json!(v)));
    put("finalGoalId", r.final_goal_id.as_ref().map(|v| json!(v)));
    if p.kind == Kind::AnnotateLedger {
        put("evidence", p.fields.get("evidence").cloned());
        put("rationale", p.fields.get("rationale").cloned());
    }
    Value::Object(m)
}

/// `proposalDigest`: lowercase hex SHA-256 of the canonical effect object.
pub(crate) fn digest(p: &Proposal, r: &Resolved) -> String {
    crate::digest::sha256_hex(crate::json::canonical(&effect(p, r)).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::goals::steer::proposal::{Channel, Defaults, parse_proposal};

    fn p(v: Value) -> Proposal {
        parse_proposal(&v, Channel::Library, &Defaults::none(), None).unwrap()
    }

    #[test]
    fn targets_children_and_conflicts() {
        let r = resolve(&p(json!({
            "kind": "split_subgoal", "goalId": "G1", "targetGoalId": "G1",
            "after": {"children": [{"title": "a", "objective": "b"}]}
        })));
        assert_eq!(r.targets, ["G1"]);
        assert_eq!(r.children.as_ref().unwrap()[0].title, "a");
        assert!(r.conflicts.is_empty());
        let r = resolve(&p(json!({
            "kind": "split_subgoal", "goalId": "G1", "targetGoalIds": ["G2"],
            "childGoals": [{"title": "a", "objective": "b"}],
            "after": {"children": [{"title": "x", "objective": "b"}]}
        })));
        assert_eq!(r.targets, ["G2", "G1"]);
        assert_eq!(r.conflicts, ["childGoals"]);
    }

    #[test]
    fn wording_and_digest_ignore_presentation() {
        let a = p(
            json!({"kind": "revise_pending_wording", "goalId": "G1", "title": "New",
                          "evidence": "e1", "rationale": "r1"}),
        );
        let b = p(
            json!({"kind": "revise_pending_wording", "targetGoalId": "G1",
                          "after": {"title": "New"}, "evidence": "e2", "rationale": "r2"}),
        );
        let (ra, rb) = (resolve(&a), resolve(&b));
        assert_eq!(ra.revised_title.as_deref(), Some("New"));
        assert_eq!(digest(&a, &ra), digest(&b, &rb));
        let n1 = p(json!({"kind": "annotate_ledger", "evidence": "e1", "rationale": "r"}));
        let n2 = p(json!({"kind": "annotate_ledger", "evidence": "e2", "rationale": "r"}));
        assert_ne!(digest(&n1, &resolve(&n1)), digest(&n2, &resolve(&n2)));
    }
}
