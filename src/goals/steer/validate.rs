//! Structural invariants (docs/engine.md#ge-5): the audited reasons a
//! proposal is rejected for, collected in the normative order. Nothing is
//! thrown here; the text heuristic of docs/differences.md#r-4 item 7 only adds a warning.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::proposal::{AFTER_FIELDS, CANONICAL_FIELDS, Channel, Kind, Proposal};
use super::resolve::Resolved;
use crate::goals::batches;
use crate::goals::lifecycle;
use crate::goals::plan::{CriterionStatus, Goal, GoalStatus, Overlay, Plan, UserModel};
use crate::goals::profile::Profile;

/// The warning the wording heuristic adds.
pub(crate) const WEAKENED_COMPLETION_WORDING: &str = "WEAKENED_COMPLETION_WORDING";

/// The audited reason of a proposal refused for asking to weaken completion
/// (profile `steering/refuseWeakening`).
pub(crate) const WEAKENS_COMPLETION: &str = "weakens completion";

/// The verdict of the invariants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Judgement {
    /// Every reason that applies, in order; empty ⇒ accepted.
    pub reasons: Vec<String>,
    /// A reason of item 6, 8 or a weakening reason of item 10 applies.
    pub weakening: bool,
    /// Warning codes.
    pub warnings: Vec<&'static str>,
}

impl Judgement {
    /// No reason applies.
    pub fn accepted(&self) -> bool {
        self.reasons.is_empty()
    }
}

const TARGET_FIELDS: &[&str] = &["targetGoalId", "targetGoalIds", "goalId"];
const COMMON_FIELDS: &[&str] = &[
    "kind",
    "source",
    "evidence",
    "rationale",
    "idempotencyKey",
    "promptSignature",
    "directiveText",
    "now",
];

/// The kind-field matrix: kind-specific top-level fields, and `after` keys.
fn accepts(kind: Kind) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        Kind::AddSubgoal => (&["title", "objective"], &["title", "objective"]),
        Kind::SplitSubgoal => (&["childGoals"], &["children"]),
        Kind::ReorderPending => (&["pendingOrder", "pendingGoalIds"], &["pendingGoalIds"]),
        Kind::RevisePendingWording => (
            &["revisedTitle", "revisedObjective", "title", "objective"],
            &["title", "objective"],
        ),
        Kind::ReviseCriterion => (
            &["criterionId", "scenario", "expectedEvidence", "userModel"],
            &[],
        ),
        Kind::AnnotateLedger => (&["criterionId"], &[]),
        Kind::MarkBlockedSuperseded => (
            &["childGoals", "blockedReason", "userDecision"],
            &["children"],
        ),
        Kind::Unblock => (&["userDecision"], &[]),
        Kind::ReviseBatch => (
            &["batchId", "memberIds", "finalGoalId", "userDecision"],
            &["memberIds", "finalGoalId"],
        ),
    }
}

fn takes_target(kind: Kind) -> bool {
    !matches!(
        kind,
        Kind::AddSubgoal | Kind::ReorderPending | Kind::ReviseBatch
    )
}

fn has_protected(v: &Value, protected: &[String]) -> bool {
    match v {
        Value::Object(m) => m
            .iter()
            .any(|(k, v)| protected.iter().any(|p| p == k) || has_protected(v, protected)),
        Value::Array(a) => a.iter().any(|v| has_protected(v, protected)),
        _ => false,
    }
}

/// The weakening verbs and their objects of the wording warning.
const WEAKEN_VERBS: &[&str] = &[
    "skip",
    "bypass",
    "weaken",
    "remove",
    "omit",
    "auto-complete",
    "auto complete",
    "autocomplete",
    "mark complete",
    "complete faster",
];
const WEAKEN_OBJECTS: &[&str] = &[
    "test",
    "tests",
    "verification",
    "review",
    "quality gate",
    "complete",
    "completion",
];

/// Whether a word of `list` occurs in `text` with no ASCII letter or digit
/// next to it (the pattern `(?:^|[^a-z0-9])(?:w1|w2|…)(?:$|[^a-z0-9])` over
/// lower-cased text, matched without compiling it).
fn ascii_word_in(text: &str, list: &[&str]) -> bool {
    let alnum = |b: Option<&u8>| b.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let bytes = text.as_bytes();
    list.iter().any(|w| {
        let mut from = 0;
        while let Some(found) = text[from..].find(w) {
            let start = from + found;
            let end = start + w.len();
            if !alnum(start.checked_sub(1).and_then(|i| bytes.get(i))) && !alnum(bytes.get(end)) {
                return true;
            }
            from = start + text[start..].chars().next().map_or(1, char::len_utf8);
        }
        false
    })
}

