//! The goal engine (docs/engine.md): durable multi-goal state (`brief.md`,
//! `goals.json`, `ledger.jsonl`) for the `ulw-loop` and `ultragoal` profiles.
//!
//! * [`profile`] — the profile, texts and blocker rule families (data, not `if`s);
//! * `plan` — the order-preserving plan codec and its reading rules;
//! * `journal` and `index` — the ledger head, appends and the index caches;
//! * `txn` — the mutation transaction: lock, recovery check, write order;
//! * `lifecycle` and `scheduler` — predicates, transition table, scheduling;
//! * [`ops`] — one module per subcommand;
//! * `hostgoal`, `blockers`, `handoff`, `evidence_files`, `input`.
//!
//! The engine knows nothing about hosts or hook wire formats; it reads and
//! writes the workspace only through the `Dir` it is given.

pub(crate) mod authority;
pub(crate) mod batches;
pub(crate) mod binding;
pub(crate) mod blockers;
pub(crate) mod brief;
pub(crate) mod candidate;
pub(crate) mod decisions;
pub(crate) mod diagnostics;
pub(crate) mod error;
pub(crate) mod evidence_files;
pub(crate) mod gate;
pub(crate) mod handoff;
pub(crate) mod hostgoal;
pub(crate) mod index;
pub(crate) mod input;
pub(crate) mod journal;
pub(crate) mod keyhash;
pub(crate) mod lifecycle;
pub(crate) mod loop_state;
pub mod ops;
pub(crate) mod plan;
/// The profile rule families, defined in [`crate::rules::profiles`].
pub use crate::rules::profiles as profile;
pub(crate) mod scheduler;
pub(crate) mod schema;
pub(crate) mod session;
pub(crate) mod state;
pub mod steer;
pub(crate) mod stop_view;
pub(crate) mod stories;
pub(crate) mod summary;
pub(crate) mod team;
pub(crate) mod txn;
pub(crate) mod warning;
pub(crate) mod words;
pub(crate) mod workflow;

use std::path::Path;
use std::time::{Duration, SystemTime};

use cap_std::fs::Dir;

// The front door: what a caller of the engine names. The commands are in
// [`ops`] (one module per subcommand) and [`steer`]; everything else is the
// engine's own.
pub use candidate::Candidate;
pub use diagnostics::Sink as DiagnosticsSink;
pub use error::{ALL_CODES, ErrorKind, GoalError};
pub use gate::check_gate_in_plan;
pub use input::{FileRecord, Loaded};
pub use journal::Head as JournalHead;
pub use plan::{
    Criterion, CriterionStatus, Goal, GoalStatus, Mode, Plan, leave_plans_to_process_end,
};
pub use profile::{BlockerRules, Profile, Texts};
pub use session::SidSource;
pub use state::StatePaths;

use crate::ambient::Ambient;
use crate::rules::RuleSet;
use crate::rules::evidence::EvidenceRules;
use crate::rules::gates::{GateBook, GateRuleFile, ReviewerRoles};

/// How a command was invoked (resolved by the front end).
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Profile name (`ulw-loop`, `ultragoal`).
    pub profile: String,
    /// The resolved scope.
    pub session: SidSource,
    /// The environment's session id (attempt-directory fallback), if any.
    pub env_sid: Option<String>,
    /// Lock wait override (`--lock-timeout-ms`, `EVIDENCE_GATE_LOCK_TIMEOUT_MS`).
    pub lock_timeout_ms: Option<u64>,
    /// The repository root as an absolute path string, so that absolute input
    /// paths inside the repository can be accepted.
    pub root_abs: Option<String>,
    /// Gate surface inputs read by the front end (docs/gates.md#qg-2).
    pub surface: SurfaceInputs,
    /// Where diagnostic lines go (opened by the front end, per-user).
    pub diagnostics: diagnostics::Sink,
    /// The root's path from the git worktree root (`apps/web`; empty at the
    /// worktree root or outside one), used when the profile sets
    /// `compat/statePathPrefix`.
    pub worktree_prefix: String,
    /// The time every call of the engine takes as now; `None` (the
    /// default) reads the system clock at each call. A fixed time makes two
    /// runs over the same state write the same bytes (tests, replays).
    pub clock: Option<SystemTime>,
}

