//! The hooks' view of a plan (docs/state-formats.md#stop-view): every value
//! the Stop decision, the ultrawork prompt's plan choice and the spawn guard
//! read from `goals.json`, kept next to the plan as `.goals.summary` so that
//! a hook on a large plan reads a few kilobytes instead of the whole plan.
//!
//! **Binding** (docs/threat-model.md#i7 carried over to the view). The view is
//! a function of the plan *body* only (never of `lastMutation`), so the
//! mutation that writes a plan computes it before anything is written and
//! records `summarySha256`, the SHA-256 of the view's first line, on every
//! entry it appends, next to `planSha256`. A hook trusts a view only when,
//! walking back from the ledger's end, every chained record carries the
//! view's `planSha256` until the first record that carries a
//! `summarySha256`, and that digest is the view's. The agent cannot write a
//! view that passes without writing the ledger records that vouch for it —
//! the same forgery that would pass a hand-edited plan.
//!
//! **Freshness hint.** The second line names the plan file the view was
//! written with (device, inode, size, modification time). It is not bound
//! (the plan embeds the entries, so no entry can name the file's identity);
//! it only sends a plan edited by hand — which changes it — to the full read,
//! where the edit is reported as `PLAN_TAMPERED`. A view whose plan was
//! edited and whose hint was rewritten to match still decides by the bound
//! view: the edit gains the agent nothing, and the next command or CI
//! reports it.
//!
//! Any doubt — the view missing, torn, oversized, unbound, stale, or the plan
//! file not a regular file — is not a verdict: the caller reads the plan.

use std::time::UNIX_EPOCH;

use cap_fs_ext::MetadataExt;
use cap_std::fs::{Dir, Metadata};
use serde::{Deserialize, Serialize};

use super::binding::TailRecord;
use super::decisions::{self, UserDecision};
use super::lifecycle;
use super::plan::{CriterionStatus, Goal, GoalStatus, Plan};
use super::profile::Profile;
use super::session;
use super::state::{self, ReadOutcome, StatePaths};
use crate::digest::sha256_hex;

use crate::store::{self, Durability};

/// The view's file in the state directory.
pub(crate) const FILE: &str = ".goals.summary";
/// The format version of the first line (2: with [`SpawnView`]; 3: with
/// `statusSha256`; a view of another version is not trusted, so the plan is
/// read).
const VERSION: u32 = 3;
/// Largest view read (the user decisions are its only unbounded part).
const MAX_BYTES: u64 = 1024 * 1024;
/// Most records walked back from the ledger's end to the plan's mutation.
const MAX_WALK: usize = 512;

/// What the Stop hook decides from (docs/hook-contracts.md#h-4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct StopView {
    /// The plan's recorded owner, normalised.
    pub session_id: Option<String>,
    /// Whether the plan carries `revision` (this engine has written it).
    pub engine_written: bool,
    /// The plan's `updatedAt`.
    pub updated_at: Option<String>,
    /// `runComplete(plan)`.
    pub run_complete: bool,
    /// The goal a resume names, if any.
    pub resume: Option<ResumeGoal>,
    /// [`progress_digest`].
    pub progress_digest: String,
    /// The plan's user decisions, in plan order.
    pub decisions: Vec<UserDecision>,
    /// What the spawn guard reads.
    pub spawn: SpawnView,
}

/// What the spawn guard reads from a plan (docs/hook-contracts.md#h-6): the
/// goal a gate-review spawn is preflighted for, where its reports lie, and
/// the attempt the fan-out cap counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SpawnView {
    /// The plan's `gateRules`.
    pub gate_rules: Option<String>,
    /// `evidenceLayoutVersion` is 2 (reports lie in the attempt directory).
    pub layout_v2: bool,
    /// [`Plan::session_id`]: the session an attempt directory is rendered for.
    pub attempt_session: Option<String>,
    /// The final candidate when the gate preflight applies to it: it is not
    /// complete and every criterion passes.
    pub preflight: Option<GoalAttempt>,
    /// The active goal's attempt (the cap's `goal_attempt` reset key).
    pub active: Option<GoalAttempt>,
}

/// A goal's attempt as the spawn guard reads it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct GoalAttempt {
    /// The goal's id.
    pub id: String,
    /// `attempt` (absent: 0).
    pub attempt: u64,
    /// The persisted `attemptDir`, if any.
    pub attempt_dir: Option<String>,
}

