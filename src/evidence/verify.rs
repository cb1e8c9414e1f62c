//! The verifier: payload-level checks and the per-file pipeline over the
//! sandbox (docs/verify.md#ev-2, docs/verify.md#ev-5).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Instant;

use cap_std::fs::Dir;
use globset::{GlobBuilder, GlobMatcher, GlobSet};
use serde_json::json;

use super::payload::{ClaimedVerdict, Deliverable, Payload};
use super::placeholder::Placeholders;
use crate::finding::{Code, Finding, Report, ReportBuilder, ReportKind, VerifiedFile};
pub use crate::finding::{lexical_code, problem_finding};
use crate::json::clip;
use crate::rules::evidence::{EvidenceRules, HardLinks, build_globset};
use crate::rules::{Problem, RulesError};
use crate::sandbox::open::{self, FileChecks, FileProblem, HashedFile};
use crate::sandbox::walk::{self, EntryKind};
use crate::sandbox::{LexicalProblem, PathLimits, RelPath, parallel};

/// The workspace root and the compiled verifier rules. Built from a `Dir`,
/// never from a path.
#[derive(Debug)]
pub struct Root {
    dir: Dir,
    evidence_root: RelPath,
    allow: GlobSet,
    deny: GlobSet,
    forbidden_first: Vec<String>,
    forbidden_prefixes: Vec<String>,
    artifact_kinds: HashSet<String>,
    placeholders: Placeholders,
    checks: FileChecks,
    limits: PathLimits,
    max_payload_bytes: u64,
    max_glob_deliverables: usize,
}

impl Root {
    /// Compiles `rules` against the root directory handle.
    pub fn new(dir: Dir, rules: &EvidenceRules) -> Result<Root, RulesError> {
        let invalid = |p: Problem| RulesError {
            file: "rules".into(),
            pointer: format!("/evidence{}", p.pointer),
            problem: p.problem,
        };
        crate::rules::RuleFamily::check(rules).map_err(invalid)?;
        let limits = rules.limits.path_limits();
        let compile = |key: &str, list: &[String]| {
            build_globset(list).map_err(|(i, e)| RulesError {
                file: "rules".into(),
                pointer: format!("/evidence/deliverables/{key}/{i}"),
                problem: e,
            })
        };
        Ok(Root {
            dir,
            evidence_root: RelPath::parse(&rules.evidence_root, limits)
                .expect("checked by EvidenceRules::check"),
            allow: compile("allow", &rules.deliverables.allow)?,
            deny: compile("deny", &rules.deliverables.deny)?,
            forbidden_first: rules.forbidden_first_components.clone(),
            forbidden_prefixes: rules.forbidden_prefixes.clone(),
            artifact_kinds: rules.artifact_kinds.iter().cloned().collect(),
            placeholders: Placeholders::new(
                &rules.placeholders.words,
                &rules.placeholders.patterns,
            ),
            checks: FileChecks {
                reject_hard_links: rules.hard_links == HardLinks::Reject,
                max_bytes: rules.limits.max_file_bytes,
                reject_empty: true,
            },
            limits,
            max_payload_bytes: rules.limits.max_payload_bytes,
            max_glob_deliverables: rules.limits.max_glob_deliverables,
        })
    }

    /// Replaces the evidence root (profiles carry their own, e.g. `.omagy/evidence`).
    pub fn with_evidence_root(mut self, root: &str) -> Result<Root, LexicalProblem> {
        self.evidence_root = RelPath::parse(root, self.limits)?;
        Ok(self)
    }

    /// The root directory handle.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// The evidence root artifacts must lie under.
    pub fn evidence_root(&self) -> &RelPath {
        &self.evidence_root
    }

    /// Lexical limits in force.
    pub fn limits(&self) -> PathLimits {
        self.limits
    }

    /// Handle checks in force.
    pub fn file_checks(&self) -> FileChecks {
        self.checks
    }

    /// Payload size cap.
    pub fn max_payload_bytes(&self) -> u64 {
        self.max_payload_bytes
    }

    /// Placeholder matcher from the rules.
    pub fn placeholders(&self) -> &Placeholders {
        &self.placeholders
    }

