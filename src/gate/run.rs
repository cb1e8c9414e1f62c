//! `gate check` as a library call: the gate document of a [`Workspace`] is
//! validated against the rules its profile (or plan, or surface) selects
//! (docs/gates.md#qg-8). Read-only: it writes nothing and takes no lock.

use std::io::Read;
use std::path::{Path, PathBuf};

use cap_fs_ext::MetadataExt;
use cap_std::fs::Dir;
use serde_json::{Value, json};

use super::surface::{self, RESOLVE_SURFACE, SurfaceInputs};
use super::{GateOutcome, GateScope};
use crate::ambient::{self, Ambient};
use crate::evidence::Root;
use crate::finding::{Code, lexical_code, problem_finding};
use crate::rules::evidence::EvidenceRules;
use crate::rules::gates::GateBook;
use crate::rules::profiles::{ProfileError, Profiles};
use crate::rules::{RuleSet, RulesError};
use crate::sandbox::open::{self, FileChecks};
use crate::sandbox::{PathLimits, RelPath};
use crate::workspace::Workspace;

/// Where the gate document comes from.
pub enum Document<'a> {
    /// Standard input (`-`).
    Stdin(&'a mut dyn Read),
    /// A path relative to the workspace root, or an absolute path below it.
    File(&'a Path),
}

/// Loads the plan context of a check run in one (`--goal-id`): the gate
/// scope and the plan's gate rules. The goal engine supplies it
/// (`goals::check_gate_in_plan`).
pub(crate) type PlanContext<'a> =
    &'a dyn Fn(&Root, &RuleSet) -> Result<(GateScope, String), CannotCheck>;

/// What [`check`] checks against.
pub struct CheckOptions<'a> {
    /// The goal-engine profile (`ulw-loop`, `ultragoal`): evidence root and
    /// default gate rules.
    pub profile: &'a str,
    /// Gate rules named by the caller (`--surface`); `None`: surface resolution.
    pub surface: Option<&'a str>,
}

/// Why the gate could not be checked (exit 2).
pub struct CannotCheck {
    /// The error code, when there is one.
    pub code: Option<Code>,
    /// What went wrong.
    pub message: String,
    /// Structured details.
    pub details: Option<Value>,
}

impl CannotCheck {
    /// A reason without details.
    pub fn new(code: Option<Code>, message: impl Into<String>) -> CannotCheck {
        CannotCheck {
            code,
            message: message.into(),
            details: None,
        }
    }
}

/// Invalid rules.
pub fn rules_error(e: &RulesError) -> CannotCheck {
    CannotCheck {
        code: Some(Code::RulesInvalid),
        message: format!("the rules are invalid: {e}"),
        details: Some(json!({"file": e.file, "pointer": e.pointer, "problem": e.problem})),
    }
}

/// Validates the gate `document` of `ws` as `opts` says; `Err` when it cannot
/// be checked (exit 2 at the command line). The surface marker file is read
/// through `amb`.
pub fn check(
    amb: &dyn Ambient,
    ws: Workspace,
    document: Document<'_>,
    opts: &CheckOptions<'_>,
) -> Result<GateOutcome, CannotCheck> {
    check_with(amb, ws, document, opts, None)
}

/// [`check`], in the plan context `plan` loads when there is one.
pub(crate) fn check_with(
    amb: &dyn Ambient,
    ws: Workspace,
    document: Document<'_>,
    opts: &CheckOptions<'_>,
    plan: Option<PlanContext<'_>>,
) -> Result<GateOutcome, CannotCheck> {
    let (dir, rule_set) = ws.into_parts();
    let book = GateBook::from_rules(&rule_set).map_err(|e| rules_error(&e))?;
    let evidence: EvidenceRules = rule_set.family().map_err(|e| rules_error(&e))?;
    let root = Root::new(dir, &evidence).map_err(|e| rules_error(&e))?;

    let profile = Profiles::lookup(&rule_set, opts.profile).map_err(|e| match e {
        ProfileError::Rules(e) => rules_error(&e),
        ProfileError::Unknown { name } => CannotCheck::new(
            Some(Code::RulesInvalid),
            format!("the rules define no profile `{name}`"),
        ),
    })?;
    // Plan context (`--goal-id`): the plan is read without a lock and
    // without writing; its gate rules apply unless `--surface` names others.
    let plan_context = match plan {
        Some(plan) => Some(plan(&root, &rule_set)?),
        None => None,
    };
    let evidence_root = profile.evidence_root.as_str();
    let gate_final = match &plan_context {
        Some((_, plan_rules)) => plan_rules.as_str(),
        None => profile.gate.final_rules.as_str(),
    };
    let common = book.common();
    let env = ambient::var(amb, &common.surface_resolution.env);
    let marker = if opts.surface.is_none() && gate_final == RESOLVE_SURFACE {
        ambient::read_marker(amb, &common.surface_resolution.marker)
    } else {
        None
    };
    let selected = surface::select(
        gate_final,
        &common.surface_resolution,
        &SurfaceInputs {
            flag: opts.surface,
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
            pointer: format!("/profiles/{}/evidenceRoot", opts.profile),
            problem: p.describe().into(),
        })
    })?;
    let max = common.limits.max_gate_bytes;
    let document = match document {
        Document::Stdin(r) => read_prefix(r, max)
            .map_err(|e| CannotCheck::new(None, format!("cannot read standard input: {e}")))?,
        Document::File(file) => read_document(amb, &root, file, limits, max)?,
    };
    let scope = match plan_context {
        Some((scope, _)) => scope,
        None => GateScope::Standalone { dir: scope_dir },
    };
    Ok(super::validate(&root, rules, &document, &scope))
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
