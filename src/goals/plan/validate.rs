//! Field rules of a plan read (docs/state-formats.md#ge-2): a violation is
//! `ULW_LOOP_PLAN_CORRUPT` with the JSON pointer of the offending value.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::model::{CriterionStatus, GoalStatus, Mode, Overlay, UserModel};

/// A violated field rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// JSON pointer into the plan.
    pub pointer: String,
    /// What is wrong.
    pub problem: String,
}

fn v(pointer: impl Into<String>, problem: impl Into<String>) -> Violation {
    Violation {
        pointer: pointer.into(),
        problem: problem.into(),
    }
}

fn non_negative_int(value: &Value) -> bool {
    value.as_u64().is_some()
}

/// `value` (the member `key`) is one of an enum's names (`required`: and
/// present). The pointer and the name list are built only for a violation:
/// a plan of 1,000 goals runs this 10,000 times.
fn enum_value(
    value: Option<&Value>,
    key: &str,
    at: &dyn Fn() -> String,
    ok: fn(&str) -> bool,
    names: fn() -> Vec<&'static str>,
    required: bool,
) -> Result<(), Violation> {
    match value {
        None if !required => Ok(()),
        Some(Value::String(s)) if ok(s) => Ok(()),
        _ => Err(v(
            format!("{}/{key}", at()),
            format!("must be one of {}", names().join(", ")),
        )),
    }
}

/// Checks every field rule; returns the goal-id index on success.
pub(crate) fn check(doc: &Map<String, Value>) -> Result<HashMap<String, usize>, Violation> {
    if let Some(r) = doc.get("revision")
        && !non_negative_int(r)
    {
        return Err(v("/revision", "must be a non-negative integer"));
    }
    enum_value(
        doc.get("codexGoalMode"),
        "codexGoalMode",
        &String::new,
        |s| Mode::parse(s).is_some(),
        Mode::names,
        false,
    )?;
    if let Some(lm) = doc.get("lastMutation") {
        check_last_mutation(lm)?;
    }
    let goals = doc
        .get("goals")
        .and_then(Value::as_array)
        .expect("caller checked goals is an array");
    let mut index = HashMap::with_capacity(goals.len());
    // A long plan's goals are checked on two threads first; when every
    // goal passes, only the ids remain to index. Otherwise (or for a short
    // plan) the goals are checked in order, which reports the first
    // violation as a plan read always has.
    let each_passes = goals.len() >= PARALLEL_GOALS && all_pass(goals);
    for (i, g) in goals.iter().enumerate() {
        let (id, fields) = if each_passes {
            (&g["id"], None)
        } else {
            let f = goal_head(i, g)?;
            (f[0].expect("checked"), Some(f))
        };
        let id = id.as_str().expect("checked");
        if index.insert(id.to_owned(), i).is_some() {
            return Err(v(
                format!("/goals/{i}/id"),
                format!("duplicate goal id `{id}`"),
            ));
        }
        if let Some(f) = fields {
            goal_rest(i, &f)?;
        }
    }
    if let Some(b) = doc.get("validationBatches") {
        let Some(batches) = b.as_array() else {
            return Err(v("/validationBatches", "must be an array"));
        };
        for (i, b) in batches.iter().enumerate() {
            let at = format!("/validationBatches/{i}");
            let Some(b) = b.as_object() else {
                return Err(v(at, "a validation batch must be an object"));
            };
            if !b.get("batchId").is_some_and(Value::is_string) {
                return Err(v(format!("{at}/batchId"), "must be a string"));
            }
            let Some(members) = b.get("memberIds").and_then(Value::as_array) else {
                return Err(v(format!("{at}/memberIds"), "must be an array of goal ids"));
            };
            for (j, m) in members.iter().enumerate() {
                match m.as_str() {
                    Some(id) if index.contains_key(id) => {}
                    _ => {
                        return Err(v(
                            format!("{at}/memberIds/{j}"),
                            "must name an existing goal",
                        ));
                    }
                }
            }
            match b.get("finalGoalId").and_then(Value::as_str) {
                Some(id) if index.contains_key(id) => {}
                _ => {
                    return Err(v(format!("{at}/finalGoalId"), "must name an existing goal"));
                }
            }
        }
    }
    Ok(index)
}

/// Plans with at least this many goals are checked on two threads.
const PARALLEL_GOALS: usize = 128;