    /// Pipeline step 1: lexical validation plus the forbidden locations.
    pub fn check_path(&self, s: &str) -> Result<RelPath, (Code, String)> {
        let p = RelPath::parse(s, self.limits)
            .map_err(|e| (lexical_code(e), e.describe().to_owned()))?;
        if self.is_forbidden(&p) {
            return Err((
                Code::PathForbidden,
                "the path lies in a forbidden location (repository metadata or engine state)"
                    .into(),
            ));
        }
        Ok(p)
    }

    fn is_forbidden(&self, p: &RelPath) -> bool {
        let first = p.components().next().unwrap_or_default();
        self.forbidden_first
            .iter()
            .any(|f| f.eq_ignore_ascii_case(first))
            || self
                .forbidden_prefixes
                .iter()
                .any(|pre| p.starts_with_ignore_case(pre))
    }

    fn deliverable_allowed(&self, p: &RelPath) -> bool {
        self.allow.is_match(p.as_str()) && !self.deny.is_match(p.as_str())
    }
}

/// Checks the payload is verified against, beyond the rules.
pub trait PlanContext: Sync {
    /// Does the plan have this goal?
    fn goal_exists(&self, goal_id: &str) -> bool;
    /// Does the goal have this criterion?
    fn criterion_exists(&self, goal_id: &str, criterion_id: &str) -> bool;
    /// The goal the command is about, used when the payload names none.
    fn default_goal(&self) -> Option<&str>;
}

/// Options of one verification.
#[derive(Default, Clone, Copy)]
pub struct VerifyOptions<'a> {
    /// Plan context (goal engine): enables `GOAL_UNKNOWN` / `CRITERION_UNKNOWN`.
    pub plan: Option<&'a dyn PlanContext>,
    /// Stop with `VERIFY_TIMEOUT` after this instant.
    pub deadline: Option<Instant>,
    /// The payload file's own root-relative path, when it lies in the root:
    /// a glob never counts it, and a deliverable naming it proves nothing
    /// (docs/threat-model.md#i4).
    pub payload_path: Option<&'a str>,
}

/// How a claimed file is checked by policy (step 2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimPolicy {
    /// A deliverable: allow/deny globs apply.
    Deliverable,
    /// An artifact: must lie under the evidence root.
    Artifact,
    /// Only lexical and forbidden-location checks (the caller checked scope).
    Any,
}

/// One file claim for [`verify_files`].
#[derive(Debug, Clone)]
pub struct FileClaim {
    /// The path as declared.
    pub path: String,
    /// The declared digest, if any.
    pub sha256: Option<String>,
    /// The field that declared it (`deliverables[2].path`), for messages.
    pub field: String,
    /// Which policy applies.
    pub policy: ClaimPolicy,
}

struct Job {
    path: RelPath,
    expected: Vec<(String, Option<String>)>,
}

/// Progress of a payload's file checks, reported from the worker threads
/// as each file is done; the library draws nothing itself (the command
/// line shows a bar on a terminal).
pub trait FileProgress: Sync {
    /// `files` file checks are about to run.
    fn start(&self, files: u64);
    /// One file check finished after hashing `bytes`.
    fn done(&self, bytes: u64);
}

/// Verifies an evidence payload (payload-level checks and every file).
///
/// A deliverable that is missing fails with `FILE_MISSING`:
///
/// ```
/// use cap_std::fs::Dir;
/// use evidence_gate::evidence::{self, Code, Root, Verdict, VerifyOptions};
/// use evidence_gate::rules::{RuleSet, evidence::EvidenceRules};
///
/// let rules: EvidenceRules = RuleSet::embedded()?.family()?;
/// let dir = Dir::open_ambient_dir("fixtures/payloads/example", cap_std::ambient_authority())?;
/// let root = Root::new(dir, &rules)?;
/// let payload = evidence::payload::from_value(serde_json::json!({
///     "evidence": 1,
///     "summary": "Added the limiter module and its unit tests.",
///     "deliverables": [{ "path": "src/limiter.rs" }],
///     "verification": { "verdict": "passed", "by": "qa-executor", "checks": [] },
/// }))
/// .unwrap_or_else(|f| panic!("{}: {}", f.code, f.message));
/// let report = evidence::verify_payload(&root, &payload, "inline", VerifyOptions::default());
/// assert_eq!(report.verdict(), Verdict::Fail);
/// assert_eq!(report.findings()[0].code, Code::FileMissing);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_payload(
    root: &Root,
    payload: &Payload,
    subject: &str,
    opts: VerifyOptions<'_>,
) -> Report {
    verify_payload_with_progress(root, payload, subject, opts, None)
}

