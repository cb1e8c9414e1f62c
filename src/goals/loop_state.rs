//! What the goal-loop hooks need from the engine (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6): where a
//! session's plan lives, which goal a resume names, what counts as progress,
//! the final candidate, and the engine's mutation lock and atomic writer for
//! the hook side files in `<state>` (docs/state-formats.md#ge-2).
//!
//! Everything here reads; the side-file writers touch only the named file.
//! The ledger is never read: the hooks' progress measure is the plan's own
//! goal and criteria state.

use std::io;
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;
use serde_json::Value;

use super::error::{ErrorKind, GoalError};
use super::lifecycle;
use super::plan::{self, Goal, GoalStatus, Plan};
use super::profile::Profile;
use super::session;
use super::state::{self, ReadOutcome, StatePaths};
use crate::store::{self, Durability, LockError, LockOptions, MutationLock};

/// How a located plan belongs to the session (docs/hook-contracts.md#h-4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ownership {
    /// `<stateDir>/<sid>/goals.json`.
    Scoped,
    /// `<stateDir>/goals.json` whose recorded `sessionId` is this session's.
    OwnedUnscoped,
    /// `<stateDir>/goals.json` with no recorded owner, adopted by opt-in.
    AdoptedUnscoped,
}

/// A session's plan in one profile.
#[derive(Debug)]
pub(crate) struct Located {
    /// The scope's paths.
    pub paths: StatePaths,
    /// The state directory (opened without following symlinks).
    pub dir: Dir,
    /// The plan, read with the engine's reader (unknown keys kept, nothing written).
    pub plan: Plan,
    /// How it belongs to the session.
    pub ownership: Ownership,
}

impl Located {
    /// The session id to pass as `--session-id` in rendered commands: the
    /// scope's sid for a scoped plan, none for an unscoped one.
    pub(crate) fn scope_sid(&self) -> Option<&str> {
        match self.ownership {
            Ownership::Scoped => self.paths.sid.as_deref(),
            Ownership::OwnedUnscoped | Ownership::AdoptedUnscoped => None,
        }
    }

    /// The plan's `updatedAt`, when it parses.
    pub(crate) fn updated_at(&self) -> Option<SystemTime> {
        self.plan
            .str("updatedAt")
            .and_then(crate::time::parse_rfc3339)
    }
}

/// A session's plan that exists but cannot be read: corrupt JSON, not a
/// regular file (a FIFO, a directory, a symlink), over the size limit, or an
/// unsafe state directory. Its state is unknown, so no gated decision may
/// read it as "nothing left" (docs/threat-model.md#i2).
#[derive(Debug)]
pub(crate) struct Unreadable {
    /// The scope whose plan could not be read.
    pub paths: StatePaths,
    /// Why.
    pub error: GoalError,
}

