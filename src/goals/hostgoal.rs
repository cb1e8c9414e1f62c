//! Host-goal reconciliation (docs/differences.md#r-2 with docs/engine.md#ge-8): snapshot
//! shapes, the pure reconciliation, the opt-in task-scoped fallbacks and the
//! mismatch error.

use serde_json::{Value, json};

use super::error::{ErrorKind, GoalError};
use super::profile::Profile;

/// Normalised host-goal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HostStatus {
    /// `complete`, `completed`, `done`.
    Complete,
    /// `cancelled`, `canceled`.
    Cancelled,
    /// `failed`, `failure`.
    Failed,
    /// `active`, `in_progress`, `pending`, `running`.
    Active,
    /// Anything else.
    Unknown,
}

impl HostStatus {
    /// The normalised name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            HostStatus::Complete => "complete",
            HostStatus::Cancelled => "cancelled",
            HostStatus::Failed => "failed",
            HostStatus::Active => "active",
            HostStatus::Unknown => "unknown",
        }
    }

    fn parse(v: Option<&Value>) -> HostStatus {
        let s = v
            .and_then(Value::as_str)
            .map(|s| s.trim().to_lowercase())
            .unwrap_or_default();
        match s.as_str() {
            "complete" | "completed" | "done" => HostStatus::Complete,
            "cancelled" | "canceled" => HostStatus::Cancelled,
            "failed" | "failure" => HostStatus::Failed,
            "active" | "in_progress" | "pending" | "running" => HostStatus::Active,
            _ => HostStatus::Unknown,
        }
    }
}

/// A parsed snapshot (docs/differences.md#r-2).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    /// Reports a goal.
    pub available: bool,
    /// Trimmed objective.
    pub objective: Option<String>,
    /// Normalised status.
    pub status: HostStatus,
    /// The document as given.
    pub raw: Value,
}

/// Parses the accepted snapshot shapes.
pub(crate) fn parse(raw: Value) -> Snapshot {
    let goal_value = match &raw {
        Value::Object(o) if o.contains_key("goal") => o.get("goal"),
        other => Some(other),
    };
    let unavailable = |raw: Value| Snapshot {
        available: false,
        objective: None,
        status: HostStatus::Unknown,
        raw,
    };
    let Some(gv) = goal_value else {
        return unavailable(raw);
    };
    if gv.is_null() || *gv == Value::Bool(false) {
        return unavailable(raw);
    }
    let empty = serde_json::Map::new();
    let g = gv.as_object().unwrap_or(&empty);
    let first_defined = [
        g.get("objective"),
        g.get("goal"),
        g.get("description"),
        raw.get("objective"),
    ]
    .into_iter()
    .flatten()
    .find(|v| !v.is_null());
    let objective = first_defined
        .and_then(Value::as_str)
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty());
    let status = HostStatus::parse(g.get("status").or_else(|| raw.get("status")));
    let available = objective.is_some() || status != HostStatus::Unknown;
    Snapshot {
        available,
        objective,
        status,
        raw,
    }
}

/// What a reconciliation expects.
#[derive(Debug, Clone)]
pub(crate) struct Expect {
    /// The expected objective.
    pub expected: String,
    /// Further accepted objectives (aggregate aliases).
    pub accepted: Vec<String>,
    /// Allowed statuses.
    pub allowed: Vec<HostStatus>,
    /// A missing or unavailable snapshot is an error.
    pub require_snapshot: bool,
    /// Completeness required.
    pub require_complete: bool,
}

/// The result of a reconciliation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Outcome {
    /// Error sentences.
    pub errors: Vec<String>,
    /// Warning sentences.
    pub warnings: Vec<String>,
}

