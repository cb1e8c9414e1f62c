//! `evidence-gate gate check` (docs/gates.md#qg-8): validates one gate
//! document, read-only, and exits 0 pass, 1 fail, 2 could not check.

use std::io::Read;
use std::path::{Path, PathBuf};

use cap_fs_ext::MetadataExt;
use cap_std::fs::Dir;
use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::render::printable;
use super::{EXIT_USAGE, Io};
use crate::ambient::{self, Ambient};
use crate::evidence::Root;
use crate::finding::Code;
use crate::finding::{lexical_code, problem_finding};
use crate::gate::surface::{self, RESOLVE_SURFACE, SurfaceInputs};
use crate::gate::{self, GateOutcome, GateScope};
use crate::rules::evidence::EvidenceRules;
use crate::rules::gates::GateBook;
use crate::rules::profiles::Profiles;
use crate::rules::{RulesError, load_workspace};
use crate::sandbox::open::{self, FileChecks};
use crate::sandbox::{PathLimits, RelPath};

#[derive(Args, Debug)]
pub(crate) struct GateArgs {
    #[command(subcommand)]
    command: GateCommand,
}

#[derive(Subcommand, Debug)]
enum GateCommand {
    /// Validate a quality-gate document (read-only; writes nothing, takes no lock).
    #[command(
        after_help = "Exit status: 0 pass (warnings allowed), 1 fail, 2 could not check \
                            (document unreadable, rules invalid, usage error, unverifiable)."
    )]
    Check(CheckArgs),
}

/// The goal-engine profile whose evidence root and gate rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Profile {
    /// `.omo/evidence`, surface-resolved five-section gate.
    UlwLoop,
    /// `.omagy/evidence`, the Ultragoal gate.
    Ultragoal,
}

impl Profile {
    /// The profile file's name (`rules/profiles/<name>.json`).
    fn name(self) -> &'static str {
        match self {
            Profile::UlwLoop => "ulw-loop",
            Profile::Ultragoal => "ultragoal",
        }
    }
}

#[derive(Args, Debug)]
struct CheckArgs {
    /// The gate document, relative to the repository (the current directory), or `-` for
    /// standard input.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// Gate rules to use (`lazycodex`, `omo-senpi`, `ultragoal`, or a name the repository
    /// rules add); default: the profile's gate, with surface resolution.
    #[arg(long, value_name = "NAME")]
    surface: Option<String>,
    /// Goal-engine profile (evidence root and default gate rules).
    #[arg(long, value_enum, default_value_t = Profile::UlwLoop)]
    profile: Profile,
    /// Session whose plan `--goal-id` refers to.
    #[arg(long, value_name = "SID")]
    session_id: Option<String>,
    /// Check in the plan context of this goal (scope, attempt directory, criteria).
    #[arg(long, value_name = "ID")]
    goal_id: Option<String>,
    /// Extra rules file, applied after the repository's `.evidence-gate/rules.json`.
    #[arg(long, value_name = "FILE")]
    rules: Option<PathBuf>,
    /// Print one JSON object instead of text (the same as `--format json`).
    #[arg(long)]
    json: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = GateFormat::Text)]
    format: GateFormat,
}

/// `gate check --format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GateFormat {
    /// Lines for people.
    Text,
    /// One JSON object.
    Json,
}

impl CheckArgs {
    /// Whether the answer is JSON (`--json` or `--format json`).
    fn wants_json(&self) -> bool {
        self.json || self.format == GateFormat::Json
    }
}

/// Why the gate could not be checked (exit 2).
struct CannotCheck {
    code: Option<Code>,
    message: String,
    details: Option<Value>,
}

impl CannotCheck {
    fn new(code: Option<Code>, message: impl Into<String>) -> CannotCheck {
        CannotCheck {
            code,
            message: message.into(),
            details: None,
        }
    }
}

fn rules_error(e: &RulesError) -> CannotCheck {
    CannotCheck {
        code: Some(Code::RulesInvalid),
        message: format!("the rules are invalid: {e}"),
        details: Some(json!({"file": e.file, "pointer": e.pointer, "problem": e.problem})),
    }
}

pub(crate) fn run(args: &GateArgs, amb: &dyn Ambient, io: &mut Io<'_>) -> u8 {
    let GateCommand::Check(check) = &args.command;
    match run_check(check, amb, io) {
        Ok(outcome) => emit(check.wants_json(), &outcome, io),
        Err(e) => {
            if check.wants_json() {
                let mut error = json!({"message": e.message});
                if let Some(code) = e.code {
                    error["code"] = json!(code.name());
                }
                if let Some(d) = e.details {
                    error["details"] = d;
                }
                let v = json!({"ok": false, "verdict": "unverifiable", "error": error});
                let _ = writeln!(io.stdout, "{}", pretty(&v));
            } else {
                let code = e.code.map(|c| format!("{} ", c.name())).unwrap_or_default();
                let _ = writeln!(io.stderr, "error: {code}{}", e.message);
            }
            EXIT_USAGE
        }
    }
}

