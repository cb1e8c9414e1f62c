//! The crash-safe run switch of `create-goals --force` (docs/threat-model.md#i14).
//!
//! Under the lock, in this order, each step durable before the next:
//! 1. the marker `.force-switch.json` names the archive directory;
//! 2. `.archive/<stamp>/` receives copies of `goals.json` and `brief.md` and
//!    a copy of the ledger with `plan_archived` appended (the live run is
//!    untouched: a kill up to here leaves the old run in place);
//! 3. the live ledger is renamed to `.force-switch.ledger.jsonl` and the new
//!    brief written (readers take the old run's ledger from there);
//! 4. the new `goals.json` is written (its `lastMutation` carries the
//!    `plan_created` entry naming the archive: the new run is readable and
//!    the ordinary recovery check appends that entry if the kill came next);
//! 5. the new ledger is appended, then the renamed old ledger and the marker
//!    are removed.
//!
//! The next lock holder (any mutation, or `repair`) resolves a marker left by
//! a kill: when `goals.json` is the new run's it finishes (steps 5), else it
//! undoes (restores the old ledger and brief, removes the half-made archive).

use cap_std::fs::Dir;
use serde_json::{Map, Value, json};

use super::super::error::GoalError;
use super::super::journal::{Head, LedgerKind};
use super::super::profile::Limits;
use super::super::state::{self, StatePaths};
use crate::store::{self, Durability};

/// A switch in progress, as its marker names it.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    /// Directory name under `.archive/`.
    pub name: String,
    /// The state-relative archive path (`.archive/<name>`).
    pub archive: String,
    /// Whether the replaced run had a brief.
    pub had_brief: bool,
}

/// The state-relative path of an archive directory.
pub(crate) fn archive_rel(name: &str) -> String {
    format!("{}/{name}", state::ARCHIVE)
}

fn marker_error(paths: &StatePaths, why: &str) -> GoalError {
    let path = paths.file(state::SWITCH);
    let mut err = GoalError::io(&path, "parse", &std::io::Error::other(why.to_owned()));
    err.message = format!(
        "{} It is not the marker of an interrupted create-goals --force that this engine wrote: inspect it, then remove it (`rm -- {path}`) and retry.",
        err.message
    );
    err
}

/// Reads the marker of an interrupted switch, if any.
pub(crate) fn pending(dir: &Dir, paths: &StatePaths) -> Result<Option<Pending>, GoalError> {
    let display = paths.file(state::SWITCH);
    let bytes = match state::read_file(dir, state::SWITCH, &display, 64 * 1024)? {
        None => return Ok(None),
        Some(state::ReadOutcome::TooLarge { .. }) => {
            return Err(marker_error(paths, "it is too large"));
        }
        Some(state::ReadOutcome::Bytes(b)) => b,
    };
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| marker_error(paths, &format!("it is not JSON ({e})")))?;
    let name = v
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| {
            !n.is_empty()
                && !n.starts_with('.')
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .ok_or_else(|| marker_error(paths, "its `name` is not an archive directory name"))?;
    let had_brief = v
        .get("hadBrief")
        .and_then(Value::as_bool)
        .ok_or_else(|| marker_error(paths, "its `hadBrief` is not a boolean"))?;
    Ok(Some(Pending {
        name: name.to_owned(),
        archive: archive_rel(name),
        had_brief,
    }))
}

/// Writes the marker (step 1).
pub(crate) fn begin(
    dir: &Dir,
    paths: &StatePaths,
    name: &str,
    had_brief: bool,
) -> Result<(), GoalError> {
    let marker = json!({"name": name, "archive": archive_rel(name), "hadBrief": had_brief});
    store::atomic_replace(
        dir,
        state::SWITCH,
        marker.to_string().as_bytes(),
        Durability::Synced,
    )
    .map_err(|e| GoalError::io(&paths.file(state::SWITCH), "write", &e))
}