/// [`verify_payload`], reporting each file check to `progress`.
pub fn verify_payload_with_progress(
    root: &Root,
    payload: &Payload,
    subject: &str,
    opts: VerifyOptions<'_>,
    progress: Option<&dyn FileProgress>,
) -> Report {
    let mut report = ReportBuilder::new(subject, ReportKind::Payload);
    payload_checks(root, payload, opts, &mut report);

    let mut jobs: BTreeMap<RelPath, Job> = BTreeMap::new();
    // Glob expansion walks directories: it honours the budget too, or many
    // globs over a large tree could outlast any caller's own deadline.
    let mut walk_timed_out = false;
    // Every glob walks the tree: their number is capped by the rules, and a
    // pattern declared again reuses its walk.
    let mut walked: HashMap<String, Vec<RelPath>> = HashMap::new();
    let globs = payload
        .deliverables
        .iter()
        .filter(|d| matches!(d, Deliverable::Glob(_)))
        .count();
    let max_globs = root.max_glob_deliverables;
    if globs > max_globs {
        report.push(
            Finding::new(
                Code::GlobInvalid,
                None,
                format!(
                    "deliverables: {globs} glob entries; `limits.maxGlobDeliverables` allows at most {max_globs} (each glob walks the tree); the rest are not expanded"
                ),
            )
            .with_detail(json!({"globs": globs, "max": max_globs})),
        );
    }
    let own = opts
        .payload_path
        .and_then(|p| RelPath::parse(p.trim_start_matches("./"), root.limits).ok());
    let is_own = |p: &RelPath| {
        own.as_ref()
            .is_some_and(|o| o.as_str().eq_ignore_ascii_case(p.as_str()))
    };
    // Deliverables that prove something other than the payload: not the
    // payload file, not under the evidence root (docs/threat-model.md#i4).
    let mut proving = 0usize;
    // A deliverable refused on its own (reported, so the payload fails
    // anyway) leaves the self-only question open: no second finding.
    let mut refused = false;
    let proves =
        |p: &RelPath| !is_own(p) && !p.starts_with_ignore_case(root.evidence_root.as_str());
    let mut glob_index = 0usize;
    for (i, d) in payload.deliverables.iter().enumerate() {
        report.stats.items_checked += 1;
        match d {
            Deliverable::File(f) => {
                let claim = FileClaim {
                    path: f.path.clone(),
                    sha256: f.sha256.clone(),
                    field: format!("deliverables[{i}]"),
                    policy: ClaimPolicy::Deliverable,
                };
                match root.check_path(&f.path) {
                    Ok(p) if proves(&p) => proving += 1,
                    Ok(_) => {}
                    Err(_) => refused = true,
                }
                add_claim(root, &claim, &mut jobs, &mut report);
            }
            Deliverable::Glob(g) => {
                glob_index += 1;
                if glob_index > max_globs {
                    continue;
                }
                let field = format!("deliverables[{i}]");
                let glob = GlobClaim {
                    pattern: &g.glob,
                    min: g.min,
                    max: g.max,
                    field: &field,
                    exclude: &is_own,
                };
                let found = expand_glob(
                    root,
                    &glob,
                    opts.deadline,
                    &mut walk_timed_out,
                    &mut walked,
                    &mut report,
                );
                refused |= found.is_empty();
                proving += found.iter().filter(|p| proves(p)).count();
                for path in found {
                    let job = jobs.entry(path.clone()).or_insert_with(|| Job {
                        path,
                        expected: Vec::new(),
                    });
                    // A file matched by several globs expects nothing more of
                    // it: the first glob names it in findings.
                    if !job.expected.iter().any(|(_, want)| want.is_none()) {
                        job.expected.push((field.clone(), None));
                    }
                }
            }
        }
    }
    if proving == 0 && !refused && !payload.deliverables.is_empty() {
        report.push(
            Finding::new(
                Code::EvidenceSelfOnly,
                own.as_ref().map(RelPath::as_str),
                format!(
                    "deliverables: every deliverable is the payload itself or lies under the evidence root `{}`; name at least one file the work changed or produced outside it",
                    root.evidence_root
                ),
            )
            .with_detail(json!({"evidenceRoot": root.evidence_root.as_str()})),
        );
    }
    let mut ids = HashSet::new();
    for (i, a) in payload.artifacts.iter().enumerate() {
        report.stats.items_checked += 1;
        let field = format!("artifacts[{i}]");
        if !ids.insert(a.id.as_str()) {
            report.push(
                Finding::new(
                    Code::ArtifactIdDuplicate,
                    Some(&a.path),
                    format!("{field}: artifact id `{}` is used twice", a.id),
                )
                .with_detail(json!({"field": field, "id": a.id})),
            );
        }
        if !root.artifact_kinds.contains(&a.kind) {
            let mut kinds: Vec<&String> = root.artifact_kinds.iter().collect();
            kinds.sort();
            report.push(
                Finding::new(
                    Code::ArtifactKindUnknown,
                    Some(&a.path),
                    format!(
                        "{field}: artifact kind `{}` is not one of {}",
                        a.kind,
                        join_quoted(&kinds)
                    ),
                )
                .with_detail(json!({"field": field, "kind": a.kind})),
            );
        }
        let claim = FileClaim {
            path: a.path.clone(),
            sha256: None,
            field,
            policy: ClaimPolicy::Artifact,
        };
        add_claim(root, &claim, &mut jobs, &mut report);
    }
    if walk_timed_out {
        report.push(Finding::new(
            Code::VerifyTimeout,
            None,
            "verification did not finish within its time budget: a glob's directory walk ran out of time",
        ));
    } else {
        run_jobs(root, jobs, opts.deadline, progress, &mut report);
    }
    let checked = !payload.deliverables.is_empty();
    report.finish(checked)
}