impl EngineOptions {
    /// Options for `profile` and nothing else: no session scope, no lock
    /// wait override, no root path, no gate surface inputs, no diagnostics
    /// and no worktree prefix, as a library caller that owns its workspace
    /// (a temporary one, a test) needs. Set the fields that apply after.
    pub fn new(profile: impl Into<String>) -> EngineOptions {
        EngineOptions {
            profile: profile.into(),
            session: SidSource::None,
            env_sid: None,
            lock_timeout_ms: None,
            root_abs: None,
            surface: SurfaceInputs::default(),
            diagnostics: diagnostics::Sink::none(),
            worktree_prefix: String::new(),
            clock: None,
        }
    }
}

/// The surface-resolution inputs only the binary can read: the variable named
/// by `surfaceResolution.env` and the marker file next to the executable.
#[derive(Debug, Clone, Default)]
pub struct SurfaceInputs {
    /// The environment variable's value.
    pub env: Option<String>,
    /// The marker file's content.
    pub marker: Option<Vec<u8>>,
}

impl SurfaceInputs {
    /// Reads the inputs the gate rules of `rules` name: the environment
    /// variable and the marker file next to the running executable. Rules
    /// whose gate files do not load give no inputs.
    pub fn read(amb: &dyn Ambient, rules: &RuleSet) -> SurfaceInputs {
        let Ok(res) = GateBook::surface_resolution(rules) else {
            return SurfaceInputs::default();
        };
        SurfaceInputs {
            env: crate::ambient::var(amb, &res.env),
            marker: crate::ambient::read_marker(amb, &res.marker),
        }
    }
}

/// One profile's engine over one workspace root and scope.
#[derive(Debug)]
pub struct Engine {
    root: Dir,
    /// The profile in effect (the rule set's decoding, shared).
    pub profile: std::sync::Arc<Profile>,
    /// Its texts.
    pub texts: Texts,
    /// The rule families a command may not read, decoded on first use
    /// when the rules are the embedded defaults (validated by the test
    /// suite); eagerly from an override, so a bad override fails every
    /// command as before.
    blockers: std::sync::OnceLock<BlockerRules>,
    evidence: std::sync::OnceLock<EvidenceRules>,
    /// State paths of the scope.
    pub paths: StatePaths,
    /// How the scope was chosen.
    pub session: SidSource,
    env_sid: Option<String>,
    lock_timeout: Duration,
    clock: Option<SystemTime>,
    root_abs: Option<String>,
    /// Built on first use when the rules are the embedded defaults (most
    /// commands never read a gate); eagerly from an override, so a bad
    /// override fails every command as before.
    gates: std::sync::OnceLock<GateBook>,
    surface: SurfaceInputs,
    workflows: std::sync::OnceLock<workflow::WorkflowRules>,
    diagnostics: diagnostics::Sink,
    barrier: AppendBarrier,
}

/// A rule family of the engine's: set by [`Engine::new`] from an override,
/// else decoded from the embedded defaults on first use, which the test
/// suite validates (`rules::tests::embedded_rules_validate`), so a failure
/// here is a build that shipped broken rules.
fn embedded_family<T: crate::rules::RuleFamily>(cell: &std::sync::OnceLock<T>) -> &T {
    cell.get_or_init(|| {
        RuleSet::embedded()
            .and_then(|r| r.family::<T>())
            .unwrap_or_else(|e| panic!("embedded rules: {e}"))
    })
}

/// Work that must finish before the engine writes anything an entry could
/// cite ([`Engine::before_next_write`]).
#[derive(Default)]
struct AppendBarrier(std::sync::Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl std::fmt::Debug for AppendBarrier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AppendBarrier")
    }
}

