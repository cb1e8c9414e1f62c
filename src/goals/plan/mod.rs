//! The plan codec (`goals.json`, docs/state-formats.md#ge-2).
//!
//! The document stays an order-preserving JSON object from read to write, so
//! unknown keys written by the Node tools and their key order survive every
//! read-modify-write; typed views ([`Goal`], [`Criterion`]) read it, and
//! setters keep the position of existing keys and append new ones.

mod body;
pub(crate) mod model;
mod validate;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};

use cap_std::fs::Dir;
use serde_json::{Map, Value, json};

pub(crate) use body::BodyText;
pub use body::body_sha256;
pub use model::{Criterion, CriterionStatus, Goal, GoalStatus, Mode};
pub(crate) use model::{GoalMut, Overlay, STATUS_FILE, STATUS_MEMBERS, UserModel, remove_key};

use super::error::{ErrorKind, GoalError};
use super::profile::Profile;
use super::state::{self, ReadOutcome, StatePaths};

/// Every spelling of the aggregate completion record a reader accepts.
pub(crate) const COMPLETION_KEYS: &[&str] = &["aggregate_completion", "aggregateCompletion"];

/// How a command read the plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlanRead {
    /// Decoded whole from `goals.json`.
    Whole,
    /// From the cut-down body the ledger vouches for (`.goals.status`,
    /// docs/state-formats.md#status-view), with `goals.json`'s bytes hashed
    /// (and, by `status`, printed) but not decoded; a mutation reads the
    /// goals it changes whole from their text in `goals.json`.
    StatusView,
}

/// A decoded, validated plan.
///
/// A plan a command read from its cut-down body ([`Plan::is_partial`]:
/// `record-evidence`, `checkpoint`, `complete-goals`, `steer`, `add-goal`
/// and `record-review-blockers`, on a plan the ledger vouches for) holds, of the goals the
/// command did not change, target or hand over, only the members of their
/// criteria that `status` reads (`id`, `status`, `userModel`, `essential`,
/// and `seeded: true` where seeded); [`Plan::encode`] and the file written
/// are still the whole plan.
#[derive(Debug, Clone)]
pub struct Plan {
    doc: Map<String, Value>,
    index: HashMap<String, usize>,
    /// Ledger entries produced by reading (the legacy objective migration),
    /// persisted by the next mutation in the same revision.
    pub pending: Vec<Map<String, Value>>,
    /// The body digest as read, before the in-memory migration
    /// (docs/threat-model.md#i7); `None` for a plan built in memory.
    read: Option<ReadDigest>,
    /// [`Plan::encode`] of the document as it is, when known without
    /// serialising it (the bytes a commit just wrote); dropped by any change.
    encoded: Option<body::PlanFile>,
    /// Whether the document changed since it was read or built.
    changed: bool,
    /// Goals that may have changed since the plan was read.
    touched: Touched,
    /// Read by [`read_selected`]: members outside its selection are not in
    /// the document, which is read, never written.
    selected: bool,
    /// Read for a mutation from the cut-down body ([`Plan::for_mutation`]):
    /// the goals it did not read whole.
    partial: Option<Partial>,
}

/// The goals of a plan read for a mutation from its cut-down body
/// ([`Plan::for_mutation`]) that hold only what that body keeps of their
/// criteria. Each such goal is read whole from its text in the plan file
/// before anything changes it ([`Plan::goal_mut`], [`Plan::edit_goals`]);
/// the goals nothing changed are written back as the file's text.
#[derive(Debug, Clone)]
struct Partial {
    /// Per goal position in the file read: still cut down.
    cut: Vec<bool>,
    /// The seeded markers the body was cut under.
    markers: Vec<String>,
    /// How a goal is cut down ([`crate::goals::stop_view::status`]).
    cut_goal: CutGoal,
    /// The first goal (its index and id) whose text in the file did not
    /// read back as the goal its cut-down form was cut from: the plan is
    /// refused before anything is written ([`Plan::refuse_unreadable`]).
    unreadable: Option<(usize, String)>,
}

/// A goal cut down under seeded markers, serialised as the cut-down body
/// holds it.
pub(crate) type CutGoal = fn(&Value, &[String]) -> Vec<u8>;

/// In a debug build, a member every cut-down criterion of a plan read for a
/// mutation carries, so that reading any other member of it
/// ([`Criterion::str`]) fails the test that does: the commands read only
/// what the cut keeps of the goals they do not change.
pub(crate) const CUT_MARKER: &str = "\u{0}cut";

/// Estimated heap bytes of a decoded plan's tree per byte of its file (a
/// 1,000-goal plan of 1.76 MB grows a process by about 10 MB).
const TREE_BYTES_PER_FILE_BYTE: usize = 6;

/// Plans whose tree is at least this large are worth leaving to the
/// process's end ([`leave_plans_to_process_end`]); a small tree frees in
/// microseconds.
const LEAVE_FROM_TREE_BYTES: usize = 1 << 20;

/// The estimated tree bytes still allowed to be left unfreed.
static LEAVE_BUDGET: AtomicUsize = AtomicUsize::new(0);

/// For a process that ends soon after its call (the binaries): lets up to
/// `bytes` of large decoded plans (estimated from their files' sizes) be
/// left to the operating system when dropped, instead of freed node by node.
///
/// Freeing a large plan's tree is tens of thousands of `free` calls, and
/// while a hook's watchdog thread runs each takes the allocator's lock: the
/// steering prompt hook at 1,000 goals spent about 3 ms of 19 freeing its
/// plan (docs/performance.md#allocator). The default, 0, frees every plan,
/// which is what a process that keeps running wants; the budget bounds what
/// a command reading many plans can hold on to.
pub fn leave_plans_to_process_end(bytes: usize) {
    LEAVE_BUDGET.store(bytes, Ordering::Relaxed);
}

/// Charges `tree_bytes` to the budget when the tree is large and the budget
/// holds it; `false` leaves the budget as it was.
fn may_leave(budget: &AtomicUsize, tree_bytes: usize) -> bool {
    tree_bytes >= LEAVE_FROM_TREE_BYTES
        && budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                b.checked_sub(tree_bytes)
            })
            .is_ok()
}

impl Drop for Plan {
    fn drop(&mut self) {
        let file_bytes = self
            .read
            .as_ref()
            .and_then(|r| r.file.as_ref())
            .map_or(0, |f| f.len());
        if may_leave(
            &LEAVE_BUDGET,
            file_bytes.saturating_mul(TREE_BYTES_PER_FILE_BYTE),
        ) {
            std::mem::forget(std::mem::take(&mut self.doc));
            std::mem::forget(std::mem::take(&mut self.index));
        }
    }
}

/// Which goals a plan's changes may have reached.
#[derive(Debug, Clone, Default)]
enum Touched {
    /// These positions (goals appended after the read are past the file's).
    #[default]
    None,
    Some(Vec<usize>),
    /// The goals array itself (insertion, removal, reordering).
    All,
}

