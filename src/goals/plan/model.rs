//! Enumerations of the plan (docs/differences.md#r-1) and typed read access to goals and
//! criteria stored as order-preserving JSON objects.

use serde_json::{Map, Value};

use crate::wire::wire_enum;

/// The blocker set a successful transition clears (docs/engine.md#ge-3 step 9):
/// completing a goal, a failed final review (which also drops
/// `completedAt`) and an `unblock` steering.
pub(crate) const BLOCKER_FIELDS: &[&str] = &[
    "blockedReason",
    "blockerSignature",
    "blockerOccurrenceCount",
    "requiredExternalDecision",
    "nonRetriable",
    "failedAt",
    "failureReason",
    "blocker",
    "blockerEvidence",
    "blockerOccurrences",
    "blockedAt",
];

/// The part of the blocker set a new attempt clears: the signature and its
/// counters stay, so that a recurring blocker still escalates
/// (docs/differences.md#r-2 step 6).
pub(crate) const ATTEMPT_CLEARED_FIELDS: &[&str] =
    &["blockedReason", "nonRetriable", "failedAt", "failureReason"];

wire_enum!(
    /// A goal's `status`.
    pub GoalStatus {
        Pending = "pending",
        InProgress = "in_progress",
        Complete = "complete",
        Failed = "failed",
        Blocked = "blocked",
        ReviewBlocked = "review_blocked",
        NeedsUserDecision = "needs_user_decision",
    }
);

wire_enum!(
    /// A goal's `steeringStatus` overlay.
    pub Overlay {
        Superseded = "superseded",
        Blocked = "blocked",
    }
);

wire_enum!(
    /// A criterion's `status`.
    pub CriterionStatus {
        Pending = "pending",
        Pass = "pass",
        Fail = "fail",
        Blocked = "blocked",
    }
);

wire_enum!(
    /// A criterion's `userModel`.
    pub(crate) UserModel {
        Happy = "happy",
        Edge = "edge",
        Regression = "regression",
        Adversarial = "adversarial",
    }
);

wire_enum!(
    /// The plan's `codexGoalMode`.
    pub Mode {
        Aggregate = "aggregate",
        PerStory = "per_story",
    }
);

/// Read access to a validated goal object.
#[derive(Debug, Clone, Copy)]
pub struct Goal<'a>(pub &'a Map<String, Value>);