/// Every goal passes [`goal_head`] and [`goal_rest`] (the first half here,
/// the second on a helper thread).
fn all_pass(goals: &[Value]) -> bool {
    let pass = |from: usize, part: &[Value]| {
        part.iter().enumerate().all(|(k, g)| {
            goal_head(from + k, g)
                .and_then(|f| goal_rest(from + k, &f))
                .is_ok()
        })
    };
    let mid = goals.len() / 2;
    let (first, second) = goals.split_at(mid);
    std::thread::scope(|s| {
        let helper = std::thread::Builder::new()
            .name("validate".into())
            .spawn_scoped(s, || pass(mid, second));
        let ok = pass(0, first);
        let rest = match helper {
            Ok(h) => h.join().unwrap_or(false),
            Err(_) => pass(mid, second),
        };
        ok && rest
    })
}

/// The members of a goal the field rules read, found in one pass.
const GOAL_KEYS: [&str; 7] = [
    "id",
    "title",
    "objective",
    "status",
    "steeringStatus",
    "attempt",
    "successCriteria",
];

type GoalFields<'a> = [Option<&'a Value>; GOAL_KEYS.len()];

/// The values of `keys` in `obj`, found in one pass over its members: a
/// plan's objects have a handful of members, and hashing every key looked
/// up cost more than comparing it with each member's (a plan of 1,000 goals
/// looks up about 16,000 values).
fn pick<'a, const N: usize>(
    obj: &'a Map<String, Value>,
    keys: [&str; N],
) -> [Option<&'a Value>; N] {
    let mut out = [None; N];
    for (k, v) in obj {
        if let Some(i) = keys.iter().position(|x| *x == k) {
            out[i] = Some(v);
        }
    }
    out
}

/// Goal `i` is an object with string `id`, `title` and `objective`.
fn goal_head(i: usize, g: &Value) -> Result<GoalFields<'_>, Violation> {
    let at = || format!("/goals/{i}");
    let Some(g) = g.as_object() else {
        return Err(v(at(), "a goal must be an object"));
    };
    let f = pick(g, GOAL_KEYS);
    for (key, value) in GOAL_KEYS.iter().zip(&f).take(3) {
        if !value.is_some_and(Value::is_string) {
            return Err(v(format!("{}/{key}", at()), "must be a string"));
        }
    }
    Ok(f)
}

/// The rest of goal `i`'s field rules (after its id is indexed).
fn goal_rest(i: usize, f: &GoalFields<'_>) -> Result<(), Violation> {
    let at = || format!("/goals/{i}");
    let [id, _, _, status, steering, attempt, criteria] = *f;
    let id = id.and_then(Value::as_str).expect("checked");
    enum_value(
        status,
        "status",
        &at,
        |s| GoalStatus::parse(s).is_some(),
        GoalStatus::names,
        true,
    )?;
    enum_value(
        steering,
        "steeringStatus",
        &at,
        |s| Overlay::parse(s).is_some(),
        Overlay::names,
        false,
    )?;
    if let Some(a) = attempt
        && !non_negative_int(a)
    {
        return Err(v(
            format!("{}/attempt", at()),
            "must be a non-negative integer",
        ));
    }
    if let Some(c) = criteria {
        let Some(list) = c.as_array() else {
            return Err(v(
                format!("{}/successCriteria", at()),
                "must be an array of objects",
            ));
        };
        // A goal has a handful of criteria: comparing with the earlier
        // ones beats hashing them; a long list (a hostile plan) is hashed.
        let mut ids = (list.len() > 16).then(HashSet::new);
        let mut earlier_ids: Vec<&str> = Vec::new();
        for (j, c) in list.iter().enumerate() {
            let cat = || format!("{}/successCriteria/{j}", at());
            let Some(c) = c.as_object() else {
                return Err(v(cat(), "a criterion must be an object"));
            };
            let [cid, status, user_model] = pick(c, ["id", "status", "userModel"]);
            let Some(cid) = cid.and_then(Value::as_str) else {
                return Err(v(format!("{}/id", cat()), "must be a string"));
            };
            let earlier = match &mut ids {
                Some(ids) => !ids.insert(cid),
                None => {
                    let seen = earlier_ids.contains(&cid);
                    earlier_ids.push(cid);
                    seen
                }
            };
            if earlier {
                return Err(v(
                    format!("{}/id", cat()),
                    format!("duplicate criterion id `{cid}` in goal `{id}`"),
                ));
            }
            enum_value(
                status,
                "status",
                &cat,
                |s| CriterionStatus::parse(s).is_some(),
                CriterionStatus::names,
                false,
            )?;
            enum_value(
                user_model,
                "userModel",
                &cat,
                |s| UserModel::parse(s).is_some(),
                UserModel::names,
                false,
            )?;
        }
    }
    Ok(())
}