impl Engine {
    /// Runs `f` once, before this engine's next write to its plan or ledger
    /// (or never, when it writes neither). A caller whose own earlier write
    /// must reach the disk before any entry can cite it (the prompt hook's
    /// witness of the user's prompt, docs/threat-model.md#i12) syncs it
    /// while the engine locks, reads and judges, and waits for it here.
    pub fn before_next_write(&mut self, f: impl FnOnce() + Send + 'static) {
        *self.barrier.0.get_mut().unwrap_or_else(|p| p.into_inner()) = Some(Box::new(f));
    }

    /// Runs the [`Engine::before_next_write`] work, if any is left.
    pub(crate) fn barrier(&self) {
        let f = self
            .barrier
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(f) = f {
            f();
        }
    }

    /// Builds the engine from validated rules. A profile or texts entry that
    /// is missing is `ULW_LOOP_RULES_INVALID`.
    pub fn new(root: Dir, rules: &RuleSet, opts: EngineOptions) -> Result<Engine, GoalError> {
        let profile = profile::Profiles::lookup_shared(rules, &opts.profile)
            .map_err(|e| GoalError::from(e.into_rules_error()))?;
        let invalid = |pointer: String, problem: String| {
            GoalError::from(crate::rules::RulesError {
                file: "rules".into(),
                pointer,
                problem,
            })
        };
        let key = profile::texts_key(&profile.texts).unwrap_or_default();
        let texts_at = format!("/texts/{}", crate::json::pointer_token(key));
        let texts = rules.part::<Texts>(&texts_at)?.ok_or_else(|| {
            invalid(
                format!("/profiles/{}/texts", profile.name),
                format!("names `{}`, which is not a texts file", profile.texts),
            )
        })?;
        let blockers = std::sync::OnceLock::new();
        let evidence = std::sync::OnceLock::new();
        let gates = std::sync::OnceLock::new();
        let workflows = std::sync::OnceLock::new();
        if !rules.is_embedded_only() {
            let _ = blockers.set(rules.family()?);
            let _ = evidence.set(rules.family()?);
            let _ = gates.set(GateBook::from_rules(rules)?);
            let _ = workflows.set(rules.family()?);
        }
        let mut paths = StatePaths::new(&profile.state_dir, opts.session.sid());
        if profile.compat.state_path_prefix {
            paths = paths.with_prefix(&opts.worktree_prefix);
        }
        let lock_timeout =
            Duration::from_millis(opts.lock_timeout_ms.unwrap_or(profile.lock.timeout_ms));
        Ok(Engine {
            root,
            profile,
            texts,
            blockers,
            evidence,
            paths,
            session: opts.session,
            env_sid: opts.env_sid,
            lock_timeout,
            clock: opts.clock,
            root_abs: opts.root_abs,
            gates,
            surface: opts.surface,
            workflows,
            diagnostics: opts.diagnostics,
            barrier: AppendBarrier::default(),
        })
    }

    /// Builds the engine of `profile` as the command line does, reading what
    /// it needs through `amb`: the scope named by `explicit` (the profile's
    /// session flag: absent, given without a value, or with one) or else the
    /// environment, the absolute root (`root_path` against the working
    /// directory) and its git worktree prefix, and the gate surface inputs.
    /// `diagnostics` is the workspace's per-user sink ([`diagnostics::Sink::of`]).
    pub fn open(
        amb: &dyn Ambient,
        (root, root_path): (Dir, &Path),
        rules: &RuleSet,
        profile: &str,
        explicit: Option<Option<&str>>,
        lock_timeout_ms: Option<u64>,
        diagnostics: diagnostics::Sink,
    ) -> Result<Engine, GoalError> {
        let p = profile::Profiles::lookup_shared(rules, profile)
            .map_err(|e| GoalError::from(e.into_rules_error()))?;
        let env = |k: &str| crate::ambient::var(amb, k);
        let sid = session::resolve(&p.session.flag, explicit, &env, &p.session.env)?;
        let env_sid = p
            .session
            .env
            .iter()
            .find_map(|k| env(k).as_deref().and_then(session::normalize));
        let root_abs = amb
            .current_dir()
            .ok()
            .map(|d| path_clean::clean(d.join(root_path)));
        let worktree_prefix = match &root_abs {
            Some(r) if p.compat.state_path_prefix => crate::ambient::worktree_prefix(amb, r),
            _ => String::new(),
        };
        let root_abs = root_abs.and_then(|d| d.to_str().map(str::to_owned));
        Engine::new(
            root,
            rules,
            EngineOptions {
                profile: profile.to_owned(),
                session: sid,
                env_sid,
                lock_timeout_ms,
                root_abs,
                surface: SurfaceInputs::read(amb, rules),
                diagnostics,
                worktree_prefix,
                clock: None,
            },
        )
    }

