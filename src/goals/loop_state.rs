//! What the goal-loop hooks need from the engine (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6): where a
//! session's plan lives, which goal a resume names, what counts as progress,
//! the final candidate, and the engine's mutation lock and atomic writer for
//! the hook side files in `<state>` (docs/state-formats.md#ge-2).
//!
//! Everything here reads; the side-file writers touch only the named file.
//! The ledger is never read: the hooks' progress measure is the plan's own
//! goal and criteria state.

use std::io;
use std::time::Duration;

use cap_std::fs::Dir;
use serde_json::Value;

use super::error::{ErrorKind, GoalError};
use super::plan::{self, Plan};
use super::profile::Profile;
use super::session;
use super::state::{self, ReadOutcome, StatePaths};
use super::stop_view::{self, StopView};
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

impl Ownership {
    /// The session id to pass as `--session-id` in rendered commands for a
    /// plan of `paths`: the scope's sid for a scoped plan, none for an
    /// unscoped one.
    pub(crate) fn scope_sid(self, paths: &StatePaths) -> Option<&str> {
        match self {
            Ownership::Scoped => paths.sid.as_deref(),
            Ownership::OwnedUnscoped | Ownership::AdoptedUnscoped => None,
        }
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
    // Read for its owner only (the caller reads it whole under the lock):
    // the criteria's text is checked and skipped.
    let read = plan::read_selected(Some(&dir), &paths, profile, now, &stop_view::CRITERIA_READ);
    match read {
        Ok(p) => Ok(Some((dir, p, paths))),
        Err(e) if matches!(*e.kind, ErrorKind::PlanMissing { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A profile's state directory `state_dir` below `root`, `Ok(None)` when a
/// component is missing; where it is missing every locator here finds
/// nothing (each opens it, or a directory below it, first).
pub(crate) fn open_state_dir(root: &Dir, state_dir: &str) -> Result<Option<Dir>, GoalError> {
    state::open_chain(root, state_dir, false)
}

/// A session's plan in one profile as the hooks see it: its bound
/// [`StopView`] when the ledger vouches for one, else the view of the plan
/// read in full ([`stop_view`]).
#[derive(Debug)]
pub(crate) struct LocatedView {
    /// The scope's paths.
    pub paths: StatePaths,
    /// The state directory (opened without following symlinks).
    pub dir: Dir,
    /// How it belongs to the session.
    pub ownership: Ownership,
    /// What the Stop decision reads.
    pub view: StopView,
    /// The plan, when it was read in full: its binding to the ledger is
    /// still to be checked. `None`: the view is bound.
    pub plan: Option<Box<Plan>>,
}

impl LocatedView {
    /// The session id to pass as `--session-id` in rendered commands: the
    /// scope's sid for a scoped plan, none for an unscoped one.
    pub(crate) fn scope_sid(&self) -> Option<&str> {
        self.ownership.scope_sid(&self.paths)
    }
}

/// Finds the payload session's plan in one profile (docs/hook-contracts.md#h-4 steps
/// 1–3): the scoped plan of the normalised `raw_sid`; else the unscoped plan
/// whose recorded owner normalises to the same sid; else, only with
/// `adopt_unowned`, an unscoped plan that records no owner. Each plan is
/// decided from its bound view when there is one, so that a large plan is
/// not read. A plan that must be read and cannot be is an [`Unreadable`]
/// naming its scope.
pub(crate) fn locate_view(
    root: &Dir,
    profile: &Profile,
    raw_sid: Option<&str>,
    adopt_unowned: bool,
    now: &str,
) -> Result<Option<LocatedView>, Box<Unreadable>> {
    let sid = raw_sid.and_then(session::normalize);
    let read = |paths: StatePaths| {
        let unreadable = |paths, error| Box::new(Unreadable { paths, error });
        let dir = match state::open_chain(root, &paths.dir, false) {
            Ok(Some(d)) => d,
            Ok(None) => return Ok(None),
            Err(error) => return Err(unreadable(paths, error)),
        };
        if let Some(view) = stop_view::read_bound(&dir, &paths) {
            return Ok(Some((dir, view, None, paths)));
        }
        // Read for its view and its binding only: the criteria's text is
        // checked and skipped.
        match plan::read_selected(Some(&dir), &paths, profile, now, &stop_view::CRITERIA_READ) {
            Ok(p) => Ok(Some((
                dir,
                StopView::of(&p, profile),
                Some(Box::new(p)),
                paths,
            ))),
            Err(e) if matches!(*e.kind, ErrorKind::PlanMissing { .. }) => Ok(None),
            Err(error) => Err(unreadable(paths, error)),
        }
    };
    let located = |(dir, view, plan, paths), ownership| LocatedView {
        paths,
        dir,
        ownership,
        view,
        plan,
    };
    if let Some(s) = &sid
        && let Some(found) = read(StatePaths::new(&profile.state_dir, Some(s)))?
    {
        return Ok(Some(located(found, Ownership::Scoped)));
    }
    let Some(found) = read(StatePaths::new(&profile.state_dir, None))? else {
        return Ok(None);
    };
    let view = &found.1;
    let Some(ownership) = ownership_of(
        profile,
        view.session_id.as_deref(),
        view.engine_written,
        sid.as_deref(),
        adopt_unowned,
    ) else {
        return Ok(None);
    };
    Ok(Some(located(found, ownership)))
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
    let owner = plan
        .doc()
        .get("sessionId")
        .and_then(Value::as_str)
        .and_then(session::normalize);
    ownership_of(
        profile,
        owner.as_deref(),
        plan.doc().contains_key("revision"),
        sid,
        adopt_unowned,
    )
}

/// [`unscoped_ownership`] of a plan whose normalised owner is `owner`
/// (`engine_written`: it carries `revision`).
fn ownership_of(
    profile: &Profile,
    owner: Option<&str>,
    engine_written: bool,
    sid: Option<&str>,
    adopt_unowned: bool,
) -> Option<Ownership> {
    let adopt_unowned = adopt_unowned || (profile.compat.adopt_unowned_plan && engine_written);
    match (owner, sid) {
        (Some(o), Some(s)) if o == s => Some(Ownership::OwnedUnscoped),
        (None, _) if adopt_unowned => Some(Ownership::AdoptedUnscoped),
        _ => None,
    }
}

/// [`locate_view`] for a caller that reads the plan itself (steering does, under
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

/// The binding of `plan`, read from `dir`, to its ledger (docs/threat-model.md#i7), read
/// without writing anything and within a hook's budget (the newest records
/// only, see [`super::txn::judge_tail`]). A hook must not trust a tampered
/// plan's state.
pub(crate) fn binding_in(
    dir: &Dir,
    paths: &StatePaths,
    plan: &Plan,
    seen_engine: &dyn Fn() -> bool,
) -> Result<super::binding::Binding, GoalError> {
    super::txn::judge_tail(dir, paths, plan, seen_engine)
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