impl GoalAttempt {
    fn of(g: Goal<'_>) -> GoalAttempt {
        GoalAttempt {
            id: g.id().to_owned(),
            attempt: g.attempt(),
            attempt_dir: g.str("attemptDir").map(str::to_owned),
        }
    }
}

impl SpawnView {
    /// The view of `plan`, a plan of `profile`.
    pub(crate) fn of(plan: &Plan, profile: &Profile) -> SpawnView {
        let preflight = lifecycle::final_goal(plan)
            .filter(|g| {
                g.status() != GoalStatus::Complete
                    && g.criteria().all(|k| k.status() == CriterionStatus::Pass)
            })
            .map(GoalAttempt::of);
        SpawnView {
            gate_rules: plan.str("gateRules").map(str::to_owned),
            layout_v2: plan.layout_v2(),
            attempt_session: plan.session_id(profile),
            preflight,
            active: lifecycle::active_goal(plan).map(GoalAttempt::of),
        }
    }
}

/// The goal a resume names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ResumeGoal {
    /// Its id.
    pub id: String,
    /// Its title.
    pub title: String,
}

/// What a view reads of a plan's criteria, with what the plan's field rules
/// check of them: a plan read for its view only
/// ([`super::plan::read_selected`]) decodes these members of each criterion
/// and skips the rest (scenarios, expected and captured evidence).
pub(crate) const CRITERIA_READ: crate::json::Selection = crate::json::Selection {
    key: "goals",
    list: "successCriteria",
    keep: crate::goals::plan::STATUS_MEMBERS,
};

impl StopView {
    /// The view of `plan`, a plan of `profile`.
    pub(crate) fn of(plan: &Plan, profile: &Profile) -> StopView {
        StopView {
            session_id: plan
                .doc()
                .get("sessionId")
                .and_then(serde_json::Value::as_str)
                .and_then(session::normalize),
            engine_written: plan.doc().contains_key("revision"),
            updated_at: plan.str("updatedAt").map(str::to_owned),
            run_complete: lifecycle::run_complete(plan),
            resume: resumable_goal(plan).map(|g| ResumeGoal {
                id: g.id().to_owned(),
                title: g.title().to_owned(),
            }),
            progress_digest: progress_digest(plan),
            decisions: decisions::user_decisions(plan),
            spawn: SpawnView::of(plan, profile),
        }
    }

    /// The plan's `updatedAt`, when it parses.
    pub(crate) fn updated_at(&self) -> Option<std::time::SystemTime> {
        self.updated_at
            .as_deref()
            .and_then(crate::time::parse_rfc3339)
    }
}

/// The bound first line.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Bound {
    v: u32,
    plan_sha256: String,
    /// SHA-256 of [`status::FILE`]'s line, cut from the same body.
    status_sha256: String,
    view: StopView,
}

/// A view the ledger vouches for, with the digests its bound line records.
#[derive(Debug)]
pub(crate) struct Vouched {
    /// The view.
    pub view: StopView,
    /// The body digest of the plan it is the view of.
    pub plan_sha256: String,
    /// The digest of the `status` file cut from that body.
    pub status_sha256: String,
}

/// The unbound second line: the plan file the view was written with.
#[derive(Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileId {
    dev: u64,
    ino: u64,
    len: u64,
    mtime: (u64, u32),
}

impl FileId {
    fn of(m: &Metadata) -> Option<FileId> {
        let t = m
            .modified()
            .ok()?
            .into_std()
            .duration_since(UNIX_EPOCH)
            .ok()?;
        Some(FileId {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime: (t.as_secs(), t.subsec_nanos()),
        })
    }
}

/// A view about to be written by a mutation: its first line and the digest
/// its entries record.
#[derive(Debug)]
pub(crate) struct Prepared {
    line: Vec<u8>,
    /// The line of [`status::FILE`].
    status: Vec<u8>,
    /// SHA-256 of the first line.
    pub sha256: String,
}

/// Plans with at least this many goals have their body hashed on a helper
/// thread while their view is computed.
const PARALLEL_GOALS: usize = 128;

