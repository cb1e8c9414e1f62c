//! JSON Schemas of the plan and of ledger entries (`evidence-gate schema
//! plan|ledger-entry`). The plan is kept as an order-preserving JSON object
//! (unknown keys are preserved), so these schemas are written out here and
//! mirror the reading rules of `plan::validate`; every object admits
//! additional properties.

use serde_json::{Value, json};

use super::plan::{CriterionStatus, GoalStatus, Mode, Overlay, UserModel};

fn names(list: Vec<&'static str>) -> Value {
    json!(list)
}

/// `goals.json`.
pub(crate) fn plan() -> Value {
    let criterion = json!({
        "type": "object",
        "required": ["id"],
        "properties": {
            "id": {"type": "string"},
            "scenario": {"type": "string"},
            "userModel": {"enum": names(UserModel::names())},
            "expectedEvidence": {"type": "string"},
            "essential": {"type": "boolean", "description": "absent means essential"},
            "capturedEvidence": {"type": ["string", "null"]},
            "status": {"enum": names(CriterionStatus::names())},
            "capturedAt": {"type": "string"},
            "notes": {"type": "string"},
            "seeded": {"type": "boolean"}
        }
    });
    let goal = json!({
        "type": "object",
        "required": ["id", "title", "objective", "status"],
        "properties": {
            "id": {"type": "string", "description": "unique within the plan"},
            "title": {"type": "string"},
            "objective": {"type": "string"},
            "status": {"enum": names(GoalStatus::names())},
            "steeringStatus": {"enum": names(Overlay::names())},
            "successCriteria": {"type": "array", "items": criterion},
            "attempt": {"type": "integer", "minimum": 0},
            "attemptDir": {"type": "string"},
            "createdAt": {"type": "string"},
            "updatedAt": {"type": "string"},
            "startedAt": {"type": "string"},
            "completedAt": {"type": "string"},
            "failedAt": {"type": "string"},
            "failureReason": {"type": "string"},
            "evidence": {"type": "string"},
            "blockedReason": {"type": "string"},
            "blockerSignature": {"type": "string"},
            "blockerOccurrenceCount": {"type": "integer", "minimum": 0},
            "requiredExternalDecision": {"type": "string"},
            "nonRetriable": {"type": "boolean"},
            "supersededBy": {"type": "array", "items": {"type": "string"}},
            "supersedes": {"type": "array", "items": {"type": "string"}},
            "reviewBlockedBy": {"type": "array", "items": {"type": "string"}},
            "resolves": {"type": "array", "items": {"type": "string"}},
            "tokenBudget": {"type": "integer", "minimum": 1},
            "unblockedAt": {"type": "string"},
            "userDecision": {"type": "string"},
            "waiver": {"type": "object", "properties": {"userDecision": {"type": "string"}, "at": {"type": "string"}}}
        }
    });
    let batch = json!({
        "type": "object",
        "required": ["batchId", "memberIds", "finalGoalId"],
        "properties": {
            "batchId": {"type": "string"},
            "memberIds": {"type": "array", "items": {"type": "string"}, "description": "existing goal ids"},
            "finalGoalId": {"type": "string", "description": "an existing goal id"},
            "closedAt": {"type": "string"},
            "closedByGoalId": {"type": "string"}
        }
    });
    let completion = json!({
        "type": "object",
        "properties": {
            "status": {"const": "complete"},
            "completedAt": {"type": "string"},
            "evidence": {"type": "string"},
            "codexGoal": {},
            "revision": {"type": "integer"},
            "ledgerSeq": {"type": "integer"},
            "qualityGateSha256": {"type": ["string", "null"]}
        }
    });
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "goal-engine plan (goals.json)",
        "type": "object",
        "required": ["version", "goals"],
        "properties": {
            "version": {"const": 1},
            "evidenceLayoutVersion": {"type": "integer"},
            "createdAt": {"type": "string"},
            "updatedAt": {"type": "string"},
            "briefPath": {"type": "string"},
            "goalsPath": {"type": "string"},
            "ledgerPath": {"type": "string"},
            "codexGoalMode": {"enum": names(Mode::names()), "description": "absent reads as per_story"},
            "codexObjective": {"type": "string"},
            "codexObjectiveAliases": {"type": "array", "items": {"type": "string"}},
            "activeGoalId": {"type": "string"},
            "goals": {"type": "array", "items": goal},
            "validationBatches": {"type": "array", "items": batch},
            "revision": {"type": "integer", "minimum": 0},
            "profile": {"type": "string"},
            "sessionId": {"type": ["string", "null"]},
            "gateRules": {"type": "string"},
            "lastMutation": {
                "type": "object",
                "required": ["revision", "fromSeq", "entries"],
                "properties": {
                    "revision": {"type": "integer", "minimum": 0},
                    "fromSeq": {"type": "integer", "minimum": 0},
                    "entries": {"type": "array", "items": {"type": "object"}},
                    "ledgerHead": {
                        "type": "object",
                        "description": "seq and record SHA-256 of the last ledger record this mutation appended (threat-model.md I7)",
                        "required": ["seq", "sha256"],
                        "properties": {
                            "seq": {"type": "integer", "minimum": 1},
                            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"}
                        }
                    }
                }
            },
            "agy_goal_adapter": {"type": "string"},
            "native_goal_parity": {"type": "boolean"},
            "aggregateCompletion": completion,
            "aggregate_completion": completion
        }
    })
}

/// One `ledger.jsonl` record written by the engine.
pub(crate) fn ledger_entry() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "goal-engine ledger entry (one line of ledger.jsonl)",
        "type": "object",
        "required": ["at", "kind", "revision", "seq", "prev"],
        "properties": {
            "at": {"type": "string", "description": "RFC 3339 UTC with milliseconds"},
            "kind": {"type": "string"},
            "goalId": {"type": "string"},
            "criterionId": {"type": "string"},
            "status": {"type": "string"},
            "criterionStatus": {"type": "string"},
            "message": {"type": "string"},
            "evidence": {"type": "string"},
            "codexGoal": {},
            "qualityGate": {},
            "revision": {"type": "integer", "minimum": 0},
            "files": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["path", "size", "sha256"],
                    "properties": {
                        "path": {"type": "string"},
                        "size": {"type": "integer"},
                        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                        "role": {"enum": ["payload", "deliverable", "artifact", "gate", "gate-artifact", "report"]}
                    }
                }
            },
            "evidencePayloads": {"type": "array", "items": {"type": "object"}},
            "warnings": {"type": "array", "items": {"type": "string"}},
            "recovered": {"const": true},
            "repair": {"type": "object"},
            "planSha256": {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "SHA-256 of the plan body (goals.json without lastMutation, serialised as written) this entry was written under (threat-model.md I7); absent on entries written before the binding"
            },
            "summarySha256": {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "SHA-256 of the first line of the Stop hook's view (.goals.summary) written with the plan body this entry was appended under (docs/state-formats.md#stop-view); absent on entries written before the view or under a plan without one"
            },
            "rationale": {"type": "string"},
            "tamper": {"type": "object", "description": "tamper_acknowledged: the recorded and actual plan digests and the named and found ledger heads"},
            "seq": {"type": "integer", "minimum": 1},
            "prev": {"type": "string", "pattern": "^[0-9a-f]{64}$"}
        }
    })
}