/// Whether `plan` (a parsed `goals.json`) is the run that replaces the one
/// archived to `archive`: its last mutation created it naming that archive.
pub(crate) fn is_successor(plan: &Value, archive: &str) -> bool {
    plan.pointer("/lastMutation/entries")
        .and_then(Value::as_array)
        .is_some_and(|entries| {
            entries.iter().any(|e| {
                e.get("kind").and_then(Value::as_str) == Some(LedgerKind::PlanCreated.as_str())
                    && e.pointer("/replaced/archive").and_then(Value::as_str) == Some(archive)
            })
        })
}

fn live_successor(dir: &Dir, paths: &StatePaths, p: &Pending, max: u64) -> Option<Value> {
    match state::read_file(dir, state::GOALS, &paths.goals(), max) {
        Ok(Some(state::ReadOutcome::Bytes(b))) => serde_json::from_slice::<Value>(&b)
            .ok()
            .filter(|v| is_successor(v, &p.archive)),
        _ => None,
    }
}

fn live_plan_is_successor(dir: &Dir, paths: &StatePaths, p: &Pending, max: u64) -> bool {
    live_successor(dir, paths, p, max).is_some()
}

/// The kill came after the new plan and before (or during) the first append:
/// the new ledger is started from the plan's `lastMutation` (entries marked
/// `recovered: true`, then the `ledger_repaired` marker), so that its first
/// record is still the `plan_created` that names the archive. A torn first
/// append is saved as `.ledger-torn-<ms>` first.
fn start_new_ledger(
    dir: &Dir,
    paths: &StatePaths,
    plan: &Value,
    p: &Pending,
    max_record: u64,
    now: &str,
) -> Result<(), GoalError> {
    let view = super::super::index::view(dir, paths, max_record)?;
    if view.head.records > 0 {
        return Ok(());
    }
    if view.file_len > 0 {
        let bytes = state::read_file(dir, state::LEDGER, &paths.ledger(), max_record + 1)?;
        if let Some(state::ReadOutcome::Bytes(b)) = bytes {
            let name = format!(
                ".ledger-torn-{}",
                crate::time::epoch_ms(std::time::SystemTime::now())
            );
            store::atomic_replace(dir, &name, &b, Durability::Synced)
                .map_err(|e| GoalError::io(&paths.file(&name), "write", &e))?;
        }
        remove_if_present(dir, state::LEDGER, paths)?;
    }
    let lm = plan.get("lastMutation");
    let revision = lm
        .and_then(|m| m.get("revision"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    let mut entries: Vec<Map<String, Value>> = lm
        .and_then(|m| m.get("entries"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|e| e.as_object().cloned()).collect())
        .unwrap_or_default();
    for e in &mut entries {
        e.insert("recovered".into(), Value::Bool(true));
    }
    let mut marker = Map::new();
    marker.insert("at".into(), json!(now));
    marker.insert("kind".into(), json!(LedgerKind::LedgerRepaired.as_str()));
    marker.insert(
        "message".into(),
        json!("Ledger repaired by the recovery check."),
    );
    marker.insert(
        "repair".into(),
        json!({
            "reason": "force_switch_finished",
            "recoveredCount": entries.len(),
            "archive": paths.file(&p.archive),
        }),
    );
    marker.insert("revision".into(), json!(revision));
    // The plan names the last recovered entry as its head; a record after
    // the head is the engine's only when it carries the plan body's digest
    // (docs/threat-model.md#i7), as annotations do.
    if let Some(doc) = plan.as_object() {
        marker.insert(
            crate::goals::binding::PLAN_SHA256.into(),
            json!(crate::goals::plan::body_sha256(doc)),
        );
    }
    entries.push(marker);
    // Plan first (docs/threat-model.md#i7): the recovered entries carry
    // `recovered: true`, so the head they make is not the one the plan
    // named; a bound plan is re-pointed at it before the append.
    if let Some(doc) = plan.as_object()
        && crate::goals::binding::named_head(doc).is_some()
    {
        let head = super::next_head(&Head::default(), &entries);
        let mut doc = doc.clone();
        if let Some(lm) = doc.get_mut("lastMutation").and_then(Value::as_object_mut) {
            lm.insert(crate::goals::binding::LEDGER_HEAD.into(), head.to_json());
            let mut out = serde_json::to_vec_pretty(&doc).expect("JSON values serialise");
            out.push(b'\n');
            store::atomic_replace(dir, state::GOALS, &out, Durability::Synced)
                .map_err(|e| GoalError::io(&paths.goals(), "write", &e))?;
        }
    }
    super::super::journal::append(dir, &paths.ledger(), &Head::default(), entries, max_record)?;
    super::super::index::remove_quietly(dir, state::INDEX);
    super::super::index::remove_quietly(dir, state::KEYS);
    super::super::index::remove_quietly(dir, super::super::keyhash::FILE);
    Ok(())
}

/// The ledger file that belongs with the live plan: while an interrupted
/// switch has not yet put the new plan in place, the old run's ledger is
/// the renamed one. Read-only commands use it so the old run stays readable.
pub(crate) fn ledger_name(dir: &Dir, paths: &StatePaths, max_plan: u64) -> &'static str {
    match pending(dir, paths) {
        Ok(Some(p))
            if !live_plan_is_successor(dir, paths, &p, max_plan)
                && !dir.exists(state::LEDGER)
                && dir.exists(state::SWITCH_LEDGER) =>
        {
            state::SWITCH_LEDGER
        }
        _ => state::LEDGER,
    }
}

/// Removes the renamed old ledger and the marker (step 5).
pub(crate) fn finish(dir: &Dir, paths: &StatePaths) -> Result<(), GoalError> {
    remove_if_present(dir, state::SWITCH_LEDGER, paths)?;
    remove_if_present(dir, state::SWITCH, paths)?;
    store::sync_dir(dir).map_err(|e| GoalError::io(&paths.dir, "sync", &e))
}

fn remove_if_present(dir: &Dir, name: &str, paths: &StatePaths) -> Result<(), GoalError> {
    match dir.remove_file(name) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(GoalError::io(&paths.file(name), "remove", &e)),
    }
}

