//! `verify-evidence` / `evidence-gate verify`: payload mode, and repository
//! mode (the audit lives in [`crate::audit`]).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use clap::Args;

use super::progress::TerminalProgress;
use super::render::{self, Format, Policy, Run, Scope};
use super::{EXIT_USAGE, Io};
use crate::ambient::{self, Ambient, ReadError};
use crate::audit::base::{BaseOptions, BaseTree};
use crate::audit::git::GitBase;
use crate::audit::{self, Audit, AuditError, AuditOptions, PlanGoals, Silent, Summary};
use crate::evidence::{self, Root, VerifyOptions};
use crate::finding::{Code, Finding, Report, ReportBuilder, ReportKind};
use crate::rules::evidence::EvidenceRules;
use crate::rules::{Layer, REPO_OVERRIDE, RuleSet, RulesError};
use crate::sandbox::{PathLimits, RelPath};
use crate::workspace::{OnError, RepoRules, Workspace, WorkspaceError, WorkspaceOptions};

#[derive(Args, Debug, Clone)]
pub(crate) struct VerifyArgs {
    /// Evidence payload files to verify; `-` reads one payload from standard input.
    #[arg(value_name = "PAYLOAD")]
    payloads: Vec<PathBuf>,
    /// Workspace root every declared path is relative to. Default: the
    /// current directory for payloads; in repository mode the nearest
    /// directory above it that holds `.git` or goal-engine state.
    #[arg(long = "root", value_name = "DIR")]
    root_flag: Option<PathBuf>,
    /// The root in effect (`--root`, or the one found).
    #[arg(skip)]
    root: PathBuf,
    /// Extra rules file, applied after the embedded defaults (and after the
    /// repository's `.evidence-gate/rules.json` with `--repo-rules`).
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Also apply the audited repository's own `.evidence-gate/rules.json`
    /// (by default the repository does not configure its auditor).
    #[arg(long)]
    repo_rules: bool,
    /// Repository mode: accept wholly unchained (legacy, Node-written)
    /// ledgers and their unchained completion entries, reported as legacy
    /// warnings; without it they are LEDGER_NOT_CHAINED errors.
    #[arg(long)]
    allow_legacy: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// The same as `--format json` (every command takes `--json`).
    #[arg(long, conflicts_with = "format")]
    json: bool,
    /// Text format: print findings and the summary only when verification does not pass.
    #[arg(long, short)]
    quiet: bool,
    /// Repository mode even when payloads are given: audit every goal-engine
    /// ledger, recorded digest, completion claim, evidence payload and the hook
    /// gate ledger under the root (the default when no PAYLOAD is given).
    #[arg(long)]
    ledger: bool,
    /// Repository mode for this state directory only (repo-relative, e.g.
    /// `.omo/ulw-loop/s1`); may be repeated.
    #[arg(long = "plan-dir", value_name = "DIR")]
    plan_dirs: Vec<String>,
    /// Repository mode: finding nothing to audit passes instead of failing
    /// with NOTHING_TO_VERIFY.
    #[arg(long)]
    allow_empty: bool,
    /// Repository mode: gate-ledger waivers and overrides fail instead of
    /// warning (and, with --base, changed rules, wiring or archived
    /// evidence).
    #[arg(long)]
    strict: bool,
    /// Repository mode: also prove that recorded history only grew since
    /// this git revision (the pull request's base, the push's previous
    /// commit): no ledger present there rewritten, no state vanished or
    /// hidden; changed rules and hook wiring reported.
    #[arg(long, value_name = "REF")]
    base: Option<String>,
    /// Report root-relative paths under this prefix in every format but
    /// `json` (the root's path inside the repository, so that CI annotations
    /// and SARIF locations resolve when --root is not the checkout).
    #[arg(long, value_name = "PREFIX")]
    path_prefix: Option<String>,
}

impl VerifyArgs {
    fn format(&self) -> Format {
        if self.json { Format::Json } else { self.format }
    }

    fn repository(&self) -> bool {
        self.payloads.is_empty() || self.ledger || !self.plan_dirs.is_empty()
    }
}

