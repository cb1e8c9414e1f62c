//! Findings, verdicts and reports.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::code::{Class, Code};

/// How serious one finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Fails the report (or makes it unverifiable, by the code's class).
    Error,
    /// Reported only.
    Warning,
    /// Informational.
    Info,
}

/// One problem found, as data with a stable code.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// The stable code.
    pub code: Code,
    /// Severity in this report.
    pub severity: Severity,
    /// Repo-relative path the finding is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// One sentence for people.
    pub message: String,
    /// Structured detail for machines.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

impl Finding {
    /// A finding with the code's default severity.
    pub fn new(code: Code, path: Option<&str>, message: impl Into<String>) -> Finding {
        let severity = match code.class() {
            Class::Fail | Class::Unverifiable => Severity::Error,
            Class::Warning => Severity::Warning,
            Class::Info => Severity::Info,
        };
        Finding {
            code,
            severity,
            path: path.map(str::to_owned),
            message: message.into(),
            detail: None,
        }
    }

    /// Attaches structured detail.
    #[must_use]
    pub fn with_detail(mut self, detail: Value) -> Finding {
        self.detail = Some(detail);
        self
    }

    /// Overrides the severity (policy-dependent codes, `--strict`).
    #[must_use]
    pub fn with_severity(mut self, severity: Severity) -> Finding {
        self.severity = severity;
        self
    }

    fn is_failure(&self) -> bool {
        self.severity == Severity::Error && self.code.class() != Class::Unverifiable
    }

    fn is_unverifiable(&self) -> bool {
        self.severity == Severity::Error && self.code.class() == Class::Unverifiable
    }
}

/// The outcome of a report, or of a whole run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// Every declared item was checked and nothing was found.
    Pass,
    /// At least one definitive failure.
    Fail,
    /// The verifier could not decide.
    Error,
}

impl Verdict {
    /// The process exit code of `verify`: 0 pass, 1 fail, 2 error.
    pub fn exit_code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Error => 2,
        }
    }

    /// Combines verdicts: a definitive failure outranks "could not verify",
    /// which outranks a pass.
    pub fn worst(verdicts: impl IntoIterator<Item = Verdict>) -> Verdict {
        let mut out = Verdict::Pass;
        for v in verdicts {
            out = match (out, v) {
                (Verdict::Fail, _) | (_, Verdict::Fail) => Verdict::Fail,
                (Verdict::Error, _) | (_, Verdict::Error) => Verdict::Error,
                _ => Verdict::Pass,
            };
        }
        out
    }
}

/// What a report is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReportKind {
    /// An evidence payload.
    Payload,
    /// A goal-engine state directory (plan and ledger).
    Plan,
    /// The hook gate ledger.
    GateLedger,
}

/// A file that passed every check, with what was read from its handle.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct VerifiedFile {
    /// Repo-relative path with forward slashes.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Lowercase hex SHA-256.
    pub sha256: String,
}

/// Counters about the work done (not part of the JSON report shape).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Declared items (deliverables, artifacts) that were checked.
    pub items_checked: usize,
    /// Files opened and hashed.
    pub files_hashed: usize,
    /// Bytes hashed.
    pub bytes_hashed: u64,
    /// Directory entries skipped during glob walks because their names are not UTF-8.
    pub non_utf8_skipped: usize,
}

/// Wall time spent building a report (from [`ReportBuilder::new`] to
/// [`ReportBuilder::finish`]). It is measurement, not content: two reports
/// with the same findings and files are equal whatever their timings.
#[derive(Debug, Clone, Copy, Default)]
pub struct Elapsed(pub Duration);

impl PartialEq for Elapsed {
    fn eq(&self, _: &Elapsed) -> bool {
        true
    }
}

/// The result of verifying one subject. The verdict is computed from the
/// findings by [`ReportBuilder::finish`]; there is no other way to obtain a
/// passing report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[must_use]
pub struct Report {
    subject: String,
    kind: ReportKind,
    verdict: Verdict,
    findings: Vec<Finding>,
    files: Vec<VerifiedFile>,
    #[serde(skip)]
    stats: Stats,
    #[serde(skip)]
    elapsed: Elapsed,
}

