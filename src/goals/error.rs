//! The goal engine's error type: every `ULW_LOOP_*` code with typed details
//! (docs/engine.md#ge-4). Both profiles emit the same codes; only the
//! message words come from the profile.

use std::fmt;

use serde_json::{Value, json};

use crate::rules::profiles::Profile;

/// One goal-engine failure: what happened (typed) and the message shown.
#[derive(Debug, Clone)]
pub struct GoalError {
    /// The condition and its details (boxed: errors travel through many `Result`s).
    pub kind: Box<ErrorKind>,
    /// One or more sentences for the agent.
    pub message: String,
}

/// Every condition the engine reports, with its details.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)]
pub enum ErrorKind {
    SubcommandUnknown {
        command: String,
    },
    SessionIdRequired {
        flag: String,
    },
    SessionIdInvalid {
        flag: String,
        value: String,
    },
    ArgumentMissing {
        flag: Option<String>,
    },
    ArgumentConflict {
        flags: Vec<String>,
    },
    BriefRequired,
    BriefItemTooLong {
        line: usize,
        length: usize,
        max: usize,
    },
    BriefTooManyGoals {
        count: usize,
        max: u32,
    },
    CodexGoalModeInvalid {
        value: String,
    },
    StatusInvalid {
        status: Option<String>,
    },
    CodexGoalJsonInvalid {
        flag: String,
    },
    JsonInputInvalid {
        flag: String,
        legacy: bool,
    },
    GoalIdRequired {
        flag: String,
    },
    CriterionIdRequired {
        flag: String,
    },
    EvidenceStatusRequired {
        flag: String,
    },
    EvidenceStatusInvalid {
        status: String,
    },
    EvidenceRequired {
        flag: Option<String>,
        legacy: bool,
    },
    PlanMissing {
        goals_path: String,
    },
    PlanInvalid {
        goals_path: String,
        field: Option<(String, Value, Value)>,
    },
    PlanCorrupt {
        goals_path: String,
        pointer: String,
        problem: String,
    },
    PlanExists {
        goals_path: String,
    },
    PlanExistsComplete {
        goals_path: String,
    },
    GoalNotFound {
        goal_id: String,
        legacy: bool,
    },
    CriterionNotFound {
        goal_id: String,
        criterion_id: String,
    },
    CriteriaNotAllPass {
        details: Value,
    },
    CodexSnapshotMismatch {
        details: Value,
    },
    QualityGateInvalid {
        details: Value,
    },
    ValidationBatchInvalid,
    ValidationBatchFinalNotMember {
        batch_id: String,
    },
    ValidationBatchMemberUnknown {
        batch_id: String,
        member_id: String,
    },
    ValidationBatchOverlap {
        batch_id: String,
        member_id: String,
    },
    ValidationBatchOpen {
        details: Value,
    },
    ValidationBatchGateRequired {
        batch_id: String,
    },
    ValidationBatchCriteriaPending {
        batch_id: String,
        pending: Vec<String>,
    },
    ValidationBatchGateMismatch {
        details: Value,
    },
    LockTimeout {
        lock_path: String,
        waited_ms: u64,
        holder: Option<Value>,
    },
    PlanLedgerMismatch {
        plan_revision: u64,
        ledger_revision: u64,
        last_seq: u64,
        remedy: String,
    },
    /// `PLAN_TAMPERED` / `LEDGER_TAMPERED` (docs/threat-model.md#i7): `ledger`
    /// says which side; `binding` holds both digests.
    Tampered {
        ledger: bool,
        goals_path: String,
        ledger_path: String,
        reason: String,
        binding: Value,
        remedy: String,
    },
    StateUnsafe {
        path: String,
        finding: String,
    },
    IoError {
        path: String,
        op: String,
        os: String,
    },
    InputNotFound {
        flag: String,
        path: String,
    },
    InputTooLarge {
        flag: String,
        size: u64,
        max: u64,
    },
    TransitionInvalid {
        goal_id: String,
        from: String,
        overlay: Option<String>,
        command: String,
        allowed_from: Vec<String>,
        suggested_command: Option<String>,
        legacy: bool,
    },
    NotFinalStory {
        goal_id: String,
    },
    PlanComplete {
        goals_path: String,
        completed_at: Option<String>,
        command: String,
    },
    CriterionSeeded {
        goal_id: String,
        criterion_id: String,
    },
    EvidenceFileInvalid {
        path: String,
        findings: Value,
    },
    EvidenceRejected {
        path: String,
        findings: Value,
    },
    EvidenceUnverifiable {
        path: String,
        findings: Value,
    },
    EvidenceMismatch {
        path: String,
        field: String,
        expected: Value,
        actual: Value,
    },
    RulesInvalid {
        file: String,
        pointer: String,
        problem: String,
    },
    /// A parse-level steering problem (docs/differences.md#r-3 `ULW_LOOP_STEERING_*`).
    Steering {
        code: SteeringCode,
        details: Value,
    },
    /// The `error` member of a rejected steering proposal (docs/engine.md#ge-5).
    SteeringRejected {
        details: Value,
    },
    /// An idempotency key or prompt signature reused for a different proposal (docs/engine.md#ge-5).
    SteeringKeyConflict {
        details: Value,
    },
    /// A proposal that asks to weaken completion, in a profile that refuses
    /// it (`steering/refuseWeakening`).
    SteeringWeakensCompletion {
        details: Value,
    },
    /// A workflow start denied by the overlap rules (docs/engine.md#ge-9).
    WorkflowOverlapDenied {
        details: Value,
    },
    /// A mutating command run by a team worker (docs/engine.md#ge-10).
    TeamWorkerForbidden {
        command: String,
        marker: String,
    },
    /// A mutation refused by the profile's session authority
    /// (`compat/sessionAuthority`).
    SessionAuthority {
        env: String,
        pointer: String,
        problem: String,
    },
    Unexpected,
}