pub(crate) fn run(args: &VerifyArgs, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let mut args = args.clone();
    args.root = match &args.root_flag {
        Some(r) => r.clone(),
        None if args.repository() => super::find_root(amb),
        None => PathBuf::from("."),
    };
    let args = &args;
    let started = std::time::Instant::now();
    let path_prefix = match args.path_prefix.as_deref().map(path_prefix) {
        None => None,
        Some(Ok(p)) => p,
        Some(Err(message)) => {
            let _ = writeln!(io.stderr, "error: {message}");
            return EXIT_USAGE;
        }
    };
    if !args.repository()
        && (args.allow_empty || args.strict || args.allow_legacy || args.base.is_some())
    {
        let _ = writeln!(
            io.stderr,
            "error: --allow-empty, --strict, --allow-legacy and --base apply to repository mode; give no PAYLOAD, or add --ledger"
        );
        return EXIT_USAGE;
    }
    if args
        .payloads
        .iter()
        .filter(|p| p.as_os_str() == "-")
        .count()
        > 1
    {
        let _ = writeln!(
            io.stderr,
            "error: `-` (standard input) may be given only once"
        );
        return EXIT_USAGE;
    }
    let mut plan_dirs = Vec::new();
    for d in &args.plan_dirs {
        let trimmed = d.strip_prefix("./").unwrap_or(d).trim_end_matches('/');
        match RelPath::parse(trimmed, PathLimits::default()) {
            // `./x`, `x/` and `x` name one directory: audit it once.
            Ok(p) if plan_dirs.contains(&p) => {}
            Ok(p) => plan_dirs.push(p),
            Err(e) => {
                let _ = writeln!(
                    io.stderr,
                    "error: --plan-dir `{d}` is not a repo-relative directory: {}",
                    e.describe()
                );
                return EXIT_USAGE;
            }
        }
    }
    let run = match workspace(args, amb) {
        Err(f) => {
            let mut reports = error_reports(args, &f);
            if args.repository() {
                let mut b = ReportBuilder::new(args.root.display().to_string(), ReportKind::Plan);
                b.push(*f);
                reports.push(b.finish(false));
            }
            Run::new(reports)
        }
        Ok(ws) => {
            // The repository audit runs first: with `--plan-dir` the payloads
            // are judged against the plans it read (a goal or criterion they
            // lack is GOAL_UNKNOWN / CRITERION_UNKNOWN), read once, so the
            // payloads and the audit see the same plan bytes.
            let mut audit = if args.repository() {
                match repository(args, &plan_dirs, &ws, amb, io) {
                    Ok(audit) => Some(audit),
                    Err(Usage(message)) => {
                        let _ = writeln!(io.stderr, "error: {message}");
                        return EXIT_USAGE;
                    }
                }
            } else {
                None
            };
            let plan = audit.as_mut().and_then(|a| a.plan_goals.take());
            let mut reports = if args.payloads.is_empty() {
                Vec::new()
            } else {
                payload_reports(
                    args,
                    amb,
                    io.stdin,
                    &ws,
                    plan.as_ref(),
                    // A bar for people: a terminal, text output, not --quiet.
                    io.stderr_is_terminal && !args.quiet && args.format() == Format::Text,
                )
            };
            match audit {
                None => Run::new(reports),
                Some(mut audit) => {
                    // The payloads named on the command line are verified
                    // too: the summary counts them.
                    audit.summary.payloads += args.payloads.len();
                    reports.extend(audit.reports);
                    let mut run = Run::with_scope(reports, Scope::Repository(audit.summary));
                    run.policy = Some(ws.policy.clone());
                    run
                }
            }
        }
    };
    let mut run = run;
    run.elapsed = started.elapsed();
    run.path_prefix = path_prefix;
    run.verbatim_subjects = args.payloads.iter().map(|p| subject(p)).collect();
    run.verbatim_subjects.push(args.root.display().to_string());
    let color = super::color_enabled(amb, io.stdout_is_terminal);
    match render::render(&run, args.format(), args.quiet, color) {
        Ok(bytes) => {
            if io
                .stdout
                .write_all(&bytes)
                .and_then(|()| io.stdout.flush())
                .is_err()
            {
                return EXIT_USAGE;
            }
            run.verdict.exit_code()
        }
        Err(e) => {
            let _ = writeln!(io.stderr, "error: could not render the report: {e}");
            EXIT_USAGE
        }
    }
}

