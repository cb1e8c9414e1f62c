//! Plan context handed to the validator (docs/gates.md#qg-5): plain data the
//! goal engine builds from its plan, so this module never needs the plan
//! model.

use serde::Serialize;
use serde_json::{Value, json};

use crate::sandbox::RelPath;

/// Which part of the plan a gate attests (docs/gates.md#qg-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The target goal is the run's final candidate.
    Run,
    /// The target goal closes this validation batch (and is not run-final).
    Batch {
        /// The batch id.
        id: String,
    },
    /// Neither: the gate covers the target goal alone.
    Goal,
}

impl Scope {
    /// `run`, `batch` or `goal`.
    pub fn kind(&self) -> &'static str {
        match self {
            Scope::Run => "run",
            Scope::Batch { .. } => "batch",
            Scope::Goal => "goal",
        }
    }

    /// The ledger's `gateScope` value (docs/engine.md#ge-3): `run`, `batch:<id>` or `goal`.
    pub fn ledger_tag(&self) -> String {
        match self {
            Scope::Batch { id } => format!("batch:{id}"),
            other => other.kind().to_owned(),
        }
    }

    /// `run`, `batch <id>` or `goal`, for messages.
    pub fn describe(&self) -> String {
        match self {
            Scope::Batch { id } => format!("batch {id}"),
            other => other.kind().to_owned(),
        }
    }
}

/// One criterion of the scope with its plan status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScopeCriterion {
    /// The goal the criterion belongs to.
    pub goal_id: String,
    /// The criterion id within that goal (`C001`).
    pub criterion_id: String,
    /// The plan status (`pass`, `pending`, …); only `pass` counts as passing.
    pub status: String,
}

impl ScopeCriterion {
    /// A criterion.
    pub fn new(
        goal_id: impl Into<String>,
        criterion_id: impl Into<String>,
        status: impl Into<String>,
    ) -> ScopeCriterion {
        ScopeCriterion {
            goal_id: goal_id.into(),
            criterion_id: criterion_id.into(),
            status: status.into(),
        }
    }

    /// `<goalId>:<criterionId>`.
    pub fn qualified(&self) -> String {
        format!("{}:{}", self.goal_id, self.criterion_id)
    }

    /// True when the plan status is `pass`.
    pub fn is_pass(&self) -> bool {
        self.status == "pass"
    }
}

/// `(totalCriteria, passCount)` recomputed from a criteria list.
pub(crate) fn counts(criteria: &[ScopeCriterion]) -> (u64, u64) {
    let total = criteria.len() as u64;
    let pass = criteria.iter().filter(|c| c.is_pass()).count() as u64;
    (total, pass)
}

/// The batch a run-final goal also closes: its gate may state the batch's
/// counts instead of the run's (docs/gates.md#qg-5, docs/engine.md#ge-6 item 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchAlternative {
    /// The batch id.
    pub batch_id: String,
    /// Every criterion of the batch's existing, counted members.
    pub criteria: Vec<ScopeCriterion>,
}

/// Everything the plan-context checks need (docs/gates.md#qg-5), built by the goal engine.
///
/// * `scope`: [`Scope::Run`] when the target is the final candidate (as
///   docs/engine.md#ge-3 step 5 evaluates it), else [`Scope::Batch`] when it closes a
///   batch, else [`Scope::Goal`].
/// * `criteria`: the scope criteria — run: every criterion of every counted
///   goal; batch: every criterion of the batch's existing, counted members;
///   goal: the target's criteria. The caller leaves out superseded goals, so
///   references to their criteria are unknown.
/// * `batch_alternative`: only in run scope, when the target also closes a
///   batch; the gate may then state the batch counts (and cover the batch's
///   criteria) or the run counts.
/// * `checkpoint`: true when called from `checkpoint`; in batch scope the
///   count comparison is then left to the batch cross-check (docs/differences.md#r-5), which
///   keeps its established error codes.
/// * `plan_gate_rules`: the plan's `gateRules`; when it differs from the
///   rule file used, the warning `GATE_RULES_NOT_PLAN` is added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateContext {
    /// Run, batch or goal.
    pub scope: Scope,
    /// The target goal.
    pub goal_id: String,
    /// Artifacts and reports must lie strictly below this directory: the
    /// target's attempt directory (v2 plans) or the evidence root (v1).
    pub scope_dir: RelPath,
    /// The scope criteria with their plan statuses.
    pub criteria: Vec<ScopeCriterion>,
    /// The batch a run-final target also closes.
    pub batch_alternative: Option<BatchAlternative>,
    /// Called from `checkpoint`.
    pub checkpoint: bool,
    /// The plan's `gateRules`, when the plan has one.
    pub plan_gate_rules: Option<String>,
}

/// How a gate is validated: with plan context, or stand-alone (`gate check`
/// without `--goal-id`), where only the scope directory is known and the
/// plan-context checks are skipped with `GATE_PLAN_CONTEXT_SKIPPED`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GateScope {
    /// No plan: the scope directory is the profile's evidence root.
    Standalone {
        /// The evidence root.
        dir: RelPath,
    },
    /// Plan context.
    Plan(GateContext),
}

impl GateScope {
    /// The directory artifacts must lie strictly below.
    pub fn dir(&self) -> &RelPath {
        match self {
            GateScope::Standalone { dir } => dir,
            GateScope::Plan(c) => &c.scope_dir,
        }
    }

    /// The plan context, when there is one.
    pub fn plan(&self) -> Option<&GateContext> {
        match self {
            GateScope::Standalone { .. } => None,
            GateScope::Plan(c) => Some(c),
        }
    }

    /// `{kind, goalId?, batchId?, dir}` as `gate check --json` prints it;
    /// `kind` is `none` without plan context.
    pub fn summary(&self) -> Value {
        match self {
            GateScope::Standalone { dir } => json!({"kind": "none", "dir": dir.as_str()}),
            GateScope::Plan(c) => {
                let mut v = json!({"kind": c.scope.kind(), "goalId": c.goal_id});
                if let Scope::Batch { id } = &c.scope {
                    v["batchId"] = json!(id);
                }
                v["dir"] = json!(c.scope_dir.as_str());
                v
            }
        }
    }

    /// `none`, `run`, `batch <id>` or `goal`, for the text output.
    pub fn describe(&self) -> String {
        match self {
            GateScope::Standalone { .. } => "none".to_owned(),
            GateScope::Plan(c) => c.scope.describe(),
        }
    }
}