/// The parse-level steering codes (docs/differences.md#r-3), raised before any state is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteeringCode {
    /// `ULW_LOOP_STEERING_KIND_REQUIRED`.
    KindRequired,
    /// `ULW_LOOP_STEERING_KIND_INVALID`.
    KindInvalid,
    /// `ULW_LOOP_STEERING_SOURCE_INVALID`.
    SourceInvalid,
    /// `ULW_LOOP_STEERING_FIELD_REQUIRED`.
    FieldRequired,
    /// `ULW_LOOP_STEERING_FIELD_EMPTY`.
    FieldEmpty,
    /// `ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED`.
    JsonArrayRequired,
    /// `ULW_LOOP_STEERING_STRING_ARRAY_REQUIRED`.
    StringArrayRequired,
    /// `ULW_LOOP_STEERING_CHILD_INVALID`.
    ChildInvalid,
    /// `ULW_LOOP_STEERING_USER_MODEL_INVALID`.
    UserModelInvalid,
    /// `ULW_LOOP_STEERING_UPDATE_REQUIRED`.
    UpdateRequired,
    /// `ULW_LOOP_STEERING_BATCH_CONFLICT`.
    BatchConflict,
    /// `ULW_LOOP_STEERING_BATCH_ARRAY_REQUIRED`.
    BatchArrayRequired,
    /// `ULW_LOOP_STEERING_BATCH_ITEM_INVALID`.
    BatchItemInvalid,
}