impl<'a> Goal<'a> {
    /// `id`.
    pub fn id(&self) -> &'a str {
        str_of(self.0, "id")
    }
    /// `title`.
    pub fn title(&self) -> &'a str {
        str_of(self.0, "title")
    }
    /// `objective`.
    pub fn objective(&self) -> &'a str {
        str_of(self.0, "objective")
    }
    /// `status` (validated on read).
    pub fn status(&self) -> GoalStatus {
        member(self.0, "status")
            .and_then(Value::as_str)
            .and_then(GoalStatus::parse)
            .unwrap_or(GoalStatus::Pending)
    }
    /// `steeringStatus`, if any.
    pub fn overlay(&self) -> Option<Overlay> {
        member(self.0, "steeringStatus")
            .and_then(Value::as_str)
            .and_then(Overlay::parse)
    }
    /// `attempt` (absent ⇒ 0).
    pub fn attempt(&self) -> u64 {
        member(self.0, "attempt")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }
    /// The state a progress digest covers, read in one pass over the
    /// goal's fields: the same values [`Goal::id`], [`Goal::status`],
    /// [`Goal::overlay`], [`Goal::attempt`] and [`Goal::criteria`] give, with
    /// each criterion as `(id, status)`.
    pub(crate) fn progress(&self) -> GoalProgress<'a> {
        let mut p = GoalProgress {
            id: "",
            status: GoalStatus::Pending,
            overlay: None,
            attempt: 0,
            criteria: &[],
        };
        for (k, v) in self.0 {
            match k.as_str() {
                "id" => p.id = v.as_str().unwrap_or(""),
                "status" => {
                    p.status = v
                        .as_str()
                        .and_then(GoalStatus::parse)
                        .unwrap_or(GoalStatus::Pending);
                }
                "steeringStatus" => p.overlay = v.as_str().and_then(Overlay::parse),
                "attempt" => p.attempt = v.as_u64().unwrap_or(0),
                "successCriteria" => p.criteria = v.as_array().map_or(&[], Vec::as_slice),
                _ => {}
            }
        }
        p
    }
    /// `successCriteria` (absent ⇒ empty).
    pub fn criteria(&self) -> impl Iterator<Item = Criterion<'a>> + 'a {
        member(self.0, "successCriteria")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_object)
            .map(Criterion)
    }
    /// Whether the goal holds only what the cut-down body keeps of its
    /// criteria (a debug build marks such goals of a plan read for a
    /// mutation, [`super::CUT_MARKER`]; a release build never says so).
    pub(crate) fn is_cut(&self) -> bool {
        self.criteria().any(|c| c.0.contains_key(super::CUT_MARKER))
    }
    /// Number of criteria.
    pub fn criteria_len(&self) -> usize {
        member(self.0, "successCriteria")
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    }
    /// A criterion by id.
    pub fn criterion(&self, id: &str) -> Option<Criterion<'a>> {
        self.criteria().find(|c| c.id() == id)
    }
    /// A string field, when present and a string.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        member(self.0, key).and_then(Value::as_str)
    }
    /// A string-array field (non-strings skipped).
    pub fn strings(&self, key: &str) -> Vec<&'a str> {
        member(self.0, key)
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }
    /// `nonRetriable == true`.
    pub fn non_retriable(&self) -> bool {
        member(self.0, "nonRetriable").and_then(Value::as_bool) == Some(true)
    }
    /// `blockerSignature`, or the legacy `blocker.signature`.
    pub fn blocker_signature(&self) -> Option<&'a str> {
        self.str("blockerSignature").or_else(|| {
            member(self.0, "blocker")
                .and_then(|b| b.get("signature"))
                .and_then(Value::as_str)
        })
    }
    /// Whether a `waiver` is recorded.
    pub fn waived(&self) -> bool {
        member(self.0, "waiver").is_some_and(Value::is_object)
    }
}

/// Write access to a goal object: a setter for each field the engine
/// writes. Fields it does not name (those of a newer version, of a foreign
/// tool, or written by a profile) and the order of all keys are kept: a
/// setter replaces a present field in place and appends an absent one.
#[derive(Debug)]
pub struct GoalMut<'a>(&'a mut Map<String, Value>);

