//! The typed pieces of the subcommand outcomes: stored records (a goal, a
//! criterion, a ledger entry) kept as the JSON objects they are on disk but
//! read through named accessors, and the small values every mutation
//! reports (the ledger head, recorded files, warnings).
//!
//! Each type serialises to the shape the command line prints; the front end
//! decides which of them a reply carries and in which order.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::goals::journal::{Head, LedgerKind};
use crate::goals::plan::{Criterion, CriterionStatus, Goal, GoalStatus};

/// A goal object as stored in the plan. It keeps every member, including
/// the ones other tools wrote, so it stays a JSON object; read it through
/// [`GoalRecord::id`], [`GoalRecord::status`] or [`GoalRecord::as_goal`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct GoalRecord(Map<String, Value>);

impl GoalRecord {
    /// Copies the stored object of `goal`.
    pub fn of(goal: Goal<'_>) -> GoalRecord {
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

/// A warning of a command reply (`{code, message}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Warning {
    /// The warning code.
    pub code: String,
    /// The sentence.
    pub message: String,
}

impl Warning {
    /// A warning.
    pub fn new(code: &str, message: String) -> Warning {
        Warning {
            code: code.to_owned(),
            message,
        }
    }
}