/// Verifies a list of file claims (gate artifacts, receipts) through the same
/// pipeline. An empty list is never a pass.
pub fn verify_files(
    root: &Root,
    claims: &[FileClaim],
    subject: &str,
    deadline: Option<Instant>,
) -> Report {
    let mut report = ReportBuilder::new(subject, ReportKind::Payload);
    let mut jobs = BTreeMap::new();
    for c in claims {
        report.stats.items_checked += 1;
        add_claim(root, c, &mut jobs, &mut report);
    }
    run_jobs(root, jobs, deadline, None, &mut report);
    report.finish(!claims.is_empty())
}

fn payload_checks(root: &Root, p: &Payload, opts: VerifyOptions<'_>, report: &mut ReportBuilder) {
    let summary = crate::text::fold(&p.summary);
    let chars = summary.chars().count();
    if chars == 0 || chars > 4000 {
        report.push(Finding::new(
            Code::EvidenceSchemaInvalid,
            None,
            format!("summary: must be 1–4000 characters after trimming (has {chars})"),
        ));
    } else if root.placeholders.is_placeholder(&summary) {
        report.push(Finding::new(
            Code::PlaceholderText,
            None,
            "summary: is a placeholder, not a description of the work",
        ));
    }
    if p.deliverables.is_empty() {
        report.push(Finding::new(
            Code::EvidenceNoDeliverables,
            None,
            "deliverables: is empty; a payload that declares nothing proves nothing",
        ));
    }
    let v = &p.verification;
    if crate::text::is_blank(&v.by) {
        report.push(Finding::new(
            Code::EvidenceSchemaInvalid,
            None,
            "verification.by: must not be blank",
        ));
    } else if root.placeholders.is_placeholder(&v.by) {
        report.push(Finding::new(
            Code::PlaceholderText,
            None,
            "verification.by: is a placeholder",
        ));
    }
    let artifact_ids: HashSet<&str> = p.artifacts.iter().map(|a| a.id.as_str()).collect();
    for (i, c) in v.checks.iter().enumerate() {
        if crate::text::is_blank(&c.command) {
            report.push(Finding::new(
                Code::EvidenceSchemaInvalid,
                None,
                format!("verification.checks[{i}].command: must not be blank"),
            ));
        } else if root.placeholders.is_placeholder(&c.command) {
            report.push(Finding::new(
                Code::PlaceholderText,
                None,
                format!("verification.checks[{i}].command: is a placeholder"),
            ));
        }
        if let Some(a) = &c.artifact
            && !artifact_ids.contains(a.as_str())
        {
            report.push(
                Finding::new(
                    Code::ArtifactRefUnknown,
                    None,
                    format!("verification.checks[{i}].artifact: no artifact has id `{a}`"),
                )
                .with_detail(json!({"artifact": a})),
            );
        }
    }
    match v.verdict {
        ClaimedVerdict::Passed => {
            for (i, c) in v.checks.iter().enumerate() {
                if c.exit_code != 0 {
                    report.push(
                        Finding::new(
                            Code::VerdictInconsistent,
                            None,
                            format!(
                                "verification.checks[{i}]: `{}` exited {} but the verdict is `passed`",
                                clip(&c.command, 80),
                                c.exit_code
                            ),
                        )
                        .with_detail(json!({"index": i, "exitCode": c.exit_code})),
                    );
                }
            }
        }
        other => report.push(Finding::new(
            Code::VerdictNotPassed,
            None,
            format!(
                "verification.verdict: is `{}`, not `passed`",
                other.as_str()
            ),
        )),
    }
    if let Some(plan) = opts.plan {
        let goal = p.goal_id.as_deref().or(plan.default_goal());
        if let Some(g) = p.goal_id.as_deref()
            && !plan.goal_exists(g)
        {
            report.push(Finding::new(
                Code::GoalUnknown,
                None,
                format!("goalId: the plan has no goal `{g}`"),
            ));
        }
        if let (Some(g), Some(ids)) = (goal, &p.criterion_ids)
            && plan.goal_exists(g)
        {
            for c in ids {
                if !plan.criterion_exists(g, c) {
                    report.push(Finding::new(
                        Code::CriterionUnknown,
                        None,
                        format!("criterionIds: goal `{g}` has no criterion `{c}`"),
                    ));
                }
            }
        }
    }
}