impl<'a> GoalMut<'a> {
    /// A view of the goal object `m`.
    pub fn new(m: &'a mut Map<String, Value>) -> GoalMut<'a> {
        GoalMut(m)
    }
    /// Read access to the same goal.
    pub fn read(&self) -> Goal<'_> {
        Goal(self.0)
    }
    /// The goal object as it stands (for outputs and ledger entries).
    pub fn to_value(&self) -> Value {
        Value::Object(self.0.clone())
    }
    /// Sets any field (one the typed setters do not name).
    pub fn set(&mut self, key: &str, value: Value) -> &mut Self {
        self.0.insert(key.into(), value);
        self
    }
    /// Removes fields, keeping the order of the others.
    pub fn clear(&mut self, keys: &[&str]) -> &mut Self {
        for k in keys {
            remove_key(self.0, k);
        }
        self
    }
    /// Clears the blocker set ([`BLOCKER_FIELDS`]).
    pub fn clear_blockers(&mut self) -> &mut Self {
        self.clear(BLOCKER_FIELDS)
    }
    /// `status`.
    pub fn set_status(&mut self, s: GoalStatus) -> &mut Self {
        self.set("status", Value::from(s.as_str()))
    }
    /// `steeringStatus`.
    pub fn set_overlay(&mut self, o: Overlay) -> &mut Self {
        self.set("steeringStatus", Value::from(o.as_str()))
    }
    /// Removes `steeringStatus`.
    pub fn clear_overlay(&mut self) -> &mut Self {
        self.clear(&["steeringStatus"])
    }
    /// `updatedAt`.
    pub fn set_updated_at(&mut self, now: &str) -> &mut Self {
        self.set("updatedAt", Value::from(now))
    }
    /// `startedAt`.
    pub fn set_started_at(&mut self, now: &str) -> &mut Self {
        self.set("startedAt", Value::from(now))
    }
    /// `completedAt`.
    pub fn set_completed_at(&mut self, now: &str) -> &mut Self {
        self.set("completedAt", Value::from(now))
    }
    /// `failedAt` and `failureReason`.
    pub fn set_failed(&mut self, now: &str, reason: &str) -> &mut Self {
        self.set("failedAt", Value::from(now))
            .set("failureReason", Value::from(reason))
    }
    /// `blockedReason`.
    pub fn set_blocked_reason(&mut self, reason: &str) -> &mut Self {
        self.set("blockedReason", Value::from(reason))
    }
    /// `blockerSignature`, `blockerOccurrenceCount` and
    /// `requiredExternalDecision`.
    pub fn set_blocker(&mut self, signature: &str, occurrences: u64, decision: &str) -> &mut Self {
        self.set("blockerSignature", Value::from(signature))
            .set("blockerOccurrenceCount", Value::from(occurrences))
            .set("requiredExternalDecision", Value::from(decision))
    }
    /// `nonRetriable: true`.
    pub fn set_non_retriable(&mut self) -> &mut Self {
        self.set("nonRetriable", Value::Bool(true))
    }
    /// `attempt`.
    pub fn set_attempt(&mut self, attempt: u64) -> &mut Self {
        self.set("attempt", Value::from(attempt))
    }
    /// `attemptDir`.
    pub fn set_attempt_dir(&mut self, dir: &str) -> &mut Self {
        self.set("attemptDir", Value::from(dir))
    }
    /// `evidence`.
    pub fn set_evidence(&mut self, evidence: &str) -> &mut Self {
        self.set("evidence", Value::from(evidence))
    }
    /// `userDecision`.
    pub fn set_user_decision(&mut self, decision: &str) -> &mut Self {
        self.set("userDecision", Value::from(decision))
    }
    /// A criterion object by id, for the criterion's own fields.
    pub fn criterion_mut(&mut self, id: &str) -> Option<&mut Map<String, Value>> {
        self.0
            .get_mut("successCriteria")
            .and_then(Value::as_array_mut)?
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .find(|c| c.get("id").and_then(Value::as_str) == Some(id))
    }
}

/// A goal's progress state ([`Goal::progress`]).
pub(crate) struct GoalProgress<'a> {
    pub(crate) id: &'a str,
    pub(crate) status: GoalStatus,
    pub(crate) overlay: Option<Overlay>,
    pub(crate) attempt: u64,
    criteria: &'a [Value],
}

impl<'a> GoalProgress<'a> {
    /// Each criterion object's `(id, status)`, as [`Criterion::id`] and
    /// [`Criterion::status`] give them, in one pass over its fields.
    pub(crate) fn criteria(&self) -> impl Iterator<Item = (&'a str, CriterionStatus)> + 'a {
        self.criteria.iter().filter_map(Value::as_object).map(|c| {
            let (mut id, mut status) = ("", CriterionStatus::Pending);
            for (k, v) in c {
                match k.as_str() {
                    "id" => id = v.as_str().unwrap_or(""),
                    "status" => {
                        status = v
                            .as_str()
                            .and_then(CriterionStatus::parse)
                            .unwrap_or(CriterionStatus::Pending);
                    }
                    _ => {}
                }
            }
            (id, status)
        })
    }
}

/// The members of a criterion that the plan's status reads (and the
/// field rules check): what the hooks' selective reading and the cut-down
/// body keep of each criterion.
pub(crate) const STATUS_MEMBERS: &[&str] = &["id", "status", "userModel", "essential"];

/// The cut-down body's file in the state directory
/// (`crate::goals::stop_view::status`), named here so that a refusal of
/// the plan can say which file to remove.
pub(crate) const STATUS_FILE: &str = ".goals.status";

/// Read access to a validated criterion object.
#[derive(Debug, Clone, Copy)]
pub struct Criterion<'a>(pub &'a Map<String, Value>);