fn strings_of(v: &Value, out: &mut String) {
    match v {
        Value::String(s) => {
            out.push(' ');
            out.push_str(&s.to_lowercase());
        }
        Value::Array(a) => a.iter().for_each(|v| strings_of(v, out)),
        Value::Object(m) => m.values().for_each(|v| strings_of(v, out)),
        _ => {}
    }
}

/// The anchor's "weakened completion" bag-of-words test (docs/differences.md#r-4 item 7),
/// kept only as a warning.
pub(crate) fn weakened_wording(fields: &Map<String, Value>) -> bool {
    let mut text = String::new();
    for v in fields.values() {
        strings_of(v, &mut text);
    }
    ascii_word_in(&text, WEAKEN_VERBS) && ascii_word_in(&text, WEAKEN_OBJECTS)
}

/// A request to skip, bypass, weaken or remove tests, verification, review,
/// the quality gate or completion (in that order on one line), or to
/// auto-complete: the pattern
/// `\b(?:skip|bypass|weaken|remove)\b.*\b(?:tests?|review|verification|quality gate|complete|completion)\b|\bauto[- ]?complete\b`
/// (Unicode word boundaries, `.` short of a newline), matched without
/// compiling it.
fn weaken_request(text: &str) -> bool {
    use crate::goals::words::bounded;
    const VERBS: &[&str] = &["skip", "bypass", "weaken", "remove"];
    const OBJECTS: &[&str] = &[
        "test",
        "tests",
        "review",
        "verification",
        "quality gate",
        "complete",
        "completion",
    ];
    const AUTO: &[&str] = &["auto-complete", "auto complete", "autocomplete"];
    if AUTO.iter().any(|w| bounded(text, w).next().is_some()) {
        return true;
    }
    text.split('\n').any(|line| {
        let Some(verb_end) = VERBS
            .iter()
            .filter_map(|w| bounded(line, w).next().map(|(_, end)| end))
            .min()
        else {
            return false;
        };
        OBJECTS
            .iter()
            .any(|w| bounded(line, w).any(|(start, _)| start >= verb_end))
    })
}

/// What the proposal asks for, in its own words: the new titles and
/// objectives (top level, `after` and children), the rationale and the
/// directive text — not the evidence, which reports what was observed.
fn intent_text(p: &Proposal) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut add = |v: Option<&Value>| {
        if let Some(Value::String(s)) = v {
            parts.push(s.to_lowercase());
        }
    };
    for k in [
        "title",
        "objective",
        "revisedTitle",
        "revisedObjective",
        "rationale",
        "directiveText",
    ] {
        add(p.fields.get(k));
    }
    let after = p.after();
    if let Some(a) = after {
        add(a.get("title"));
        add(a.get("objective"));
    }
    let children = p
        .fields
        .get("childGoals")
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty())
        .or_else(|| after?.get("children")?.as_array());
    for c in children.into_iter().flatten() {
        add(c.get("title"));
        add(c.get("objective"));
    }
    parts.join("\n")
}

/// Whether the proposal asks to weaken completion (refused where the
/// profile says so; elsewhere only the wording warning applies).
pub(crate) fn asks_to_weaken(p: &Proposal) -> bool {
    weaken_request(&intent_text(p))
}

/// Healthy batch member: removing it without a user decision weakens the batch.
fn healthy(g: Goal<'_>) -> bool {
    g.overlay() != Some(Overlay::Blocked)
        && g.status() != GoalStatus::NeedsUserDecision
        && !g.waived()
}

struct Out {
    reasons: Vec<String>,
    weakening: bool,
}

impl Out {
    fn push(&mut self, r: impl Into<String>) {
        self.reasons.push(r.into());
    }
    fn weaken(&mut self, r: impl Into<String>) {
        self.weakening = true;
        self.push(r);
    }
}

