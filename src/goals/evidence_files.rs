//! `--evidence-file` payloads (docs/engine.md#ge-4): read through the
//! sandbox, parsed as evidence payload v1, checked against the command, run
//! through the verifier, and their files' digests collected for the ledger.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::Engine;
use super::error::{ErrorKind, GoalError};
use super::input::{self, FileRecord};
use super::plan::Plan;
use crate::evidence::payload::{ClaimedVerdict, Payload};
use crate::evidence::{self, Root, VerifyOptions};
use crate::finding::{Finding, Verdict};

/// One parsed payload.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    /// The path as given.
    pub path: String,
    /// The payload file itself.
    pub file: FileRecord,
    /// The payload.
    pub payload: Payload,
}

/// The evidence text of a recording: `evidence` trimmed, else the first
/// evidence file's summary; blank is refused with `EvidenceRequired`
/// (`legacy`: the checkpoint's wording of the code).
pub(crate) fn evidence_or_summary(
    evidence: Option<&str>,
    parsed: &[Parsed],
    legacy: bool,
) -> Result<String, GoalError> {
    evidence
        .map(str::trim)
        .filter(|e| !crate::text::is_blank(e))
        .map(str::to_owned)
        .or_else(|| {
            parsed
                .first()
                .map(|p| p.payload.summary.trim().to_owned())
                .filter(|s| !crate::text::is_blank(s))
        })
        .ok_or_else(|| {
            GoalError::new(
                ErrorKind::EvidenceRequired { flag: None, legacy },
                "Evidence must be a non-empty string.",
            )
        })
}

/// Files and payload records accepted by a command.
#[derive(Debug, Clone, Default)]
pub(crate) struct Accepted {
    /// `files` of the ledger entry: distinct paths sorted by bytes, with roles.
    pub files: Vec<Value>,
    /// `evidencePayloads` of the ledger entry.
    pub payloads: Vec<Value>,
}

fn findings_json(findings: &[Finding]) -> Value {
    serde_json::to_value(findings).expect("findings serialise")
}

/// Step 1: open and parse.
pub(crate) fn load(engine: &Engine, path: &str) -> Result<Parsed, GoalError> {
    let flag = "--evidence-file";
    let unreadable = |detail: String| {
        GoalError::new(
            ErrorKind::EvidenceFileInvalid {
                path: path.to_owned(),
                findings: json!([{"code": "PAYLOAD_UNREADABLE", "severity": "error", "message": detail}]),
            },
            format!("Evidence file {path} cannot be used: {detail}."),
        )
    };
    let (bytes, file) = input::read_repo_file(
        engine,
        flag,
        path,
        engine.profile.limits.max_input_bytes,
        &unreadable,
    )?;
    if bytes.is_empty() {
        return Err(unreadable("the file is empty (FILE_EMPTY)".into()));
    }
    let max = engine.evidence_rules().limits.max_payload_bytes;
    let payload = evidence::payload::parse(&bytes, max).map_err(|f| {
        GoalError::new(
            ErrorKind::EvidenceFileInvalid {
                path: path.to_owned(),
                findings: findings_json(std::slice::from_ref(&*f)),
            },
            format!(
                "Evidence file {path} is not a valid evidence payload: {}",
                f.message
            ),
        )
    })?;
    Ok(Parsed {
        path: path.to_owned(),
        file,
        payload,
    })
}

fn mismatch(path: &str, field: &str, expected: Value, actual: Value) -> GoalError {
    let message =
        format!("Evidence file {path}: {field} is {actual} but the command is about {expected}.");
    GoalError::new(
        ErrorKind::EvidenceMismatch {
            path: path.to_owned(),
            field: field.to_owned(),
            expected,
            actual,
        },
        message,
    )
}

/// Step 2: `goalId` / `criterionIds` consistency with the command.
pub(crate) fn check_scope(
    p: &Parsed,
    goal_id: &str,
    criterion_id: Option<&str>,
) -> Result<(), GoalError> {
    if let Some(g) = &p.payload.goal_id
        && g != goal_id
    {
        return Err(mismatch(&p.path, "goalId", json!(goal_id), json!(g)));
    }
    if let (Some(ids), Some(c)) = (&p.payload.criterion_ids, criterion_id)
        && !ids.iter().any(|i| i == c)
    {
        return Err(mismatch(&p.path, "criterionIds", json!(c), json!(ids)));
    }
    Ok(())
}

/// The payload verdict mapped to a criterion status (`passed→pass`, …).
pub(crate) fn criterion_status(v: ClaimedVerdict) -> &'static str {
    match v {
        ClaimedVerdict::Passed => "pass",
        ClaimedVerdict::Failed => "fail",
        ClaimedVerdict::Blocked => "blocked",
    }
}

