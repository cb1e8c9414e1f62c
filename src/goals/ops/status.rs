//! `status` (read-only, docs/state-formats.md#ge-2, docs/engine.md#ge-4) and `criteria`'s sibling
//! reporting helpers.

use serde::Serialize;
use serde_json::Value;

use crate::goals::error::GoalError;
use crate::goals::hostgoal::{self, Expect, HostStatus};
use crate::goals::index;
use crate::goals::input::Loaded;
use crate::goals::plan::{self, CriterionStatus, Goal, GoalStatus, Mode, Overlay, Plan};
use crate::goals::summary::{self, Summary};
use crate::goals::txn::{self, Consistency};
use crate::goals::{Engine, handoff, lifecycle, state, stop_view};

/// The result of `status`.
#[derive(Debug)]
pub struct StatusOutcome {
    /// The plan as read (with the in-memory legacy migration).
    pub plan: Plan,
    /// Goal and criteria counts.
    pub summary: Summary,
    /// The active goal's attempt directory.
    pub current_attempt_dir: Option<String>,
    /// The ledger as found.
    pub ledger: StatusLedger,
    /// Plan/ledger agreement.
    pub consistency: Consistency,
    /// What to run next.
    pub next_actions: Vec<NextAction>,
    /// Reconciliation of a supplied snapshot.
    pub host_goal: Option<HostGoalCheck>,
    /// Plan markers, for profiles that have them.
    pub adapter: Option<PlanMarkers>,
    /// Completion-blocking goals when nothing can be scheduled.
    pub stalled: Option<Vec<String>>,
    /// The plan's binding to its ledger (docs/threat-model.md#i7).
    pub binding: crate::goals::binding::Binding,
    /// How the plan was read.
    pub plan_read: PlanRead,
}

pub use crate::goals::plan::PlanRead;

/// The ledger part of `status` (with [`StatusOutcome::consistency`] and
/// [`StatusOutcome::binding`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusLedger {
    /// Number of complete records.
    pub records: u64,
    /// `seq` of the last chained record (0: none).
    pub last_seq: u64,
    /// SHA-256 of the last complete record.
    pub head: Option<String>,
    /// Another process holds the mutation lock.
    pub mutation_in_progress: bool,
    /// An interrupted `create-goals --force` awaits `repair`.
    pub force_switch_pending: Option<ForceSwitchPending>,
}

/// An interrupted `create-goals --force` (txn::switch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ForceSwitchPending {
    /// Where the replaced run is archived.
    pub archive: String,
    /// The command that finishes or rolls back the switch.
    pub resolved_by: String,
}

/// A suggested command line and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextAction {
    /// The command line.
    pub command: String,
    /// Why.
    pub reason: String,
}

/// The reconciliation of a supplied host-goal snapshot with the active goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HostGoalCheck {
    /// No errors.
    pub ok: bool,
    /// The active goal (none: nothing to reconcile with).
    pub goal_id: Option<String>,
    /// Error sentences.
    pub errors: Vec<String>,
    /// Warning sentences.
    pub warnings: Vec<String>,
    /// The objective a complete checkpoint of the active goal expects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_objective: Option<String>,
    /// The snapshot's objective.
    pub actual_objective: Option<String>,
    /// The snapshot's normalised status.
    #[serde(serialize_with = "host_status")]
    pub actual_status: HostStatus,
}

fn host_status<S: serde::Serializer>(s: &HostStatus, ser: S) -> Result<S::Ok, S::Error> {
    ser.serialize_str(s.as_str())
}

/// The plan's values of the profile's plan markers (defaults where the plan
/// has none). Markers are whatever JSON the profile declares, so the values
/// stay JSON.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct PlanMarkers(serde_json::Map<String, Value>);

impl PlanMarkers {
    /// A marker's value.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }
    /// Every marker, in profile order.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.0.iter()
    }
}