impl Prepared {
    /// The body digest `digest()` computes and the view of `plan` (whose
    /// body that is), computed side by side on two threads for a long plan.
    pub(crate) fn with_digest(
        plan: &Plan,
        profile: &Profile,
        digest: &(dyn Fn() -> String + Sync),
    ) -> (String, Prepared) {
        let views = || {
            (
                StopView::of(plan, profile),
                status::line(plan, &profile.criteria.seeded_markers),
            )
        };
        let (d, (view, status)) = if plan.goal_count() >= PARALLEL_GOALS {
            std::thread::scope(|s| {
                let helper = std::thread::Builder::new()
                    .name("digest".into())
                    .spawn_scoped(s, digest);
                let views = views();
                let d = match helper {
                    Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
                    Err(_) => digest(),
                };
                (d, views)
            })
        } else {
            (digest(), views())
        };
        let prepared = Prepared::bound(view, status, &d);
        (d, prepared)
    }

    fn bound(view: StopView, status: Vec<u8>, plan_sha256: &str) -> Prepared {
        let line = serde_json::to_vec(&Bound {
            v: VERSION,
            plan_sha256: plan_sha256.to_owned(),
            status_sha256: sha256_hex(&status),
            view,
        })
        .expect("a view serialises");
        Prepared {
            sha256: sha256_hex(&line),
            line,
            status,
        }
    }

    /// Writes the view after the plan and its entries landed. Best effort:
    /// a view that is not written, or written for another plan file, is
    /// one the hooks do not trust (they read the plan). No fsync: a view
    /// lost to a crash costs one full read.
    pub(crate) fn write(&self, dir: &Dir) {
        let Ok(meta) = dir.symlink_metadata(state::GOALS) else {
            return;
        };
        let Some(id) = FileId::of(&meta).filter(|_| meta.is_file()) else {
            return;
        };
        // The status file first: a view naming a status file not yet
        // written sends `status` to the plan, nothing worse.
        let _ = store::atomic_replace_pieces(
            dir,
            status::FILE,
            &[&self.status, b"\n"],
            Durability::Cache,
        );
        let mut bytes = self.line.clone();
        bytes.push(b'\n');
        serde_json::to_writer(&mut bytes, &id).expect("an id serialises");
        bytes.push(b'\n');
        let _ = store::atomic_replace(dir, FILE, &bytes, Durability::Cache);
    }
}

/// Runs `write`, a rewrite of `goals.json` that keeps its body (only
/// `lastMutation.ledgerHead` changes), and carries the view's freshness hint
/// over to the new file when the hint named the file before. The view
/// stays bound by the ledger as before; without this the next Stop hook
/// would read the whole plan. Best effort, as [`Prepared::write`].
pub(crate) fn keeping_view<E>(dir: &Dir, write: impl FnOnce() -> Result<(), E>) -> Result<(), E> {
    let before = dir
        .symlink_metadata(state::GOALS)
        .ok()
        .filter(Metadata::is_file)
        .and_then(|m| FileId::of(&m));
    let view = match state::read_file(dir, FILE, FILE, MAX_BYTES) {
        Ok(Some(ReadOutcome::Bytes(b))) => Some(b),
        _ => None,
    };
    write()?;
    let Some((line, hint)) = view.as_deref().and_then(split_lines) else {
        return Ok(());
    };
    let fresh = serde_json::from_slice::<FileId>(hint)
        .ok()
        .is_some_and(|id| before == Some(id));
    if !fresh {
        return Ok(());
    }
    let Some(id) = dir
        .symlink_metadata(state::GOALS)
        .ok()
        .filter(Metadata::is_file)
        .and_then(|m| FileId::of(&m))
    else {
        return Ok(());
    };
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    serde_json::to_writer(&mut bytes, &id).expect("an id serialises");
    bytes.push(b'\n');
    let _ = store::atomic_replace(dir, FILE, &bytes, Durability::Cache);
    Ok(())
}

/// The bound view of the plan in `dir`, or `None` when the plan must be
/// read (see the module docs). Reads the plan's `lstat`, the view and the
/// ledger's newest records; never the plan.
pub(crate) fn read_bound(dir: &Dir, paths: &StatePaths) -> Option<StopView> {
    read_vouched(dir, paths).map(|v| v.view)
}