fn run_check(
    args: &CheckArgs,
    amb: &dyn Ambient,
    io: &mut Io<'_>,
) -> Result<GateOutcome, CannotCheck> {
    let dir = amb.open_dir(Path::new(".")).map_err(|e| {
        CannotCheck::new(
            Some(Code::RootUnavailable),
            format!("cannot open the repository (the current directory): {e}"),
        )
    })?;
    let extra = match &args.rules {
        Some(path) => Some(
            ambient::read_file(amb, path, 4 * 1024 * 1024)
                .map(|bytes| (path.display().to_string(), bytes))
                .map_err(|e| {
                    CannotCheck::new(
                        Some(Code::RulesInvalid),
                        format!("cannot read the rules file `{}`: {e}", path.display()),
                    )
                })?,
        ),
        None => None,
    };
    let mut owned: Vec<(String, Vec<u8>)> = crate::rules::read_user_config(amb)
        .map_err(|e| rules_error(&e))?
        .into_iter()
        .collect();
    owned.extend(extra);
    let rule_set =
        load_workspace(&dir, &crate::rules::layers(&owned)).map_err(|e| rules_error(&e))?;
    let book = GateBook::from_rules(&rule_set).map_err(|e| rules_error(&e))?;
    let evidence: EvidenceRules = rule_set.family().map_err(|e| rules_error(&e))?;
    let root = Root::new(dir, &evidence).map_err(|e| rules_error(&e))?;

    let profiles: Profiles = rule_set.family().map_err(|e| rules_error(&e))?;
    let profile = profiles.0.get(args.profile.name()).ok_or_else(|| {
        CannotCheck::new(
            Some(Code::RulesInvalid),
            format!("the rules define no profile `{}`", args.profile.name()),
        )
    })?;
    // Plan context (`--goal-id`): the plan is read without a lock and
    // without writing; its gate rules apply unless `--surface` names others.
    let plan_context = match &args.goal_id {
        Some(goal) => Some(plan_context(args, goal, &root, &rule_set, amb)?),
        None => None,
    };
    let evidence_root = profile.evidence_root.as_str();
    let gate_final = match &plan_context {
        Some((_, plan_rules)) => plan_rules.as_str(),
        None => profile.gate.final_rules.as_str(),
    };
    let common = book.common();
    let env = ambient::var(amb, &common.surface_resolution.env);
    let marker = if args.surface.is_none() && gate_final == RESOLVE_SURFACE {
        super::marker::read_marker(amb, &common.surface_resolution.marker)
    } else {
        None
    };
    let selected = surface::select(
        gate_final,
        &common.surface_resolution,
        &SurfaceInputs {
            flag: args.surface.as_deref(),
            env: env.as_deref(),
            repo: book.repo_surface(),
            marker: marker.as_deref(),
        },
    );
    let Some(rules) = book.get(&selected.name) else {
        let known: Vec<&str> = book.names().collect();
        return Err(CannotCheck::new(
            None,
            format!(
                "unknown gate rules `{}`; known: {}",
                selected.name,
                known.join(", ")
            ),
        ));
    };
    let limits = evidence.limits.path_limits();
    // The profile family validates its paths with default limits; the
    // evidence limits may be stricter, so this parse can still fail.
    let scope_dir = RelPath::parse(evidence_root, limits).map_err(|p| {
        rules_error(&RulesError {
            file: "rules".into(),
            pointer: format!("/profiles/{}/evidenceRoot", args.profile.name()),
            problem: p.describe().into(),
        })
    })?;
    let max = common.limits.max_gate_bytes;
    let document = if args.file.as_os_str() == "-" {
        read_prefix(&mut *io.stdin, max)
            .map_err(|e| CannotCheck::new(None, format!("cannot read standard input: {e}")))?
    } else {
        read_document(amb, &root, &args.file, limits, max)?
    };
    let scope = match plan_context {
        Some((scope, _)) => scope,
        None => GateScope::Standalone { dir: scope_dir },
    };
    Ok(gate::validate(&root, rules, &document, &scope))
}

/// Loads the plan context of `--goal-id`; a missing or corrupt plan, or an
/// unknown goal, cannot be checked (exit 2).
fn plan_context(
    args: &CheckArgs,
    goal: &str,
    root: &Root,
    rules: &crate::rules::RuleSet,
    amb: &dyn Ambient,
) -> Result<(GateScope, String), CannotCheck> {
    let dir = root.dir().try_clone().map_err(|e| {
        CannotCheck::new(
            Some(Code::IoError),
            format!("cannot reopen the repository: {e}"),
        )
    })?;
    let explicit = args.session_id.as_deref().map(Some);
    let goal_error = |e: crate::goals::GoalError| CannotCheck {
        code: None,
        message: format!("{}: {}", e.code(), e.message),
        details: Some(json!({"code": e.code(), "details": e.details()})),
    };
    let engine = super::goals::build_engine(
        args.profile.name(),
        explicit,
        None,
        (dir, std::path::Path::new(".")),
        rules,
        amb,
    )
    .map_err(goal_error)?;
    crate::goals::gate::check_context(&engine, goal).map_err(goal_error)
}