/// `--path-prefix`: a repo-relative directory (`.` or empty means none),
/// without `./` or a trailing `/`.
fn path_prefix(given: &str) -> Result<Option<String>, String> {
    let trimmed = given
        .strip_prefix("./")
        .unwrap_or(given)
        .trim_end_matches('/');
    if trimmed.is_empty() || trimmed == "." {
        return Ok(None);
    }
    RelPath::parse(trimmed, PathLimits::default())
        .map(|_| Some(trimmed.to_owned()))
        .map_err(|e| {
            format!(
                "--path-prefix `{given}` is not a repo-relative directory: {}",
                e.describe()
            )
        })
}

/// A usage error found after the rules were loaded.
struct Usage(String);

/// Runs the repository audit; a `--plan-dir` outside every profile's state
/// directory is a usage error.
fn repository(
    args: &VerifyArgs,
    plan_dirs: &[RelPath],
    ws: &Audited,
    amb: &dyn Ambient,
    io: &mut Io<'_>,
) -> Result<Audit, Usage> {
    // An unresolvable base is a usage error before any work.
    let git_base = match &args.base {
        Some(rev) => Some(GitBase::open(amb, &args.root, rev).map_err(Usage)?),
        None => None,
    };
    let error_audit = |f: Finding| {
        let mut b = ReportBuilder::new(args.root.display().to_string(), ReportKind::Plan);
        b.push(f);
        Audit {
            reports: vec![b.finish(false)],
            summary: Summary::default(),
            plan_goals: None,
        }
    };
    let layouts = match audit::layout::from_rules(ws.ws.rules()) {
        Ok(l) => l,
        Err(e) => return Ok(error_audit(rules_finding(&e))),
    };
    for d in plan_dirs {
        if audit::layout_for(&layouts, d).is_none() {
            let dirs: Vec<&str> = layouts.iter().map(|l| l.state_dir.as_str()).collect();
            return Err(Usage(format!(
                "--plan-dir `{d}` lies under no profile's state directory ({})",
                dirs.join(", ")
            )));
        }
    }
    let book = match crate::rules::gates::GateBook::from_rules(ws.ws.rules()) {
        Ok(b) => b,
        Err(e) => return Ok(error_audit(rules_finding(&e))),
    };
    let opts = AuditOptions {
        gates: Some(&book),
        layouts: &layouts,
        plan_dirs,
        strict: args.strict,
        allow_empty: args.allow_empty,
        allow_legacy: args.allow_legacy,
    };
    let result = if io.stderr_is_terminal {
        let mut progress = TerminalProgress::new(&mut *io.stderr);
        audit::audit(ws.ws.dir(), &ws.evidence, &opts, &mut progress)
    } else {
        audit::audit(ws.ws.dir(), &ws.evidence, &opts, &mut Silent)
    };
    let mut audit = match result {
        Ok(mut a) => {
            rewound_ledgers(amb, &ws.ws, &mut a);
            a
        }
        Err(AuditError::Rules(e)) => return Ok(error_audit(rules_finding(&e))),
        Err(AuditError::Io(e)) => {
            return Ok(error_audit(Finding::new(
                Code::RootUnavailable,
                None,
                format!("cannot use the root directory: {e}"),
            )));
        }
    };
    if let Some(b) = git_base {
        let _ = writeln!(
            io.stderr,
            "verify-evidence: comparing recorded history with the base {}",
            b.label()
        );
        match against_base(&b, ws, &layouts, args.strict) {
            Ok(mut reports) => audit.reports.append(&mut reports),
            Err(f) => audit.reports.push({
                let mut r = ReportBuilder::new(args.root.display().to_string(), ReportKind::Plan);
                r.push(*f);
                r.finish(false)
            }),
        }
    }
    Ok(audit)
}