impl SteeringCode {
    /// Every code, in catalogue order.
    pub const ALL: &'static [SteeringCode] = &[
        SteeringCode::KindRequired,
        SteeringCode::KindInvalid,
        SteeringCode::SourceInvalid,
        SteeringCode::FieldRequired,
        SteeringCode::FieldEmpty,
        SteeringCode::JsonArrayRequired,
        SteeringCode::StringArrayRequired,
        SteeringCode::ChildInvalid,
        SteeringCode::UserModelInvalid,
        SteeringCode::UpdateRequired,
        SteeringCode::BatchConflict,
        SteeringCode::BatchArrayRequired,
        SteeringCode::BatchItemInvalid,
    ];

    /// The stable code.
    pub fn code(self) -> &'static str {
        match self {
            SteeringCode::KindRequired => "ULW_LOOP_STEERING_KIND_REQUIRED",
            SteeringCode::KindInvalid => "ULW_LOOP_STEERING_KIND_INVALID",
            SteeringCode::SourceInvalid => "ULW_LOOP_STEERING_SOURCE_INVALID",
            SteeringCode::FieldRequired => "ULW_LOOP_STEERING_FIELD_REQUIRED",
            SteeringCode::FieldEmpty => "ULW_LOOP_STEERING_FIELD_EMPTY",
            SteeringCode::JsonArrayRequired => "ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED",
            SteeringCode::StringArrayRequired => "ULW_LOOP_STEERING_STRING_ARRAY_REQUIRED",
            SteeringCode::ChildInvalid => "ULW_LOOP_STEERING_CHILD_INVALID",
            SteeringCode::UserModelInvalid => "ULW_LOOP_STEERING_USER_MODEL_INVALID",
            SteeringCode::UpdateRequired => "ULW_LOOP_STEERING_UPDATE_REQUIRED",
            SteeringCode::BatchConflict => "ULW_LOOP_STEERING_BATCH_CONFLICT",
            SteeringCode::BatchArrayRequired => "ULW_LOOP_STEERING_BATCH_ARRAY_REQUIRED",
            SteeringCode::BatchItemInvalid => "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
        }
    }
}

