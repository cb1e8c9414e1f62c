//! Artifact and report file checks through the sandbox (docs/gates.md#qg-6): lexical
//! validation, strictly below the scope directory (before any I/O), a
//! confined no-follow open, handle checks, a streaming digest with re-stat;
//! each distinct path once, at most `limits.maxArtifacts` of them.

use std::collections::HashMap;

use serde_json::json;

use super::check::shown;
use super::outcome::{FileRole, GateFinding};
use crate::evidence::verify::problem_finding as sandbox_problem;
use crate::evidence::{Code, Root};
use crate::sandbox::open::{self, FileChecks, FileProblem, HashedFile};
use crate::sandbox::{RelPath, parallel};

/// How much of a report is kept to look for its `VERDICT:` line.
pub(crate) const REPORT_SCAN_BYTES: usize = 4 * 1024 * 1024;

/// One distinct path to open and hash.
pub(crate) struct Job {
    pub(crate) path: RelPath,
    pub(crate) role: FileRole,
    keep: bool,
}

/// What hashing one job found.
pub(crate) enum FileResult {
    /// Every handle check passed.
    Ok {
        hashed: HashedFile,
        /// Leading bytes, for reports when the verdict-line rule is on.
        kept: Vec<u8>,
    },
    /// The sandbox's finding.
    Problem(FileProblem),
}

/// The distinct paths of one validation.
pub(crate) struct Files<'a> {
    root: &'a Root,
    scope_dir: &'a RelPath,
    plan_context: bool,
    checks: FileChecks,
    max: usize,
    keep_reports: bool,
    jobs: Vec<Job>,
    index: HashMap<RelPath, usize>,
    limit_reported: bool,
}

impl<'a> Files<'a> {
    pub(crate) fn new(
        root: &'a Root,
        scope_dir: &'a RelPath,
        plan_context: bool,
        max_artifacts: usize,
        max_artifact_bytes: u64,
        keep_reports: bool,
    ) -> Files<'a> {
        let checks = FileChecks {
            max_bytes: max_artifact_bytes,
            reject_empty: true,
            ..root.file_checks()
        };
        Files {
            root,
            scope_dir,
            plan_context,
            checks,
            max: max_artifacts,
            keep_reports,
            jobs: Vec::new(),
            index: HashMap::new(),
            limit_reported: false,
        }
    }

    /// Lexical and scope checks of one path; `Ok(job)` when it will be
    /// opened, `Err(Some(finding))` when rejected, `Err(None)` when past the
    /// limit that was already reported.
    pub(crate) fn register(
        &mut self,
        raw: &str,
        field: &str,
        role: FileRole,
    ) -> Result<usize, Option<Box<GateFinding>>> {
        let path = self.root.check_path(raw).map_err(|(code, why)| {
            Some(Box::new(
                GateFinding::new(code, field, format!("{field} ({}): {why}.", shown(raw)))
                    .with_details(json!({"field": field, "path": raw})),
            ))
        })?;
        if !path.is_strictly_below(self.scope_dir) {
            let dir = self.scope_dir.as_str();
            let message = if self.plan_context {
                format!(
                    "{field} ({}) must point to an artifact from the current attempt ({dir}).",
                    shown(raw)
                )
            } else {
                format!(
                    "{field} ({}) must point to an artifact under the evidence root ({dir}).",
                    shown(raw)
                )
            };
            return Err(Some(Box::new(
                GateFinding::new(Code::GateArtifactOutsideScope, field, message)
                    .with_details(json!({"field": field, "path": raw, "scopeDir": dir})),
            )));
        }
        let keep = self.keep_reports && role == FileRole::Report;
        if let Some(&i) = self.index.get(&path) {
            self.jobs[i].keep |= keep;
            return Ok(i);
        }
        if self.jobs.len() >= self.max {
            if self.limit_reported {
                return Err(None);
            }
            self.limit_reported = true;
            let max = self.max;
            return Err(Some(Box::new(
                GateFinding::new(
                    Code::GateArtifactLimit,
                    field,
                    format!(
                        "{field}: the gate names more than {max} distinct artifact and report paths (limits.maxArtifacts); the rest are not checked."
                    ),
                )
                .with_details(json!({"field": field, "max": max})),
            )));
        }
        self.index.insert(path.clone(), self.jobs.len());
        self.jobs.push(Job { path, role, keep });
        Ok(self.jobs.len() - 1)
    }

    /// Opens and hashes every job (on all cores, results in job order).
    pub(crate) fn run(self) -> (Vec<FileResult>, Vec<Job>) {
        let dir = self.root.dir();
        let checks = self.checks;
        let results = parallel::map(&self.jobs, |job| {
            let keep = if job.keep { REPORT_SCAN_BYTES } else { 0 };
            let attempt = || -> Result<FileResult, FileProblem> {
                let (mut file, meta) = open::open_leaf(dir, &job.path)?;
                open::check_handle(&meta, &checks)?;
                let mut kept = Vec::new();
                let hashed = open::hash_handle(&mut file, &meta, &checks, None, keep, &mut kept)?;
                Ok(FileResult::Ok { hashed, kept })
            };
            attempt().unwrap_or_else(FileResult::Problem)
        });
        (results, self.jobs)
    }
}

/// The finding for a sandbox problem at one field: the sandbox's code,
/// unchanged, with the anchor's wording where docs/differences.md#r-6 had one.
pub(crate) fn problem_finding(p: &FileProblem, field: &str, raw: &str) -> GateFinding {
    let (code, why) = sandbox_problem(p);
    let message = match p {
        FileProblem::Missing => format!("{field} must point to an existing artifact."),
        FileProblem::Empty => format!("{field} must point to a non-empty artifact."),
        _ => format!("{field} ({}): {why}.", shown(raw)),
    };
    GateFinding::new(code, field, message).with_details(json!({"field": field, "path": raw}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sandbox_problems_keep_their_codes() {
        let cases = [
            (FileProblem::Changed, Code::FileChangedDuringCheck),
            (FileProblem::Missing, Code::FileMissing),
            (FileProblem::Empty, Code::FileEmpty),
            (FileProblem::EscapesRoot, Code::PathEscapesRoot),
            (
                FileProblem::Io(std::io::Error::other("boom")),
                Code::IoError,
            ),
        ];
        for (p, code) in cases {
            let f = problem_finding(&p, "manualQa.reportPath", "x/y.md");
            assert_eq!(f.code, code);
            assert_eq!(f.field, "manualQa.reportPath");
            assert!(
                f.message.starts_with("manualQa.reportPath"),
                "{}",
                f.message
            );
            assert_eq!(f.details.unwrap()["path"], "x/y.md");
        }
        let f = problem_finding(&FileProblem::Io(std::io::Error::other("boom")), "f", "p");
        assert!(f.is_unverifiable() && !f.is_failure());
        let f = problem_finding(&FileProblem::Missing, "f", "p");
        assert_eq!(f.message, "f must point to an existing artifact.");
    }
}