/// [`read_bound`] with the digests the view's bound line records.
pub(crate) fn read_vouched(dir: &Dir, paths: &StatePaths) -> Option<Vouched> {
    let meta = dir.symlink_metadata(state::GOALS).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = match state::read_file(dir, FILE, &paths.file(FILE), MAX_BYTES).ok()?? {
        ReadOutcome::Bytes(b) => b,
        ReadOutcome::TooLarge { .. } => return None,
    };
    let (line, hint) = split_lines(&bytes)?;
    let id: FileId = serde_json::from_slice(hint).ok()?;
    if Some(id) != FileId::of(&meta) {
        return None;
    }
    let bound: Bound = serde_json::from_slice(line).ok()?;
    if bound.v != VERSION {
        return None;
    }
    let sha = sha256_hex(line);
    vouched(dir, paths, &bound.plan_sha256, &sha).then_some(Vouched {
        view: bound.view,
        plan_sha256: bound.plan_sha256,
        status_sha256: bound.status_sha256,
    })
}

/// `line \n hint \n`, nothing else.
fn split_lines(bytes: &[u8]) -> Option<(&[u8], &[u8])> {
    let (body, rest) = bytes.split_at(crate::scan::find_byte(b'\n', bytes)?);
    let hint = rest[1..].strip_suffix(b"\n")?;
    (!hint.contains(&b'\n')).then_some((body, hint))
}