impl GoalError {
    /// An error with an explicit message.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> GoalError {
        GoalError {
            kind: Box::new(kind),
            message: message.into(),
        }
    }

    /// The stable upper-case code.
    pub fn code(&self) -> &'static str {
        use ErrorKind::*;
        match &*self.kind {
            SubcommandUnknown { .. } => "ULW_LOOP_SUBCOMMAND_UNKNOWN",
            SessionIdRequired { .. } => "ULW_LOOP_SESSION_ID_REQUIRED",
            SessionIdInvalid { .. } => "ULW_LOOP_SESSION_ID_INVALID",
            ArgumentMissing { .. } => "ULW_LOOP_ARGUMENT_MISSING",
            ArgumentConflict { .. } => "ULW_LOOP_ARGUMENT_CONFLICT",
            BriefRequired => "ULW_LOOP_BRIEF_REQUIRED",
            BriefItemTooLong { .. } => "ULW_LOOP_BRIEF_ITEM_TOO_LONG",
            BriefTooManyGoals { .. } => "ULW_LOOP_BRIEF_TOO_MANY_GOALS",
            CodexGoalModeInvalid { .. } => "ULW_LOOP_CODEX_GOAL_MODE_INVALID",
            StatusInvalid { .. } => "ULW_LOOP_STATUS_INVALID",
            CodexGoalJsonInvalid { .. } => "ULW_LOOP_CODEX_GOAL_JSON_INVALID",
            JsonInputInvalid { .. } => "ULW_LOOP_JSON_INPUT_INVALID",
            GoalIdRequired { .. } => "ULW_LOOP_GOAL_ID_REQUIRED",
            CriterionIdRequired { .. } => "ULW_LOOP_CRITERION_ID_REQUIRED",
            EvidenceStatusRequired { .. } => "ULW_LOOP_EVIDENCE_STATUS_REQUIRED",
            EvidenceStatusInvalid { .. } => "ULW_LOOP_EVIDENCE_STATUS_INVALID",
            EvidenceRequired { .. } => "ULW_LOOP_EVIDENCE_REQUIRED",
            PlanMissing { .. } => "ULW_LOOP_PLAN_MISSING",
            PlanInvalid { .. } => "ULW_LOOP_PLAN_INVALID",
            PlanCorrupt { .. } => "ULW_LOOP_PLAN_CORRUPT",
            PlanExists { .. } => "ULW_LOOP_PLAN_EXISTS",
            PlanExistsComplete { .. } => "ULW_LOOP_PLAN_EXISTS_COMPLETE",
            GoalNotFound { .. } => "ULW_LOOP_GOAL_NOT_FOUND",
            CriterionNotFound { .. } => "ULW_LOOP_CRITERION_NOT_FOUND",
            CriteriaNotAllPass { .. } => "ULW_LOOP_CRITERIA_NOT_ALL_PASS",
            CodexSnapshotMismatch { .. } => "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
            QualityGateInvalid { .. } => "ULW_LOOP_QUALITY_GATE_INVALID",
            ValidationBatchInvalid => "ULW_LOOP_VALIDATION_BATCH_INVALID",
            ValidationBatchFinalNotMember { .. } => "ULW_LOOP_VALIDATION_BATCH_FINAL_NOT_MEMBER",
            ValidationBatchMemberUnknown { .. } => "ULW_LOOP_VALIDATION_BATCH_MEMBER_UNKNOWN",
            ValidationBatchOverlap { .. } => "ULW_LOOP_VALIDATION_BATCH_OVERLAP",
            ValidationBatchOpen { .. } => "ULW_LOOP_VALIDATION_BATCH_OPEN",
            ValidationBatchGateRequired { .. } => "ULW_LOOP_VALIDATION_BATCH_GATE_REQUIRED",
            ValidationBatchCriteriaPending { .. } => "ULW_LOOP_VALIDATION_BATCH_CRITERIA_PENDING",
            ValidationBatchGateMismatch { .. } => "ULW_LOOP_VALIDATION_BATCH_GATE_MISMATCH",
            LockTimeout { .. } => "ULW_LOOP_LOCK_TIMEOUT",
            PlanLedgerMismatch { .. } => "ULW_LOOP_PLAN_LEDGER_MISMATCH",
            Tampered { ledger: false, .. } => "ULW_LOOP_PLAN_TAMPERED",
            Tampered { ledger: true, .. } => "ULW_LOOP_LEDGER_TAMPERED",
            StateUnsafe { .. } => "ULW_LOOP_STATE_UNSAFE",
            IoError { .. } => "ULW_LOOP_IO_ERROR",
            InputNotFound { .. } => "ULW_LOOP_INPUT_NOT_FOUND",
            InputTooLarge { .. } => "ULW_LOOP_INPUT_TOO_LARGE",
            TransitionInvalid { .. } => "ULW_LOOP_TRANSITION_INVALID",
            NotFinalStory { .. } => "ULW_LOOP_NOT_FINAL_STORY",
            PlanComplete { .. } => "ULW_LOOP_PLAN_COMPLETE",
            CriterionSeeded { .. } => "ULW_LOOP_CRITERION_SEEDED",
            EvidenceFileInvalid { .. } => "ULW_LOOP_EVIDENCE_FILE_INVALID",
            EvidenceRejected { .. } => "ULW_LOOP_EVIDENCE_REJECTED",
            EvidenceUnverifiable { .. } => "ULW_LOOP_EVIDENCE_UNVERIFIABLE",
            EvidenceMismatch { .. } => "ULW_LOOP_EVIDENCE_MISMATCH",
            RulesInvalid { .. } => "ULW_LOOP_RULES_INVALID",
            Steering { code, .. } => code.code(),
            SteeringRejected { .. } => "ULW_LOOP_STEERING_REJECTED",
            SteeringKeyConflict { .. } => "ULW_LOOP_STEERING_KEY_CONFLICT",
            SteeringWeakensCompletion { .. } => "ULW_LOOP_STEERING_WEAKENS_COMPLETION",
            WorkflowOverlapDenied { .. } => "ULW_LOOP_WORKFLOW_OVERLAP_DENIED",
            TeamWorkerForbidden { .. } => "ULW_LOOP_TEAM_WORKER_FORBIDDEN",
            SessionAuthority { .. } => "ULW_LOOP_SESSION_AUTHORITY",
            Unexpected => "ULW_LOOP_UNEXPECTED",
        }
    }

    /// The lower-case code the anchor emitted for the same condition on this path.
    pub fn legacy_code(&self) -> Option<&'static str> {
        use ErrorKind::*;
        match &*self.kind {
            GoalNotFound { legacy: true, .. } => Some("ulw_loop_goal_not_found"),
            EvidenceRequired { legacy: true, .. } => Some("ulw_loop_evidence_required"),
            JsonInputInvalid { legacy: true, .. } => Some("ulw_loop_json_input_invalid"),
            CriteriaNotAllPass { .. } => Some("ulw_loop_criteria_not_all_pass"),
            CodexSnapshotMismatch { .. } => Some("ulw_loop_codex_snapshot_mismatch"),
            TransitionInvalid { legacy: true, .. } => Some("ulw_loop_goal_not_in_progress"),
            NotFinalStory { .. } => Some("ulw_loop_not_final_story"),
            _ => None,
        }
    }

    /// The `details` object, when the condition has one.
    pub fn details(&self) -> Option<Value> {
        use ErrorKind::*;
        Some(match &*self.kind {
            SubcommandUnknown { command } => json!({ "command": command }),
            SessionIdRequired { flag }
            | GoalIdRequired { flag }
            | CriterionIdRequired { flag }
            | EvidenceStatusRequired { flag } => json!({ "flag": flag }),
            SessionIdInvalid { flag, value } => json!({ "flag": flag, "value": value }),
            ArgumentMissing { flag } => match flag {
                Some(f) => json!({ "flag": f }),
                None => return None,
            },
            ArgumentConflict { flags } => json!({ "flags": flags }),
            BriefRequired | ValidationBatchInvalid | Unexpected => return None,
            BriefItemTooLong { line, length, max } => {
                json!({ "line": line, "length": length, "max": max })
            }
            BriefTooManyGoals { count, max } => {
                json!({ "count": count, "max": max })
            }
            CodexGoalModeInvalid { value } => json!({ "value": value }),
            StatusInvalid { status } => json!({ "status": status }),
            EvidenceStatusInvalid { status } => json!({ "status": status }),
            CodexGoalJsonInvalid { flag } | JsonInputInvalid { flag, .. } => {
                json!({ "flag": flag })
            }
            EvidenceRequired { flag, .. } => match flag {
                Some(f) => json!({ "flag": f }),
                None => json!({}),
            },
            PlanMissing { goals_path }
            | PlanExists { goals_path }
            | PlanExistsComplete { goals_path } => json!({ "goalsPath": goals_path }),
            PlanInvalid { goals_path, field } => match field {
                Some((f, expected, actual)) => json!({
                    "goalsPath": goals_path, "field": f, "expected": expected, "actual": actual
                }),
                None => json!({ "goalsPath": goals_path }),
            },
            PlanCorrupt {
                goals_path,
                pointer,
                problem,
            } => json!({ "goalsPath": goals_path, "pointer": pointer, "problem": problem }),
            GoalNotFound { goal_id, .. } | NotFinalStory { goal_id } => {
                json!({ "goalId": goal_id })
            }
            CriterionNotFound {
                goal_id,
                criterion_id,
            }
            | CriterionSeeded {
                goal_id,
                criterion_id,
            } => json!({ "goalId": goal_id, "criterionId": criterion_id }),
            CriteriaNotAllPass { details }
            | CodexSnapshotMismatch { details }
            | QualityGateInvalid { details }
            | ValidationBatchOpen { details }
            | ValidationBatchGateMismatch { details }
            | Steering { details, .. }
            | SteeringRejected { details }
            | SteeringKeyConflict { details }
            | SteeringWeakensCompletion { details }
            | WorkflowOverlapDenied { details } => details.clone(),
            TeamWorkerForbidden { command, marker } => {
                json!({ "command": command, "marker": marker })
            }
            SessionAuthority {
                env,
                pointer,
                problem,
            } => json!({ "env": env, "pointer": pointer, "problem": problem }),
            ValidationBatchFinalNotMember { batch_id }
            | ValidationBatchGateRequired { batch_id } => json!({ "batchId": batch_id }),
            ValidationBatchMemberUnknown {
                batch_id,
                member_id,
            }
            | ValidationBatchOverlap {
                batch_id,
                member_id,
            } => json!({ "batchId": batch_id, "memberId": member_id }),
            ValidationBatchCriteriaPending { batch_id, pending } => {
                json!({ "batchId": batch_id, "pending": pending })
            }
            LockTimeout {
                lock_path,
                waited_ms,
                holder,
            } => json!({
                "lockPath": lock_path, "waitedMs": waited_ms, "holder": holder, "retryable": true
            }),
            PlanLedgerMismatch {
                plan_revision,
                ledger_revision,
                last_seq,
                remedy,
            } => json!({
                "planRevision": plan_revision, "ledgerRevision": ledger_revision,
                "lastSeq": last_seq, "remedy": remedy
            }),
            Tampered {
                ledger,
                goals_path,
                ledger_path,
                reason,
                binding,
                remedy,
            } => json!({
                "finding": if *ledger { "LEDGER_TAMPERED" } else { "PLAN_TAMPERED" },
                "goalsPath": goals_path, "ledgerPath": ledger_path, "reason": reason,
                "binding": binding, "remedy": remedy
            }),
            StateUnsafe { path, finding } => json!({ "path": path, "finding": finding }),
            IoError { path, op, os } => json!({ "path": path, "op": op, "os": os }),
            InputNotFound { flag, path } => json!({ "flag": flag, "path": path }),
            InputTooLarge { flag, size, max } => json!({ "flag": flag, "size": size, "max": max }),
            TransitionInvalid {
                goal_id,
                from,
                overlay,
                command,
                allowed_from,
                suggested_command,
                ..
            } => {
                let mut d = json!({
                    "goalId": goal_id, "from": from, "overlay": overlay,
                    "command": command, "allowedFrom": allowed_from
                });
                if let Some(s) = suggested_command {
                    d["suggestedCommand"] = json!(s);
                }
                d
            }
            PlanComplete {
                goals_path,
                completed_at,
                command,
            } => {
                json!({ "goalsPath": goals_path, "completedAt": completed_at, "command": command })
            }
            EvidenceFileInvalid { path, findings }
            | EvidenceRejected { path, findings }
            | EvidenceUnverifiable { path, findings } => {
                json!({ "path": path, "findings": findings })
            }
            EvidenceMismatch {
                path,
                field,
                expected,
                actual,
            } => json!({ "path": path, "field": field, "expected": expected, "actual": actual }),
            RulesInvalid {
                file,
                pointer,
                problem,
            } => json!({ "file": file, "pointer": pointer, "problem": problem }),
        })
    }

    /// `ULW_LOOP_IO_ERROR` for an operation on a state or input file.
    pub fn io(path: &str, op: &str, e: &std::io::Error) -> GoalError {
        GoalError::new(
            ErrorKind::IoError {
                path: path.to_owned(),
                op: op.to_owned(),
                os: e.to_string(),
            },
            format!("Cannot {op} {path}: {e}."),
        )
    }

    /// `ULW_LOOP_STATE_UNSAFE` for a state path that is a symlink or of the wrong type.
    pub fn unsafe_state(path: &str, finding: &str, what: &str) -> GoalError {
        GoalError::new(
            ErrorKind::StateUnsafe {
                path: path.to_owned(),
                finding: finding.to_owned(),
            },
            format!("Refusing to use {path}: {what}."),
        )
    }

    /// `ULW_LOOP_STATE_UNSAFE` for a mutation-lock path that is not a regular
    /// file (`what` from `LockError::Unsafe`): refused at once, never waited on.
    pub fn unsafe_lock(path: &str, what: &str) -> GoalError {
        GoalError::unsafe_state(
            path,
            if what == "a symlink" {
                "PATH_SYMLINK"
            } else {
                "NOT_REGULAR_FILE"
            },
            &format!(
                "it is {what}, and only a regular file is ever locked. Remove it (`rm -r -- {path}`) and retry"
            ),
        )
    }

    /// `ULW_LOOP_ARGUMENT_MISSING` for a command-line flag.
    pub fn missing_flag(flag: &str) -> GoalError {
        GoalError::new(
            ErrorKind::ArgumentMissing {
                flag: Some(flag.to_owned()),
            },
            format!("Missing {flag}."),
        )
    }

    /// `ULW_LOOP_ARGUMENT_CONFLICT`.
    pub fn conflict(flags: Vec<String>, why: &str) -> GoalError {
        let msg = format!("Conflicting arguments {}: {why}.", flags.join(", "));
        GoalError::new(ErrorKind::ArgumentConflict { flags }, msg)
    }
}