/// Applies the invariants of docs/engine.md#ge-5 to `p` against `plan`. `key_conflict`:
/// the idempotency key or prompt signature names a different proposal.
pub(crate) fn judge(
    plan: &Plan,
    profile: &Profile,
    p: &Proposal,
    r: &Resolved,
    key_conflict: bool,
) -> Judgement {
    let mut out = Out {
        reasons: Vec::new(),
        weakening: false,
    };
    let kind = p.kind.as_str();
    let enabled = profile.steering.kinds.iter().any(|k| k == kind);
    if !enabled {
        out.push(format!("invalid kind: {kind}"));
    }
    if p.text("evidence").is_none() {
        out.push("missing evidence");
    }
    if p.text("rationale").is_none() {
        out.push("missing rationale");
    }
    let protected = &profile.steering.protected_keys;
    let is_protected = |k: &str| protected.iter().any(|p| p == k);
    if p.fields.iter().any(|(k, v)| {
        k != "kind" && k != "source" && (is_protected(k) || has_protected(v, protected))
    }) {
        out.weaken("protected payload");
    }
    let canonical =
        |k: &str| CANONICAL_FIELDS.contains(&k) || (k == "now" && p.channel == Channel::Library);
    for k in p.fields.keys() {
        if !canonical(k) && !is_protected(k) {
            out.push(format!("unknown field: {k}"));
        }
    }
    if let Some(after) = p.after() {
        for k in after.keys() {
            if !AFTER_FIELDS.contains(&k.as_str()) && !is_protected(k) {
                out.push(format!("unknown field: after.{k}"));
            }
        }
    }
    let (own, own_after) = accepts(p.kind);
    for k in p.fields.keys() {
        let allowed = COMMON_FIELDS.contains(&k.as_str())
            || own.contains(&k.as_str())
            || (takes_target(p.kind) && TARGET_FIELDS.contains(&k.as_str()))
            || (k == "after" && !own_after.is_empty());
        if canonical(k) && !allowed {
            out.weaken(format!("{kind} does not accept {k}"));
        }
    }
    if let Some(after) = p.after()
        && !own_after.is_empty()
    {
        for k in after.keys() {
            if AFTER_FIELDS.contains(&k.as_str()) && !own_after.contains(&k.as_str()) {
                out.weaken(format!("{kind} does not accept after.{k}"));
            }
        }
    }
    if lifecycle::run_complete(plan) {
        out.push("plan already complete");
    }
    if enabled {
        for c in &r.conflicts {
            out.push(format!("after conflicts with {c}"));
        }
        if takes_target(p.kind) && r.targets.len() > 1 {
            out.push(format!("{kind} accepts one target"));
        }
        kind_specific(plan, p, r, &mut out);
    }
    if profile.steering.refuse_weakening && asks_to_weaken(p) {
        out.weaken(WEAKENS_COMPLETION);
    }
    if key_conflict {
        out.push("idempotency key conflict");
    }
    let mut warnings = Vec::new();
    if weakened_wording(&p.fields) {
        warnings.push(WEAKENED_COMPLETION_WORDING);
    }
    Judgement {
        reasons: out.reasons,
        weakening: out.weakening,
        warnings,
    }
}

fn pending_free(g: Goal<'_>) -> bool {
    g.status() == GoalStatus::Pending && g.overlay().is_none()
}