/// The body digest of a plan as it was read.
#[derive(Debug, Clone)]
struct ReadDigest {
    /// The file's bytes, when the plan was read from one: hashed with
    /// `lastMutation` cut out ([`body::raw_body_sha256`]) they give the
    /// body digest when that equals one the engine recorded.
    file: Option<std::sync::Arc<Vec<u8>>>,
    /// [`body_sha256`] of the document as read: serialised on first use,
    /// and always before the document first changes ([`Plan::pin`]).
    exact: std::sync::OnceLock<String>,
    /// The plan file serialising the document as read gave, when `exact`
    /// was computed that way before any change ([`Plan::serialise_body`]):
    /// an answer prints it instead of serialising the plan again.
    serialised: std::sync::OnceLock<body::PlanFile>,
    /// Set when `exact` was taken from `file` ([`Plan::read_body_sha256_recorded`]):
    /// the file is then [`Plan::encode`] of the document as read.
    file_is_encoding: std::sync::OnceLock<()>,
    /// Where each goal's text is in `file` (a large plan read on two
    /// threads; [`crate::json::parse_strict_wide_spans`]).
    goal_spans: Option<crate::json::Spans>,
}

/// `ULW_LOOP_PLAN_MISSING` for a scope.
pub(crate) fn missing(paths: &StatePaths, profile: &Profile) -> GoalError {
    let goals_path = paths.goals();
    GoalError::new(
        ErrorKind::PlanMissing {
            goals_path: goals_path.clone(),
        },
        format!(
            "No {} plan found at {goals_path}. Run `{} create-goals ...` first.",
            profile.display_name, profile.command_prefix
        ),
    )
}

/// Reads `goals.json` from the state directory (which may not exist).
pub(crate) fn read(
    dir: Option<&Dir>,
    paths: &StatePaths,
    profile: &Profile,
    now: &str,
) -> Result<Plan, GoalError> {
    read_with(dir, paths, profile, now, None)
}

/// [`read`] for a caller that only reads the plan and, of each goal's
/// criteria, only the members in `sel.keep`: the criteria's other members
/// (their scenarios and evidence text, most of a large plan's bytes) are
/// checked as a whole read checks them and skipped, not decoded
/// ([`crate::json::parse_selected`]). The plan accepts and refuses exactly
/// what [`read`] does, with the same errors; its body digest is the whole
/// plan's. It is never written ([`Plan::encode`] panics).
pub(crate) fn read_selected(
    dir: Option<&Dir>,
    paths: &StatePaths,
    profile: &Profile,
    now: &str,
    sel: &crate::json::Selection,
) -> Result<Plan, GoalError> {
    read_with(dir, paths, profile, now, Some(sel))
}

fn read_with(
    dir: Option<&Dir>,
    paths: &StatePaths,
    profile: &Profile,
    now: &str,
    sel: Option<&crate::json::Selection>,
) -> Result<Plan, GoalError> {
    let bytes = read_bytes(dir, paths, profile)?;
    match sel {
        None => Plan::decode_file(bytes, paths, profile, now),
        Some(sel) => Plan::decode_selected(bytes, paths, profile, now, sel),
    }
}

/// The bytes of `goals.json` in `dir`, refused as [`read`] refuses a plan
/// that is missing or too large.
pub(crate) fn read_bytes(
    dir: Option<&Dir>,
    paths: &StatePaths,
    profile: &Profile,
) -> Result<Vec<u8>, GoalError> {
    let goals_path = paths.goals();
    let Some(dir) = dir else {
        return Err(missing(paths, profile));
    };
    match state::read_file(
        dir,
        state::GOALS,
        &goals_path,
        profile.limits.max_plan_bytes,
    )? {
        None => Err(missing(paths, profile)),
        Some(ReadOutcome::TooLarge { size }) => Err(corrupt(
            &goals_path,
            "",
            format!(
                "the plan is {size} bytes; the limit is {}",
                profile.limits.max_plan_bytes
            ),
        )),
        Some(ReadOutcome::Bytes(bytes)) => Ok(bytes),
    }
}

/// The top-level `lastMutation` object of a plan file laid out as the
/// engine writes plans, with the offset just past it (`None` when there is
/// none so laid out; `Err` when one is there but does not parse). A line
/// that starts with two spaces and a quote is a top-level member in that
/// layout (strings hold no raw newline), and the object it opens ends at
/// the first line that is two spaces and a closing brace.
fn last_mutation_at(file: &[u8]) -> Result<Option<(Value, usize)>, ()> {
    const KEY: &[u8] = b"\n  \"lastMutation\": {";
    let Some(at) = crate::scan::find(file, KEY) else {
        return Ok(None);
    };
    let start = at + KEY.len() - 1;
    let end = crate::scan::find(&file[start..], b"\n  }").ok_or(())? + start + 4;
    crate::json::parse_strict(&file[start..end])
        .map(|v| Some((v, end)))
        .map_err(|_| ())
}

/// Where each goal's text is in a plan file laid out as the engine writes
/// plans, from its `{` to its `}`: in that layout a line that is four
/// spaces and a brace opens or closes an element of the top-level `goals`
/// array (strings hold no raw newline). `None` when the file is not laid
/// out so.
fn goal_spans_in(file: &[u8]) -> Option<crate::json::Spans> {
    const KEY: &[u8] = b"\n  \"goals\": [";
    const OPEN: &[u8] = b"\n    {";
    const CLOSE: &[u8] = b"\n    }";
    let mut at = crate::scan::find(file, KEY)? + KEY.len();
    let mut spans = Vec::new();
    if file.get(at) == Some(&b']') {
        return Some(spans);
    }
    loop {
        if !file[at..].starts_with(OPEN) {
            return None;
        }
        let start = at + OPEN.len() - 1;
        let end = crate::scan::find(&file[start..], CLOSE)? + start + CLOSE.len();
        spans.push(start..end);
        let rest = &file[end..];
        if rest.starts_with(b",") {
            at = end + 1;
        } else if rest.starts_with(b"\n  ]") {
            return Some(spans);
        } else {
            return None;
        }
    }
}

/// The top-level key that follows the member ending at `end` in a plan file
/// laid out as the engine writes plans (`None` when that member is the
/// last; `Err` when what follows is not a member).
fn next_key(file: &[u8], end: usize) -> Result<Option<String>, ()> {
    use serde::Deserialize;
    let rest = &file[end..];
    if rest == b"\n}\n" {
        return Ok(None);
    }
    let key = rest.strip_prefix(b",\n  ").ok_or(())?;
    let mut de = serde_json::Deserializer::from_slice(key);
    String::deserialize(&mut de).map(Some).map_err(|_| ())
}

/// A plan decoded from a cut-down body and the plan file `file`, whose
/// bytes hash to the vouched body digest `plan_sha256`: when reading it
/// changed nothing (no in-memory migration), its body digest is that digest
/// and the file is its encoding; `partial` makes it a plan read for a
/// mutation ([`Plan::for_mutation`]), else it is read, never written
/// ([`Plan::from_status_view`]). Otherwise the file's bytes, for a whole
/// reading.
fn as_bound(
    decoded: Result<Plan, GoalError>,
    file: std::sync::Arc<Vec<u8>>,
    plan_sha256: &str,
    partial: Option<Partial>,
) -> Result<Plan, Vec<u8>> {
    match decoded {
        Ok(mut plan) if !plan.changed && plan.pending.is_empty() => {
            if partial.is_some() {
                plan.selected = false;
                plan.partial = partial;
            }
            let r = plan.read.as_ref().expect("a plan decoded from a file");
            let _ = r.exact.set(plan_sha256.to_owned());
            let _ = r.file_is_encoding.set(());
            Ok(plan)
        }
        _ => {
            drop(decoded);
            Err(std::sync::Arc::try_unwrap(file).unwrap_or_else(|f| f.to_vec()))
        }
    }
}