    /// Where diagnostic lines go.
    pub fn diagnostics(&self) -> &diagnostics::Sink {
        &self.diagnostics
    }

    /// The workflow overlap rules (`rules/workflows.json`).
    pub fn workflows(&self) -> &workflow::WorkflowRules {
        embedded_family(&self.workflows)
    }

    /// The blocker classifier rules (`rules/blockers.json`).
    pub fn blockers(&self) -> &BlockerRules {
        embedded_family(&self.blockers)
    }

    /// The gate rule files.
    pub fn gates(&self) -> Result<&GateBook, GoalError> {
        if let Some(book) = self.gates.get() {
            return Ok(book);
        }
        let book = GateBook::from_rules(&RuleSet::embedded()?)?;
        Ok(self.gates.get_or_init(|| book))
    }

    /// The reviewer roles of the five-section gate rule file `name` (what a
    /// handoff names): from the book when it is built, else from that file
    /// alone.
    pub fn reviewer_roles(&self, name: &str) -> Result<Option<ReviewerRoles>, GoalError> {
        if let Some(book) = self.gates.get() {
            return Ok(match book.get(name).map(|r| r.file) {
                Some(GateRuleFile::FiveSection(r)) => Some(r.reviewer_roles.clone()),
                _ => None,
            });
        }
        Ok(GateBook::reviewer_roles(&RuleSet::embedded()?, name)?)
    }

    /// The surface-resolution inputs.
    pub fn surface_inputs(&self) -> &SurfaceInputs {
        &self.surface
    }

    /// The workspace root.
    pub fn root(&self) -> &Dir {
        &self.root
    }

    /// The evidence verifier rules.
    pub fn evidence_rules(&self) -> &EvidenceRules {
        embedded_family(&self.evidence)
    }

    /// The repository root as an absolute path string, when known.
    pub fn root_abs(&self) -> Option<&str> {
        self.root_abs.as_deref()
    }

    /// The lock wait.
    pub fn lock_timeout(&self) -> Duration {
        self.lock_timeout
    }

    /// The current time and its RFC 3339 form.
    pub fn now(&self) -> (SystemTime, String) {
        let t = self.clock.unwrap_or_else(SystemTime::now);
        (t, crate::time::rfc3339_ms(t))
    }

    /// Opens the state directory for reading (`None` when it does not exist).
    pub fn state_dir(&self) -> Result<Option<Dir>, GoalError> {
        state::open_chain(&self.root, &self.paths.dir, false)
    }

    /// `{sid}` of attempt directories for a plan: the plan's session id, else
    /// the environment's, else the profile fallback (docs/engine.md#ge-3).
    pub fn attempt_sid(&self, plan: &plan::Plan) -> String {
        self.attempt_sid_of(plan.session_id(&self.profile))
    }

    /// [`Engine::attempt_sid`] of a plan whose session id is `plan_sid`.
    fn attempt_sid_of(&self, plan_sid: Option<String>) -> String {
        plan_sid
            .or_else(|| self.env_sid.clone())
            .unwrap_or_else(|| self.profile.session.attempt_fallback.clone())
    }