fn kind_specific(plan: &Plan, p: &Proposal, r: &Resolved, out: &mut Out) {
    let kind = p.kind.as_str();
    let target = r.target().and_then(|id| plan.goal(id));
    match p.kind {
        Kind::AddSubgoal => {
            if r.title.is_none() || r.objective.is_none() {
                out.push("add_subgoal requires title/objective");
            }
        }
        Kind::SplitSubgoal | Kind::RevisePendingWording => {
            match target {
                None => out.push(format!("{kind} requires target")),
                Some(g) if !pending_free(g) => out.push(format!("{kind} requires pending target")),
                Some(_) => {}
            }
            if p.kind == Kind::SplitSubgoal && r.children.as_ref().is_none_or(Vec::is_empty) {
                out.push("split_subgoal requires children");
            }
            if p.kind == Kind::RevisePendingWording
                && r.revised_title.is_none()
                && r.revised_objective.is_none()
            {
                out.push("revise_pending_wording requires update");
            }
        }
        Kind::ReorderPending => {
            let order = r.pending_order.as_deref().unwrap_or_default();
            if order.is_empty() {
                out.push("reorder_pending requires ids");
            }
            let mut seen = HashSet::new();
            if order.iter().any(|id| !seen.insert(id)) {
                out.push("duplicate pending id");
            }
            if order
                .iter()
                .any(|id| !plan.goal(id).is_some_and(pending_free))
            {
                out.push("unknown pending id");
            }
        }
        Kind::ReviseCriterion => revise_criterion(p, target, out),
        Kind::AnnotateLedger => {}
        Kind::MarkBlockedSuperseded => match target {
            None => out.push("mark_blocked_superseded requires target"),
            Some(g) if g.status() == GoalStatus::Complete => {
                out.weaken("mark_blocked_superseded requires unresolved target")
            }
            Some(g) if g.overlay() == Some(Overlay::Superseded) => {
                out.push("target already superseded")
            }
            Some(_) => {}
        },
        Kind::Unblock => match target {
            None => out.push("unblock requires target"),
            Some(g) => {
                let in_row = g.overlay() != Some(Overlay::Superseded)
                    && (g.overlay() == Some(Overlay::Blocked)
                        || matches!(
                            g.status(),
                            GoalStatus::Blocked
                                | GoalStatus::NeedsUserDecision
                                | GoalStatus::Failed
                        ));
                if !in_row {
                    out.push("unblock requires blocked target");
                } else if (g.status() == GoalStatus::NeedsUserDecision
                    || g.overlay() == Some(Overlay::Blocked))
                    && p.text("userDecision").is_none()
                {
                    out.weaken("unblock requires userDecision");
                }
            }
        },
        Kind::ReviseBatch => revise_batch(plan, p, r, out),
    }
}

fn revise_criterion(p: &Proposal, target: Option<Goal<'_>>, out: &mut Out) {
    let Some(g) = target else {
        out.push("revise_criterion requires goalId");
        return;
    };
    if g.overlay() == Some(Overlay::Superseded) {
        out.push("target already superseded");
    }
    let criterion = p.text("criterionId").and_then(|c| g.criterion(c));
    let Some(c) = criterion else {
        out.push("revise_criterion requires criterionId");
        return;
    };
    let model = p.fields.get("userModel");
    let model_given = match model {
        None => false,
        Some(Value::String(s)) => !crate::text::is_blank(s),
        Some(_) => true,
    };
    if p.text("scenario").is_none() && p.text("expectedEvidence").is_none() && !model_given {
        out.push("revise_criterion requires update");
    }
    let model_valid = model
        .and_then(Value::as_str)
        .is_some_and(|m| UserModel::parse(m.trim()).is_some());
    if model_given && !model_valid {
        out.push("invalid userModel");
    }
    if g.status() == GoalStatus::Complete && c.status() == CriterionStatus::Pass {
        out.weaken("revise_criterion would reset a completed verdict");
    }
}