/// `read()` while the body digest of plan file `file` (with `lastMutation`,
/// `last_mutation`, cut out: [`body::raw_body_sha256`]) is taken: on a
/// helper thread for a long file, which both need about as long.
fn hash_while<T>(
    file: &[u8],
    last_mutation: Option<&Value>,
    read: impl FnOnce() -> T,
) -> (T, Option<String>) {
    let digest = || body::raw_body_sha256_of(file, last_mutation);
    if file.len() < crate::json::WIDE_MIN_BYTES {
        return (read(), digest());
    }
    std::thread::scope(
        |s| match std::thread::Builder::new().spawn_scoped(s, digest) {
            Ok(helper) => {
                let t = read();
                let d = helper
                    .join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p));
                (t, d)
            }
            Err(_) => (read(), digest()),
        },
    )
}

/// A goal read whole from its text, when that text is a goal whose cut-down
/// form under `markers` is `cut`'s.
fn whole_goal(text: &[u8], cut: &Value, markers: &[String], cut_goal: CutGoal) -> Option<Value> {
    let whole = crate::json::parse_strict(text).ok()?;
    let same = cut_goal(&whole, markers) == cut_goal(cut, markers);
    (whole.is_object() && same).then_some(whole)
}

fn corrupt(goals_path: &str, pointer: &str, problem: String) -> GoalError {
    let message = if pointer.is_empty() {
        format!("Corrupt plan at {goals_path}: {problem}.")
    } else {
        format!("Corrupt plan at {goals_path}: {pointer}: {problem}.")
    };
    GoalError::new(
        ErrorKind::PlanCorrupt {
            goals_path: goals_path.to_owned(),
            pointer: pointer.to_owned(),
            problem,
        },
        message,
    )
}

fn invalid(
    goals_path: &str,
    profile: &Profile,
    field: Option<(String, Value, Value)>,
) -> GoalError {
    let extra = match &field {
        Some((f, expected, actual)) => format!(" Field {f} must be {expected}, found {actual}."),
        None => String::new(),
    };
    GoalError::new(
        ErrorKind::PlanInvalid {
            goals_path: goals_path.to_owned(),
            field,
        },
        format!(
            "Invalid {} plan at {goals_path}.{extra}",
            profile.display_name
        ),
    )
}

impl Plan {
    /// Decodes and validates plan bytes (size already checked).
    pub fn decode(
        bytes: &[u8],
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
    ) -> Result<Plan, GoalError> {
        let goals_path = paths.goals();
        let (value, goal_spans) = crate::json::parse_strict_wide_spans(bytes, "goals")
            .map_err(|e| corrupt(&goals_path, "", format!("not valid JSON: {e}")))?;
        Plan::decode_value(value, goal_spans, None, paths, profile, now)
    }

    /// [`read_selected`]'s decoding of a file's bytes: the selective
    /// reading, or, for a document it does not accept, the whole one (which
    /// refuses it with the error [`Plan::decode_file`] gives).
    pub(crate) fn decode_selected(
        bytes: Vec<u8>,
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
        sel: &crate::json::Selection,
    ) -> Result<Plan, GoalError> {
        match crate::json::parse_selected(&bytes, sel) {
            Some(value) => {
                let file = std::sync::Arc::new(bytes);
                Plan::decode_value(value, None, Some(file), paths, profile, now)
            }
            None => Plan::decode_file(bytes, paths, profile, now),
        }
    }

    /// The checks and the in-memory migration of a read document.
    /// `selected_from`: the file a selective reading decoded it from
    /// ([`read_selected`]); `None` for a whole reading.
    fn decode_value(
        value: Value,
        goal_spans: Option<crate::json::Spans>,
        selected_from: Option<std::sync::Arc<Vec<u8>>>,
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
    ) -> Result<Plan, GoalError> {
        let goals_path = paths.goals();
        let selected = selected_from.is_some();
        let Value::Object(doc) = value else {
            return Err(invalid(&goals_path, profile, None));
        };
        if doc.get("version").and_then(Value::as_u64) != Some(1)
            || !doc.get("goals").is_some_and(Value::is_array)
        {
            return Err(invalid(&goals_path, profile, None));
        }
        let index =
            validate::check(&doc).map_err(|v| corrupt(&goals_path, &v.pointer, v.problem))?;
        if let Some(p) = doc.get("profile")
            && p.as_str() != Some(profile.name.as_str())
        {
            return Err(invalid(
                &goals_path,
                profile,
                Some(("profile".into(), json!(profile.name), p.clone())),
            ));
        }
        for (k, expected) in &profile.plan_markers {
            if let Some(actual) = doc.get(k)
                && actual != expected
            {
                return Err(invalid(
                    &goals_path,
                    profile,
                    Some((k.clone(), expected.clone(), actual.clone())),
                ));
            }
        }
        let mut first: Option<(&str, &Value)> = None;
        for key in COMPLETION_KEYS {
            if let Some(rec) = doc.get(*key) {
                if !rec.is_object() {
                    return Err(corrupt(
                        &goals_path,
                        &format!("/{key}"),
                        "the completion record must be an object".into(),
                    ));
                }
                match first {
                    Some((_, other)) if other != rec => {
                        return Err(corrupt(
                            &goals_path,
                            "/aggregate_completion",
                            "aggregate_completion and aggregateCompletion differ".into(),
                        ));
                    }
                    Some(_) => {}
                    None => first = Some((key, rec)),
                }
            }
        }
        let read = Some(ReadDigest {
            file: selected_from,
            exact: std::sync::OnceLock::new(),
            serialised: std::sync::OnceLock::new(),
            file_is_encoding: std::sync::OnceLock::new(),
            goal_spans,
        });
        let mut plan = Plan {
            doc,
            index,
            pending: Vec::new(),
            read,
            encoded: None,
            changed: false,
            touched: Touched::None,
            selected,
            partial: None,
        };
        plan.migrate_legacy_objective(profile, paths, now);
        Ok(plan)
    }

    /// [`Plan::decode`] of a file's bytes, which the plan keeps until its
    /// binding is judged ([`Plan::read_body_sha256_recorded`]).
    pub(crate) fn decode_file(
        bytes: Vec<u8>,
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
    ) -> Result<Plan, GoalError> {
        let mut plan = Plan::decode(&bytes, paths, profile, now)?;
        if let Some(r) = &mut plan.read
            && r.exact.get().is_none()
        {
            r.file = Some(std::sync::Arc::new(bytes));
        }
        Ok(plan)
    }

    /// The plan `status` reads from the cut-down body of
    /// [`crate::goals::stop_view::status`] and the plan file's `file` bytes,
    /// when those bytes with their `lastMutation` cut out hash to
    /// `plan_sha256`, the digest the body was cut from, and the document
    /// passes the checks of a whole reading without the in-memory migration
    /// changing it. The file is then exactly that body with that
    /// `lastMutation`: the plan's body digest is `plan_sha256` and an answer
    /// prints the file. The plan is never written ([`Plan::encode`]
    /// panics). Otherwise `Err` gives the bytes back, for a whole reading.
    pub(crate) fn from_status_view(
        file: Vec<u8>,
        reduced: impl FnOnce() -> Option<Map<String, Value>>,
        plan_sha256: &str,
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
    ) -> Result<Plan, Vec<u8>> {
        let lm = match last_mutation_at(&file) {
            Ok(lm) => lm.map(|(v, _)| v),
            Err(()) => return Err(file),
        };
        let (reduced, digest) = hash_while(&file, lm.as_ref(), reduced);
        let Some(mut reduced) = reduced else {
            return Err(file);
        };
        if reduced.contains_key("lastMutation") || digest.as_deref() != Some(plan_sha256) {
            return Err(file);
        }
        if let Some(lm) = lm {
            reduced.insert("lastMutation".into(), lm);
        }
        let file = std::sync::Arc::new(file);
        let decoded = Plan::decode_value(
            Value::Object(reduced),
            None,
            Some(file.clone()),
            paths,
            profile,
            now,
        );
        as_bound(decoded, file, plan_sha256, None)
    }