fn check_last_mutation(lm: &Value) -> Result<(), Violation> {
    let Some(o) = lm.as_object() else {
        return Err(v("/lastMutation", "must be an object"));
    };
    for key in ["revision", "fromSeq"] {
        if !o.get(key).is_some_and(non_negative_int) {
            return Err(v(
                format!("/lastMutation/{key}"),
                "must be a non-negative integer",
            ));
        }
    }
    match o.get("entries").and_then(Value::as_array) {
        Some(list) if list.iter().all(Value::is_object) => Ok(()),
        _ => Err(v("/lastMutation/entries", "must be an array of objects")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn plan_with(criteria: usize, duplicate_at: Option<usize>) -> Map<String, Value> {
        let list: Vec<Value> = (0..criteria)
            .map(|j| {
                let id = match duplicate_at {
                    Some(d) if j == d => "C0".to_owned(),
                    _ => format!("C{j}"),
                };
                json!({"id": id, "status": "pending"})
            })
            .collect();
        let doc = json!({"goals": [
            {"id": "G1", "title": "t", "objective": "o", "status": "pending"},
            {"id": "G2", "title": "t", "objective": "o", "status": "pending", "successCriteria": list},
        ]});
        doc.as_object().unwrap().clone()
    }

    /// Duplicate criterion ids are found by the short-list scan and by the
    /// hashed long-list check alike, with the same pointer and message.
    #[test]
    fn duplicate_criteria_are_found_in_short_and_long_lists() {
        for n in [2, 16, 17, 300] {
            assert!(check(&plan_with(n, None)).is_ok(), "{n}");
            let e = check(&plan_with(n, Some(n - 1))).unwrap_err();
            assert_eq!(e.pointer, format!("/goals/1/successCriteria/{}/id", n - 1));
            assert_eq!(e.problem, "duplicate criterion id `C0` in goal `G2`");
        }
    }

    /// A long plan is checked on two threads, and still reports the first
    /// violation in document order: a bad goal in either half, a duplicate
    /// id before a later bad field, a bad field before a later duplicate.
    #[test]
    fn a_long_plan_reports_its_first_violation() {
        let goals: Vec<Value> = (0..300)
            .map(|i| {
                json!({"id": format!("G{i}"), "title": "t", "objective": "o", "status": "pending",
                            "successCriteria": [{"id": "C1", "status": "pass"}]})
            })
            .collect();
        let doc = json!({"goals": goals}).as_object().unwrap().clone();
        let index = check(&doc).unwrap();
        assert_eq!(index.len(), 300);
        assert_eq!(index["G299"], 299);
        type Edits<'a> = &'a [(usize, &'a str, Value)];
        let cases: [(Edits, &str); 5] = [
            (&[(20, "status", json!("nope"))], "/goals/20/status"),
            (&[(280, "title", json!(1))], "/goals/280/title"),
            (
                &[(200, "id", json!("G3")), (250, "status", json!("x"))],
                "/goals/200/id",
            ),
            (
                &[(150, "attempt", json!(-1)), (250, "id", json!("G1"))],
                "/goals/150/attempt",
            ),
            (&[(299, "id", json!("G0"))], "/goals/299/id"),
        ];
        for (edits, pointer) in cases {
            let mut d = doc.clone();
            for (i, key, value) in edits {
                d["goals"][*i][*key] = value.clone();
            }
            assert_eq!(check(&d).unwrap_err().pointer, pointer);
        }
        let mut d = doc.clone();
        d["goals"][160]["successCriteria"][0]["userModel"] = json!("nobody");
        assert_eq!(
            check(&d).unwrap_err().pointer,
            "/goals/160/successCriteria/0/userModel"
        );
    }

    #[test]
    fn a_bad_enum_names_its_pointer_and_the_allowed_values() {
        let mut doc = plan_with(3, None);
        doc["goals"][1]["successCriteria"][2]["status"] = json!("done");
        let e = check(&doc).unwrap_err();
        assert_eq!(e.pointer, "/goals/1/successCriteria/2/status");
        assert!(e.problem.starts_with("must be one of "), "{}", e.problem);
        assert!(e.problem.contains("pass"), "{}", e.problem);
        let mut doc = plan_with(1, None);
        doc["goals"][0]["status"] = json!(7);
        let e = check(&doc).unwrap_err();
        assert_eq!(e.pointer, "/goals/0/status");
    }
}