fn add_claim(
    root: &Root,
    c: &FileClaim,
    jobs: &mut BTreeMap<RelPath, Job>,
    report: &mut ReportBuilder,
) {
    let display = c.path.as_str();
    let path = match root.check_path(&c.path) {
        Ok(p) => p,
        Err((code, why)) => {
            report.push(
                Finding::new(code, Some(display), format!("{}: {why}", c.field))
                    .with_detail(json!({"field": c.field})),
            );
            return;
        }
    };
    match c.policy {
        ClaimPolicy::Deliverable if !root.deliverable_allowed(&path) => {
            report.push(
                Finding::new(
                    Code::PathNotAllowed,
                    Some(display),
                    format!(
                        "{}: the rules' deliverable globs do not allow this path",
                        c.field
                    ),
                )
                .with_detail(json!({"field": c.field})),
            );
            return;
        }
        ClaimPolicy::Artifact if !path.is_strictly_below(&root.evidence_root) => {
            report.push(
                Finding::new(
                    Code::ArtifactOutsideEvidenceRoot,
                    Some(display),
                    format!(
                        "{}: artifacts must lie under `{}`",
                        c.field, root.evidence_root
                    ),
                )
                .with_detail(
                    json!({"field": c.field, "evidenceRoot": root.evidence_root.as_str()}),
                ),
            );
            return;
        }
        _ => {}
    }
    if let Some(d) = &c.sha256
        && !crate::digest::is_sha256_hex(d)
    {
        report.push(
            Finding::new(
                Code::DigestInvalid,
                Some(display),
                format!("{}.sha256: must be 64 lowercase hex digits", c.field),
            )
            .with_detail(json!({"field": c.field})),
        );
        return;
    }
    jobs.entry(path.clone())
        .or_insert_with(|| Job {
            path,
            expected: Vec::new(),
        })
        .expected
        .push((c.field.clone(), c.sha256.clone()));
}

