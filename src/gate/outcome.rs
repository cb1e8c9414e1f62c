//! Gate findings, the verdict and the outcome of one validation (docs/gates.md#qg-7).

use serde::Serialize;
use serde_json::{Value, json};

use crate::evidence::{Class, Code, Severity};
use crate::rules::gates::GateFamily;

/// One problem (or note) about a gate document.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateFinding {
    /// The stable code (`GATE_*` or a sandbox code for file checks).
    pub code: Code,
    /// `error`, `warning` or `info`.
    pub severity: Severity,
    /// Dotted path of the field (`manualQa.artifactRefs[2].path`); the whole
    /// document is `qualityGate`.
    pub field: String,
    /// One sentence naming the field.
    pub message: String,
    /// Structured detail for machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
}

impl GateFinding {
    /// A finding with the code's default severity.
    pub fn new(code: Code, field: impl Into<String>, message: impl Into<String>) -> GateFinding {
        let severity = match code.class() {
            Class::Fail | Class::Unverifiable => Severity::Error,
            Class::Warning => Severity::Warning,
            Class::Info => Severity::Info,
        };
        GateFinding {
            code,
            severity,
            field: field.into(),
            message: message.into(),
            details: None,
        }
    }

    /// Attaches structured detail.
    #[must_use]
    pub fn with_details(mut self, details: Value) -> GateFinding {
        self.details = Some(details);
        self
    }

    /// Overrides the severity (`unknownFields: reject`).
    #[must_use]
    pub fn with_severity(mut self, severity: Severity) -> GateFinding {
        self.severity = severity;
        self
    }

    /// An error that says the gate is wrong.
    pub fn is_failure(&self) -> bool {
        self.severity == Severity::Error && self.code.class() != Class::Unverifiable
    }

    /// An error that says a check could not be completed.
    pub fn is_unverifiable(&self) -> bool {
        self.severity == Severity::Error && self.code.class() == Class::Unverifiable
    }
}

/// The outcome of a gate validation (docs/gates.md#qg-7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GateVerdict {
    /// No error finding: every check ran and passed.
    Pass,
    /// At least one definitive error.
    Fail,
    /// No definitive error, but a check could not be completed.
    Unverifiable,
}

impl GateVerdict {
    /// `PASS`, `FAIL` or `UNVERIFIABLE`.
    pub fn label(self) -> &'static str {
        match self {
            GateVerdict::Pass => "PASS",
            GateVerdict::Fail => "FAIL",
            GateVerdict::Unverifiable => "UNVERIFIABLE",
        }
    }

    /// `gate check` exit status: 0 pass, 1 fail, 2 unverifiable.
    pub fn exit_code(self) -> u8 {
        match self {
            GateVerdict::Pass => 0,
            GateVerdict::Fail => 1,
            GateVerdict::Unverifiable => 2,
        }
    }

    pub(crate) fn of(findings: &[GateFinding]) -> GateVerdict {
        if findings.iter().any(GateFinding::is_failure) {
            GateVerdict::Fail
        } else if findings.iter().any(GateFinding::is_unverifiable) {
            GateVerdict::Unverifiable
        } else {
            GateVerdict::Pass
        }
    }
}

/// Why a file is recorded (docs/state-formats.md#ge-2 `files` roles).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileRole {
    /// A `reportPath`.
    Report,
    /// An `artifactRefs[].path`.
    GateArtifact,
}

/// A file that passed every check, with what was read from its handle.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct GateFile {
    /// Repo-relative path.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
    /// `report` or `gate-artifact` (the first field naming the path decides).
    pub role: FileRole,
}

/// Everything one validation produced. Only the validator constructs it, so
/// a [`GateVerdict::Pass`] always means every check ran.
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct GateOutcome {
    pub(crate) verdict: GateVerdict,
    pub(crate) rules: String,
    pub(crate) family: GateFamily,
    pub(crate) scope: Value,
    pub(crate) findings: Vec<GateFinding>,
    pub(crate) files: Vec<GateFile>,
    pub(crate) normalized: Value,
    pub(crate) sha256: String,
}

impl GateOutcome {
    /// Pass, fail or unverifiable.
    pub fn verdict(&self) -> GateVerdict {
        self.verdict
    }
    /// The rule-file name used (`lazycodex`, …).
    pub fn rules(&self) -> &str {
        &self.rules
    }
    /// The document family.
    pub fn family(&self) -> GateFamily {
        self.family
    }
    /// `{kind, goalId?, batchId?, dir}`.
    pub fn scope(&self) -> &Value {
        &self.scope
    }
    /// Every finding, in the documented order (docs/gates.md#qg-7).
    pub fn findings(&self) -> &[GateFinding] {
        &self.findings
    }
    /// Warnings of the gate (for a checkpoint's `warnings`).
    pub fn warnings(&self) -> impl Iterator<Item = &GateFinding> {
        self.findings
            .iter()
            .filter(|f| f.severity == Severity::Warning)
    }
    /// Checked files in the order their fields appear, each path once.
    pub fn files(&self) -> &[GateFile] {
        &self.files
    }
    /// The normalised gate (known fields only, strings trimmed; docs/differences.md#r-6).
    /// Meaningful when the verdict is pass; `null` when the document is not
    /// a JSON object.
    pub fn normalized(&self) -> &Value {
        &self.normalized
    }
    /// SHA-256 of the document bytes as supplied (`qualityGateSha256`).
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The data of `ULW_LOOP_QUALITY_GATE_INVALID` for a non-passing gate
    /// (docs/gates.md#qg-7); `None` when the gate passed.
    pub fn rejection(&self) -> Option<GateRejection> {
        if self.verdict == GateVerdict::Pass {
            return None;
        }
        let first = self
            .findings
            .iter()
            .find(|f| f.severity == Severity::Error)
            .expect("a non-passing gate has an error finding");
        Some(GateRejection {
            message: first.message.clone(),
            field: first.field.clone(),
            code: first.code,
            details: json!({
                "field": first.field,
                "code": first.code.name(),
                "findings": self.findings,
            }),
        })
    }
}

/// What a checkpoint reports for a rejected gate: the goal engine wraps it
/// in its `ULW_LOOP_QUALITY_GATE_INVALID` error.
#[derive(Debug, Clone, PartialEq)]
pub struct GateRejection {
    /// The first error finding's message (the compatible message, docs/differences.md#r-6).
    pub message: String,
    /// Its field (`details.field`).
    pub field: String,
    /// Its code (`details.code`).
    pub code: Code,
    /// `{field, code, findings}`: the error's `details` object.
    pub details: Value,
}