/// An explicit status that contradicts a payload verdict.
pub(crate) fn check_status(p: &Parsed, status: &str) -> Result<(), GoalError> {
    let implied = criterion_status(p.payload.verification.verdict);
    if implied != status {
        return Err(mismatch(
            &p.path,
            "verification.verdict",
            json!(status),
            json!(p.payload.verification.verdict.as_str()),
        ));
    }
    Ok(())
}

struct Context<'a> {
    plan: &'a Plan,
    goal: &'a str,
}

impl evidence::PlanContext for Context<'_> {
    fn goal_exists(&self, goal_id: &str) -> bool {
        self.plan.goal(goal_id).is_some()
    }
    fn criterion_exists(&self, goal_id: &str, criterion_id: &str) -> bool {
        self.plan
            .goal(goal_id)
            .is_some_and(|g| g.criterion(criterion_id).is_some())
    }
    fn default_goal(&self) -> Option<&str> {
        Some(self.goal)
    }
}

/// Steps 3–4 for every payload: verify and collect digests. `success` is true
/// when the command claims success (a `fail` report is then rejected).
pub(crate) fn verify_all(
    engine: &Engine,
    plan: &Plan,
    goal_id: &str,
    parsed: &[Parsed],
    success: bool,
) -> Result<Accepted, GoalError> {
    if parsed.is_empty() {
        return Ok(Accepted::default());
    }
    let dir = engine
        .root()
        .try_clone()
        .map_err(|e| GoalError::io(".", "open", &e))?;
    let root = Root::new(dir, engine.evidence_rules())?
        .with_evidence_root(&engine.profile.evidence_root)
        .map_err(|p| {
            GoalError::from(crate::rules::RulesError {
                file: "rules".into(),
                pointer: format!("/profiles/{}/evidenceRoot", engine.profile.name),
                problem: p.describe().into(),
            })
        })?;
    let ctx = Context {
        plan,
        goal: goal_id,
    };
    let mut files: BTreeMap<String, Value> = BTreeMap::new();
    let rank = |role: &str| {
        ["payload", "deliverable", "artifact"]
            .iter()
            .position(|r| *r == role)
    };
    let mut add = |path: &str, size: u64, sha: &str, role: &str| {
        let better = files
            .get(path)
            .and_then(|v| v["role"].as_str())
            .is_none_or(|old| rank(role) < rank(old));
        if better {
            files.insert(
                path.to_owned(),
                json!({"path": path, "size": size, "sha256": sha, "role": role}),
            );
        }
    };
    let mut payloads = Vec::new();
    for p in parsed {
        let report = evidence::verify_payload(
            &root,
            &p.payload,
            &p.path,
            VerifyOptions {
                plan: Some(&ctx),
                deadline: None,
                payload_path: Some(&p.path),
            },
        );
        let findings = findings_json(report.findings());
        match report.verdict() {
            Verdict::Error => {
                return Err(GoalError::new(
                    ErrorKind::EvidenceUnverifiable {
                        path: p.path.clone(),
                        findings,
                    },
                    format!(
                        "Evidence file {} could not be verified: {}",
                        p.path,
                        first_message(report.findings())
                    ),
                ));
            }
            Verdict::Fail if success => {
                return Err(GoalError::new(
                    ErrorKind::EvidenceRejected {
                        path: p.path.clone(),
                        findings,
                    },
                    format!(
                        "Evidence file {} was rejected: {}",
                        p.path,
                        first_message(report.findings())
                    ),
                ));
            }
            _ => {}
        }
        let artifact_paths: Vec<&str> = p
            .payload
            .artifacts
            .iter()
            .map(|a| a.path.as_str())
            .collect();
        let deliverable_paths: Vec<&str> = p
            .payload
            .deliverables
            .iter()
            .filter_map(|d| match d {
                evidence::payload::Deliverable::File(f) => Some(f.path.as_str()),
                evidence::payload::Deliverable::Glob(_) => None,
            })
            .collect();
        add(&p.file.path, p.file.size, &p.file.sha256, "payload");
        for f in report.files() {
            let role = if artifact_paths.contains(&f.path.as_str())
                && !deliverable_paths.contains(&f.path.as_str())
            {
                "artifact"
            } else {
                "deliverable"
            };
            add(&f.path, f.size, &f.sha256, role);
        }
        payloads.push(json!({
            "path": p.file.path,
            "sha256": p.file.sha256,
            "verdict": p.payload.verification.verdict.as_str(),
            "by": p.payload.verification.by,
            "report": report.verdict(),
        }));
    }
    Ok(Accepted {
        files: files.into_values().collect(),
        payloads,
    })
}

fn first_message(findings: &[Finding]) -> String {
    findings
        .iter()
        .find(|f| f.severity == evidence::Severity::Error)
        .map(|f| format!("{} {}", f.code, f.message))
        .unwrap_or_else(|| "nothing was checked".into())
}