fn run_jobs(
    root: &Root,
    jobs: BTreeMap<RelPath, Job>,
    deadline: Option<Instant>,
    progress: Option<&dyn FileProgress>,
    report: &mut ReportBuilder,
) {
    let jobs: Vec<Job> = jobs.into_values().collect();
    let checks = root.checks;
    if let Some(p) = progress {
        p.start(jobs.len() as u64);
    }
    let results: Vec<Result<HashedFile, FileProblem>> =
        parallel::map_runs(&jobs, open::ParentCache::default, |parents, job| {
            if deadline.is_some_and(|d| Instant::now() > d) {
                return Err(FileProblem::Deadline);
            }
            let r = open::verify_file_cached(&root.dir, &job.path, &checks, deadline, parents);
            if let Some(p) = progress {
                p.done(r.as_ref().map_or(0, |h| h.size));
            }
            r
        });
    let mut timed_out = false;
    for (job, result) in jobs.iter().zip(results) {
        let fields: Vec<&str> = job.expected.iter().map(|(f, _)| f.as_str()).collect();
        let field = fields.join(", ");
        match result {
            Ok(h) => {
                report.stats.files_hashed += 1;
                report.stats.bytes_hashed += h.size;
                let mut ok = true;
                for (f, want) in &job.expected {
                    if let Some(want) = want
                        && *want != h.sha256
                    {
                        ok = false;
                        report.push(
                            Finding::new(
                                Code::DigestMismatch,
                                Some(job.path.as_str()),
                                format!("{f}: SHA-256 is {} but {} was declared", h.sha256, want),
                            )
                            .with_detail(json!({"field": f, "expected": want, "actual": h.sha256})),
                        );
                    }
                }
                if ok {
                    report.file(VerifiedFile {
                        path: job.path.as_str().to_owned(),
                        size: h.size,
                        sha256: h.sha256,
                    });
                }
            }
            Err(FileProblem::Deadline) => timed_out = true,
            Err(p) => {
                let (code, why) = problem_finding(&p);
                report.push(
                    Finding::new(code, Some(job.path.as_str()), format!("{field}: {why}"))
                        .with_detail(json!({"field": field})),
                );
            }
        }
    }
    if timed_out {
        report.push(Finding::new(
            Code::VerifyTimeout,
            None,
            "verification did not finish within its time budget; some files were not checked",
        ));
    }
}

enum Comp {
    Any,
    One(GlobMatcher),
}

struct GlobPlan {
    full: GlobMatcher,
    comps: Option<Vec<Comp>>,
    base: Vec<String>,
}

fn glob_matcher(p: &str) -> Result<GlobMatcher, String> {
    GlobBuilder::new(p)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|g| g.compile_matcher())
        .map_err(|e| e.kind().to_string())
}

fn plan_glob(pattern: &str) -> Result<GlobPlan, String> {
    if pattern.is_empty() {
        return Err("the pattern is empty".into());
    }
    if pattern.starts_with('/') {
        return Err("the pattern starts with `/`; patterns are relative to the root".into());
    }
    let parts: Vec<&str> = pattern.split('/').collect();
    if parts.contains(&"..") {
        return Err("the pattern contains a `..` component".into());
    }
    if parts.iter().any(|c| c.is_empty() || *c == ".") {
        return Err("the pattern has `.` or empty components".into());
    }
    let full = glob_matcher(pattern)?;
    let is_meta = |c: &str| c.contains(['*', '?', '[', '{', '\\']);
    let mut base = Vec::new();
    for c in &parts[..parts.len() - 1] {
        if is_meta(c) {
            break;
        }
        base.push((*c).to_owned());
    }
    // Per-component matchers prune the walk; alternations may contain `/`,
    // in which case the walk is not pruned.
    let comps = if pattern.contains('{') {
        None
    } else {
        parts
            .iter()
            .map(|c| {
                if *c == "**" {
                    Ok(Comp::Any)
                } else {
                    glob_matcher(c).map(Comp::One)
                }
            })
            .collect::<Result<Vec<_>, _>>()
            .ok()
    };
    Ok(GlobPlan { full, comps, base })
}

/// Could something strictly below the directory `dir` match the pattern?
fn could_match_below(comps: &[Comp], dir: &[&str]) -> bool {
    fn go(p: &[Comp], d: &[&str]) -> bool {
        match (p.first(), d.first()) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(Comp::Any), Some(_)) => go(&p[1..], d) || go(p, &d[1..]),
            (Some(Comp::One(m)), Some(c)) => m.is_match(c) && go(&p[1..], &d[1..]),
        }
    }
    go(comps, dir)
}

/// One glob deliverable.
struct GlobClaim<'a> {
    pattern: &'a str,
    min: Option<u64>,
    max: Option<u64>,
    field: &'a str,
    /// Matches that do not count (the payload file itself).
    exclude: &'a dyn Fn(&RelPath) -> bool,
}

