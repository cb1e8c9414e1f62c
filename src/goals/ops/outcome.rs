//! The typed pieces of the subcommand outcomes: stored records (a goal, a
//! criterion, a ledger entry) kept as the JSON objects they are on disk but
//! read through named accessors, and the small values every mutation
//! reports (the ledger head, recorded files, warnings).
//!
//! Each type serialises to the shape the command line prints; the front end
//! decides which of them a reply carries and in which order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::goals::journal::Head;
pub use crate::goals::journal::LedgerKind;
pub use crate::goals::plan::{Criterion, CriterionStatus, Goal, GoalStatus};

// The engine types the outcomes carry, nameable from here whatever the
// visibility of the modules that define them.
pub use crate::finding::{Code, Severity};
pub use crate::gate::template::GateTemplate;
pub use crate::goals::handoff::Instruction;
pub use crate::goals::hostgoal::HostStatus;
pub use crate::goals::summary::{CamelCounts, CriteriaCounts, Summary};
pub use crate::goals::warning::Warning;
pub use crate::goals::workflow::Registration;
pub use crate::goals::workflow::registry::Entry as WorkflowEntry;

/// A goal object as stored in the plan. It keeps every member, including
/// the ones other tools wrote, so it stays a JSON object; read it through
/// [`GoalRecord::id`], [`GoalRecord::status`] or [`GoalRecord::as_goal`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct GoalRecord(Map<String, Value>);

impl GoalRecord {
    /// Copies the stored object of `goal`.
    pub fn of(goal: Goal<'_>) -> GoalRecord {
        debug_assert!(!goal.is_cut(), "a cut-down goal is copied");
        GoalRecord(goal.0.clone())
    }
    /// Wraps a stored goal object.
    pub fn from_map(map: Map<String, Value>) -> GoalRecord {
        GoalRecord(map)
    }
    /// Typed read access (every accessor of [`Goal`]).
    pub fn as_goal(&self) -> Goal<'_> {
        Goal(&self.0)
    }
    /// `id`.
    pub fn id(&self) -> &str {
        self.as_goal().id()
    }
    /// `title`.
    pub fn title(&self) -> &str {
        self.as_goal().title()
    }
    /// `status`.
    pub fn status(&self) -> GoalStatus {
        self.as_goal().status()
    }
    /// The stored object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
    /// The stored object, owned.
    pub fn into_map(self) -> Map<String, Value> {
        self.0
    }
}

/// A criterion object as stored in its goal (see [`GoalRecord`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct CriterionRecord(Map<String, Value>);

impl CriterionRecord {
    /// Copies the stored object of `criterion`.
    pub fn of(criterion: Criterion<'_>) -> CriterionRecord {
        debug_assert!(
            !criterion.0.contains_key(crate::goals::plan::CUT_MARKER),
            "a cut-down criterion is copied"
        );
        CriterionRecord(criterion.0.clone())
    }
    /// Wraps a stored criterion object.
    pub fn from_map(map: Map<String, Value>) -> CriterionRecord {
        CriterionRecord(map)
    }
    /// Typed read access (every accessor of [`Criterion`]).
    pub fn as_criterion(&self) -> Criterion<'_> {
        Criterion(&self.0)
    }
    /// `id`.
    pub fn id(&self) -> &str {
        self.as_criterion().id()
    }
    /// `status`.
    pub fn status(&self) -> CriterionStatus {
        self.as_criterion().status()
    }
    /// The stored object.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
}

/// A ledger entry as appended (with `seq`, `prev` and the plan binding when
/// chained). Entry kinds carry different members, so it stays a JSON object
/// read through named accessors.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct LedgerRecord(Map<String, Value>);

impl LedgerRecord {
    /// Wraps an appended entry (`null` for anything but an object, which the
    /// journal never appends).
    pub fn from_value(v: Value) -> LedgerRecord {
        match v {
            Value::Object(m) => LedgerRecord(m),
            _ => LedgerRecord(Map::new()),
        }
    }
    /// `seq` (chained entries).
    pub fn seq(&self) -> Option<u64> {
        self.0.get("seq").and_then(Value::as_u64)
    }
    /// `kind` as written.
    pub fn kind_str(&self) -> Option<&str> {
        self.0.get("kind").and_then(Value::as_str)
    }
    /// `kind`, when it is one this engine writes.
    pub fn kind(&self) -> Option<LedgerKind> {
        self.kind_str().and_then(LedgerKind::parse)
    }
    /// `goalId`.
    pub fn goal_id(&self) -> Option<&str> {
        self.0.get("goalId").and_then(Value::as_str)
    }
    /// `status`.
    pub fn status(&self) -> Option<&str> {
        self.0.get("status").and_then(Value::as_str)
    }
    /// `files`, when the entry records any.
    pub fn files(&self) -> Vec<EvidenceFile> {
        self.0
            .get("files")
            .and_then(Value::as_array)
            .map(|a| EvidenceFile::from_values(a))
            .unwrap_or_default()
    }
    /// Any member.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.get(key)
    }
    /// The entry.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }
}

/// `{lastSeq, head}`: the ledger head after a command.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerHead {
    /// `seq` of the last chained record (0: none).
    pub last_seq: u64,
    /// SHA-256 of the last complete record.
    pub head: Option<String>,
}

impl From<&Head> for LedgerHead {
    fn from(h: &Head) -> LedgerHead {
        LedgerHead {
            last_seq: h.last_seq,
            head: h.last_hash.clone(),
        }
    }
}

/// One member of an entry's `files`: a file whose bytes were hashed when it
/// was accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceFile {
    /// Repo-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// Why it is recorded (`evidence`, `report`, `gate`, …).
    pub role: String,
}

impl EvidenceFile {
    /// The members of a `files` array the engine wrote.
    pub(crate) fn from_values(values: &[Value]) -> Vec<EvidenceFile> {
        values
            .iter()
            .filter_map(|v| serde_json::from_value(v.clone()).ok())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_goal_record_reads_its_members_and_keeps_unknown_ones() {
        let Value::Object(m) =
            json!({"id": "G001-a", "title": "A", "status": "in_progress", "foreignKey": [1]})
        else {
            unreachable!()
        };
        let g = GoalRecord::from_map(m);
        assert_eq!(g.id(), "G001-a");
        assert_eq!(g.title(), "A");
        assert_eq!(g.status(), GoalStatus::InProgress);
        assert_eq!(
            serde_json::to_string(&g).unwrap(),
            r#"{"id":"G001-a","title":"A","status":"in_progress","foreignKey":[1]}"#
        );
    }

    #[test]
    fn the_ledger_head_and_a_ledger_record_read_as_printed() {
        let head = Head {
            last_seq: 4,
            last_hash: Some("ab".into()),
            ..Head::default()
        };
        assert_eq!(
            serde_json::to_string(&LedgerHead::from(&head)).unwrap(),
            r#"{"lastSeq":4,"head":"ab"}"#
        );
        let e = LedgerRecord::from_value(json!({
            "seq": 4, "kind": "goal_completed", "goalId": "G001-a",
            "files": [{"path": "a.md", "size": 2, "sha256": "cd", "role": "evidence"}]
        }));
        assert_eq!(e.seq(), Some(4));
        assert_eq!(e.kind(), Some(LedgerKind::GoalCompleted));
        assert_eq!(e.goal_id(), Some("G001-a"));
        assert_eq!(e.files()[0].path, "a.md");
    }
}
