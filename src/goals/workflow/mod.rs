//! Workflow overlap (docs/engine.md#ge-9): a per-session registry of the
//! workflows that own the session, consulted by `create-goals` and the
//! `workflow` subcommand, so that two persistence owners (say `ralph` and
//! an Ultragoal run) never drive one session at once.
//!
//! Lock order: a command may take the registry lock while it holds the
//! state lock, never the other way round, so the two cannot deadlock.

pub(crate) mod registry;
/// The workflow rule family, defined in [`crate::rules::workflow`].
pub(crate) use crate::rules::workflow as rules;

use cap_std::fs::Dir;
use serde_json::{Value, json};

pub(crate) use registry::{Entry, Location, Registry};
pub(crate) use rules::{Role, Rule, WorkflowRules};

use super::Engine;
use super::error::{ErrorKind, GoalError};
use super::plan::Plan;
use super::state::{self, ReadOutcome};
use crate::sandbox::{PathLimits, RelPath};

/// Registered by this engine.
pub(crate) const BY_ENGINE: &str = "evidence-gate";
/// Registered through `workflow register`.
pub(crate) const BY_EXTERNAL: &str = "external";

/// A workflow asking to start.
#[derive(Debug, Clone)]
pub(crate) struct Start<'a> {
    /// Its name.
    pub workflow: &'a str,
    /// Its role.
    pub role: &'a str,
    /// Its state directory (engine registrations).
    pub state_dir: Option<&'a str>,
    /// [`BY_ENGINE`] or [`BY_EXTERNAL`].
    pub registered_by: &'a str,
    /// `--handoff-from`.
    pub handoff_from: Option<&'a str>,
    /// `--allow-workflow-overlap <rationale>`.
    pub allow_overlap: Option<&'a str>,
    /// `--note`.
    pub note: Option<&'a str>,
    /// `releaseReason` of this workflow's own previous entry (`archived`
    /// when the run it registered is being archived).
    pub own_reason: &'a str,
}

/// What a registration did.
#[derive(Debug, Clone)]
pub struct Registration {
    /// The new active entry.
    pub registered: Entry,
    /// The workflow it took over from.
    pub handoff_from: Option<String>,
    /// `{rationale, active}` when an overlap was allowed by the flag.
    pub overlap_override: Option<Value>,
    /// Entries moved to `history` (stale, own, handoff).
    pub released: Vec<Entry>,
    /// Repo-relative path of the registry.
    pub path: String,
}

impl Registration {
    /// `plan_created.workflow` / the JSON `workflow` member.
    pub(crate) fn to_json(&self) -> Value {
        let mut v = json!({
            "registered": self.registered,
            "registry": self.path,
        });
        if let Some(h) = &self.handoff_from {
            v["handoffFrom"] = json!(h);
        }
        if let Some(o) = &self.overlap_override {
            v["overlapOverride"] = o.clone();
        }
        v
    }
}

/// How a workflow would fare if it started now.
#[derive(Debug, Clone)]
pub(crate) struct Assessment {
    /// Active entries that deny it.
    pub denied: Vec<Entry>,
    /// Active entries it would take over from (approved handoffs).
    pub handoffs: Vec<Entry>,
    /// Entries that are stale (their run has no plan or is complete).
    pub stale: Vec<Entry>,
    /// The relation or default that denied it first.
    pub rule: Option<String>,
}

impl Assessment {
    /// Nothing denies the start.
    pub(crate) fn allowed(&self) -> bool {
        self.denied.is_empty()
    }
}

/// The session's registry location.
pub(crate) fn location(engine: &Engine) -> Location {
    Location::new(
        &engine.workflows().registry_dir,
        engine.paths.sid.as_deref(),
    )
}

/// An engine registration is stale when its state directory holds no plan
/// or a complete one. Anything this cannot read counts as live.
fn stale(root: &Dir, e: &Entry) -> bool {
    if e.registered_by != BY_ENGINE {
        return false;
    }
    let Some(dir) = e.state_dir.as_deref() else {
        return false;
    };
    if RelPath::parse(dir, PathLimits::default()).is_err() {
        return false;
    }
    let d = match state::open_chain(root, dir, false) {
        Ok(Some(d)) => d,
        Ok(None) => return true,
        Err(_) => return false,
    };
    let bytes = match state::read_file(&d, state::GOALS, dir, 64 * 1024 * 1024) {
        Ok(None) => return true,
        Ok(Some(ReadOutcome::Bytes(b))) => b,
        _ => return false,
    };
    let Ok(Value::Object(doc)) = crate::json::parse_strict(&bytes) else {
        return false;
    };
    let well_formed = doc.get("version").and_then(Value::as_u64) == Some(1)
        && doc
            .get("goals")
            .and_then(Value::as_array)
            .is_some_and(|g| g.iter().all(|g| g.get("id").is_some_and(Value::is_string)));
    well_formed && super::lifecycle::run_complete(&Plan::from_doc(doc))
}

fn own(e: &Entry, s: &Start<'_>) -> bool {
    e.workflow == s.workflow && e.state_dir.as_deref() == s.state_dir
}

/// Steps 1–2 of docs/engine.md#ge-9 without writing: stale entries, and the relation of
/// every other active entry to the starting workflow.
pub(crate) fn assess(engine: &Engine, reg: &Registry, s: &Start<'_>) -> Assessment {
    let rules = engine.workflows();
    let mut a = Assessment {
        denied: Vec::new(),
        handoffs: Vec::new(),
        stale: Vec::new(),
        rule: None,
    };
    for e in &reg.active {
        if stale(engine.root(), e) {
            a.stale.push(e.clone());
            continue;
        }
        if own(e, s) {
            continue;
        }
        let v = rules.relation(&e.workflow, s.workflow);
        match v.rule {
            Rule::Allow => {}
            Rule::Handoff => a.handoffs.push(e.clone()),
            Rule::Deny => {
                a.rule.get_or_insert(v.because);
                a.denied.push(e.clone());
            }
        }
    }
    a
}