/// The regular files a glob matches. Past `deadline` (or once an earlier
/// walk ran out of time) nothing is walked: `timed_out` is set and no
/// match-count finding is made, since the count would be a guess.
fn expand_glob(
    root: &Root,
    glob: &GlobClaim<'_>,
    deadline: Option<Instant>,
    timed_out: &mut bool,
    cache: &mut HashMap<String, Vec<RelPath>>,
    report: &mut ReportBuilder,
) -> Vec<RelPath> {
    let (pattern, min, max, field) = (glob.pattern, glob.min, glob.max, glob.field);
    let past = || deadline.is_some_and(|d| Instant::now() > d);
    if *timed_out || past() {
        *timed_out = true;
        return Vec::new();
    }
    let glob_finding = |code: Code, msg: String| {
        Finding::new(code, None, format!("{field}: {msg}"))
            .with_detail(json!({"field": field, "glob": pattern}))
    };
    let min = min.unwrap_or(1);
    if min < 1 {
        report.push(glob_finding(
            Code::GlobInvalid,
            "`min` must be at least 1; a glob that may match nothing proves nothing".into(),
        ));
        return Vec::new();
    }
    if let Some(max) = max
        && max < min
    {
        report.push(glob_finding(
            Code::GlobInvalid,
            format!("`max` ({max}) is below `min` ({min})"),
        ));
        return Vec::new();
    }
    let matches = match cache.get(pattern) {
        // The same pattern declared again: the tree was walked once and its
        // walk findings reported once; only the counts are per declaration.
        Some(hit) => hit.clone(),
        None => match walk_glob(root, pattern, field, &past, report) {
            GlobWalk::Matches(m) => {
                cache.insert(pattern.to_owned(), m.clone());
                m
            }
            GlobWalk::Refused => return Vec::new(),
            GlobWalk::Expired => {
                *timed_out = true;
                return Vec::new();
            }
        },
    };
    let matches: Vec<RelPath> = matches.into_iter().filter(|m| !(glob.exclude)(m)).collect();
    let n = matches.len() as u64;
    if n < min {
        report.push(
            glob_finding(
                Code::GlobTooFewMatches,
                format!("glob `{pattern}` matched {n} regular files; at least {min} required"),
            )
            .with_detail(json!({"field": field, "glob": pattern, "matched": n, "min": min})),
        );
    }
    if let Some(max) = max
        && n > max
    {
        report.push(
            glob_finding(
                Code::GlobTooManyMatches,
                format!("glob `{pattern}` matched {n} files; at most {max} allowed"),
            )
            .with_detail(json!({"field": field, "glob": pattern, "matched": n, "max": max})),
        );
        return Vec::new();
    }
    matches
}

/// What walking the tree for one glob pattern found.
enum GlobWalk {
    /// The allowed regular files it matches (walk findings already reported).
    Matches(Vec<RelPath>),
    /// The pattern or its base was refused (reported).
    Refused,
    /// The deadline passed during the walk: a count would be a guess.
    Expired,
}