fn revise_batch(plan: &Plan, p: &Proposal, r: &Resolved, out: &mut Out) {
    let Some(bid) = p.text("batchId") else {
        out.push("revise_batch requires batchId");
        return;
    };
    let decided = p.text("userDecision").is_some();
    let all = plan.batches();
    let existing = all.iter().find(|b| batches::batch_id(b) == bid);
    let deleting = r.member_ids.as_ref().is_some_and(Vec::is_empty);
    let old: Vec<&str> = existing.map(|b| batches::member_ids(b)).unwrap_or_default();
    match existing {
        None if r.member_ids.is_none() || deleting => {
            out.push("revise_batch unknown batch");
            return;
        }
        Some(b) if b.get("closedAt").is_some_and(Value::is_string) => {
            out.push("revise_batch batch closed");
            return;
        }
        Some(_) if deleting => {
            if !decided {
                out.weaken("revise_batch weakens batch");
            }
            return;
        }
        _ => {}
    }
    let mut members: Vec<&str> = Vec::new();
    match &r.member_ids {
        Some(ids) => {
            for id in ids {
                if !members.contains(&id.as_str()) {
                    members.push(id);
                }
            }
        }
        None => members.clone_from(&old),
    }
    if members.len() < 2 {
        out.push("revise_batch requires two members");
    }
    let added: Vec<&str> = members
        .iter()
        .copied()
        .filter(|m| !old.contains(m))
        .collect();
    if added.iter().any(|m| {
        plan.goal(m)
            .is_none_or(|g| g.overlay() == Some(Overlay::Superseded))
    }) {
        out.push("revise_batch unknown member");
    }
    if added.iter().any(|m| {
        all.iter()
            .any(|b| batches::batch_id(b) != bid && batches::member_ids(b).contains(m))
    }) {
        out.push("revise_batch member overlap");
    }
    let old_final = existing
        .and_then(|b| b.get("finalGoalId"))
        .and_then(Value::as_str);
    let final_id = r
        .final_goal_id
        .as_deref()
        .or(old_final.filter(|f| members.contains(f)));
    match final_id {
        Some(f) if members.contains(&f) => {
            if plan
                .goal(f)
                .is_some_and(|g| g.status() == GoalStatus::Complete)
            {
                out.push("revise_batch final already complete");
            }
        }
        _ => out.push("revise_batch requires finalGoalId"),
    }
    let removes_healthy = old
        .iter()
        .filter(|m| !members.contains(m))
        .any(|m| plan.goal(m).is_some_and(healthy));
    if removes_healthy && !decided {
        out.weaken("revise_batch weakens batch");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The regular expressions the wording checks stand for.
    fn reference_words(list: &[&str]) -> regex::Regex {
        let alt: Vec<String> = list.iter().map(|w| regex::escape(w)).collect();
        regex::Regex::new(&format!(
            r"(?:^|[^a-z0-9])(?:{})(?:$|[^a-z0-9])",
            alt.join("|")
        ))
        .unwrap()
    }

    fn reference_request() -> regex::Regex {
        regex::Regex::new(
            r"\b(?:skip|bypass|weaken|remove)\b.*\b(?:tests?|review|verification|quality gate|complete|completion)\b|\bauto[- ]?complete\b",
        )
        .unwrap()
    }

    const EDGE_TEXTS: &[&str] = &[
        "",
        "skip tests",
        "skiptests",
        "skip\ntests",
        "tests skip",
        "please skip the review",
        "remove completion",
        "removed tests",
        "auto-complete",
        "autocompleted",
        "auto  complete",
        "x auto complete y",
        "skip_tests",
        "skip-tests",
        "skip1 tests",
        "é skip tests é",
        "éskip tests",
        "skip testsé",
        "skip test\u{301}",
        "weaken the quality gate",
        "weaken the quality  gate",
        "bypass: complete",
        "mark complete the tests",
        "complete faster",
        "omit verification",
        "omitverification",
        "9skip tests",
        "Skip Tests",
        "remove\r tests",
        "tests remove tests",
    ];

    #[test]
    fn wording_checks_agree_with_their_regular_expressions_on_edge_cases() {
        let (verbs, objects) = (
            reference_words(WEAKEN_VERBS),
            reference_words(WEAKEN_OBJECTS),
        );
        let request = reference_request();
        for t in EDGE_TEXTS {
            assert_eq!(ascii_word_in(t, WEAKEN_VERBS), verbs.is_match(t), "{t:?}");
            assert_eq!(
                ascii_word_in(t, WEAKEN_OBJECTS),
                objects.is_match(t),
                "{t:?}"
            );
            assert_eq!(weaken_request(t), request.is_match(t), "{t:?}");
        }
    }

    use proptest::prelude::*;

    proptest! {
        #[test]
        fn wording_checks_agree_with_their_regular_expressions(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("skip"), Just("bypass"), Just("weaken"), Just("remove"), Just("omit"),
                    Just("auto"), Just("complete"), Just("completion"), Just("test"), Just("tests"),
                    Just("review"), Just("verification"), Just("quality"), Just("gate"),
                    Just("mark"), Just("faster"), Just("autocomplete"),
                    Just(" "), Just("-"), Just("\n"), Just("é"), Just("\u{301}"), Just("_"),
                    Just("s"), Just("9"), Just("X"), Just("."),
                ],
                0..8,
            ),
        ) {
            let t: String = parts.concat();
            prop_assert_eq!(ascii_word_in(&t, WEAKEN_VERBS), reference_words(WEAKEN_VERBS).is_match(&t));
            prop_assert_eq!(ascii_word_in(&t, WEAKEN_OBJECTS), reference_words(WEAKEN_OBJECTS).is_match(&t));
            prop_assert_eq!(weaken_request(&t), reference_request().is_match(&t));
        }
    }

    #[test]
    fn wording_heuristic_is_whole_word() {
        let m = |s: &str| {
            let mut f = Map::new();
            f.insert("evidence".into(), json!(s));
            weakened_wording(&f)
        };
        assert!(m("we must remove a flaky test"));
        assert!(!m("removed the flaky test"));
        assert!(m("auto-complete the review"));
        assert!(!m("skipping tests"));
    }
}