/// `--base` (docs/threat-model.md#i8): the state directories of every policy in
/// play — HEAD's rules, the base's rules and the embedded defaults — so a
/// rules file that moves `stateDir` cannot take state out of the comparison.
fn against_base(
    base: &GitBase<'_>,
    ws: &Audited,
    layouts: &[audit::ProfileLayout],
    strict: bool,
) -> Result<Vec<Report>, Box<Finding>> {
    let mut state_dirs: BTreeSet<String> = layouts
        .iter()
        .map(|l| l.state_dir.as_str().to_owned())
        .collect();
    let mut extra = |rules: Result<RuleSet, RulesError>| {
        if let Ok(l) = rules.and_then(|r| audit::layout::from_rules(&r)) {
            state_dirs.extend(l.iter().map(|l| l.state_dir.as_str().to_owned()));
        }
    };
    extra(RuleSet::embedded());
    if let Ok(bytes) = base.read(REPO_OVERRIDE) {
        extra(RuleSet::load(&[Layer {
            name: REPO_OVERRIDE,
            bytes: &bytes,
        }]));
    }
    let state_dirs: Vec<String> = state_dirs.into_iter().collect();
    let root = Root::new(
        ws.ws.dir().try_clone().map_err(|e| {
            Box::new(Finding::new(
                Code::RootUnavailable,
                None,
                format!("cannot use the root directory: {e}"),
            ))
        })?,
        &ws.evidence,
    )
    .map_err(|e| Box::new(rules_finding(&e)))?;
    let gate = format!("{}/{}", audit::GATE_STATE_DIR, audit::GATE_LEDGER_FILE);
    let wiring = crate::init::workspace_wiring_files();
    Ok(audit::base::check(
        &root,
        base,
        &BaseOptions {
            state_dirs: &state_dirs,
            gate_ledger: &gate,
            rules_file: REPO_OVERRIDE,
            wiring_files: &wiring,
            strict,
        },
    ))
}

/// Local runs only (docs/threat-model.md#tm-3): every goal ledger a hook saw on
/// this machine must still reach the head it saw. A machine without the
/// per-user witness (CI) skips the check silently.
fn rewound_ledgers(amb: &dyn Ambient, ws: &Workspace, audit: &mut Audit) {
    let Some(state) = ws.user_state_path(amb) else {
        return;
    };
    let root = ws.dir();
    for head in crate::hooks::witness::observed_heads(amb, &state) {
        let Ok(rel) = RelPath::parse(&head.state_dir, crate::sandbox::PathLimits::default()) else {
            continue;
        };
        let display = format!("{}/ledger.jsonl", head.state_dir);
        let now = crate::sandbox::open::open_dir(root, &rel)
            .ok()
            .and_then(|d| crate::hooks::witness::ledger_head(&d, &head.state_dir));
        let why = match &now {
            None => format!(
                "the ledger is gone or holds no chained record, but a hook saw it at seq {}",
                head.seq
            ),
            Some(n) if n.seq < head.seq => format!(
                "the ledger ends at seq {} but a hook saw it at seq {}: records were cut",
                n.seq, head.seq
            ),
            Some(n) if n.seq == head.seq && n.sha256 != head.sha256 => format!(
                "the record at seq {} differs from the one a hook saw: it was rewritten",
                n.seq
            ),
            Some(_) => continue,
        };
        let mut b = ReportBuilder::new(display.clone(), ReportKind::Plan);
        b.push(
            Finding::new(Code::LedgerRewound, Some(&display), why).with_detail(serde_json::json!({
                "observed": {"seq": head.seq, "sha256": head.sha256},
                "now": now.as_ref().map(|n| serde_json::json!({"seq": n.seq, "sha256": n.sha256})),
            })),
        );
        audit.reports.push(b.finish(true));
    }
}

fn subject(p: &Path) -> String {
    if p.as_os_str() == "-" {
        "<stdin>".to_owned()
    } else {
        p.display().to_string()
    }
}

/// The payload file's path relative to the root, when both are spelled so
/// that this follows lexically (a relative payload under a relative root, or
/// an absolute payload under an absolute root); `None` otherwise, e.g. for
/// standard input.
fn in_root(root: &Path, payload: &Path) -> Option<String> {
    if payload.as_os_str() == "-" || root.is_absolute() != payload.is_absolute() {
        return None;
    }
    let root = path_clean::clean(root);
    let payload = path_clean::clean(payload);
    let rel = if root == Path::new(".") {
        payload.as_path()
    } else {
        payload.strip_prefix(&root).ok()?
    };
    let s = rel.to_str()?;
    (!s.is_empty() && !s.starts_with("..")).then(|| s.replace('\\', "/"))
}

fn error_reports(args: &VerifyArgs, finding: &Finding) -> Vec<Report> {
    args.payloads
        .iter()
        .map(|p| {
            let mut b = ReportBuilder::new(subject(p), ReportKind::Payload);
            b.push(finding.clone());
            b.finish(false)
        })
        .collect()
}

fn rules_finding(e: &RulesError) -> Finding {
    Finding::new(Code::RulesInvalid, Some(&e.file), e.to_string()).with_detail(
        serde_json::json!({"file": e.file, "pointer": e.pointer, "problem": e.problem}),
    )
}