/// Walks the root for `pattern` through the confined handles, reporting
/// symlinks, non-regular matches and unreadable directories under `field`.
fn walk_glob(
    root: &Root,
    pattern: &str,
    field: &str,
    past: &dyn Fn() -> bool,
    report: &mut ReportBuilder,
) -> GlobWalk {
    let walk_expired = std::cell::Cell::new(false);
    let glob_finding = |code: Code, msg: String| {
        Finding::new(code, None, format!("{field}: {msg}"))
            .with_detail(json!({"field": field, "glob": pattern}))
    };
    let plan = match plan_glob(pattern) {
        Ok(p) => p,
        Err(e) => {
            report.push(glob_finding(
                Code::GlobInvalid,
                format!("invalid glob `{pattern}`: {e}"),
            ));
            return GlobWalk::Refused;
        }
    };
    let mut matches: Vec<RelPath> = Vec::new();
    let mut findings: Vec<Finding> = Vec::new();
    let base_str = plan.base.join("/");
    let start = if plan.base.is_empty() {
        root.dir.try_clone().map_err(FileProblem::Io)
    } else {
        match root.check_path(&base_str) {
            Ok(b) => open::open_dir(&root.dir, &b),
            Err((code, why)) => {
                report.push(glob_finding(code, format!("glob base `{base_str}`: {why}")));
                return GlobWalk::Refused;
            }
        }
    };
    let mut non_utf8 = 0usize;
    match start {
        Ok(start) => {
            let comps = plan.comps.as_deref();
            let mut descend = |dir: &str| {
                if past() {
                    walk_expired.set(true);
                    return false;
                }
                let parts: Vec<&str> = dir.split('/').collect();
                let forbidden = RelPath::parse(dir, root.limits)
                    .map(|p| root.is_forbidden(&p))
                    .unwrap_or(true);
                !forbidden && comps.is_none_or(|c| could_match_below(c, &parts))
            };
            let mut visit = |e: &walk::Entry| match e.kind {
                EntryKind::File | EntryKind::Other if plan.full.is_match(&e.path) => {
                    match RelPath::parse(&e.path, root.limits) {
                        Ok(p) if root.is_forbidden(&p) || !root.deliverable_allowed(&p) => {}
                        Ok(p) if e.kind == EntryKind::File => matches.push(p),
                        Ok(_) => findings.push(
                            Finding::new(
                                Code::NotRegularFile,
                                Some(&e.path),
                                format!("{field}: matched a file that is not a regular file"),
                            )
                            .with_detail(json!({"field": field, "glob": pattern})),
                        ),
                        Err(lp) => findings.push(
                            Finding::new(
                                lexical_code(lp),
                                Some(&e.path),
                                format!(
                                    "{field}: matched a path that is not acceptable: {}",
                                    lp.describe()
                                ),
                            )
                            .with_detail(json!({"field": field, "glob": pattern})),
                        ),
                    }
                }
                EntryKind::Symlink => {
                    let parts: Vec<&str> = e.path.split('/').collect();
                    let hit = plan.full.is_match(&e.path)
                        || (comps.is_none_or(|c| could_match_below(c, &parts))
                            && walk::points_to_dir(&root.dir, &e.path));
                    let forbidden = RelPath::parse(&e.path, root.limits)
                        .map(|p| root.is_forbidden(&p))
                        .unwrap_or(false);
                    if hit && !forbidden {
                        findings.push(
                            Finding::new(
                                Code::PathSymlink,
                                Some(&e.path),
                                format!("{field}: `{}` is a symlink the glob would match or descend into; symlinks are never followed", e.path),
                            )
                            .with_detail(json!({"field": field, "glob": pattern})),
                        );
                    }
                }
                _ => {}
            };
            match walk::walk(&start, &base_str, &mut descend, &mut visit, &mut |_| {
                non_utf8 += 1
            }) {
                Ok(walked) => {
                    for dir in walked.too_deep {
                        findings.push(
                            Finding::new(
                                Code::WalkDepthLimit,
                                Some(&dir),
                                format!(
                                    "{field}: glob `{pattern}` would descend more than {} levels below its base; this directory was not entered, so the match count is incomplete. Flatten or remove it",
                                    walk::MAX_DEPTH
                                ),
                            )
                            .with_detail(json!({"field": field, "glob": pattern})),
                        );
                    }
                }
                Err(we) => findings.push(
                    Finding::new(
                        Code::IoError,
                        Some(&we.path),
                        format!("{field}: could not read directory: {}", we.error),
                    )
                    .with_detail(json!({"field": field, "glob": pattern})),
                ),
            }
        }
        Err(FileProblem::Missing | FileProblem::NotRegular { .. }) => {}
        Err(p) => {
            let (code, why) = problem_finding(&p);
            findings.push(
                Finding::new(code, Some(&base_str), format!("{field}: glob base: {why}"))
                    .with_detail(json!({"field": field, "glob": pattern})),
            );
        }
    }
    report.stats.non_utf8_skipped += non_utf8;
    for f in findings {
        report.push(f);
    }
    if walk_expired.get() {
        return GlobWalk::Expired;
    }
    GlobWalk::Matches(matches)
}

fn join_quoted(items: &[&String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pruning_follows_pattern_components() {
        let plan = plan_glob("tests/rate_limit/**/*.rs").unwrap();
        let c = plan.comps.as_ref().unwrap();
        assert_eq!(plan.base, vec!["tests", "rate_limit"]);
        assert!(could_match_below(c, &["tests"]));
        assert!(could_match_below(c, &["tests", "rate_limit", "deep"]));
        assert!(!could_match_below(c, &["src"]));
        let plan = plan_glob("src/*.rs").unwrap();
        let c = plan.comps.as_ref().unwrap();
        assert!(could_match_below(c, &["src"]));
        assert!(!could_match_below(c, &["src", "sub"]));
    }

    #[test]
    fn invalid_patterns() {
        assert!(plan_glob("/etc/*").is_err());
        assert!(plan_glob("a/../*").is_err());
        assert!(plan_glob("a/[b").is_err());
        assert!(plan_glob("./a").is_err());
    }
}