/// Whether the ledger's newest records vouch for the view `sha` of the body
/// `plan_sha`: walking back from the end, every record is chained and
/// carries `plan_sha`, up to the first that carries a view digest, which is
/// `sha`.
fn vouched(dir: &Dir, paths: &StatePaths, plan_sha: &str, sha: &str) -> bool {
    let Ok(Some((mut f, meta))) = state::open_file(dir, state::LEDGER, &paths.ledger()) else {
        return false;
    };
    let budget = super::binding::HOOK_WALK_BYTES;
    let Ok(Some(end)) = super::binding::complete_len_within(&mut f, meta.len(), budget) else {
        return false;
    };
    if end != meta.len() {
        // A torn or unterminated tail: the recovery check's business.
        return false;
    }
    let mut verdict = false;
    let mut walked = 0;
    let read = super::journal::read_back_within(&mut f, end, budget, |_, line| {
        walked += 1;
        let r = TailRecord::fields(line);
        if r.seq.is_none() || r.plan_sha256.as_deref() != Some(plan_sha) {
            return false;
        }
        if let Some(s) = &r.summary_sha256 {
            verdict = s == sha;
            return false;
        }
        walked < MAX_WALK
    });
    read.is_ok() && verdict
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
    use serde_json::Value;
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

pub(crate) mod status;

/// The bundled plans (a Node tool's, the OMX fixtures), which the tests of
/// the plan's partial readings read each way.
#[cfg(test)]
const BUNDLED_PLANS: [&str; 6] = [
    include_str!("../../../fixtures/plans/node-legacy/.omo/ulw-loop/goals.json"),
    include_str!("../../../fixtures/omx/midrun/goals.json"),
    include_str!("../../../fixtures/omx/nested/goals.json"),
    include_str!("../../../fixtures/omx/nested-migrated/goals.json"),
    include_str!("../../../fixtures/omx/mixed-blockers/goals.json"),
    include_str!("../../../fixtures/omx/complete/goals.json"),
];

/// A plan with every input of the view, for the tests of the partial
/// readings: overlays and their replacements, waivers and user decisions,
/// completion records in both spellings, validation batches, a pending
/// mutation, escapes in values; `objective` is its aggregate objective.
#[cfg(test)]
fn plan_of_every_shape(objective: &str) -> serde_json::Value {
    serde_json::json!({
        "version": 1, "revision": 4, "sessionId": "s1", "updatedAt": "2026-01-01T00:00:00.000Z",
        "codexGoalMode": "aggregate", "activeGoalId": "G2", "gateRules": "lazycodex",
        "evidenceLayoutVersion": 2,
        "codexObjective": objective,
        "aggregateCompletion": {"status": "complete"},
        "aggregate_completion": {"status": "complete"},
        "validationBatches": [{"batchId": "B1", "memberIds": ["G1", "G2"], "finalGoalId": "G3"}],
        "lastMutation": {"revision": 4, "fromSeq": 2, "entries": [{"kind": "x", "planSha256": "d"}]},
        "goals": [
            {"id": "G1", "title": "a", "objective": "a", "status": "pending",
             "steeringStatus": "superseded", "supersededBy": ["G2"],
             "waiver": {"userDecision": "drop it", "at": "t"},
             "successCriteria": [{"id": "C1", "status": "pass", "scenario": "s", "essential": true,
                                  "userModel": "happy", "evidence": {"a": [1, "deep", 2.5, null]}}]},
            {"id": "G2", "title": "b\u{e9}", "objective": "b", "status": "in_progress", "attempt": 2,
             "attemptDir": "e/G2/a2", "userDecision": "keep \"it\"",
             "successCriteria": [{"id": "C1", "status": "pending", "capturedEvidence": "x\ny"},
                                 {"id": "C2", "status": "pass", "userModel": "edge", "essential": false}]},
            {"id": "G3", "title": "c", "objective": "c", "status": "needs_user_decision",
             "requiredExternalDecision": "which db", "blockedReason": "r",
             "successCriteria": []},
            {"id": "G4", "title": "d", "objective": "d", "status": "review_blocked",
             "reviewBlockedBy": ["G3"], "steeringStatus": "blocked"}
        ]
    })
}

/// A profile of the embedded rules, for the tests.
#[cfg(test)]
fn test_profile(name: &str) -> Profile {
    let rules = crate::rules::RuleSet::embedded().unwrap();
    crate::goals::profile::Profiles::lookup(&rules, name).unwrap()
}

/// Every embedded profile, for the tests that read a plan under each.
#[cfg(test)]
fn test_profiles() -> Vec<Profile> {
    ["ulw-loop", "ultragoal", "omx"]
        .iter()
        .map(|n| test_profile(n))
        .collect()
}

#[cfg(test)]
mod selected_tests;

#[cfg(test)]
mod status_tests;

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

    fn ulw_profile() -> Profile {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        crate::goals::profile::Profiles::lookup(&rules, "ulw-loop").unwrap()
    }

    /// The spawn guard's part of the view: the preflight goal only while
    /// the final goal is unfinished with every criterion passed, the active
    /// goal's attempt, and the plan's session from `sessionId` or, for a
    /// legacy plan, from `goalsPath`.
    #[test]
    fn the_spawn_view_names_the_preflight_goal_and_the_active_attempt() {
        let profile = ulw_profile();
        let base = r#"{"version":1,"evidenceLayoutVersion":2,"gateRules":"lazycodex","sessionId":"s9",
            "activeGoalId":"G2","goals":[
            {"id":"G1","title":"a","objective":"a","status":"complete","successCriteria":[{"id":"C1","status":"pass"}]},
            {"id":"G2","title":"b","objective":"b","status":"in_progress","attempt":3,"attemptDir":"e/G2/a3",
             "successCriteria":[{"id":"C1","status":"pass"},{"id":"C2","status":"pass"}]}]}"#;
        let v = SpawnView::of(&plan(base), &profile);
        let g2 = GoalAttempt {
            id: "G2".into(),
            attempt: 3,
            attempt_dir: Some("e/G2/a3".into()),
        };
        assert_eq!(v.gate_rules.as_deref(), Some("lazycodex"));
        assert!(v.layout_v2);
        assert_eq!(v.attempt_session.as_deref(), Some("s9"));
        assert_eq!(v.preflight.as_ref(), Some(&g2));
        assert_eq!(v.active.as_ref(), Some(&g2));
        // A criterion not passed: the gate judges later, no preflight.
        let pending = base.replace(
            r#"{"id":"C2","status":"pass"}"#,
            r#"{"id":"C2","status":"pending"}"#,
        );
        let v = SpawnView::of(&plan(&pending), &profile);
        assert_eq!(v.preflight, None);
        assert_eq!(v.active.as_ref(), Some(&g2));
        // The final goal complete: nothing to preflight, nothing active.
        let done = base.replace(r#""status":"in_progress""#, r#""status":"complete""#);
        let v = SpawnView::of(&plan(&done), &profile);
        assert_eq!((v.preflight, v.active), (None, None));
        // A legacy plan: layout 1, no gate rules, its session from goalsPath.
        let legacy = base
            .replace(
                r#""evidenceLayoutVersion":2,"gateRules":"lazycodex","sessionId":"s9","#,
                "",
            )
            .replace(
                r#""version":1,"#,
                &format!(
                    r#""version":1,"goalsPath":"{}/s7/goals.json","#,
                    profile.state_dir
                ),
            );
        let v = SpawnView::of(&plan(&legacy), &profile);
        assert_eq!(v.gate_rules, None);
        assert!(!v.layout_v2);
        assert_eq!(v.attempt_session.as_deref(), Some("s7"));
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