    /// The plan a mutation reads from the cut-down body of
    /// [`crate::goals::stop_view::status`] (`reduced`, cut under `markers`)
    /// and the plan file's `file` bytes, under the same conditions as
    /// [`Plan::from_status_view`]: the goals whose ids are in `reach` are
    /// read whole from their text in the file (and must cut down to what
    /// `reduced` holds for them); every other goal holds what the cut keeps
    /// of its criteria until something changes it, when it is read whole
    /// first. The goals nothing changed are written back as the file's text
    /// ([`BodyText::of_plan`]), so the plan written is the one a whole
    /// reading would write. Otherwise `Err` gives the bytes back, for a
    /// whole reading.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn for_mutation(
        file: Vec<u8>,
        reduced: impl FnOnce() -> Option<Map<String, Value>>,
        plan_sha256: &str,
        reach: &[&str],
        (markers, cut_goal): (&[String], CutGoal),
        paths: &StatePaths,
        profile: &Profile,
        now: &str,
    ) -> Result<Plan, Vec<u8>> {
        let Ok(lm) = last_mutation_at(&file) else {
            return Err(file);
        };
        let (reduced, digest) = hash_while(&file, lm.as_ref().map(|(v, _)| v), reduced);
        let Some(mut reduced) = reduced else {
            return Err(file);
        };
        if reduced.contains_key("lastMutation") || digest.as_deref() != Some(plan_sha256) {
            return Err(file);
        }
        // `lastMutation` back at its place among the members.
        if let Some((lm, end)) = lm {
            match next_key(&file, end) {
                Ok(None) => {
                    reduced.insert("lastMutation".into(), lm);
                }
                Ok(Some(next)) if reduced.contains_key(&next) => {
                    let mut doc = Map::with_capacity(reduced.len() + 1);
                    let mut lm = Some(lm);
                    for (k, v) in reduced {
                        if k == next
                            && let Some(lm) = lm.take()
                        {
                            doc.insert("lastMutation".into(), lm);
                        }
                        doc.insert(k, v);
                    }
                    reduced = doc;
                }
                _ => return Err(file),
            }
        }
        let Some(spans) = goal_spans_in(&file) else {
            return Err(file);
        };
        let Some(Value::Array(goals)) = reduced.get_mut("goals") else {
            return Err(file);
        };
        if goals.len() != spans.len() {
            return Err(file);
        }
        let mut cut = vec![true; goals.len()];
        for (i, g) in goals.iter_mut().enumerate() {
            if !reach.contains(&g.get("id").and_then(Value::as_str).unwrap_or_default()) {
                continue;
            }
            match whole_goal(&file[spans[i].clone()], g, markers, cut_goal) {
                Some(whole) => *g = whole,
                None => return Err(file),
            }
            cut[i] = false;
        }
        if cfg!(debug_assertions) {
            for (g, _) in goals.iter_mut().zip(&cut).filter(|(_, c)| **c) {
                let criteria = g.get_mut("successCriteria").and_then(Value::as_array_mut);
                for c in criteria.into_iter().flatten() {
                    if let Value::Object(c) = c {
                        c.insert(CUT_MARKER.into(), Value::Bool(true));
                    }
                }
            }
        }
        let file = std::sync::Arc::new(file);
        let decoded = Plan::decode_value(
            Value::Object(reduced),
            Some(spans),
            Some(file.clone()),
            paths,
            profile,
            now,
        );
        let partial = Partial {
            cut,
            markers: markers.to_vec(),
            cut_goal,
            unreadable: None,
        };
        as_bound(decoded, file, plan_sha256, Some(partial))
    }

    /// Reads goal `i` whole from its text in the file before it changes,
    /// when it holds only what the cut keeps ([`Plan::for_mutation`]).
    fn read_whole(&mut self, i: usize) {
        let Some(p) = &mut self.partial else {
            return;
        };
        if !p.cut.get(i).copied().unwrap_or(false) {
            return;
        }
        p.cut[i] = false;
        let text = self.read.as_ref().and_then(|r| {
            r.file
                .as_deref()?
                .get(r.goal_spans.as_ref()?.get(i)?.clone())
        });
        let goals = self
            .doc
            .get_mut("goals")
            .and_then(Value::as_array_mut)
            .expect("validated");
        match text.and_then(|t| whole_goal(t, &goals[i], &p.markers, p.cut_goal)) {
            Some(whole) => goals[i] = whole,
            None if p.unreadable.is_none() => {
                let id = goals[i].get("id").and_then(Value::as_str).unwrap_or("");
                p.unreadable = Some((i, id.to_owned()));
            }
            None => {}
        }
    }

    /// Reads goal `id` whole when it holds only what the cut keeps
    /// ([`Plan::for_mutation`]), without changing it: for a caller that
    /// reads its criteria in full. `ULW_LOOP_PLAN_CORRUPT` at once when its
    /// text does not read back ([`Plan::refuse_unreadable`]), before the
    /// caller reads it.
    pub(crate) fn read_goal(&mut self, id: &str, paths: &StatePaths) -> Result<(), GoalError> {
        if let Some(&i) = self.index.get(id) {
            self.read_whole(i);
        }
        self.refuse_unreadable(paths)
    }

    /// Whether some goals hold only what the cut keeps of their criteria
    /// (a plan a mutation read from the cut-down body; its
    /// [`Plan::encode`] is still the whole plan).
    pub fn is_partial(&self) -> bool {
        self.partial
            .as_ref()
            .is_some_and(|p| p.cut.iter().any(|c| *c))
    }

    /// `ULW_LOOP_PLAN_CORRUPT` when a goal of a plan read for a mutation
    /// could not be read whole from its text ([`Plan::for_mutation`]).
    pub(crate) fn refuse_unreadable(&self, paths: &StatePaths) -> Result<(), GoalError> {
        match self.partial.as_ref().and_then(|p| p.unreadable.as_ref()) {
            Some((i, id)) => Err(corrupt(
                &paths.goals(),
                &format!("/goals/{i}"),
                format!(
                    "goal `{id}` does not read back from its text as the cut-down body `{}` holds it (the body, or the ledger record vouching for it, was changed by hand); nothing was written: delete `{}` and run the command again, which then reads the plan whole",
                    paths.file(STATUS_FILE),
                    paths.file(STATUS_FILE),
                ),
            )),
            None => Ok(()),
        }
    }

    /// The document with every goal read whole (a debug build's check of
    /// what a partly read plan writes).
    pub(crate) fn whole_doc(&self) -> Map<String, Value> {
        let mut doc = self.doc.clone();
        if let (Some(p), Some(r)) = (&self.partial, &self.read)
            && let (Some(file), Some(spans)) = (&r.file, &r.goal_spans)
            && let Some(Value::Array(goals)) = doc.get_mut("goals")
        {
            for (i, g) in goals.iter_mut().enumerate() {
                if p.cut.get(i).copied().unwrap_or(false)
                    && let Ok(whole) = crate::json::parse_strict(&file[spans[i].clone()])
                {
                    *g = whole;
                }
            }
        }
        doc
    }

    /// A new plan from a document built by `create-goals`.
    pub fn from_doc(doc: Map<String, Value>) -> Plan {
        let index = doc
            .get("goals")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .enumerate()
                    .filter_map(|(i, g)| Some((g.get("id")?.as_str()?.to_owned(), i)))
                    .collect()
            })
            .unwrap_or_default();
        Plan {
            doc,
            index,
            pending: Vec::new(),
            read: None,
            encoded: None,
            changed: false,
            touched: Touched::None,
            selected: false,
            partial: None,
        }
    }

    /// SHA-256 of the plan body as it was read from `goals.json` (before the
    /// in-memory legacy migration), else of the body as it is now.
    pub fn read_body_sha256(&self) -> String {
        match &self.read {
            // The document has not changed since it was read, or `pin` set
            // the digest before it did.
            Some(r) => r.exact.get_or_init(|| self.body_as_read()).clone(),
            None => body_sha256(&self.doc),
        }
    }

    /// The body digest of the document as it is, which is as read: for a
    /// selectively read plan, the whole file's document, decoded again.
    fn body_as_read(&self) -> String {
        if !self.selected {
            return self.serialise_body();
        }
        let whole = self
            .read
            .as_ref()
            .and_then(|r| r.file.as_deref())
            .and_then(|f| crate::json::parse_strict(f).ok());
        match whole {
            Some(Value::Object(doc)) => BodyText::of(&doc).sha256(),
            // The selective reading accepts only what the whole one does; a
            // digest no record holds, were it not so, makes the plan one its
            // ledger does not vouch for.
            _ => String::from("unreadable"),
        }
    }

    /// [`body_sha256`] of the document, serialised as a write serialises it
    /// (a long goals array on two threads). While the document is as read,
    /// the plan file this gives is kept for [`Plan::encoded`], so a plan
    /// whose file is not the engine's (a Node tool's, a hand-made one) is
    /// serialised once for its digest and its answer, not twice.
    fn serialise_body(&self) -> String {
        let body = BodyText::of(&self.doc);
        let d = body.sha256();
        if let Some(r) = &self.read
            && !self.changed
        {
            let _ = r.serialised.set(body.file(&self.doc));
        }
        d
    }

    /// [`Plan::read_body_sha256`] when the digests a ledger records are at
    /// hand (`recorded` says whether a digest is one): the file's hash with
    /// `lastMutation` cut out is taken when it is recorded, which spares
    /// serialising the plan; otherwise the body is serialised as always.
    ///
    /// For a file the engine wrote the two are equal: bytes that hash to a
    /// body digest the engine recorded are the body it serialised, and
    /// serialising what they parse to gives them back (unit and property
    /// tests in `body`). A file laid out otherwise matches only a record
    /// written for its own bytes, which whoever can forge that record could
    /// as well have written for its serialisation: the binding is no weaker.
    pub(crate) fn read_body_sha256_recorded(&self, recorded: &dyn Fn(&str) -> bool) -> String {
        if let Some(ReadDigest {
            file: Some(file),
            exact,
            ..
        }) = &self.read
            && exact.get().is_none()
            && let Some(raw) = body::raw_body_sha256(file, &self.doc)
            && recorded(&raw)
        {
            let _ = exact.set(raw);
            // The bytes with `lastMutation` cut out are a body the engine
            // serialised, and the member cut out is the one serialising the
            // document puts there: the file is the document encoded.
            if let Some(r) = &self.read {
                let _ = r.file_is_encoding.set(());
            }
        }
        self.read_body_sha256()
    }

    /// Records that `bytes` are [`Plan::encode`] of the document as it is
    /// (the file a commit wrote), so an answer that prints the plan need not
    /// serialise it again. Any change drops them.
    pub(crate) fn set_encoded(&mut self, file: body::PlanFile) {
        debug_assert!(
            file.to_vec() == self.encode(),
            "the file is the plan encoded"
        );
        self.encoded = Some(file);
    }

    /// [`Plan::encode`] of the document as it is, when known without
    /// serialising it: its bytes in pieces, in order.
    pub(crate) fn encoded(&self) -> Option<Vec<&[u8]>> {
        if self.selected {
            // Only the file read can be the whole document encoded: the
            // document holds part of it.
            return if self.changed {
                None
            } else {
                self.encoding_read().map(|f| vec![f])
            };
        }
        if let Some(e) = &self.encoded {
            return Some(e.pieces());
        }
        if self.changed {
            return None;
        }
        if let Some(file) = self.encoding_read() {
            debug_assert!(*file == self.encode(), "the file read is the plan encoded");
            return Some(vec![file]);
        }
        let file = self.read.as_ref()?.serialised.get()?;
        debug_assert!(
            file.to_vec() == self.encode(),
            "the file serialised is the plan encoded"
        );
        Some(file.pieces())
    }

    /// The file read, when it is [`Plan::encode`] of the document as read
    /// (its body hashes to a digest the ledger records).
    fn encoding_read(&self) -> Option<&[u8]> {
        let r = self.read.as_ref()?;
        r.file_is_encoding.get()?;
        r.file.as_deref().map(Vec::as_slice)
    }

    /// Where goal `i`'s text is in the file read, when that file is the plan
    /// encoded as read and the goal has not been reached by a change since:
    /// its layout in a plan file, which serialising the goal gives back
    /// ([`super::plan::body::BodyText::of_plan`]).
    pub(crate) fn kept_goal_span(&self, i: usize) -> Option<std::ops::Range<usize>> {
        let spans = self.read.as_ref()?.goal_spans.as_ref()?;
        let span = spans.get(i)?.clone();
        self.encoding_read()?.get(span.clone())?;
        match &self.touched {
            Touched::None => Some(span),
            Touched::Some(at) if !at.contains(&i) => Some(span),
            _ => None,
        }
    }

    /// Goal `i`'s text in the file read ([`Plan::kept_goal_span`]).
    #[cfg(test)]
    pub(crate) fn kept_goal_text(&self, i: usize) -> Option<&[u8]> {
        self.encoding_read()?.get(self.kept_goal_span(i)?)
    }

    /// The file read, when [`Plan::kept_goal_span`] may give any goal's
    /// text in it.
    pub(crate) fn kept_goals_file(&self) -> Option<std::sync::Arc<Vec<u8>>> {
        let r = self.read.as_ref()?;
        r.goal_spans.as_ref()?;
        self.encoding_read()?;
        if matches!(self.touched, Touched::All) {
            return None;
        }
        r.file.clone()
    }

    fn touch(&mut self, i: Option<usize>) {
        match (&mut self.touched, i) {
            (Touched::All, _) => {}
            (_, None) => self.touched = Touched::All,
            (Touched::None, Some(i)) => self.touched = Touched::Some(vec![i]),
            (Touched::Some(at), Some(i)) => {
                if !at.contains(&i) {
                    at.push(i);
                }
            }
        }
    }

    /// Fixes the read body digest before the document first changes, and
    /// forgets the encoded bytes.
    fn pin(&mut self) {
        self.encoded = None;
        self.changed = true;
        if let Some(r) = &self.read
            && r.exact.get().is_none()
        {
            let _ = r.exact.set(self.body_as_read());
        }
    }

    /// Whether the plan was read by [`read_selected`].
    #[cfg(test)]
    pub(crate) fn is_selected(&self) -> bool {
        self.selected
    }

    /// Two-space pretty JSON plus one `\n`.
    pub fn encode(&self) -> Vec<u8> {
        assert!(!self.selected, "a selectively read plan is never written");
        if self.is_partial() {
            return BodyText::of_plan(self).file(&self.doc).to_vec();
        }
        let mut out = serde_json::to_vec_pretty(&self.doc).expect("JSON values serialise");
        out.push(b'\n');
        out
    }

    /// The whole document (of a partly read plan, [`Plan::is_partial`],
    /// the goals it holds cut down included).
    pub fn doc(&self) -> &Map<String, Value> {
        &self.doc
    }

    /// Sets a plan-level key (never `goals`), keeping its position if present.
    pub fn set(&mut self, key: &str, value: Value) {
        debug_assert_ne!(key, "goals");
        self.pin();
        if key == "goals" {
            self.touch(None);
        }
        self.doc.insert(key.to_owned(), value);
    }

    /// Removes a plan-level key, keeping the order of the others.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        debug_assert_ne!(key, "goals");
        self.pin();
        if key == "goals" {
            self.touch(None);
        }
        self.doc.shift_remove(key)
    }

    /// `revision` (absent ⇒ 0).
    pub fn revision(&self) -> u64 {
        self.doc
            .get("revision")
            .and_then(Value::as_u64)
            .unwrap_or(0)
    }

    /// `lastMutation`: `(revision, fromSeq, entries)`.
    pub fn last_mutation(&self) -> Option<(u64, u64, &Vec<Value>)> {
        let lm = self.doc.get("lastMutation")?.as_object()?;
        Some((
            lm.get("revision")?.as_u64()?,
            lm.get("fromSeq")?.as_u64()?,
            lm.get("entries")?.as_array()?,
        ))
    }

    fn goals_array(&self) -> &Vec<Value> {
        self.doc["goals"].as_array().expect("validated")
    }

    /// Every goal in plan order.
    pub fn goals(&self) -> impl Iterator<Item = Goal<'_>> {
        self.goals_array()
            .iter()
            .map(|g| Goal(g.as_object().expect("validated")))
    }

    /// Number of goals.
    pub fn goal_count(&self) -> usize {
        self.goals_array().len()
    }

    /// A goal by id.
    pub fn goal(&self, id: &str) -> Option<Goal<'_>> {
        let i = *self.index.get(id)?;
        Some(Goal(self.goals_array()[i].as_object().expect("validated")))
    }

    /// Position of a goal.
    pub fn goal_position(&self, id: &str) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// Write access to a goal (its `id` never changes through it).
    pub fn goal_mut(&mut self, id: &str) -> Option<GoalMut<'_>> {
        let i = *self.index.get(id)?;
        self.read_whole(i);
        self.pin();
        self.touch(Some(i));
        self.doc
            .get_mut("goals")
            .and_then(Value::as_array_mut)
            .and_then(|a| a.get_mut(i))
            .and_then(Value::as_object_mut)
            .map(GoalMut::new)
    }

    /// Appends a goal at the end.
    pub fn push_goal(&mut self, goal: Map<String, Value>) {
        self.pin();
        let id = goal
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let goals = self
            .doc
            .get_mut("goals")
            .and_then(Value::as_array_mut)
            .expect("validated");
        self.index.insert(id, goals.len());
        goals.push(Value::Object(goal));
    }

    /// Mutable access to the goals array (insertion, reordering); the id
    /// index is rebuilt afterwards, so ids must stay unique.
    pub fn edit_goals<R>(&mut self, f: impl FnOnce(&mut Vec<Value>) -> R) -> R {
        for i in 0..self.goal_count() {
            self.read_whole(i);
        }
        self.pin();
        self.touch(None);
        let goals = self
            .doc
            .get_mut("goals")
            .and_then(Value::as_array_mut)
            .expect("validated");
        let out = f(goals);
        self.index = goals
            .iter()
            .enumerate()
            .filter_map(|(i, g)| Some((g.get("id")?.as_str()?.to_owned(), i)))
            .collect();
        out
    }

    /// `codexGoalMode` (absent ⇒ `per_story`).
    pub fn mode(&self) -> Mode {
        self.doc
            .get("codexGoalMode")
            .and_then(Value::as_str)
            .and_then(Mode::parse)
            .unwrap_or(Mode::PerStory)
    }

    /// A plan-level string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.doc.get(key).and_then(Value::as_str)
    }

    /// `activeGoalId`.
    pub fn active_goal_id(&self) -> Option<&str> {
        self.str("activeGoalId")
    }

    /// `evidenceLayoutVersion == 2`.
    pub fn layout_v2(&self) -> bool {
        self.doc
            .get("evidenceLayoutVersion")
            .and_then(Value::as_u64)
            == Some(2)
    }

    /// The aggregate completion record under any accepted key.
    pub fn completion(&self) -> Option<&Map<String, Value>> {
        COMPLETION_KEYS
            .iter()
            .find_map(|k| self.doc.get(*k).and_then(Value::as_object))
    }

    /// The expected aggregate objective: `codexObjective`, else the unscoped
    /// template (docs/differences.md#r-1).
    pub fn aggregate_objective(&self, profile: &Profile) -> String {
        match self.str("codexObjective") {
            Some(o) => o.to_owned(),
            None => objective_for(
                profile,
                &StatePaths::new(&profile.state_dir, None)
                    .with_prefix(self.str("statePathPrefix").unwrap_or_default()),
            ),
        }
    }

    /// `codexObjectiveAliases`.
    pub fn objective_aliases(&self) -> Vec<&str> {
        self.doc
            .get("codexObjectiveAliases")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default()
    }

    /// Validation batches (raw objects, validated on read).
    pub fn batches(&self) -> Vec<&Map<String, Value>> {
        self.doc
            .get("validationBatches")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_object).collect())
            .unwrap_or_default()
    }

    /// Mutable validation batches.
    pub fn batches_mut(&mut self) -> Option<&mut Vec<Value>> {
        self.pin();
        self.doc
            .get_mut("validationBatches")
            .and_then(Value::as_array_mut)
    }

    /// The session id recorded by `create-goals`, else recovered from
    /// `goalsPath` (`<stateDir>/<sid>/goals.json`, docs/differences.md#r-7).
    pub fn session_id(&self, profile: &Profile) -> Option<String> {
        if let Some(v) = self.doc.get("sessionId") {
            return v.as_str().map(str::to_owned);
        }
        let path = self.str("goalsPath")?;
        let rest = path
            .strip_prefix(profile.state_dir.as_str())?
            .strip_prefix('/')?;
        let sid = rest.strip_suffix("/goals.json")?;
        (!sid.is_empty() && !sid.contains('/')).then(|| sid.to_owned())
    }

    fn migrate_legacy_objective(&mut self, profile: &Profile, paths: &StatePaths, now: &str) {
        if self.mode() != Mode::Aggregate {
            return;
        }
        let Some(old) = self.str("codexObjective").map(str::to_owned) else {
            return;
        };
        let legacy = &profile.legacy_objectives;
        let is_legacy = legacy.exact.contains(&old)
            || legacy.prefixes.iter().any(|p| old.starts_with(p.as_str()));
        // A project nested in a git worktree whose objective still names the
        // state from the project root (a plan written before the prefix was
        // recorded, or a project moved into a repository) is migrated to the
        // worktree-relative names, as `omx ultragoal` does.
        let unprefixed = StatePaths {
            prefix: String::new(),
            ..paths.clone()
        };
        let canonical = !paths.prefix.is_empty() && old == objective_for(profile, &unprefixed);
        if !is_legacy && !canonical {
            return;
        }
        let new = objective_for(profile, paths);
        self.set("codexObjective", Value::String(new.clone()));
        if !paths.prefix.is_empty() {
            self.set("statePathPrefix", Value::String(paths.prefix.clone()));
        }
        let mut aliases: Vec<Value> = self
            .doc
            .get("codexObjectiveAliases")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !aliases.iter().any(|a| a.as_str() == Some(old.as_str())) {
            aliases.push(Value::String(old.clone()));
        }
        self.set("codexObjectiveAliases", Value::Array(aliases));
        self.set("updatedAt", Value::String(now.to_owned()));
        let entry = json!({
            "at": now,
            "kind": crate::goals::journal::LedgerKind::AggregateObjectiveMigrated.as_str(),
            "message": if canonical {
                "Migrated the cwd-relative aggregate Codex objective to canonical repo-root-relative state paths."
            } else {
                "Legacy aggregate objective migrated to the durable plan objective."
            },
            "before": {"codexObjective": old},
            "after": {"codexObjective": new},
        });
        if let Value::Object(m) = entry {
            self.pending.push(m);
        }
    }
}