impl<'a> Criterion<'a> {
    /// `id`.
    pub fn id(&self) -> &'a str {
        str_of(self.0, "id")
    }
    /// `status` (absent ⇒ pending).
    pub fn status(&self) -> CriterionStatus {
        member(self.0, "status")
            .and_then(Value::as_str)
            .and_then(CriterionStatus::parse)
            .unwrap_or(CriterionStatus::Pending)
    }
    /// `essential` (absent ⇒ true).
    pub fn essential(&self) -> bool {
        member(self.0, "essential").and_then(Value::as_bool) != Some(false)
    }
    /// `userModel` as written.
    pub fn user_model(&self) -> &'a str {
        str_of(self.0, "userModel")
    }
    /// A string field.
    pub fn str(&self, key: &str) -> Option<&'a str> {
        debug_assert!(
            STATUS_MEMBERS.contains(&key) || !self.0.contains_key(super::CUT_MARKER),
            "{key} of a cut-down criterion is read"
        );
        member(self.0, key).and_then(Value::as_str)
    }
    /// Seeded: `seeded: true`, or (legacy) `expectedEvidence` starting with a
    /// marker. (A cut-down criterion holds `seeded: true` when it is.)
    pub fn seeded(&self, markers: &[String]) -> bool {
        match member(self.0, "seeded") {
            Some(v) => v.as_bool() == Some(true),
            None => member(self.0, "expectedEvidence")
                .and_then(Value::as_str)
                .is_some_and(|e| markers.iter().any(|m| e.starts_with(m.as_str()))),
        }
    }
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    member(m, key).and_then(Value::as_str).unwrap_or("")
}

/// `m[key]`: compared with each member's key in a small object (a goal or
/// criterion has about ten; hashing the key looked up cost more), hashed in
/// a large one.
fn member<'a>(m: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if m.len() <= 16 {
        m.iter().find_map(|(k, v)| (k == key).then_some(v))
    } else {
        m.get(key)
    }
}

/// Removes `key` keeping the order of the remaining keys.
pub(crate) fn remove_key(m: &mut Map<String, Value>, key: &str) -> Option<Value> {
    m.shift_remove(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_mut_keeps_unknown_fields_and_key_order() {
        let mut m: Map<String, Value> = serde_json::from_str(
            r#"{"x-foreign":1,"id":"G1","status":"failed","failedAt":"t0","failureReason":"r",
                "blockerSignature":"s","title":"t","successCriteria":[{"id":"C1","status":"pending"}]}"#,
        )
        .unwrap();
        let mut g = GoalMut::new(&mut m);
        g.set_status(GoalStatus::InProgress)
            .clear_blockers()
            .set_attempt(2)
            .set_updated_at("t1");
        g.criterion_mut("C1")
            .unwrap()
            .insert("status".into(), Value::from("pass"));
        assert!(g.criterion_mut("C9").is_none());
        assert_eq!(g.read().status(), GoalStatus::InProgress);
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "x-foreign",
                "id",
                "status",
                "title",
                "successCriteria",
                "attempt",
                "updatedAt"
            ]
        );
        assert_eq!(m["successCriteria"][0]["status"], "pass");
        assert_eq!(m["x-foreign"], 1);
    }
}
