//! The quality-gate seam of the checkpoint pipeline (goal-engine.md §3.4
//! steps 6–8). The goal engine builds a [`GateContext`] (plain data) and
//! calls [`validate`] once; the gate module (`quality-gate.md`) decides.
//!
//! This build has no gate validator yet, so [`validate`] fails closed with
//! `GATE_VALIDATION_UNAVAILABLE`: a checkpoint that needs a gate cannot pass
//! on an unchecked one.

use serde_json::{Value, json};

use super::Engine;
use super::error::{ErrorKind, GoalError};
use super::input::Loaded;

/// The scope a gate attests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// The whole run (run-final goal).
    Run,
    /// One validation batch.
    Batch(String),
    /// One goal (a gate supplied for a non-final goal).
    Goal(String),
}

impl Scope {
    /// `gateScope` of the ledger entry.
    pub fn wire(&self) -> String {
        match self {
            Scope::Run => "run".into(),
            Scope::Batch(id) => format!("batch:{id}"),
            Scope::Goal(_) => "goal".into(),
        }
    }
}

/// One criterion of the gate's scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeCriterion {
    /// Goal id.
    pub goal_id: String,
    /// Criterion id.
    pub criterion_id: String,
    /// Its status in the plan.
    pub status: String,
}

/// What the goal engine tells the gate about the checkpoint.
#[derive(Debug, Clone)]
pub struct GateContext {
    /// The scope.
    pub scope: Scope,
    /// Directory artifacts must lie strictly below (the goal's attempt
    /// directory for layout-v2 plans, else the profile's evidence root).
    pub scope_dir: String,
    /// The scope's criteria.
    pub criteria: Vec<ScopeCriterion>,
    /// Batch scope at a checkpoint (coverage is cross-checked by the engine).
    pub batch_at_checkpoint: bool,
    /// Run counts `(totalCriteria, passCount)` accepted as an alternative
    /// when the run-final goal also closes a batch.
    pub alternative_counts: Option<(u64, u64)>,
    /// Gate rule file to apply.
    pub gate_rules: String,
}

/// The gate's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GateVerdict {
    /// Every check ran and passed.
    Pass,
    /// A definitive failure.
    Fail,
    /// Some check could not be completed.
    Unverifiable,
}

/// What the gate decided.
#[derive(Debug, Clone)]
pub struct GateOutcome {
    /// The verdict.
    pub verdict: GateVerdict,
    /// `{code, severity, field, message, details?}` findings.
    pub findings: Vec<Value>,
    /// Accepted files `{path, size, sha256, role}` (`report` / `gate-artifact`).
    pub files: Vec<Value>,
    /// The normalised gate.
    pub normalized: Value,
    /// SHA-256 of the normalised gate.
    pub sha256: String,
}

/// The one call the checkpoint pipeline makes to validate a gate.
pub trait GateValidator {
    /// Validates `gate` in the scope described by `ctx`.
    fn validate(&self, engine: &Engine, gate: &Loaded, ctx: &GateContext) -> GateOutcome;
}

/// The validator of this build.
#[derive(Debug, Clone, Copy, Default)]
pub struct Builtin;

impl GateValidator for Builtin {
    fn validate(&self, engine: &Engine, gate: &Loaded, ctx: &GateContext) -> GateOutcome {
        validate(engine, gate, ctx)
    }
}

/// Validates a gate document for a checkpoint.
pub fn validate(_engine: &Engine, _gate: &Loaded, ctx: &GateContext) -> GateOutcome {
    GateOutcome {
        verdict: GateVerdict::Unverifiable,
        findings: vec![json!({
            "code": "GATE_VALIDATION_UNAVAILABLE",
            "severity": "error",
            "field": "qualityGate",
            "message": format!(
                "This build cannot validate `{}` quality gates yet, so no gate can be accepted.",
                ctx.gate_rules
            ),
        })],
        files: Vec::new(),
        normalized: Value::Null,
        sha256: String::new(),
    }
}

/// `ULW_LOOP_QUALITY_GATE_INVALID` for a gate that did not pass.
pub fn error(outcome: &GateOutcome) -> GoalError {
    let first = outcome
        .findings
        .iter()
        .find(|f| f["severity"] == "error")
        .cloned()
        .unwrap_or_else(|| json!({"code": "GATE_UNVERIFIABLE", "field": "qualityGate", "message": "The quality gate could not be verified."}));
    GoalError::new(
        ErrorKind::QualityGateInvalid {
            details: json!({
                "field": first["field"],
                "code": first["code"],
                "findings": outcome.findings,
            }),
        },
        first["message"]
            .as_str()
            .unwrap_or("The quality gate is invalid.")
            .to_owned(),
    )
}

/// `ULW_LOOP_QUALITY_GATE_INVALID` for a required gate that is absent (R§6.1).
pub fn missing() -> GoalError {
    GoalError::new(
        ErrorKind::QualityGateInvalid {
            details: json!({"field": "qualityGate", "code": "GATE_SECTION_MISSING", "findings": []}),
        },
        "Final quality gate requires qualityGate evidence; pass --quality-gate-json with the gate JSON or a path to it.",
    )
}

/// The combined snapshot + gate error (goal-engine.md §3.4 step 6).
pub fn combined(snapshot: &GoalError, gate: &GoalError) -> GoalError {
    let mut details = gate.details().unwrap_or_else(|| json!({}));
    details["hostGoal"] = snapshot.details().unwrap_or(Value::Null);
    GoalError::new(
        ErrorKind::QualityGateInvalid { details },
        format!("{}\n{}", snapshot.message, gate.message),
    )
}