/// The aggregate objective for a scope: the profile template with the scope's paths.
/// The files are named from the git worktree root when the paths carry a
/// prefix (`compat/statePathPrefix`).
pub(crate) fn objective_for(profile: &Profile, paths: &StatePaths) -> String {
    profile
        .aggregate_objective
        .replace("{goals}", &paths.prefixed(&paths.goals()))
        .replace("{ledger}", &paths.prefixed(&paths.ledger()))
}

/// `text` decoded as an unscoped plan of the embedded `ulw-loop` profile
/// (unit tests).
#[cfg(test)]
pub(crate) fn ulw_loop_plan(text: &str) -> Plan {
    let rules = crate::rules::RuleSet::embedded().expect("embedded rules");
    let p = crate::goals::profile::Profiles::lookup(&rules, "ulw-loop").expect("ulw-loop");
    Plan::decode(
        text.as_bytes(),
        &StatePaths::new(&p.state_dir, None),
        &p,
        "now",
    )
    .expect("a valid plan")
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn profile() -> Profile {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        let p: crate::goals::profile::Profiles = rules.family().unwrap();
        p.0["ulw-loop"].clone()
    }

    /// The read body digest is the body as read, however the file is laid
    /// out and whatever changes afterwards: a change through any write
    /// accessor first fixes it; the file's own hash stands in for it only
    /// when it is a recorded digest.
    #[test]
    fn the_read_body_digest_is_the_body_as_read() {
        let p = profile();
        let paths = StatePaths::new(&p.state_dir, None);
        let text = r#"{"version":1,"revision":3,"goals":[{"id":"G1","title":"t","objective":"o","status":"pending"}],
            "lastMutation":{"revision":3,"fromSeq":1,"entries":[{"planSha256":"x"}],"ledgerHead":{"seq":2,"sha256":"y"}},"z":[1]}"#;
        let compact = Plan::decode(text.as_bytes(), &paths, &p, "now").unwrap();
        let as_read = body_sha256(compact.doc());
        let engine_file = compact.encode();
        let changes: [fn(&mut Plan); 6] = [
            |p| p.set("revision", json!(4)),
            |p| {
                p.remove("z");
            },
            |p| {
                p.goal_mut("G1").unwrap().set_status(GoalStatus::InProgress);
            },
            |p| {
                let mut g = Map::new();
                g.insert("id".into(), json!("G2"));
                p.push_goal(g);
            },
            |p| p.edit_goals(|g| g.clear()),
            |p| {
                p.set("validationBatches", json!([]));
                p.batches_mut().unwrap().push(json!({}));
            },
        ];
        for bytes in [text.as_bytes(), &engine_file[..]] {
            for change in changes {
                let mut plan = Plan::decode_file(bytes.to_vec(), &paths, &p, "now").unwrap();
                change(&mut plan);
                assert_ne!(body_sha256(plan.doc()), as_read);
                assert_eq!(plan.read_body_sha256(), as_read);
                assert_eq!(plan.read_body_sha256_recorded(&|_| true), as_read);
            }
            let plan = Plan::decode_file(bytes.to_vec(), &paths, &p, "now").unwrap();
            assert_eq!(plan.read_body_sha256_recorded(&|d| d == as_read), as_read);
            let plan = Plan::decode_file(bytes.to_vec(), &paths, &p, "now").unwrap();
            assert_eq!(plan.read_body_sha256_recorded(&|_| false), as_read);
        }
        // A compact file's own hash is not the body digest; the engine's
        // file hashes to it.
        let raw = body::raw_body_sha256(text.as_bytes(), compact.doc());
        assert_ne!(raw.as_deref(), Some(as_read.as_str()));
        let engine = Plan::decode(&engine_file, &paths, &p, "now").unwrap();
        assert_eq!(
            body::raw_body_sha256(&engine_file, engine.doc()).as_deref(),
            Some(as_read.as_str())
        );
    }

    /// A large plan read from a file that is the plan encoded (its body
    /// digest recorded) writes its untouched goals from that file: the body
    /// is byte-equal to serialising the document, after any change through
    /// any write accessor; goal texts are kept only for such a file.
    #[test]
    fn a_large_plan_keeps_the_text_of_its_untouched_goals() {
        let p = profile();
        let paths = StatePaths::new(&p.state_dir, None);
        let goals: Vec<Value> = (0..400)
            .map(|i| {
                json!({"id": format!("G{i}"), "title": format!("part {i} \u{e9}\n\"q\""), "objective": "o".repeat(200 + i % 500),
                       "status": "pending", "successCriteria": [{"id": "C1", "status": "pending", "n": [1.5, null, {}]}]})
            })
            .collect();
        let doc = json!({"version": 1, "revision": 2, "goals": goals,
                         "lastMutation": {"revision": 2, "fromSeq": 1, "entries": []}, "z": {"a": []}});
        let built = Plan::from_doc(doc.as_object().unwrap().clone());
        let file = built.encode();
        assert!(file.len() >= 256 * 1024, "{} bytes", file.len());
        let changes: [fn(&mut Plan); 7] = [
            |_| {},
            |p| p.set("revision", json!(3)),
            |p| {
                p.goal_mut("G7").unwrap().set_status(GoalStatus::InProgress);
                p.goal_mut("G399").unwrap().set_status(GoalStatus::Complete);
            },
            |p| {
                let mut g = Map::new();
                g.insert("id".into(), json!("G400"));
                p.push_goal(g);
            },
            |p| p.edit_goals(|g| g.swap(0, 1)),
            |p| {
                p.remove("z");
            },
            |p| {
                p.goal_mut("G0").unwrap().set_status(GoalStatus::Blocked);
                p.edit_goals(|g| g.truncate(10));
            },
        ];
        for (k, change) in changes.iter().enumerate() {
            for recorded in [true, false] {
                let mut plan = Plan::decode_file(file.clone(), &paths, &p, "now").unwrap();
                // The file's own hash is the body digest of the document as read.
                assert_eq!(
                    plan.read_body_sha256_recorded(&|_| recorded),
                    body_sha256(plan.doc())
                );
                assert_eq!(plan.kept_goals_file().is_some(), recorded, "change {k}");
                change(&mut plan);
                let body = body::BodyText::of_plan(&plan);
                assert!(
                    body.sha256() == body_sha256(plan.doc()),
                    "change {k}, recorded {recorded}"
                );
                let written = body.file(plan.doc());
                assert!(
                    written.to_vec() == plan.encode(),
                    "change {k}, recorded {recorded}"
                );
                match k {
                    2 if recorded => {
                        assert!(plan.kept_goal_text(6).is_some());
                        assert!(plan.kept_goal_text(7).is_none());
                        assert!(plan.kept_goal_text(399).is_none());
                        // Goals 0–6 and 8–398 are two spans of the file read,
                        // not 398 pieces.
                        assert!(written.pieces().len() <= 8, "{}", written.pieces().len());
                    }
                    0 | 1 if recorded => {
                        assert!(written.pieces().len() <= 6, "{}", written.pieces().len());
                    }
                    4 | 6 => assert!(plan.kept_goals_file().is_none()),
                    _ => {}
                }
            }
        }
        // A small plan, and one laid out otherwise, keep nothing.
        let small = Plan::from_doc(
            json!({"version": 1, "goals": []})
                .as_object()
                .unwrap()
                .clone(),
        );
        let plan = Plan::decode_file(small.encode(), &paths, &p, "now").unwrap();
        plan.read_body_sha256_recorded(&|_| true);
        assert!(plan.kept_goals_file().is_none());
        let mut compact = serde_json::to_vec(&doc).unwrap();
        compact.push(b'\n');
        let plan = Plan::decode_file(compact, &paths, &p, "now").unwrap();
        plan.read_body_sha256_recorded(&|_| true);
        assert!(plan.kept_goals_file().is_none());
    }

    /// A plan whose file is not the engine's layout is serialised once: the
    /// body digest's serialisation is what an answer prints, until the
    /// document changes.
    #[test]
    fn a_plan_serialised_for_its_digest_is_printed_from_that_serialisation() {
        let p = profile();
        let paths = StatePaths::new(&p.state_dir, None);
        for goals in [3usize, 300] {
            let list: Vec<Value> = (0..goals)
                .map(|i| json!({"id": format!("G{i}"), "title": "t", "objective": "o", "status": "pending"}))
                .collect();
            let doc = json!({"version": 1, "lastMutation": {"revision": 1, "fromSeq": 1, "entries": []},
                             "goals": list, "z": [1, {"a": "b\nc"}]});
            let mut compact = serde_json::to_vec(&doc).unwrap();
            compact.push(b'\n');
            let mut plan = Plan::decode_file(compact, &paths, &p, "now").unwrap();
            assert!(plan.encoded().is_none(), "nothing serialised yet");
            // Not recorded: the body is serialised for the digest.
            let d = plan.read_body_sha256_recorded(&|_| false);
            assert_eq!(d, body_sha256(plan.doc()));
            let printed = plan.encoded().expect("kept").concat();
            assert_eq!(printed, plan.encode(), "{goals} goals");
            plan.set("revision", json!(2));
            assert!(plan.encoded().is_none(), "a change drops it");
            assert_eq!(plan.read_body_sha256(), d, "the digest as read stays");
        }
    }

    /// The budget charges only large trees, and only while it holds them.
    #[test]
    fn the_process_end_budget_takes_large_trees_it_can_hold() {
        let budget = AtomicUsize::new(3 << 20);
        assert!(!may_leave(&budget, 512 << 10), "a small tree is freed");
        assert_eq!(budget.load(Ordering::Relaxed), 3 << 20);
        assert!(may_leave(&budget, 2 << 20));
        assert!(!may_leave(&budget, 2 << 20), "past the budget: freed");
        assert_eq!(budget.load(Ordering::Relaxed), 1 << 20);
        assert!(may_leave(&budget, 1 << 20));
        assert_eq!(budget.load(Ordering::Relaxed), 0);
        assert!(
            !may_leave(&AtomicUsize::new(0), usize::MAX),
            "the default frees all"
        );
    }

    /// Dropping a large plan read from a file charges its estimated tree to
    /// the process-end budget (and leaves the tree unfreed).
    #[test]
    fn dropping_a_large_plan_read_from_a_file_charges_the_budget() {
        let p = profile();
        let paths = StatePaths::new(&p.state_dir, None);
        let list: Vec<Value> = (0..3000)
            .map(|i| json!({"id": format!("G{i}"), "title": "t", "objective": "o", "status": "pending"}))
            .collect();
        let mut file = serde_json::to_vec(&json!({"version": 1, "goals": list})).unwrap();
        file.push(b'\n');
        let estimate = file.len() * TREE_BYTES_PER_FILE_BYTE;
        assert!(estimate >= LEAVE_FROM_TREE_BYTES, "{estimate}");
        let plan = Plan::decode_file(file, &paths, &p, "now").unwrap();
        let start = usize::MAX / 2;
        leave_plans_to_process_end(start);
        drop(plan);
        let left = LEAVE_BUDGET.load(Ordering::Relaxed);
        leave_plans_to_process_end(0);
        // Other tests may drop large plans meanwhile: at least this one's.
        assert!(start - left >= estimate, "{}", start - left);
    }

    #[test]
    fn round_trip_keeps_unknown_keys_and_order() {
        let text = r#"{"zeta":1,"version":1,"goals":[{"b":2,"id":"G1","title":"t","objective":"o","status":"pending","a":[1]}],"alpha":{"y":1,"x":2}}"#;
        let p = profile();
        let paths = StatePaths::new(&p.state_dir, None);
        let mut plan = Plan::decode(text.as_bytes(), &paths, &p, "now").unwrap();
        plan.goal_mut("G1")
            .unwrap()
            .set_status(GoalStatus::InProgress);
        plan.set("revision", json!(1));
        let out: Value = serde_json::from_slice(&plan.encode()).unwrap();
        let keys: Vec<&String> = out.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["zeta", "version", "goals", "alpha", "revision"]);
        let gkeys: Vec<&String> = out["goals"][0].as_object().unwrap().keys().collect();
        assert_eq!(gkeys, ["b", "id", "title", "objective", "status", "a"]);
        assert_eq!(out["alpha"], json!({"y": 1, "x": 2}));
    }

    proptest! {
        #[test]
        fn decoding_arbitrary_bytes_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let p = profile();
            let paths = StatePaths::new(&p.state_dir, None);
            let _ = Plan::decode(&bytes, &paths, &p, "now");
        }

        #[test]
        fn decoding_plan_shaped_json_never_panics(
            status in "[a-z_]{0,12}",
            attempt in any::<i64>(),
            extra in "[ -~]{0,40}",
        ) {
            let text = format!(
                r#"{{"version":1,"goals":[{{"id":"G1","title":"t","objective":"o","status":"{status}","attempt":{attempt},"successCriteria":[{{"id":"C1","status":"{status}"}}],"x":"{}"}}],"lastMutation":{{"revision":{attempt},"fromSeq":1,"entries":[]}}}}"#,
                extra.replace(['\\', '"'], "")
            );
            let p = profile();
            let paths = StatePaths::new(&p.state_dir, None);
            let _ = Plan::decode(text.as_bytes(), &paths, &p, "now");
        }
    }
}
