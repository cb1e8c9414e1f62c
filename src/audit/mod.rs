//! Repository mode of `verify-evidence` (docs/verify.md#ev-7): audits every
//! goal-engine state directory of every profile and session, the hook gate
//! ledger and the evidence payloads kept under the evidence roots.
//!
//! 1. each ledger's hash chain ([`crate::ledger::verify_chain`]);
//! 2. every file digest recorded in a ledger (`files` arrays, receipts),
//!    re-hashed through the sandbox (`LEDGER_DIGEST_MISMATCH`,
//!    `LEDGER_FILE_MISSING`);
//! 3. completion claims (`COMPLETION_UNBACKED`) and plan/ledger agreement
//!    (`LEDGER_BEHIND_PLAN`, `LEDGER_PLAN_MISMATCH`);
//! 4. every `*.evidence.json` under the evidence roots, as a payload;
//! 5. the hook gate ledger: chain, accepted receipts, reused digests,
//!    waivers and overrides (warnings; errors with `strict`).
//!
//! Nothing found is `NOTHING_TO_VERIFY` unless the caller allows it. The
//! module reads only through `Dir` handles and never writes.

pub(crate) mod base;
mod completion;
mod decisions;
mod discover;
mod gate_ledger;
pub(crate) mod git;
pub mod layout;
mod payloads;
mod plan_file;
pub(crate) mod progress;
mod recorded;
mod scan;
mod state_dir;

use std::fmt;

use cap_std::fs::Dir;

pub use crate::ledger::set_verify_threads;
pub use discover::layout_for;
pub use gate_ledger::{FILE as GATE_LEDGER_FILE, STATE_DIR as GATE_STATE_DIR};
pub use layout::ProfileLayout;
pub use payloads::SUFFIX as PAYLOAD_SUFFIX;
pub use progress::{Progress, Silent};

use crate::evidence::Root;
use crate::finding::{Code, Finding, Report, ReportBuilder, ReportKind};
use crate::gate::GateScope;
use crate::gate::outcome::GateVerdict;
use crate::goals::plan::Plan;
use crate::rules::RulesError;
use crate::rules::evidence::EvidenceRules;
use crate::rules::gates::GateBook;
use crate::sandbox::RelPath;
use recorded::LedgerFiles;

/// What to audit and how.
#[derive(Debug, Clone, Copy)]
pub struct AuditOptions<'a> {
    /// Every profile's layout.
    pub layouts: &'a [ProfileLayout],
    /// Audit only these state directories (`--plan-dir`); empty = discover
    /// everything, including the gate ledger and the payloads.
    pub plan_dirs: &'a [RelPath],
    /// Waivers and overrides in the gate ledger fail (`--strict`).
    pub strict: bool,
    /// Nothing to audit is not a failure (`--allow-empty`).
    pub allow_empty: bool,
    /// Wholly unchained (legacy) ledgers are warnings, not
    /// `LEDGER_NOT_CHAINED` errors (`--allow-legacy`).
    pub allow_legacy: bool,
    /// The gate rules a recorded final gate is re-validated with (the plan's
    /// `gateRules` names one); `None` skips the re-validation.
    pub gates: Option<&'a GateBook>,
}

/// Counters of one audit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// State directories audited.
    pub state_dirs: usize,
    /// Gate ledgers audited (0 or 1).
    pub gate_ledgers: usize,
    /// Evidence payloads verified.
    pub payloads: usize,
    /// Ledger records whose chain was verified (archives excluded).
    pub ledger_records: u64,
    /// Distinct recorded files re-hashed.
    pub recorded_files: usize,
    /// Bytes of recorded files re-hashed.
    pub recorded_bytes: u64,
}

impl Summary {
    /// Nothing at all was found to audit.
    pub fn nothing_found(&self) -> bool {
        self.state_dirs == 0 && self.gate_ledgers == 0 && self.payloads == 0
    }
}

/// The result of an audit: one report per state directory (kind `plan`),
/// the gate ledger (`gate-ledger`) and each payload (`payload`), in that
/// order, each group sorted by path.
#[derive(Debug)]
pub struct Audit {
    /// The reports.
    pub reports: Vec<Report>,
    /// Counters.
    pub summary: Summary,
    /// The goals and criteria of the plans read in the named state
    /// directories (`AuditOptions::plan_dirs`), for payloads judged against
    /// the same plans (`verify-evidence PAYLOAD --plan-dir`); `None` when no
    /// directory was named or none holds a plan that decodes.
    pub plan_goals: Option<PlanGoals>,
}

/// Why an audit could not start.
#[derive(Debug)]
pub enum AuditError {
    /// The evidence rules or a profile's evidence root are invalid.
    Rules(RulesError),
    /// The root directory handle could not be duplicated.
    Io(std::io::Error),
}