/// Under the lock: finishes or undoes a switch a kill interrupted. Returns
/// the action taken (`force_switch_finished` / `force_switch_undone`), for
/// `repair` to report.
pub(crate) fn recover(
    dir: &Dir,
    paths: &StatePaths,
    limits: &Limits,
    now: &str,
) -> Result<Option<Value>, GoalError> {
    let Some(p) = pending(dir, paths)? else {
        return Ok(None);
    };
    if let Some(plan) = live_successor(dir, paths, &p, limits.max_plan_bytes) {
        // Steps 4–5 were under way: the new run stands.
        start_new_ledger(dir, paths, &plan, &p, limits.max_ledger_record_bytes, now)?;
        finish(dir, paths)?;
        return Ok(Some(
            json!({"kind": "force_switch_finished", "archive": paths.file(&p.archive)}),
        ));
    }
    // Steps 1–3: put the old run back.
    if dir.exists(state::SWITCH_LEDGER) {
        if dir.exists(state::LEDGER) {
            let mut err = GoalError::io(
                &paths.file(state::SWITCH_LEDGER),
                "restore",
                &std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            );
            err.message = format!(
                "{} An interrupted create-goals --force left the replaced run's ledger there, and {} exists too: keep the right one as {}, then remove {} and retry.",
                err.message,
                paths.ledger(),
                paths.ledger(),
                paths.file(state::SWITCH)
            );
            return Err(err);
        }
        dir.rename(state::SWITCH_LEDGER, dir, state::LEDGER)
            .map_err(|e| GoalError::io(&paths.ledger(), "restore", &e))?;
        super::super::index::remove_quietly(dir, state::INDEX);
        super::super::index::remove_quietly(dir, state::KEYS);
        super::super::index::remove_quietly(dir, super::super::keyhash::FILE);
    }
    let archive = state::open_chain(dir, &p.archive, false)?;
    if let Some(a) = &archive {
        // Only the copy this switch was making is removed: a marker the
        // agent wrote cannot make the engine delete an archived run.
        if !holds_copy_of(a, dir).unwrap_or(false) {
            let path = paths.file(&p.archive);
            let mut err = GoalError::io(
                &path,
                "remove",
                &std::io::Error::other("it is not the partial copy of the live run"),
            );
            err.message = format!(
                "{} {} names it as the archive of an interrupted create-goals --force, but it holds something else; nothing was removed. Inspect both, then remove {} (keeping the archive) and retry.",
                err.message,
                paths.file(state::SWITCH),
                paths.file(state::SWITCH)
            );
            return Err(err);
        }
        if p.had_brief {
            // The archived copy is complete whenever it exists (written
            // under a temp name and renamed).
            store::copy_file(a, state::BRIEF, dir, state::BRIEF)
                .map_err(|e| GoalError::io(&paths.brief(), "restore", &e))?;
        }
    }
    if !p.had_brief {
        remove_if_present(dir, state::BRIEF, paths)?;
    }
    store::sync_dir(dir).map_err(|e| GoalError::io(&paths.dir, "sync", &e))?;
    if archive.is_some() {
        let base = state::open_chain(dir, state::ARCHIVE, false)?.expect("holds the archive");
        base.remove_dir_all(&p.name)
            .map_err(|e| GoalError::io(&paths.file(&p.archive), "remove", &e))?;
        store::sync_dir(&base)
            .map_err(|e| GoalError::io(&paths.file(state::ARCHIVE), "sync", &e))?;
    }
    remove_if_present(dir, state::SWITCH, paths)?;
    store::sync_dir(dir).map_err(|e| GoalError::io(&paths.dir, "sync", &e))?;
    Ok(Some(
        json!({"kind": "force_switch_undone", "archive": paths.file(&p.archive)}),
    ))
}