    /// The attempt directory of a goal: its persisted `attemptDir`, else the
    /// template (docs/differences.md#r-1).
    pub fn attempt_dir(&self, plan: &plan::Plan, g: plan::Goal<'_>) -> String {
        if let Some(d) = g.str("attemptDir") {
            return d.to_owned();
        }
        self.render_attempt_dir(&self.attempt_sid(plan), g.id(), g.attempt())
    }

    /// [`Engine::attempt_dir`] of a goal's attempt read from the hooks'
    /// view of a plan whose session id is `plan_sid`.
    pub(crate) fn attempt_dir_of(
        &self,
        plan_sid: Option<&str>,
        g: &stop_view::GoalAttempt,
    ) -> String {
        if let Some(d) = &g.attempt_dir {
            return d.clone();
        }
        let sid = self.attempt_sid_of(plan_sid.map(str::to_owned));
        self.render_attempt_dir(&sid, &g.id, g.attempt)
    }

    /// The attempt directory the next start of a goal will persist (the
    /// scheduler's start, or `checkpoint --start-pending`).
    pub fn next_attempt_dir(&self, plan: &plan::Plan, g: plan::Goal<'_>) -> String {
        self.render_attempt_dir(&self.attempt_sid(plan), g.id(), g.attempt() + 1)
    }

    /// Renders the profile's attempt-directory template.
    pub fn render_attempt_dir(&self, sid: &str, goal_id: &str, attempt: u64) -> String {
        self.profile
            .attempt_dir_template
            .replace("{sid}", sid)
            .replace("{goalId}", goal_id)
            .replace("{attempt}", &attempt.to_string())
    }

    /// ` --session-id <sid>` for rendered commands, from the plan.
    pub fn session_opt(&self, plan: &plan::Plan) -> String {
        plan.session_id(&self.profile)
            .map(|s| format!(" {} {s}", self.profile.session.flag))
            .unwrap_or_default()
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods)]
mod tests {
    use super::*;
    use crate::rules::Layer;

    fn engine(rules: &RuleSet) -> Result<(tempfile::TempDir, Engine), GoalError> {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        Engine::new(root, rules, EngineOptions::new("ulw-loop")).map(|e| (tmp, e))
    }

    /// With the embedded rules the engine decodes the blocker, evidence and
    /// workflow families when a command first reads them, and gets what the
    /// rules hold.
    #[test]
    fn embedded_families_are_decoded_on_first_use_as_the_rules_hold_them() {
        let rules = RuleSet::embedded().unwrap();
        let (_tmp, e) = engine(&rules).unwrap();
        assert!(e.blockers.get().is_none());
        assert!(e.evidence.get().is_none());
        assert!(e.workflows.get().is_none());
        let same = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| {
            assert_eq!(format!("{a:?}"), format!("{b:?}"));
        };
        same(e.blockers(), &rules.family::<BlockerRules>().unwrap());
        same(
            e.evidence_rules(),
            &rules.family::<EvidenceRules>().unwrap(),
        );
        same(
            e.workflows(),
            &rules.family::<workflow::WorkflowRules>().unwrap(),
        );
        assert!(e.blockers.get().is_some() && e.workflows.get().is_some());
    }

    /// An override's families are decoded when the engine is built, with the
    /// override's values, so a bad override fails every command.
    #[test]
    fn an_override_is_decoded_up_front() {
        let layer = br#"{"evidence": {"evidenceRoot": ".omo/proof"}}"#;
        let rules = RuleSet::load(&[Layer {
            name: "--rules",
            bytes: layer,
        }])
        .unwrap();
        let (_tmp, e) = engine(&rules).unwrap();
        assert!(e.blockers.get().is_some());
        assert!(e.workflows.get().is_some());
        assert_eq!(
            e.evidence.get().map(|r| r.evidence_root.as_str()),
            Some(".omo/proof")
        );
        assert_eq!(e.evidence_rules().evidence_root, ".omo/proof");
    }
}