impl fmt::Display for AuditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AuditError::Rules(e) => e.fmt(f),
            AuditError::Io(e) => write!(f, "cannot use the root directory: {e}"),
        }
    }
}

impl std::error::Error for AuditError {}

/// One sandbox root per distinct evidence root: the rules' own first, then
/// each profile's.
fn roots(
    dir: &Dir,
    rules: &EvidenceRules,
    layouts: &[ProfileLayout],
) -> Result<Vec<Root>, AuditError> {
    let mut out: Vec<Root> = Vec::new();
    let base =
        Root::new(dir.try_clone().map_err(AuditError::Io)?, rules).map_err(AuditError::Rules)?;
    out.push(base);
    for l in layouts {
        if out.iter().any(|r| r.evidence_root() == &l.evidence_root) {
            continue;
        }
        let r = Root::new(dir.try_clone().map_err(AuditError::Io)?, rules)
            .map_err(AuditError::Rules)?
            .with_evidence_root(l.evidence_root.as_str())
            .map_err(|p| {
                AuditError::Rules(RulesError {
                    file: "rules".into(),
                    pointer: format!("/profiles/{}/evidenceRoot", l.name()),
                    problem: p.describe().into(),
                })
            })?;
        out.push(r);
    }
    Ok(out)
}

/// Audits the repository rooted at `dir`.
///
/// A repository without agent state is refused unless `allow_empty` is set:
///
/// ```
/// use cap_std::fs::Dir;
/// use evidence_gate::audit::{self, AuditOptions, Silent, layout};
/// use evidence_gate::rules::{RuleSet, evidence::EvidenceRules};
///
/// let rules = RuleSet::embedded()?;
/// let evidence: EvidenceRules = rules.family()?;
/// let layouts = layout::from_rules(&rules)?;
/// let dir = Dir::open_ambient_dir("fixtures/payloads/example", cap_std::ambient_authority())?;
/// let opts = AuditOptions {
///     layouts: &layouts,
///     plan_dirs: &[],
///     strict: false,
///     allow_empty: true,
///     allow_legacy: false,
///     gates: None,
/// };
/// let done = audit::audit(&dir, &evidence, &opts, &mut Silent).map_err(|e| format!("{e:?}"))?;
/// assert_eq!(done.summary.state_dirs, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn audit(
    dir: &Dir,
    rules: &EvidenceRules,
    opts: &AuditOptions<'_>,
    progress: &mut dyn Progress,
) -> Result<Audit, AuditError> {
    let roots = roots(dir, rules, opts.layouts)?;
    let main = &roots[0];
    let mut summary = Summary::default();
    let (targets, refusals) = if opts.plan_dirs.is_empty() {
        discover::all(main.dir(), opts.layouts)
    } else {
        discover::named(main.dir(), opts.layouts, opts.plan_dirs)
    };

    // Ledgers first (their recorded files are re-hashed together afterwards).
    let mut pending: Vec<(ReportBuilder, bool)> = Vec::new();
    let mut files: Vec<LedgerFiles> = Vec::new();
    let mut refused: Vec<Report> = refusals
        .into_iter()
        .map(|r| {
            let mut b = ReportBuilder::new(r.display, ReportKind::Plan);
            b.push(r.finding);
            b.finish(false)
        })
        .collect();
    let verified = decisions::Verified::read(main.dir(), progress);
    let revalidate = |layout: &ProfileLayout, name: &str, gate: &serde_json::Value| {
        revalidate_gate(opts.gates?, &roots, layout, name, gate)
    };
    let mut plan_goals: Option<PlanGoals> = None;
    for t in &targets {
        let a = state_dir::audit(
            &t.dir,
            &t.display,
            &opts.layouts[t.layout],
            &state_dir::Judging {
                allow_legacy: opts.allow_legacy,
                strict: opts.strict,
                gates: &revalidate,
                verified: &verified,
            },
            progress,
        );
        summary.state_dirs += 1;
        summary.ledger_records += a.records;
        if let (false, Some(plan)) = (opts.plan_dirs.is_empty(), &a.plan) {
            plan_goals.get_or_insert_default().add(plan);
        }
        pending.push((a.report, a.checked));
        files.push(a.files);
    }
    if opts.plan_dirs.is_empty()
        && let Some(g) = gate_ledger::audit(main.dir(), opts.strict, opts.allow_legacy, progress)
    {
        summary.gate_ledgers += 1;
        summary.ledger_records += g.records;
        pending.push((g.report, g.checked));
        files.push(g.files);
    }
    let (outcomes, totals) = recorded::check(
        main.dir(),
        main.limits(),
        main.file_checks(),
        &files,
        progress,
    );
    summary.recorded_files = totals.files;
    summary.recorded_bytes = totals.bytes;
    let mut reports: Vec<Report> = Vec::new();
    for ((mut b, checked), o) in pending.into_iter().zip(outcomes) {
        for f in o.findings {
            b.push(f);
        }
        for f in o.files {
            b.file(f);
        }
        reports.push(b.finish(checked || o.checked > 0));
    }
    reports.append(&mut refused);
    reports.sort_by(|a, b| {
        (kind_rank(a.kind()), a.subject()).cmp(&(kind_rank(b.kind()), b.subject()))
    });

    if opts.plan_dirs.is_empty() {
        let mut errors: Vec<Finding> = Vec::new();
        let found = payloads::find(&roots, &mut errors);
        summary.payloads = found.len();
        reports.extend(payloads::verify(&roots, found, progress));
        if !errors.is_empty() {
            let mut b = ReportBuilder::new(main.evidence_root().as_str(), ReportKind::Payload);
            for f in errors {
                b.push(f);
            }
            reports.push(b.finish(false));
        }
    }
    progress.finish();
    if opts.allow_empty {
        // `--allow-empty` accepts nothing to audit wherever it is found: a
        // named state directory without state, a ledger without records.
        reports.retain(|r| {
            r.findings().is_empty() || !r.findings().iter().all(|f| f.code == Code::NothingToVerify)
        });
    }
    if reports.is_empty() && !opts.allow_empty {
        let mut b = ReportBuilder::new(".", ReportKind::Plan);
        b.push(Finding::new(
            Code::NothingToVerify,
            None,
            "no goal-engine state directory, hook gate ledger or evidence payload was found to audit; pass --allow-empty to accept that, or --root DIR to audit another directory",
        ));
        reports.push(b.finish(false));
    }
    Ok(Audit {
        reports,
        summary,
        plan_goals,
    })
}

