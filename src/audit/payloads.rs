//! Evidence payloads kept under the evidence roots (`*.evidence.json`,
//! docs/verify.md#ev-7 step 4), each verified as in payload mode.

use std::collections::BTreeMap;

use serde_json::json;

use super::progress::Progress;
use crate::evidence::verify::{lexical_code, problem_finding};
use crate::evidence::{
    self, Code, Finding, Report, ReportBuilder, ReportKind, Root, VerifyOptions,
};
use crate::sandbox::RelPath;
use crate::sandbox::open::{self, FileChecks, FileProblem};
use crate::sandbox::walk::{self, EntryKind};

/// File names that mark a payload.
pub const SUFFIX: &str = ".evidence.json";

/// One payload found under an evidence root: the path and the root whose
/// evidence root it lies under.
pub(crate) struct Found {
    pub(crate) path: String,
    /// Index of the [`Root`] to verify it with.
    pub(crate) root: usize,
    /// Not a regular file (symlink, FIFO): reported without reading.
    pub(crate) problem: Option<Finding>,
}

/// Walks every evidence root (no symlink followed) and lists the payloads,
/// sorted by path, each once (the first root that contains it wins).
pub(crate) fn find(roots: &[Root], errors: &mut Vec<Finding>) -> Vec<Found> {
    let mut found: BTreeMap<String, Found> = BTreeMap::new();
    for (i, root) in roots.iter().enumerate() {
        let base = root.evidence_root().clone();
        let start = match open::open_dir(root.dir(), &base) {
            Ok(d) => d,
            Err(FileProblem::Missing | FileProblem::NotRegular { .. }) => continue,
            Err(p) => {
                let (code, why) = problem_finding(&p);
                errors.push(Finding::new(
                    code,
                    Some(base.as_str()),
                    format!("evidence root: {why}"),
                ));
                continue;
            }
        };
        let mut visit = |e: &walk::Entry| {
            if !e.path.ends_with(SUFFIX) || e.kind == EntryKind::Dir || found.contains_key(&e.path)
            {
                return;
            }
            let problem = match e.kind {
                EntryKind::Symlink => Some(Finding::new(
                    Code::PathSymlink,
                    Some(&e.path),
                    "the payload is a symlink; symlinks are never followed",
                )),
                EntryKind::Other => Some(Finding::new(
                    Code::NotRegularFile,
                    Some(&e.path),
                    "the payload is not a regular file",
                )),
                EntryKind::File | EntryKind::Dir => None,
            };
            found.insert(
                e.path.clone(),
                Found {
                    path: e.path.clone(),
                    root: i,
                    problem,
                },
            );
        };
        match walk::walk(
            &start,
            base.as_str(),
            &mut |_| true,
            &mut visit,
            &mut |_| {},
        ) {
            Ok(walked) => {
                for dir in walked.too_deep {
                    errors.push(Finding::new(
                        Code::WalkDepthLimit,
                        Some(&dir),
                        format!(
                            "evidence root: this directory is nested more than {} levels below {base}; it was not entered, so payloads below it were not audited. Flatten or remove it",
                            walk::MAX_DEPTH
                        ),
                    ));
                }
            }
            Err(we) => errors.push(Finding::new(
                Code::IoError,
                Some(&we.path),
                format!("could not read directory: {}", we.error),
            )),
        }
    }
    found.into_values().collect()
}

/// Verifies each found payload (one report each, in order).
pub(crate) fn verify(
    roots: &[Root],
    found: Vec<Found>,
    progress: &mut dyn Progress,
) -> Vec<Report> {
    progress.phase(
        "verifying evidence payloads",
        "payloads",
        found.len() as u64,
    );
    let mut out = Vec::with_capacity(found.len());
    for f in found {
        let root = &roots[f.root];
        out.push(match f.problem {
            Some(finding) => {
                let mut b = ReportBuilder::new(&f.path, ReportKind::Payload);
                b.push(finding);
                b.finish(false)
            }
            None => verify_one(root, &f.path),
        });
        progress.advance(1);
    }
    out
}

fn verify_one(root: &Root, path: &str) -> Report {
    let mut b = ReportBuilder::new(path, ReportKind::Payload);
    let max = root.max_payload_bytes();
    let rel = match RelPath::parse(path, root.limits()) {
        Ok(r) => r,
        Err(lp) => {
            b.push(Finding::new(
                lexical_code(lp),
                Some(path),
                format!("the payload's path is not acceptable: {}", lp.describe()),
            ));
            return b.finish(false);
        }
    };
    let checks = FileChecks {
        reject_hard_links: false,
        max_bytes: max,
        reject_empty: false,
    };
    let bytes = open::open_leaf(root.dir(), &rel).and_then(|(mut file, meta)| {
        open::check_handle(&meta, &checks)?;
        let mut kept = Vec::new();
        open::hash_handle(&mut file, &meta, &checks, None, max as usize, &mut kept)?;
        Ok(kept)
    });
    match bytes {
        Ok(bytes) => match evidence::payload::parse(&bytes, max) {
            Ok(payload) => {
                let opts = VerifyOptions {
                    payload_path: Some(path),
                    ..VerifyOptions::default()
                };
                evidence::verify_payload(root, &payload, path, opts)
            }
            Err(f) => {
                b.push(*f);
                b.finish(false)
            }
        },
        Err(FileProblem::TooLarge { size, .. }) => {
            b.push(
                Finding::new(
                    Code::EvidenceParseError,
                    Some(path),
                    format!("the payload is over the {max}-byte limit (at least {size} bytes)"),
                )
                .with_detail(json!({"size": size, "max": max})),
            );
            b.finish(false)
        }
        Err(p) => {
            let (code, why) = problem_finding(&p);
            let code = if code == Code::IoError {
                Code::PayloadUnreadable
            } else {
                code
            };
            b.push(Finding::new(
                code,
                Some(path),
                format!("cannot read the payload: {why}"),
            ));
            b.finish(false)
        }
    }
}