/// `ULW_LOOP_WORKFLOW_OVERLAP_DENIED` for an assessment.
pub(crate) fn denied_error(engine: &Engine, s: &Start<'_>, a: &Assessment) -> GoalError {
    let names: Vec<&str> = a.denied.iter().map(|e| e.workflow.as_str()).collect();
    let rule = a.rule.clone().unwrap_or_default();
    let sid = engine
        .paths
        .sid
        .as_ref()
        .map(|s| format!(" --session-id {s}"))
        .unwrap_or_default();
    GoalError::new(
        ErrorKind::WorkflowOverlapDenied {
            details: json!({
                "starting": s.workflow,
                "active": a.denied.iter().map(Entry::brief).collect::<Vec<_>>(),
                "rule": rule,
                "override": "--allow-workflow-overlap",
            }),
        },
        format!(
            "Cannot start {}: {} {} active in this session ({rule}). Finish or release it first (`{} workflow{sid} release --workflow {}`), or pass --allow-workflow-overlap \"<rationale>\" to run both deliberately.",
            s.workflow,
            names.join(", "),
            if names.len() == 1 { "is" } else { "are" },
            engine.profile.command_prefix,
            names.first().copied().unwrap_or_default()
        ),
    )
}

/// `--handoff-from <from>` must name an approved handoff into `to`
/// (`ULW_LOOP_ARGUMENT_CONFLICT` otherwise).
pub(crate) fn check_handoff(
    engine: &Engine,
    from: Option<&str>,
    to: &str,
) -> Result<(), GoalError> {
    match from {
        Some(f) if !engine.workflows().is_handoff(f, to) => Err(GoalError::conflict(
            vec!["--handoff-from".into()],
            &format!("{f} -> {to} is not an approved handoff in the workflow rules"),
        )),
        _ => Ok(()),
    }
}

/// Registers a starting workflow (docs/engine.md#ge-9 steps 1–4) under the registry lock.
pub(crate) fn register(
    engine: &Engine,
    s: &Start<'_>,
    now: &str,
) -> Result<Registration, GoalError> {
    check_handoff(engine, s.handoff_from, s.workflow)?;
    let loc = location(engine);
    let lock = loc.lock(engine.root(), engine.lock_timeout(), "workflow register")?;
    let mut reg = loc.load(engine.root(), engine.profile.limits.max_input_bytes)?;
    let a = assess(engine, &reg, s);
    if !a.allowed() && s.allow_overlap.is_none() {
        return Err(denied_error(engine, s, &a));
    }
    let is_stale = |e: &Entry| a.stale.iter().any(|x| x == e);
    let mut released = reg.release_where(is_stale, "stale", None, now);
    released.extend(reg.release_where(|e| own(e, s), s.own_reason, None, now));
    let handed: Vec<Entry> = reg.release_where(|e| a.handoffs.contains(e), "handoff", None, now);
    let handoff_from = s
        .handoff_from
        .map(str::to_owned)
        .or_else(|| handed.first().map(|e| e.workflow.clone()));
    released.extend(handed);
    let mut entry = Entry::new(s.workflow, s.role, s.state_dir, s.registered_by, now);
    entry.handoff_from = handoff_from.clone();
    entry.note = s.note.map(str::to_owned);
    let overlap_override = s.allow_overlap.filter(|_| !a.allowed()).map(|rationale| {
        json!({
            "rationale": rationale,
            "active": a.denied.iter().map(Entry::brief).collect::<Vec<_>>(),
        })
    });
    reg.active.push(entry.clone());
    loc.save(engine.root(), &reg)?;
    lock.release()
        .map_err(|e| GoalError::io(&format!("{}/{}", loc.dir, registry::LOCK), "release", &e))?;
    Ok(Registration {
        registered: entry,
        handoff_from,
        overlap_override,
        released,
        path: loc.display(),
    })
}

/// Moves the active entries `pick` selects to `history` under the lock;
/// writes only when something was released.
pub(crate) fn release(
    engine: &Engine,
    pick: &dyn Fn(&Entry) -> bool,
    reason: &str,
    rationale: Option<&str>,
    now: &str,
) -> Result<Vec<Entry>, GoalError> {
    let loc = location(engine);
    let lock = loc.lock(engine.root(), engine.lock_timeout(), "workflow release")?;
    let mut reg = loc.load(engine.root(), engine.profile.limits.max_input_bytes)?;
    let released = reg.release_where(pick, reason, rationale, now);
    if !released.is_empty() {
        loc.save(engine.root(), &reg)?;
    }
    lock.release()
        .map_err(|e| GoalError::io(&format!("{}/{}", loc.dir, registry::LOCK), "release", &e))?;
    Ok(released)
}

/// After the run-final checkpoint: this run's registration goes to
/// `history` as `completed`.
pub(crate) fn complete_own(engine: &Engine, now: &str) -> Result<Vec<Entry>, GoalError> {
    let name = engine.profile.workflow.name.clone();
    let dir = engine.paths.dir.clone();
    release(
        engine,
        &|e: &Entry| e.workflow == name && e.state_dir.as_deref() == Some(dir.as_str()),
        "completed",
        None,
        now,
    )
}