/// docs/threat-model.md#i10: the final gate an `aggregate_completed` entry
/// carries, checked again with the gate rules the checkpoint used, its
/// artifacts below the profile's evidence root. Plan-context checks
/// (coverage against the plan's criteria) were made by the checkpoint and are
/// not repeated here.
fn revalidate_gate(
    book: &GateBook,
    roots: &[Root],
    layout: &ProfileLayout,
    name: &str,
    gate: &serde_json::Value,
) -> Option<String> {
    let Some(rules) = book.get(name) else {
        return Some(format!(
            "the plan's gateRules `{name}` names no gate rule file of the audit's rules"
        ));
    };
    let root = roots
        .iter()
        .find(|r| r.evidence_root() == &layout.evidence_root)?;
    let scope = GateScope::Standalone {
        dir: layout.evidence_root.clone(),
    };
    let bytes = serde_json::to_vec(gate).ok()?;
    let outcome = crate::gate::validate(root, rules, &bytes, &scope);
    if outcome.verdict() == GateVerdict::Pass {
        return None;
    }
    let first = outcome.findings().iter().find(|f| f.is_failure())?;
    Some(format!(
        "{} at `{}` ({} rules): {}",
        first.code, first.field, name, first.message
    ))
}

fn kind_rank(k: ReportKind) -> u8 {
    match k {
        ReportKind::Plan => 0,
        ReportKind::GateLedger => 1,
        ReportKind::Payload => 2,
    }
}

/// The goals and criteria of the plans in the named state directories
/// (`verify-evidence PAYLOAD --plan-dir DIR`): the plan context a payload is
/// verified against, so a payload naming a goal or criterion the plans lack
/// is `GOAL_UNKNOWN` / `CRITERION_UNKNOWN`.
#[derive(Debug, Clone, Default)]
pub struct PlanGoals {
    goals: std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
}

impl PlanGoals {
    /// Reads the plan of every named state directory that holds a readable
    /// one; `None` when none does (the audit of the same directories reports
    /// why, and a payload cannot be judged against no plan).
    pub fn read(dir: &Dir, layouts: &[ProfileLayout], plan_dirs: &[RelPath]) -> Option<PlanGoals> {
        let (targets, _) = discover::named(dir, layouts, plan_dirs);
        let mut out: Option<PlanGoals> = None;
        for t in &targets {
            if let Ok(Some(plan)) = plan_file::read(&t.dir, &t.display, &layouts[t.layout]) {
                out.get_or_insert_default().add(&plan);
            }
        }
        out
    }

    fn add(&mut self, plan: &Plan) {
        for g in plan.goals() {
            self.goals
                .entry(g.id().to_owned())
                .or_default()
                .extend(g.criteria().map(|c| c.id().to_owned()));
        }
    }
}

impl crate::evidence::PlanContext for PlanGoals {
    fn goal_exists(&self, goal_id: &str) -> bool {
        self.goals.contains_key(goal_id)
    }
    fn criterion_exists(&self, goal_id: &str, criterion_id: &str) -> bool {
        self.goals
            .get(goal_id)
            .is_some_and(|c| c.contains(criterion_id))
    }
    fn default_goal(&self) -> Option<&str> {
        None
    }
}
