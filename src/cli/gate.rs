//! `evidence-gate gate check` (docs/gates.md#qg-8): validates one gate
//! document, read-only, and exits 0 pass, 1 fail, 2 could not check.

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand, ValueEnum};
use serde_json::{Value, json};

use super::render::printable;
use super::{EXIT_USAGE, Io};
use crate::ambient::Ambient;
use crate::finding::Code;
use crate::gate::run::{CannotCheck, CheckOptions, Document, rules_error};
use crate::gate::{self, GateOutcome};
use crate::workspace::{OnError, RepoRules, Workspace, WorkspaceError, WorkspaceOptions};

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
    let opts = WorkspaceOptions {
        rules_file: args.rules.as_deref(),
        user_config: true,
        repo_rules: RepoRules::Tighten,
        on_error: OnError::Fail,
        root_path: Some(Path::new(".")),
    };
    let ws = Workspace::open(amb, dir, &opts).map_err(|e| match e {
        WorkspaceError::RulesFile { path, error } => CannotCheck::new(
            Some(Code::RulesInvalid),
            format!("cannot read the rules file `{}`: {error}", path.display()),
        ),
        WorkspaceError::UserConfig(e) | WorkspaceError::Rules(e) => rules_error(&e),
    })?;
    let opts = CheckOptions {
        profile: args.profile.name(),
        surface: args.surface.as_deref(),
    };
    let document = if args.file.as_os_str() == "-" {
        Document::Stdin(&mut *io.stdin)
    } else {
        Document::File(&args.file)
    };
    match &args.goal_id {
        // The plan's context (`--goal-id`) comes from the goal engine.
        Some(goal) => crate::goals::check_gate_in_plan(
            amb,
            ws,
            Path::new("."),
            document,
            &opts,
            goal,
            args.session_id.as_deref(),
        ),
        None => gate::run::check(amb, ws, document, &opts),
    }
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