impl fmt::Display for GoalError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code(), self.message)
    }
}

impl std::error::Error for GoalError {}

impl GoalError {
    /// `ULW_LOOP_GOAL_NOT_FOUND` in `profile`'s words; `legacy` keeps the
    /// Node tool's message and `legacyCode`.
    pub fn goal_not_found(profile: &Profile, id: &str, legacy: bool) -> GoalError {
        let message = if legacy {
            format!("Unknown {} id: {id}.", profile.display_name)
        } else {
            format!("{} goal not found: {id}.", profile.handoff_title)
        };
        GoalError::new(
            ErrorKind::GoalNotFound {
                goal_id: id.to_owned(),
                legacy,
            },
            message,
        )
    }

    /// A parse-level steering error.
    pub fn steering(code: SteeringCode, details: Value, message: impl Into<String>) -> GoalError {
        GoalError::new(ErrorKind::Steering { code, details }, message)
    }
}

impl From<crate::rules::RulesError> for GoalError {
    fn from(e: crate::rules::RulesError) -> GoalError {
        let message = format!("Invalid rules: {e}");
        GoalError::new(
            ErrorKind::RulesInvalid {
                file: e.file,
                pointer: e.pointer,
                problem: e.problem,
            },
            message,
        )
    }
}

/// Every code the engine can emit, for documentation and tests.
pub const ALL_CODES: &[&str] = &[
    "ULW_LOOP_SUBCOMMAND_UNKNOWN",
    "ULW_LOOP_SESSION_ID_REQUIRED",
    "ULW_LOOP_SESSION_ID_INVALID",
    "ULW_LOOP_ARGUMENT_MISSING",
    "ULW_LOOP_ARGUMENT_CONFLICT",
    "ULW_LOOP_BRIEF_REQUIRED",
    "ULW_LOOP_BRIEF_ITEM_TOO_LONG",
    "ULW_LOOP_BRIEF_TOO_MANY_GOALS",
    "ULW_LOOP_CODEX_GOAL_MODE_INVALID",
    "ULW_LOOP_STATUS_INVALID",
    "ULW_LOOP_CODEX_GOAL_JSON_INVALID",
    "ULW_LOOP_JSON_INPUT_INVALID",
    "ULW_LOOP_GOAL_ID_REQUIRED",
    "ULW_LOOP_CRITERION_ID_REQUIRED",
    "ULW_LOOP_EVIDENCE_STATUS_REQUIRED",
    "ULW_LOOP_EVIDENCE_STATUS_INVALID",
    "ULW_LOOP_EVIDENCE_REQUIRED",
    "ULW_LOOP_PLAN_MISSING",
    "ULW_LOOP_PLAN_INVALID",
    "ULW_LOOP_PLAN_CORRUPT",
    "ULW_LOOP_PLAN_EXISTS",
    "ULW_LOOP_PLAN_EXISTS_COMPLETE",
    "ULW_LOOP_GOAL_NOT_FOUND",
    "ULW_LOOP_CRITERION_NOT_FOUND",
    "ULW_LOOP_CRITERIA_NOT_ALL_PASS",
    "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
    "ULW_LOOP_QUALITY_GATE_INVALID",
    "ULW_LOOP_VALIDATION_BATCH_INVALID",
    "ULW_LOOP_VALIDATION_BATCH_FINAL_NOT_MEMBER",
    "ULW_LOOP_VALIDATION_BATCH_MEMBER_UNKNOWN",
    "ULW_LOOP_VALIDATION_BATCH_OVERLAP",
    "ULW_LOOP_VALIDATION_BATCH_OPEN",
    "ULW_LOOP_VALIDATION_BATCH_GATE_REQUIRED",
    "ULW_LOOP_VALIDATION_BATCH_CRITERIA_PENDING",
    "ULW_LOOP_VALIDATION_BATCH_GATE_MISMATCH",
    "ULW_LOOP_LOCK_TIMEOUT",
    "ULW_LOOP_PLAN_LEDGER_MISMATCH",
    "ULW_LOOP_PLAN_TAMPERED",
    "ULW_LOOP_LEDGER_TAMPERED",
    "ULW_LOOP_STATE_UNSAFE",
    "ULW_LOOP_IO_ERROR",
    "ULW_LOOP_INPUT_NOT_FOUND",
    "ULW_LOOP_INPUT_TOO_LARGE",
    "ULW_LOOP_TRANSITION_INVALID",
    "ULW_LOOP_NOT_FINAL_STORY",
    "ULW_LOOP_PLAN_COMPLETE",
    "ULW_LOOP_CRITERION_SEEDED",
    "ULW_LOOP_EVIDENCE_FILE_INVALID",
    "ULW_LOOP_EVIDENCE_REJECTED",
    "ULW_LOOP_EVIDENCE_UNVERIFIABLE",
    "ULW_LOOP_EVIDENCE_MISMATCH",
    "ULW_LOOP_RULES_INVALID",
    "ULW_LOOP_STEERING_KIND_REQUIRED",
    "ULW_LOOP_STEERING_KIND_INVALID",
    "ULW_LOOP_STEERING_SOURCE_INVALID",
    "ULW_LOOP_STEERING_FIELD_REQUIRED",
    "ULW_LOOP_STEERING_FIELD_EMPTY",
    "ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED",
    "ULW_LOOP_STEERING_STRING_ARRAY_REQUIRED",
    "ULW_LOOP_STEERING_CHILD_INVALID",
    "ULW_LOOP_STEERING_USER_MODEL_INVALID",
    "ULW_LOOP_STEERING_UPDATE_REQUIRED",
    "ULW_LOOP_STEERING_BATCH_CONFLICT",
    "ULW_LOOP_STEERING_BATCH_ARRAY_REQUIRED",
    "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
    "ULW_LOOP_STEERING_REJECTED",
    "ULW_LOOP_STEERING_KEY_CONFLICT",
    "ULW_LOOP_STEERING_WEAKENS_COMPLETION",
    "ULW_LOOP_WORKFLOW_OVERLAP_DENIED",
    "ULW_LOOP_TEAM_WORKER_FORBIDDEN",
    "ULW_LOOP_SESSION_AUTHORITY",
    "ULW_LOOP_UNEXPECTED",
];