impl Outcome {
    /// No errors.
    pub(crate) fn ok(&self) -> bool {
        self.errors.is_empty()
    }
    /// Errors then warnings, space-joined.
    pub(crate) fn message(&self) -> String {
        self.errors
            .iter()
            .chain(&self.warnings)
            .cloned()
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn capitalised(noun: &str) -> String {
    let mut c = noun.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// Reconciles a snapshot (docs/differences.md#r-2) using the profile's noun, flag and tools.
pub(crate) fn reconcile(snap: Option<&Snapshot>, e: &Expect, profile: &Profile) -> Outcome {
    let hg = &profile.host_goal;
    let noun = capitalised(&hg.noun);
    let mut out = Outcome::default();
    let Some(s) = snap.filter(|s| s.available) else {
        let how = match hg.tools.get("get") {
            Some(get) => format!("call {get} and pass its JSON with {}", hg.flag),
            None => format!("pass its JSON with {}", hg.flag),
        };
        let msg = format!("{noun} snapshot is absent or reports no active goal; {how}.");
        if e.require_snapshot {
            out.errors.push(msg);
        } else {
            out.warnings.push(msg);
        }
        return out;
    };
    let expected = norm(&e.expected);
    match &s.objective {
        None => out
            .errors
            .push(format!("{noun} snapshot is missing objective text.")),
        Some(o) => {
            let actual = norm(o);
            let accepted = std::iter::once(expected.clone())
                .chain(e.accepted.iter().map(|a| norm(a)))
                .filter(|a| !a.is_empty())
                .any(|a| a == actual);
            if !accepted {
                out.errors.push(format!(
                    "{noun} objective mismatch: expected \"{expected}\", got \"{actual}\"."
                ));
            }
        }
    }
    let allowed = if e.allowed.is_empty() {
        if e.require_complete {
            vec![HostStatus::Complete]
        } else {
            vec![HostStatus::Active, HostStatus::Complete]
        }
    } else {
        e.allowed.clone()
    };
    if !allowed.contains(&s.status) {
        let names: Vec<&str> = allowed.iter().map(|a| a.as_str()).collect();
        out.errors.push(format!(
            "{noun} status mismatch: expected {}, got {}.",
            names.join(" or "),
            s.status.as_str()
        ));
    }
    if e.require_complete && s.status != HostStatus::Complete {
        let how = match (hg.tools.get("update"), hg.tools.get("get")) {
            (Some(update), Some(get)) => format!(
                "call {update}({{status: \"complete\"}}) only after the objective is actually complete, then pass the fresh {get} JSON"
            ),
            _ => "mark it complete only after the objective is actually complete, then pass a fresh snapshot".to_owned(),
        };
        out.errors.push(format!("{noun} is not complete; {how}."));
    }
    out
}

/// Which task-scoped fallback's preconditions hold (docs/differences.md#r-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskScoped {
    /// A completed snapshot of a task-scoped goal.
    Completed,
    /// An active snapshot at the final goal.
    ActiveFinal,
}

impl TaskScoped {
    /// The wire name.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TaskScoped::Completed => "completed",
            TaskScoped::ActiveFinal => "active_final",
        }
    }
}

const WORK: &[&str] = &[
    "planned work",
    "implementation",
    "deliverable",
    "deliverables",
    "scope",
    "task",
    "work",
];
const DONE: &[&str] = &["done", "complete", "completed", "finished", "shipped"];
const CHECKS: &[&str] = &[
    "validation",
    "verification",
    "test",
    "tests",
    "build",
    "lint",
    "review",
    "quality gate",
    "code-review",
];
const PASSED: &[&str] = &[
    "passed",
    "complete",
    "completed",
    "clean",
    "green",
    "approve",
    "approved",
    "clear",
];

fn has_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| {
        let re = regex::Regex::new(&format!(r"(?i)\b{}\b", regex::escape(w))).expect("escaped");
        re.is_match(text)
    })
}

/// "Completion + validation wording" of docs/differences.md#r-2.
pub(crate) fn completion_wording(text: &str) -> bool {
    has_word(text, WORK) && has_word(text, DONE) && has_word(text, CHECKS) && has_word(text, PASSED)
}

/// Inputs of the fallback check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FallbackFacts<'a> {
    /// The plan is in aggregate mode.
    pub aggregate: bool,
    /// The goal is `in_progress` and the plan's `activeGoalId`.
    pub active_in_progress: bool,
    /// The goal is the final candidate.
    pub is_final: bool,
    /// The goal id.
    pub goal_id: &'a str,
    /// The checkpoint evidence.
    pub evidence: &'a str,
    /// The profile's state directory base (a plan artifact name).
    pub state_dir: &'a str,
}

