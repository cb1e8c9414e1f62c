//! `create-goals` (docs/differences.md#r-3 with docs/state-formats.md#ge-2, docs/engine.md#ge-4).

use serde_json::{Map, Value, json};

use super::entry;
use super::outcome::LedgerHead;
use crate::goals::error::{ErrorKind, GoalError};
use crate::goals::journal::LedgerKind;
use crate::goals::plan::{self, Mode, Plan};
use crate::goals::txn::{Committed, OnMismatch, Write};
use crate::goals::{Engine, batches, brief, lifecycle, state, workflow};

/// A `create-goals` request.
#[derive(Debug, Clone)]
pub struct CreateRequest {
    /// The brief text.
    pub brief: String,
    /// Explicit goals (`--goal "Title::Objective"`, profile `brief/goalFlag`):
    /// when non-empty they replace the goals derived from the brief.
    pub goals: Vec<brief::Candidate>,
    /// Host-goal mode.
    pub mode: Mode,
    /// `--validation-batch-json`, parsed.
    pub batches: Option<Value>,
    /// `--force`.
    pub force: bool,
    /// `--allow-workflow-overlap <rationale>`.
    pub allow_overlap: Option<String>,
    /// `--handoff-from <workflow>`.
    pub handoff_from: Option<String>,
}

/// The result of `create-goals`.
#[derive(Debug)]
pub struct CreateOutcome {
    /// The new plan.
    pub plan: Plan,
    /// What was written.
    pub committed: Committed,
    /// Repo-relative archive directory of the previous run.
    pub archived: Option<String>,
    /// The workflow registration (docs/engine.md#ge-9).
    pub workflow: workflow::Registration,
}

impl CreateOutcome {
    /// `{lastSeq, head}`.
    pub fn ledger(&self) -> LedgerHead {
        LedgerHead::from(&self.committed.head)
    }
}