/// The opened root, its rules and what the report says about them.
struct Audited {
    ws: Workspace,
    evidence: EvidenceRules,
    policy: Policy,
}

fn workspace(args: &VerifyArgs, amb: &dyn Ambient) -> Result<Audited, Box<Finding>> {
    let dir = amb.open_dir(&args.root).map_err(|e| {
        let root = args.root.display().to_string();
        Box::new(Finding::new(
            Code::RootUnavailable,
            Some(&root),
            format!("cannot open the root directory `{root}`: {e}"),
        ))
    })?;
    // docs/threat-model.md#i9: the audited repository does not configure its
    // auditor unless the caller asks for it (`--repo-rules`).
    let opts = WorkspaceOptions {
        rules_file: args.rules.as_deref(),
        user_config: false,
        repo_rules: if args.repo_rules {
            RepoRules::Trusted
        } else {
            RepoRules::Ignore
        },
        on_error: OnError::Fail,
        root_path: Some(&args.root),
    };
    let ws = Workspace::open(amb, dir, &opts).map_err(|e| match e {
        WorkspaceError::RulesFile { path, error } => {
            let name = path.display().to_string();
            Box::new(Finding::new(
                Code::RulesInvalid,
                Some(&name),
                format!("cannot read the rules file `{name}`: {error}"),
            ))
        }
        WorkspaceError::UserConfig(e) | WorkspaceError::Rules(e) => Box::new(rules_finding(&e)),
    })?;
    let repository_rules = if ws.repo_override_applied() {
        Some("applied")
    } else if !args.repo_rules
        && args.repository()
        && ws.dir().symlink_metadata(REPO_OVERRIDE).is_ok()
    {
        // Not read, not applied: only reported, whatever it is.
        Some("ignored")
    } else {
        None
    };
    let rules = ws.rules();
    let evidence = rules
        .family::<EvidenceRules>()
        .map_err(|e| Box::new(rules_finding(&e)))?;
    let policy = Policy {
        digest: rules.digest().to_owned(),
        sources: rules.sources().to_vec(),
        repository_rules,
    };
    Ok(Audited {
        ws,
        evidence,
        policy,
    })
}

fn payload_reports(
    args: &VerifyArgs,
    amb: &dyn Ambient,
    stdin: &mut dyn Read,
    ws: &Audited,
    plan: Option<&PlanGoals>,
    show_progress: bool,
) -> Vec<Report> {
    let root = match ws.ws.dir().try_clone() {
        Err(e) => {
            let f = Finding::new(
                Code::RootUnavailable,
                None,
                format!("cannot use the root directory: {e}"),
            );
            return error_reports(args, &f);
        }
        Ok(d) => match Root::new(d, &ws.evidence) {
            Ok(r) => r,
            Err(e) => return error_reports(args, &rules_finding(&e)),
        },
    };
    let max = root.max_payload_bytes();
    let bar = show_progress.then(super::progress::PayloadBar::new);
    args.payloads
        .iter()
        .map(|p| {
            let name = subject(p);
            let bytes = if p.as_os_str() == "-" {
                ambient::read_capped(&mut *stdin, max)
            } else {
                ambient::read_file(amb, p, max)
            };
            let mut b = ReportBuilder::new(name.clone(), ReportKind::Payload);
            match bytes {
                Ok(bytes) => match evidence::payload::parse(&bytes, max) {
                    Ok(payload) => {
                        let own = in_root(&args.root, p);
                        let opts = VerifyOptions {
                            payload_path: own.as_deref(),
                            plan: plan.map(|p| p as &dyn evidence::PlanContext),
                            ..VerifyOptions::default()
                        };
                        evidence::verify_payload_with_progress(
                            &root,
                            &payload,
                            &name,
                            opts,
                            bar.as_ref().map(|b| b as &dyn evidence::FileProgress),
                        )
                    }
                    Err(f) => {
                        b.push(*f);
                        b.finish(false)
                    }
                },
                Err(ReadError::TooLarge { size }) => {
                    b.push(Finding::new(
                        Code::EvidenceParseError,
                        None,
                        format!("the payload is over the {max}-byte limit (read {size} bytes)"),
                    ));
                    b.finish(false)
                }
                Err(e) => {
                    b.push(Finding::new(
                        Code::PayloadUnreadable,
                        None,
                        format!("cannot read the payload `{name}`: {e}"),
                    ));
                    b.finish(false)
                }
            }
        })
        .collect()
}