/// Whether the archive directory `a` holds nothing but (possibly partial)
/// copies of the live run in `dir`, all regular files: `goals.json` equal to
/// the live plan, a ledger that extends the live ledger, a brief, temp files.
fn holds_copy_of(a: &Dir, dir: &Dir) -> std::io::Result<bool> {
    for e in a.entries()? {
        let e = e?;
        if !e.file_type()?.is_file() {
            return Ok(false);
        }
        let name = e.file_name();
        let name = name.to_string_lossy();
        let known = [state::GOALS, state::BRIEF, state::LEDGER].contains(&name.as_ref());
        if !(known || (name.starts_with('.') && name.ends_with(".tmp"))) {
            return Ok(false);
        }
    }
    if a.exists(state::GOALS) && !starts_with(dir, state::GOALS, a, state::GOALS, true)? {
        return Ok(false);
    }
    if a.exists(state::LEDGER) && !starts_with(dir, state::LEDGER, a, state::LEDGER, false)? {
        return Ok(false);
    }
    Ok(true)
}

/// Whether `long_dir/long` starts with the bytes of `short_dir/short`
/// (`exact`: and has no more). No-follow, non-blocking opens.
fn starts_with(
    short_dir: &Dir,
    short: &str,
    long_dir: &Dir,
    long: &str,
    exact: bool,
) -> std::io::Result<bool> {
    use std::io::Read;
    let (Ok(Some((mut s, sm))), Ok(Some((mut l, lm)))) = (
        state::open_file(short_dir, short, short),
        state::open_file(long_dir, long, long),
    ) else {
        return Ok(false);
    };
    if lm.len() < sm.len() || (exact && lm.len() != sm.len()) {
        return Ok(false);
    }
    let mut left = sm.len();
    let (mut a, mut b) = (vec![0u8; 64 * 1024], vec![0u8; 64 * 1024]);
    while left > 0 {
        let n = left.min(a.len() as u64) as usize;
        s.read_exact(&mut a[..n])?;
        l.read_exact(&mut b[..n])?;
        if a[..n] != b[..n] {
            return Ok(false);
        }
        left -= n as u64;
    }
    Ok(true)
}