/// Creates the plan.
pub fn run(engine: &Engine, req: CreateRequest) -> Result<CreateOutcome, GoalError> {
    let p = &engine.profile;
    let (_, now) = engine.now();
    let candidates = if req.goals.is_empty() {
        brief::derive(&req.brief, &p.brief)?
    } else {
        req.goals.clone()
    };
    let mut goals = Vec::with_capacity(candidates.len());
    for (i, c) in candidates.iter().enumerate() {
        goals.push(Value::Object(brief::new_goal(
            i,
            &c.title,
            &c.objective,
            p.criteria.seed,
            &now,
        )?));
    }
    let ids: Vec<String> = goals
        .iter()
        .filter_map(|g| g["id"].as_str().map(str::to_owned))
        .collect();
    let gate_rules = crate::goals::gate::rules_for_new_plan(engine)?;
    let parsed_batches = req
        .batches
        .as_ref()
        .map(|b| batches::parse(b, &ids))
        .transpose()?;
    workflow::check_handoff(engine, req.handoff_from.as_deref(), &p.workflow.name)?;

    let mut locked = engine.lock("create-goals")?;
    let goals_path = engine.paths.goals();
    let existing = locked.plan_exists()?;
    if existing && !req.force {
        let old = locked.read_plan()?;
        let complete = lifecycle::run_complete(&old);
        let (kind, message) = if complete {
            (
                ErrorKind::PlanExistsComplete {
                    goals_path: goals_path.clone(),
                },
                format!(
                    "The existing {} aggregate is already complete at {goals_path}. Start a new run with `{} create-goals --session-id <new-id> ...`. Use --force only when you intend to archive the completed run and start over.",
                    p.display_name, p.command_prefix
                ),
            )
        } else {
            (
                ErrorKind::PlanExists {
                    goals_path: goals_path.clone(),
                },
                format!(
                    "Refusing to overwrite existing {goals_path}; pass --force to recreate it."
                ),
            )
        };
        return Err(GoalError::new(kind, message));
    }
    let archiving = existing || locked.ledger_exists();
    let registration = workflow::register(
        engine,
        &workflow::Start {
            workflow: &p.workflow.name,
            role: &p.workflow.role,
            state_dir: Some(&engine.paths.dir),
            registered_by: workflow::BY_ENGINE,
            handoff_from: req.handoff_from.as_deref(),
            allow_overlap: req.allow_overlap.as_deref(),
            note: None,
            own_reason: if archiving { "archived" } else { "released" },
        },
        &now,
    )?;
    let workflow_json = registration.to_json();
    let mut replaced = None;
    let mut archived = None;
    if archiving {
        let old = if existing {
            locked.read_plan().ok()
        } else {
            None
        };
        let assessment = locked.reconcile(old.as_ref(), OnMismatch::Ignore)?;
        let consistency = if existing && old.is_none() {
            "mismatch"
        } else {
            assessment.consistency.as_str()
        };
        let old_rev = old.as_ref().map_or(0, Plan::revision);
        // A tampered run is archived, never adopted: its binding verdict
        // travels with the new run (docs/threat-model.md#i7).
        let previous_binding = locked
            .binding
            .as_ref()
            .map(|b| json!({"state": b.state.as_str(), "codes": b.codes()}));
        let stamp = crate::time::compact_stamp(std::time::SystemTime::now());
        let (rel, head) = locked.archive(old_rev, &stamp)?;
        // `archive` is state-relative; `previousHead` is the archived
        // ledger's last record (`plan_archived`), which the CI audit checks.
        let previous_head = head.as_ref().map_or(
            Value::Null,
            |h| json!({"seq": h.last_seq, "sha256": h.last_hash}),
        );
        let mut r = json!({
            "archive": rel,
            "previousHead": previous_head,
            "previousRevision": old_rev,
            "previousLastSeq": head.as_ref().map_or(0, |h| h.last_seq),
            "previousConsistency": consistency,
        });
        if let Some(b) = previous_binding {
            r["previousBinding"] = b;
        }
        replaced = Some(r);
        archived = Some(engine.paths.file(&rel));
    }

    let mut brief_text = req.brief.clone();
    if !brief_text.ends_with('\n') {
        brief_text.push('\n');
    }
    locked.write_file(state::BRIEF, brief_text.as_bytes())?;

    let count = goals.len();
    let mut doc = Map::new();
    doc.insert("version".into(), json!(1));
    doc.insert("evidenceLayoutVersion".into(), json!(2));
    doc.insert("createdAt".into(), json!(now));
    doc.insert("updatedAt".into(), json!(now));
    doc.insert("briefPath".into(), json!(engine.paths.brief()));
    doc.insert("goalsPath".into(), json!(goals_path));
    doc.insert("ledgerPath".into(), json!(engine.paths.ledger()));
    doc.insert("codexGoalMode".into(), json!(req.mode.as_str()));
    doc.insert("goals".into(), Value::Array(goals));
    if let Some(b) = parsed_batches {
        doc.insert("validationBatches".into(), Value::Array(b));
    }
    if req.mode == Mode::Aggregate {
        if !engine.paths.prefix.is_empty() {
            doc.insert("statePathPrefix".into(), json!(engine.paths.prefix));
        }
        doc.insert(
            "codexObjective".into(),
            json!(plan::objective_for(p, &engine.paths)),
        );
    }
    doc.insert("revision".into(), json!(0));
    doc.insert("profile".into(), json!(p.name));
    doc.insert("sessionId".into(), json!(engine.paths.sid));
    doc.insert("gateRules".into(), json!(gate_rules));
    for (k, v) in &p.plan_markers {
        doc.insert(k.clone(), v.clone());
    }
    let plan = Plan::from_doc(doc);
    let mut created = entry(&now, LedgerKind::PlanCreated, None);
    created.insert("message".into(), json!(format!("{count} goal(s) created")));
    created.insert("workflow".into(), workflow_json);
    if let Some(r) = replaced {
        created.insert("replaced".into(), r);
    }
    let mut committed = locked.commit(Write::Plan(Box::new(plan)), vec![created])?;
    let plan = committed.plan.take().expect("plan written");
    Ok(CreateOutcome {
        plan,
        committed,
        archived,
        workflow: registration,
    })
}