fn read_in(
    root: &Dir,
    profile: &Profile,
    paths: StatePaths,
    now: &str,
) -> Result<Option<(Dir, Plan, StatePaths)>, GoalError> {
    let Some(dir) = state::open_chain(root, &paths.dir, false)? else {
        return Ok(None);
    };
    match plan::read(Some(&dir), &paths, profile, now) {
        Ok(p) => Ok(Some((dir, p, paths))),
        Err(e) if matches!(*e.kind, ErrorKind::PlanMissing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Finds the payload session's plan in one profile (docs/hook-contracts.md#h-4 steps
/// 1–3): the scoped plan of the normalised `raw_sid`; else the unscoped plan
/// whose recorded owner normalises to the same sid; else, only with
/// `adopt_unowned`, an unscoped plan that records no owner. A plan that
/// exists but cannot be read is an [`Unreadable`] naming its scope.
pub(crate) fn locate(
    root: &Dir,
    profile: &Profile,
    raw_sid: Option<&str>,
    adopt_unowned: bool,
    now: &str,
) -> Result<Option<Located>, Box<Unreadable>> {
    let sid = raw_sid.and_then(session::normalize);
    let read = |paths: StatePaths| {
        read_in(root, profile, paths.clone(), now)
            .map_err(|error| Box::new(Unreadable { paths, error }))
    };
    if let Some(s) = &sid {
        let paths = StatePaths::new(&profile.state_dir, Some(s));
        if let Some((dir, plan, paths)) = read(paths)? {
            return Ok(Some(Located {
                paths,
                dir,
                plan,
                ownership: Ownership::Scoped,
            }));
        }
    }
    let paths = StatePaths::new(&profile.state_dir, None);
    let Some((dir, plan, paths)) = read(paths)? else {
        return Ok(None);
    };
    let Some(ownership) = unscoped_ownership(profile, &plan, sid.as_deref(), adopt_unowned) else {
        return Ok(None);
    };
    Ok(Some(Located {
        paths,
        dir,
        plan,
        ownership,
    }))
}

/// How an unscoped plan belongs to session `sid`, if it does. A profile
/// with `compat/adoptUnownedPlan` also adopts an unowned plan this engine
/// has written (it carries `revision`): a run the foreign tool alone keeps
/// stays the foreign tool's.
fn unscoped_ownership(
    profile: &Profile,
    plan: &Plan,
    sid: Option<&str>,
    adopt_unowned: bool,
) -> Option<Ownership> {
    let adopt_unowned =
        adopt_unowned || (profile.compat.adopt_unowned_plan && plan.doc().contains_key("revision"));
    let owner = plan
        .doc()
        .get("sessionId")
        .and_then(Value::as_str)
        .and_then(session::normalize);
    match (owner.as_deref(), sid) {
        (Some(o), Some(s)) if o == s => Some(Ownership::OwnedUnscoped),
        (None, _) if adopt_unowned => Some(Ownership::AdoptedUnscoped),
        _ => None,
    }
}

/// [`locate`] for a caller that reads the plan itself (steering does, under
/// the lock): the scope only. A scoped plan is found by its existence; only
/// an unscoped plan is read, for its recorded owner.
pub(crate) fn locate_scope(
    root: &Dir,
    profile: &Profile,
    raw_sid: Option<&str>,
    adopt_unowned: bool,
    now: &str,
) -> Result<Option<(StatePaths, Ownership)>, GoalError> {
    let sid = raw_sid.and_then(session::normalize);
    if let Some(s) = &sid {
        let paths = StatePaths::new(&profile.state_dir, Some(s));
        if let Some(dir) = state::open_chain(root, &paths.dir, false)?
            && state::open_file(&dir, state::GOALS, &paths.goals())?.is_some()
        {
            return Ok(Some((paths, Ownership::Scoped)));
        }
    }
    let paths = StatePaths::new(&profile.state_dir, None);
    let Some((_, plan, paths)) = read_in(root, profile, paths, now)? else {
        return Ok(None);
    };
    Ok(unscoped_ownership(profile, &plan, sid.as_deref(), adopt_unowned).map(|o| (paths, o)))
}

fn resumable(g: &Goal<'_>) -> bool {
    matches!(g.status(), GoalStatus::Pending | GoalStatus::InProgress) && g.overlay().is_none()
}

/// The goal a resume names (docs/hook-contracts.md#h-4 step 7): the `activeGoalId` goal
/// if it is pending or in progress without a steering overlay, else the first
/// such goal in plan order. Superseded and steering-blocked goals never are.
pub(crate) fn resumable_goal(plan: &Plan) -> Option<Goal<'_>> {
    plan.active_goal_id()
        .and_then(|id| plan.goal(id))
        .filter(resumable)
        .or_else(|| plan.goals().find(resumable))
}

/// The first goal in plan order that is the final candidate
/// (docs/engine.md#ge-3), if any.
pub(crate) fn final_candidate(plan: &Plan) -> Option<Goal<'_>> {
    plan.goals().find(|g| lifecycle::final_candidate(plan, *g))
}

/// The active goal and its attempt: the `activeGoalId` goal when it is in
/// progress without overlay, else the first such goal.
pub(crate) fn active_attempt(plan: &Plan) -> Option<(&str, u64)> {
    super::ops::status::active_goal(plan).map(|g| (g.id(), g.attempt()))
}

/// `sha256` hex of the plan's progress state (docs/hook-contracts.md#h-4): the goal
/// count and, per goal in plan order, `id`, `status`, steering overlay,
/// `attempt` and each criterion's `id` and `status`, plus the aggregate
/// completion status. Timestamps, wording, evidence text and the ledger are
/// left out, so annotation or rewording is not progress.
///
/// The canonical JSON of `{"completion", "goalCount", "goals": [[id,
/// status, overlay, attempt, [[criterion id, status], …]], …]}` is written
/// directly, each goal's fields read in one pass: no tree is built and no
/// field is looked up by hash (a 1,000-goal plan is 6,000 objects).
pub(crate) fn progress_digest(plan: &Plan) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(64 + 96 * plan.goal_count());
    let string = |out: &mut Vec<u8>, s: &str| {
        serde_json::to_writer(&mut *out, s).expect("writing to memory does not fail");
    };
    let completion = plan
        .completion()
        .and_then(|c| c.get("status"))
        .map_or_else(|| "null".to_owned(), crate::json::canonical);
    out.extend_from_slice(b"{\"completion\":");
    out.extend_from_slice(completion.as_bytes());
    out.extend_from_slice(format!(",\"goalCount\":{},\"goals\":[", plan.goal_count()).as_bytes());
    for (i, g) in plan.goals().enumerate() {
        let g = g.progress();
        out.extend_from_slice(if i == 0 { b"[" } else { b",[" });
        string(&mut out, g.id);
        out.push(b',');
        string(&mut out, g.status.as_str());
        out.push(b',');
        match g.overlay {
            Some(o) => string(&mut out, o.as_str()),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(format!(",{},[", g.attempt).as_bytes());
        for (j, (id, status)) in g.criteria().enumerate() {
            out.extend_from_slice(if j == 0 { b"[" } else { b",[" });
            string(&mut out, id);
            out.push(b',');
            string(&mut out, status.as_str());
            out.push(b']');
        }
        out.extend_from_slice(b"]]");
    }
    out.extend_from_slice(b"]}");
    crate::digest::sha256_hex(&out)
}

/// The former tree-building [`progress_digest`] (the streaming one must
/// equal it: the digest is kept in the resume side files).
#[cfg(test)]
fn progress_digest_tree(plan: &Plan) -> String {
    let goals: Vec<Value> = plan
        .goals()
        .map(|g| {
            let criteria: Vec<Value> = g
                .criteria()
                .map(|c| serde_json::json!([c.id(), c.status().as_str()]))
                .collect();
            serde_json::json!([
                g.id(),
                g.status().as_str(),
                g.overlay().map(|o| o.as_str()),
                g.attempt(),
                criteria
            ])
        })
        .collect();
    let completion = plan
        .completion()
        .and_then(|c| c.get("status"))
        .cloned()
        .unwrap_or(Value::Null);
    let v = serde_json::json!({"goalCount": plan.goal_count(), "goals": goals, "completion": completion});
    crate::digest::sha256_hex(crate::json::canonical(&v).as_bytes())
}

/// The located plan's binding to its ledger (docs/threat-model.md#i7), read
/// without writing anything and within a hook's budget (the newest records
/// only, see [`super::txn::judge_tail`]). A hook must not trust a tampered
/// plan's state.
pub(crate) fn binding(located: &Located) -> Result<super::binding::Binding, GoalError> {
    super::txn::judge_tail(&located.dir, &located.paths, &located.plan)
}

/// Takes the state directory's mutation lock (the engine's `.mutation.lock`
/// and protocol) for a hook side-file update. The hooks run no recovery
/// check and touch neither plan nor ledger under it.
pub(crate) fn lock_side_files(
    dir: &Dir,
    wait: Duration,
    command: &str,
) -> Result<MutationLock, LockError> {
    let opts = LockOptions {
        timeout: wait,
        command: command.to_owned(),
    };
    MutationLock::acquire(dir, state::LOCK, &opts)
}

/// Reads a side file of at most `max` bytes (no-follow; a symlink or a
/// non-regular entry is `ULW_LOOP_STATE_UNSAFE`). `Ok(None)` when missing;
/// an oversized file reads as missing.
pub(crate) fn read_side_file(
    dir: &Dir,
    name: &str,
    display: &str,
    max: u64,
) -> Result<Option<Vec<u8>>, GoalError> {
    Ok(match state::read_file(dir, name, display, max)? {
        Some(ReadOutcome::Bytes(b)) => Some(b),
        Some(ReadOutcome::TooLarge { .. }) | None => None,
    })
}

/// Replaces a side file with the engine's atomic writer. A decision that
/// depends on it is emitted only after this returns, so a state directory
/// that cannot be written never loops; the replace is not fsynced, because
/// a counter lost with the machine costs one extra resume or spawn, while an
/// fsync on every stop and spawn would cost more than the whole hook budget.
pub(crate) fn write_side_file(dir: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    store::atomic_replace(dir, name, bytes, Durability::Cache)
}

/// Deletes a side file; a missing one is fine.
pub(crate) fn remove_side_file(dir: &Dir, name: &str) -> io::Result<()> {
    match dir.remove_file(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::goals::plan::ulw_loop_plan as plan;

    const TWO: &str = r#"{"version":1,"activeGoalId":"G2","goals":[
        {"id":"G1","title":"a","objective":"a","status":"pending","steeringStatus":"superseded"},
        {"id":"G2","title":"b","objective":"b","status":"complete","updatedAt":"x",
         "successCriteria":[{"id":"C1","status":"pass","capturedEvidence":"x"}]},
        {"id":"G3","title":"c","objective":"c","status":"pending"}]}"#;

    /// The streaming progress digest is the canonical tree's digest, for
    /// plans with escapes, overlays, attempts, criteria and completion
    /// records of every shape.
    #[test]
    fn the_streamed_progress_digest_equals_the_canonical_tree_digest() {
        let cases = [
            TWO.to_owned(),
            TWO.replace(r#""version":1,"#, r#""version":1,"aggregateCompletion":{"status":"complete","x":[1,{"b":2,"a":1}]},"#),
            TWO.replace(r#""version":1,"#, r#""version":1,"aggregateCompletion":{"status":{"z":1,"a":"\u00e9\n"}},"#),
            TWO.replace(r#""id":"G1""#, r#""id":"G\"1\\ \u2028 \u00e9","attempt":7"#)
                .replace(r#""activeGoalId":"G2""#, r#""activeGoalId":"G3""#),
            r#"{"version":1,"goals":[]}"#.to_owned(),
            r#"{"version":1,"goals":[{"id":"A","title":"t","objective":"o","status":"in_progress","steeringStatus":"blocked","attempt":3,
               "successCriteria":[{"id":"c\ttab","status":"fail"},{"id":"C2","status":"pending"},{"id":"C3"}]}]}"#.to_owned(),
        ];
        for text in cases {
            let p = plan(&text);
            assert_eq!(progress_digest(&p), progress_digest_tree(&p), "{text}");
        }
    }

    #[test]
    fn the_resumable_goal_skips_overlays_and_finished_goals() {
        let p = plan(TWO);
        assert_eq!(resumable_goal(&p).unwrap().id(), "G3");
        let p = plan(&TWO.replace(
            r#""status":"complete","updatedAt""#,
            r#""status":"in_progress","updatedAt""#,
        ));
        assert_eq!(resumable_goal(&p).unwrap().id(), "G2");
    }

    #[test]
    fn progress_ignores_wording_and_evidence_but_not_state() {
        let base = progress_digest(&plan(TWO));
        let reworded = TWO
            .replace(r#""title":"c""#, r#""title":"renamed""#)
            .replace(
                r#""capturedEvidence":"x""#,
                r#""capturedEvidence":"longer text""#,
            )
            .replace(r#""updatedAt":"x""#, r#""updatedAt":"y""#);
        assert_eq!(progress_digest(&plan(&reworded)), base);
        let criterion = TWO.replace(r#""status":"pass""#, r#""status":"fail""#);
        assert_ne!(progress_digest(&plan(&criterion)), base);
        let overlay = TWO.replace(r#","steeringStatus":"superseded""#, "");
        assert_ne!(progress_digest(&plan(&overlay)), base);
    }
}