/// Reads at most `max + 1` bytes, so an oversized document is seen as such
/// by the validator (`GATE_JSON_INVALID`) without reading it all.
fn read_prefix(r: &mut dyn Read, max: u64) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    r.take(max.saturating_add(1)).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Reads the gate document through the sandbox: inside the repository,
/// no symlink at any component, a regular file.
fn read_document(
    amb: &dyn Ambient,
    root: &Root,
    file: &Path,
    limits: PathLimits,
    max: u64,
) -> Result<Vec<u8>, CannotCheck> {
    let shown = file.display().to_string();
    let cannot = |code: Code, why: String| {
        CannotCheck::new(
            Some(code),
            format!("cannot read the gate document `{shown}`: {why}"),
        )
    };
    let relative: PathBuf = if file.is_absolute() {
        match below_root(amb, root.dir(), file) {
            Some(rest) => rest,
            None => {
                return Err(cannot(
                    Code::PathAbsolute,
                    "it lies outside the repository (the current directory); pass `-` to read it from standard input".into(),
                ));
            }
        }
    } else {
        file.to_path_buf()
    };
    let text = relative
        .to_str()
        .ok_or_else(|| cannot(Code::PathControlChar, "the path is not valid UTF-8".into()))?;
    let cleaned = path_clean::clean(text);
    let cleaned = cleaned.to_str().unwrap_or(text);
    let path = RelPath::parse(cleaned, limits)
        .map_err(|p| cannot(lexical_code(p), p.describe().to_owned()))?;
    let to_cannot = |p: &crate::sandbox::FileProblem| {
        let (code, why) = problem_finding(p);
        cannot(code, why)
    };
    let (mut handle, meta) = open::open_leaf(root.dir(), &path).map_err(|p| to_cannot(&p))?;
    let checks = FileChecks {
        reject_empty: false,
        max_bytes: u64::MAX,
        ..root.file_checks()
    };
    open::check_handle(&meta, &checks).map_err(|p| to_cannot(&p))?;
    read_prefix(&mut handle, max).map_err(|e| cannot(Code::IoError, e.to_string()))
}

/// The part of the absolute `file` below its nearest ancestor that is the
/// repository directory itself, compared by device and inode: a textual
/// prefix test against the physical working directory would reject the
/// logical `$PWD` of a shell that entered the repository through a symlink.
fn below_root(amb: &dyn Ambient, root: &Dir, file: &Path) -> Option<PathBuf> {
    let want = root.dir_metadata().ok()?;
    file.ancestors().skip(1).find_map(|ancestor| {
        let m = amb.open_dir(ancestor).ok()?.dir_metadata().ok()?;
        if m.dev() == want.dev() && m.ino() == want.ino() {
            file.strip_prefix(ancestor).ok().map(Path::to_path_buf)
        } else {
            None
        }
    })
}

fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).expect("JSON values serialise")
}

fn emit(json_output: bool, outcome: &GateOutcome, io: &mut Io<'_>) -> u8 {
    let verdict = outcome.verdict();
    let scope = outcome.scope();
    let text = if json_output {
        let files: Vec<Value> = outcome
            .files()
            .iter()
            .map(|f| json!({"path": f.path, "size": f.size, "sha256": f.sha256}))
            .collect();
        let v = json!({
            "ok": verdict == gate::GateVerdict::Pass,
            "verdict": verdict,
            "rules": outcome.rules(),
            "family": outcome.family(),
            "scope": scope,
            "findings": outcome.findings(),
            "files": files,
        });
        format!("{}\n", pretty(&v))
    } else {
        let kind = scope["kind"].as_str().unwrap_or("none");
        let id = scope["batchId"]
            .as_str()
            .map(|b| format!(" {}", printable(b)))
            .unwrap_or_default();
        let mut out = format!(
            "gate check: {} ({}, scope {kind}{id})\n",
            verdict.label(),
            printable(outcome.rules())
        );
        for f in outcome.findings() {
            let severity = serde_json::to_value(f.severity).unwrap_or_default();
            out.push_str(&format!(
                "{} {} {}: {}\n",
                severity.as_str().unwrap_or("error"),
                f.code,
                printable(&f.field),
                printable(&f.message)
            ));
        }
        for f in outcome.files() {
            out.push_str(&format!(
                "checked {} ({} bytes, sha256 {})\n",
                printable(&f.path),
                f.size,
                f.sha256
            ));
        }
        out
    };
    if io
        .stdout
        .write_all(text.as_bytes())
        .and_then(|()| io.stdout.flush())
        .is_err()
    {
        return EXIT_USAGE;
    }
    verdict.exit_code()
}