/// Which fallback would accept this mismatching snapshot, if any.
pub(crate) fn fallback(
    snap: &Snapshot,
    expected: &str,
    facts: FallbackFacts<'_>,
    brief: &dyn Fn() -> Option<String>,
) -> Option<TaskScoped> {
    let objective = snap.objective.as_deref()?;
    if !snap.available || norm(objective) == norm(expected) {
        return None;
    }
    if !facts.aggregate || !facts.active_in_progress {
        return None;
    }
    let artifacts = [facts.state_dir, "goals.json", "ledger.jsonl"];
    let mentions_artifact = |t: &str| {
        artifacts
            .iter()
            .any(|a| t.to_lowercase().contains(&a.to_lowercase()))
    };
    let maps_to_plan = || {
        let o = norm(objective).to_lowercase();
        if mentions_artifact(&o) {
            return true;
        }
        if o.chars().count() < 24 {
            return false;
        }
        let Some(b) = brief() else { return false };
        let b = norm(&b).to_lowercase();
        b.chars().count() >= 24 && (b.contains(&o) || o.contains(&b))
    };
    match snap.status {
        HostStatus::Complete => {
            let ok = if facts.is_final {
                maps_to_plan()
            } else {
                let ev = facts.evidence.to_lowercase();
                mentions_artifact(&ev)
                    && ev.contains(&facts.goal_id.to_lowercase())
                    && completion_wording(facts.evidence)
                    && maps_to_plan()
            };
            ok.then_some(TaskScoped::Completed)
        }
        HostStatus::Active => {
            (facts.is_final && completion_wording(facts.evidence) && maps_to_plan())
                .then_some(TaskScoped::ActiveFinal)
        }
        _ => None,
    }
}

/// Builds `ULW_LOOP_CODEX_SNAPSHOT_MISMATCH` (docs/engine.md#ge-8).
pub(crate) fn mismatch_error(
    out: &Outcome,
    snap: Option<&Snapshot>,
    e: &Expect,
    eligible: Option<TaskScoped>,
    hint: Option<String>,
    suggested: String,
) -> GoalError {
    let mut message = out.message();
    if let Some(h) = hint {
        message.push(' ');
        message.push_str(&h);
    }
    let allowed: Vec<&str> = if e.allowed.is_empty() {
        if e.require_complete {
            vec!["complete"]
        } else {
            vec!["active", "complete"]
        }
    } else {
        e.allowed.iter().map(|s| s.as_str()).collect()
    };
    let mut details = json!({
        "expectedObjective": e.expected,
        "actualObjective": snap.and_then(|s| s.objective.clone()),
        "actualStatus": snap.map(|s| s.status.as_str()),
        "expectedStatuses": allowed,
        "suggestedCommand": suggested,
    });
    if let Some(k) = eligible {
        details["taskScopedEligible"] = json!(k.as_str());
    }
    GoalError::new(ErrorKind::CodexSnapshotMismatch { details }, message)
}

/// The raw snapshot as recorded in a ledger entry: verbatim, or a digest
/// stand-in when larger than the embedding limit.
pub(crate) fn embed(raw: &Value, max: u64) -> Value {
    let text = serde_json::to_string(raw).expect("json");
    if text.len() as u64 > max {
        json!({"omitted": true, "size": text.len(), "sha256": crate::digest::sha256_hex(text.as_bytes())})
    } else {
        raw.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes() {
        let s = parse(json!({"goal": {"objective": " O ", "status": "Done"}}));
        assert!(s.available);
        assert_eq!(s.objective.as_deref(), Some("O"));
        assert_eq!(s.status, HostStatus::Complete);
        let s = parse(json!({"objective": "O", "status": "running"}));
        assert_eq!(s.status, HostStatus::Active);
        let s = parse(json!({"goal": {"description": "D"}}));
        assert_eq!(s.objective.as_deref(), Some("D"));
        assert!(!parse(json!({"goal": false})).available);
        assert!(!parse(Value::Null).available);
        let s = parse(json!({"wrong": "shape"}));
        assert!(!s.available);
        assert_eq!(s.status, HostStatus::Unknown);
    }

    #[test]
    fn wording() {
        assert!(completion_wording("work complete tests complete"));
        assert!(!completion_wording("implementation done"));
    }
}