impl Report {
    /// Payload path or state directory.
    pub fn subject(&self) -> &str {
        &self.subject
    }
    /// What was verified.
    pub fn kind(&self) -> ReportKind {
        self.kind
    }
    /// The outcome.
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }
    /// Every finding, in pipeline order.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }
    /// Verified files, sorted by path, each once.
    pub fn files(&self) -> &[VerifiedFile] {
        &self.files
    }
    /// Work counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }
    /// Wall time spent verifying the subject.
    pub fn elapsed(&self) -> Duration {
        self.elapsed.0
    }
}

/// Accumulates findings and verified files; the only way to build a [`Report`].
#[derive(Debug)]
pub struct ReportBuilder {
    subject: String,
    kind: ReportKind,
    findings: Vec<Finding>,
    files: Vec<VerifiedFile>,
    /// Statistics, updated by the pipeline.
    pub stats: Stats,
    started: Instant,
}

impl ReportBuilder {
    /// Starts a report about `subject`.
    pub fn new(subject: impl Into<String>, kind: ReportKind) -> ReportBuilder {
        ReportBuilder {
            subject: subject.into(),
            kind,
            findings: Vec::new(),
            files: Vec::new(),
            stats: Stats::default(),
            started: Instant::now(),
        }
    }

    /// Adds a finding.
    pub fn push(&mut self, finding: Finding) {
        self.findings.push(finding);
    }

    /// Records a verified file.
    pub fn file(&mut self, file: VerifiedFile) {
        self.files.push(file);
    }

    /// Findings so far.
    pub fn findings(&self) -> &[Finding] {
        &self.findings
    }

    /// Computes the verdict. `checked_something` must be true only when the
    /// pipeline ran every check on at least one declared item: a report that
    /// checked nothing is never a pass.
    pub fn finish(mut self, checked_something: bool) -> Report {
        self.files.sort();
        self.files.dedup_by(|a, b| a.path == b.path);
        let verdict = if self.findings.iter().any(Finding::is_failure) {
            Verdict::Fail
        } else if self.findings.iter().any(Finding::is_unverifiable) || !checked_something {
            Verdict::Error
        } else {
            Verdict::Pass
        };
        Report {
            subject: self.subject,
            kind: self.kind,
            verdict,
            findings: self.findings,
            files: self.files,
            stats: self.stats,
            elapsed: Elapsed(self.started.elapsed()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_checked_is_never_a_pass() {
        let r = ReportBuilder::new("x", ReportKind::Payload).finish(false);
        assert_eq!(r.verdict(), Verdict::Error);
    }

    #[test]
    fn warnings_do_not_fail_but_errors_do() {
        let mut b = ReportBuilder::new("x", ReportKind::Plan);
        b.push(Finding::new(Code::LedgerUnterminated, None, "no newline"));
        assert_eq!(b.finish(true).verdict(), Verdict::Pass);
        let mut b = ReportBuilder::new("x", ReportKind::Plan);
        b.push(Finding::new(Code::IoError, None, "eacces"));
        assert_eq!(b.finish(true).verdict(), Verdict::Error);
        let mut b = ReportBuilder::new("x", ReportKind::Plan);
        b.push(Finding::new(Code::IoError, None, "eacces"));
        b.push(Finding::new(Code::FileEmpty, None, "empty"));
        assert_eq!(b.finish(true).verdict(), Verdict::Fail);
    }

    #[test]
    fn worst_ranks_fail_over_error() {
        assert_eq!(
            Verdict::worst([Verdict::Pass, Verdict::Error, Verdict::Fail]),
            Verdict::Fail
        );
        assert_eq!(
            Verdict::worst([Verdict::Pass, Verdict::Error]),
            Verdict::Error
        );
        assert_eq!(Verdict::worst([]), Verdict::Pass);
    }
}