fn mutation_in_progress(dir: &cap_std::fs::Dir) -> bool {
    match state::open_file(dir, state::LOCK, state::LOCK) {
        Ok(Some((f, _))) => matches!(
            f.into_std().try_lock_shared(),
            Err(std::fs::TryLockError::WouldBlock)
        ),
        _ => false,
    }
}

/// What a complete checkpoint of `g` expects from a snapshot.
pub(crate) fn complete_expectation(engine: &Engine, plan: &Plan, g: Goal<'_>) -> Expect {
    let is_final = lifecycle::final_candidate(plan, g);
    let aggregate = plan.mode() == Mode::Aggregate;
    let expected = handoff::expected_objective(engine, plan, g);
    let accepted = if aggregate {
        let mut a = vec![plan.aggregate_objective(&engine.profile)];
        a.extend(plan.objective_aliases().into_iter().map(str::to_owned));
        a
    } else {
        Vec::new()
    };
    let allowed = if aggregate && !is_final {
        vec![HostStatus::Active]
    } else {
        vec![HostStatus::Complete]
    };
    Expect {
        expected,
        accepted,
        allowed,
        require_snapshot: true,
        require_complete: !aggregate || is_final,
    }
}

/// Runs `status`. Writes nothing.
pub fn run(engine: &Engine, host_goal: Option<&Loaded>) -> Result<StatusOutcome, GoalError> {
    let dir = engine.state_dir()?;
    let bytes = plan::read_bytes(dir.as_ref(), &engine.paths, &engine.profile)?;
    let dir = dir.expect("a plan was read");
    // While an interrupted create-goals --force is pending and the old plan
    // is still live, its ledger is the renamed one (txn::switch).
    let ledger_file =
        txn::switch::ledger_name(&dir, &engine.paths, engine.profile.limits.max_plan_bytes);
    // The cut-down body holds everything `status` reads of the plan (the
    // reconciliation of a host-goal snapshot included: it reads goal and
    // plan members, never a criterion's text); it is vouched for by the
    // live ledger, so not while a force switch keeps the old one live.
    let view = (ledger_file == state::LEDGER)
        .then(|| stop_view::read_vouched(&dir, &engine.paths))
        .flatten();
    let now = &engine.now().1;
    let (plan, plan_read) = match view {
        Some(v) => {
            let reduced = || {
                stop_view::status::read(
                    &dir,
                    &engine.paths,
                    &v.status_sha256,
                    &engine.profile.criteria.seeded_markers,
                    engine.profile.limits.max_plan_bytes,
                )
            };
            let tried = Plan::from_status_view(
                bytes,
                reduced,
                &v.plan_sha256,
                &engine.paths,
                &engine.profile,
                now,
            );
            match tried {
                Ok(p) => (p, PlanRead::StatusView),
                Err(bytes) => (
                    Plan::decode_file(bytes, &engine.paths, &engine.profile, now)?,
                    PlanRead::Whole,
                ),
            }
        }
        None => (
            Plan::decode_file(bytes, &engine.paths, &engine.profile, now)?,
            PlanRead::Whole,
        ),
    };
    let max = engine.profile.limits.max_ledger_record_bytes;
    let cache_key = format!(
        "{}\n{}\n{}",
        engine.root_abs().unwrap_or(""),
        engine.paths.dir,
        ledger_file
    );
    let view = index::view_read_only(
        &dir,
        &engine.paths,
        ledger_file,
        max,
        engine.diagnostics().dir(),
        &cache_key,
    )?;
    let head = view.head.clone();
    let a = txn::assess(
        Some(&plan),
        &head,
        !view.trailing.is_empty(),
        &mut |rev, from, want| {
            txn::count_landed_in(&dir, ledger_file, &head, rev, from, want, u64::MAX)
        },
    );
    let pending = a.consistency == Consistency::Recoverable && !a.missing.is_empty();
    let binding = txn::judge_in(&dir, ledger_file, &engine.paths, &head, &plan, pending)?;
    let force_switch_pending = match txn::switch::pending(&dir, &engine.paths) {
        Ok(Some(p)) => Some(ForceSwitchPending {
            archive: engine.paths.file(&p.archive),
            resolved_by: format!("{} repair", engine.profile.command_prefix),
        }),
        _ => None,
    };
    let ledger = StatusLedger {
        records: head.records,
        last_seq: head.last_seq,
        head: head.last_hash.clone(),
        mutation_in_progress: mutation_in_progress(&dir),
        force_switch_pending,
    };
    let current_attempt_dir = plan
        .layout_v2()
        .then(|| plan.active_goal_id().and_then(|id| plan.goal(id)))
        .flatten()
        .map(|g| engine.attempt_dir(&plan, g));
    let host = host_goal.map(|loaded| {
        let snap = hostgoal::parse(loaded.value.clone());
        match lifecycle::active_goal(&plan) {
            Some(g) => {
                let e = complete_expectation(engine, &plan, g);
                let out = hostgoal::reconcile(Some(&snap), &e, &engine.profile);
                HostGoalCheck {
                    ok: out.ok(),
                    goal_id: Some(g.id().to_owned()),
                    errors: out.errors,
                    warnings: out.warnings,
                    expected_objective: Some(e.expected),
                    actual_objective: snap.objective,
                    actual_status: snap.status,
                }
            }
            None => HostGoalCheck {
                ok: false,
                goal_id: None,
                errors: vec![
                    "No goal is in progress; there is nothing to reconcile the snapshot with."
                        .into(),
                ],
                warnings: Vec::new(),
                expected_objective: None,
                actual_objective: snap.objective,
                actual_status: snap.status,
            },
        }
    });
    let adapter = (!engine.profile.plan_markers.is_empty()).then(|| {
        let mut m = serde_json::Map::new();
        for (k, v) in &engine.profile.plan_markers {
            m.insert(
                k.clone(),
                plan.doc().get(k).cloned().unwrap_or_else(|| v.clone()),
            );
        }
        PlanMarkers(m)
    });
    let stalled = stalled_ids(&plan);
    let mut next_actions = next_actions(engine, &plan, a.consistency, stalled.as_deref());
    if binding.tampered() {
        let e = txn::tampered_error(engine, &binding);
        let remedy = e
            .details()
            .and_then(|d| d.get("remedy").and_then(Value::as_str).map(str::to_owned))
            .unwrap_or_default();
        next_actions = vec![action(
            remedy,
            "goals.json and ledger.jsonl do not vouch for each other (PLAN_TAMPERED / LEDGER_TAMPERED): restore both from version control, or adopt this plan on the record",
        )];
    }
    Ok(StatusOutcome {
        summary: summary::for_engine(engine, &plan),
        plan,
        current_attempt_dir,
        ledger,
        consistency: a.consistency,
        next_actions,
        host_goal: host,
        adapter,
        stalled,
        binding,
        plan_read,
    })
}

/// Completion-blocking goals when the run is not complete and the scheduler
/// could neither resume nor start anything.
fn stalled_ids(plan: &Plan) -> Option<Vec<String>> {
    if lifecycle::run_complete(plan) {
        return None;
    }
    let schedulable = plan.goals().any(|g| {
        g.overlay().is_none()
            && match g.status() {
                GoalStatus::InProgress | GoalStatus::Pending => true,
                GoalStatus::ReviewBlocked => g.strings("reviewBlockedBy").iter().all(|r| {
                    plan.goal(r)
                        .is_some_and(|rg| lifecycle::member_resolved(plan, rg))
                }),
                _ => false,
            }
    });
    (!schedulable).then(|| {
        plan.goals()
            .filter(|g| lifecycle::completion_blocking(plan, *g))
            .map(|g| g.id().to_owned())
            .collect()
    })
}

fn action(command: String, reason: &str) -> NextAction {
    NextAction {
        command,
        reason: reason.to_owned(),
    }
}

fn next_actions(
    engine: &Engine,
    plan: &Plan,
    consistency: Consistency,
    stalled: Option<&[String]>,
) -> Vec<NextAction> {
    let p = &engine.profile;
    let cmd = |rest: &str| format!("{}{rest}", p.command_prefix);
    let sid = engine.session_opt(plan);
    let mut out = Vec::new();
    if consistency == Consistency::Mismatch {
        out.push(action(
            cmd(&format!(" repair{sid} --check --json")),
            "goals.json and ledger.jsonl disagree; inspect, then resolve with repair --accept-plan",
        ));
        return out;
    }
    if consistency == Consistency::Recoverable {
        out.push(action(
            cmd(&format!(" repair{sid} --json")),
            "the ledger is behind the plan or has a torn tail; repair completes it (any mutation also does)",
        ));
    }
    if lifecycle::run_complete(plan) {
        return out;
    }
    if let Some(g) = lifecycle::active_goal(plan) {
        let open: Vec<_> = g
            .criteria()
            .filter(|c| c.status() != CriterionStatus::Pass)
            .collect();
        let markers = &p.criteria.seeded_markers;
        for c in &open {
            // A seeded criterion refuses `pass` without `--accept-seeded`
            // (ULW_LOOP_CRITERION_SEEDED): the suggestion must be runnable.
            let (accept, reason) = if c.seeded(markers) {
                (
                    " --accept-seeded \"...\"",
                    "record proof for this seeded criterion of the active goal (or first replace it: steer --kind revise_criterion)",
                )
            } else {
                ("", "record proof for this criterion of the active goal")
            };
            out.push(action(
                cmd(&format!(
                    " record-evidence{sid} --goal-id {} --criterion-id {} --status pass --evidence \"...\"{accept}",
                    g.id(),
                    c.id()
                )),
                reason,
            ));
        }
        let host = &p.host_goal.flag;
        if lifecycle::final_candidate(plan, g) {
            out.push(action(
                cmd(&format!(
                    " checkpoint{sid} --goal-id {} --print-template --json",
                    g.id()
                )),
                "the active goal is the final one: fill in the quality gate template",
            ));
            out.push(action(
                cmd(&format!(
                    " checkpoint{sid} --goal-id {} --status complete --evidence \"...\" {host} <snapshot> --quality-gate-json <gate>",
                    g.id()
                )),
                "complete the run once every criterion passes and the gate is clean",
            ));
        } else if open.is_empty() || plan.mode() == Mode::Aggregate {
            out.push(action(
                cmd(&format!(
                    " checkpoint{sid} --goal-id {} --status complete --evidence \"...\" {host} <snapshot>",
                    g.id()
                )),
                "checkpoint the active goal when its criteria are proven",
            ));
        }
        return out;
    }
    match stalled {
        Some(ids) => {
            let retriable = plan.goals().any(|g| {
                g.status() == GoalStatus::Failed && g.overlay().is_none() && !g.non_retriable()
            });
            if retriable {
                out.push(action(
                    cmd(&format!(" complete-goals{sid} --retry-failed")),
                    "failed goals can be retried",
                ));
            }
            for id in ids {
                let Some(g) = plan.goal(id) else { continue };
                if matches!(
                    g.status(),
                    GoalStatus::Blocked | GoalStatus::NeedsUserDecision
                ) || g.overlay() == Some(Overlay::Blocked)
                {
                    out.push(action(
                        cmd(&format!(
                            " steer{sid} --kind unblock --goal-id {id} --user-decision \"...\" --evidence \"...\" --rationale \"...\""
                        )),
                        "this goal waits for a user decision",
                    ));
                }
            }
        }
        None => out.push(action(
            cmd(&format!(" complete-goals{sid}")),
            "no goal is active; start the next one",
        )),
    }
    out
}
