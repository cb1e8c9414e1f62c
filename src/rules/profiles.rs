//! Profiles as data (docs/engine.md#ge-1): the `profiles`, `texts` and
//! `blockers` rule families. Every difference between `ulw-loop` and
//! `ultragoal` is a value read here; no code path branches on a profile name.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::rules::{Problem, RuleFamily};
use crate::sandbox::{PathLimits, RelPath};

/// Every profile, by name (`rules/profiles/*.json`, mounted at `/profiles/<name>`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct Profiles(pub BTreeMap<String, Profile>);

/// Why [`Profiles::lookup`] found no profile.
#[derive(Debug)]
pub enum ProfileError {
    /// The profiles family could not be read from the rules.
    Rules(crate::rules::RulesError),
    /// The rules define no profile of that name.
    Unknown {
        /// The name asked for.
        name: String,
    },
}

impl ProfileError {
    /// The error as a rules error: an unknown profile is `/profiles/<name>`,
    /// "no such profile".
    pub fn into_rules_error(self) -> crate::rules::RulesError {
        match self {
            ProfileError::Rules(e) => e,
            ProfileError::Unknown { name } => crate::rules::RulesError {
                file: "rules".into(),
                pointer: format!("/profiles/{name}"),
                problem: "no such profile".into(),
            },
        }
    }
}

impl Profiles {
    /// The profile `name` of `rules`.
    /// Only that profile is decoded (one file of the embedded defaults),
    /// once per rule set however often it is looked up.
    pub fn lookup(rules: &crate::rules::RuleSet, name: &str) -> Result<Profile, ProfileError> {
        Profiles::lookup_shared(rules, name).map(|p| Profile::clone(&p))
    }

    /// [`Profiles::lookup`] without a copy: the rule set's one decoding of
    /// the profile, shared with every other lookup of it.
    pub fn lookup_shared(
        rules: &crate::rules::RuleSet,
        name: &str,
    ) -> Result<std::sync::Arc<Profile>, ProfileError> {
        let pointer = format!("/{}/{}", Self::KEY, crate::json::pointer_token(name));
        rules
            .part_shared::<Profile>(&pointer)
            .map_err(ProfileError::Rules)?
            .ok_or_else(|| ProfileError::Unknown {
                name: name.to_owned(),
            })
    }
}

impl RuleFamily for Profiles {
    const KEY: &'static str = "profiles";
    fn check(&self) -> Result<(), Problem> {
        for (key, p) in &self.0 {
            let at = |rest: &str, problem: String| {
                Problem::at(
                    format!("/{}{rest}", crate::json::pointer_token(key)),
                    problem,
                )
            };
            if p.schema != 1 {
                return Err(at(
                    "/schema",
                    format!("unsupported profile schema {}", p.schema),
                ));
            }
            if &p.name != key {
                return Err(at("/name", format!("must equal the profile's key `{key}`")));
            }
            for (field, value) in [
                ("/stateDir", &p.state_dir),
                ("/evidenceRoot", &p.evidence_root),
            ] {
                if RelPath::parse(value, PathLimits::default()).is_err() {
                    return Err(at(field, "must be a clean repo-relative path".into()));
                }
            }
            if !p.attempt_dir_template.contains("{goalId}")
                || !p.attempt_dir_template.contains("{attempt}")
            {
                return Err(at(
                    "/attemptDirTemplate",
                    "must contain {goalId} and {attempt}".into(),
                ));
            }
            if !p.host_goal.flag.starts_with("--") || !p.host_goal.mode_flag.starts_with("--") {
                return Err(at("/hostGoal", "flags must start with `--`".into()));
            }
            if p.completion_keys.is_empty() {
                return Err(at("/completionKeys", "must name at least one key".into()));
            }
            if !p.aggregate_objective.contains("{goals}")
                || !p.aggregate_objective.contains("{ledger}")
            {
                return Err(at(
                    "/aggregateObjective",
                    "must contain {goals} and {ledger}".into(),
                ));
            }
            if p.brief.max_implicit_goals == Some(0) {
                return Err(at(
                    "/brief/maxImplicitGoals",
                    "must be at least 1, or null for no cap".into(),
                ));
            }
            if p.blockers.escalate_after == 0 {
                return Err(at("/blockers/escalateAfter", "must be at least 1".into()));
            }
            for (k, v) in &p.plan_markers {
                if v.is_null() || v.is_object() || v.is_array() {
                    return Err(at(
                        &format!("/planMarkers/{}", crate::json::pointer_token(k)),
                        "must be a string, number or boolean".into(),
                    ));
                }
            }
            if p.hooks
                .cli_words
                .iter()
                .any(|w| w.is_empty() || w.contains(['/', ' ']))
                || p.hooks
                    .mutating_subcommands
                    .iter()
                    .any(|w| w.trim().is_empty())
            {
                return Err(at(
                    "/hooks",
                    "cliWords are file names and mutatingSubcommands are non-blank".into(),
                ));
            }
            if let Some(a) = &p.compat.session_authority
                && (RelPath::parse(&a.pointer, PathLimits::default()).is_err()
                    || a.env.trim().is_empty()
                    || a.id_key.trim().is_empty())
            {
                return Err(at(
                    "/compat/sessionAuthority",
                    "pointer is a clean repo-relative path; env and idKey are non-blank".into(),
                ));
            }
            if texts_key(&p.texts).is_none() {
                return Err(at(
                    "/texts",
                    "must name a texts file as `texts/<name>.json`".into(),
                ));
            }
            if let Some((i, k)) = p
                .steering
                .kinds
                .iter()
                .enumerate()
                .find(|(_, k)| !STEERING_KINDS.contains(&k.as_str()))
            {
                return Err(at(
                    &format!("/steering/kinds/{i}"),
                    format!("unknown steering kind `{k}`"),
                ));
            }
            let l = &p.limits;
            if [
                l.max_plan_bytes,
                l.max_input_bytes,
                l.max_brief_bytes,
                l.max_embedded_snapshot_bytes,
                l.max_embedded_gate_bytes,
                l.max_ledger_record_bytes,
            ]
            .contains(&0)
            {
                return Err(at("/limits", "every limit must be positive".into()));
            }
        }
        Ok(())
    }
}

/// Every steering kind a profile may enable, in the engine's wire order
/// (docs/engine.md#ge-5). The goal engine parses the same names; a test keeps
/// the two lists equal, so the rules never depend on the engine.
pub const STEERING_KINDS: &[&str] = &[
    "add_subgoal",
    "split_subgoal",
    "reorder_pending",
    "revise_pending_wording",
    "revise_criterion",
    "annotate_ledger",
    "mark_blocked_superseded",
    "unblock",
    "revise_batch",
];

/// The key of a texts file in the `texts` family: `texts/ulw-loop.json` → `ulw-loop`.
pub fn texts_key(file: &str) -> Option<&str> {
    file.strip_prefix("texts/")?
        .strip_suffix(".json")
        .filter(|k| !k.is_empty() && !k.contains('/'))
}

/// One profile (docs/engine.md#ge-1).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Profile {
    /// File format version (1).
    pub schema: u32,
    /// Subcommand name and the plan's `profile` value.
    pub name: String,
    /// Word used in messages (`[<displayName>] …`).
    pub display_name: String,
    /// Handoff header word (`<handoffTitle> aggregate-goal handoff`).
    pub handoff_title: String,
    /// Command rendered in handoffs, hints and `nextActions`.
    pub command_prefix: String,
    /// argv[0] names that dispatch straight to this profile.
    pub invocation_names: Vec<String>,
    /// argv[0] names under which `<name> <sub>` is accepted.
    pub parent_commands: Vec<String>,
    /// Base state directory (repo-relative).
    pub state_dir: String,
    /// Sandbox evidence root.
    pub evidence_root: String,
    /// Attempt evidence directory template (`{sid}`, `{goalId}`, `{attempt}`).
    pub attempt_dir_template: String,
    /// Session scoping.
    pub session: SessionRules,
    /// Host-goal snapshot flags and policy.
    pub host_goal: HostGoalRules,
    /// Plan-level fields written by `create-goals` and checked on read.
    pub plan_markers: serde_json::Map<String, Value>,
    /// Plan keys that receive the aggregate completion record.
    pub completion_keys: Vec<String>,
    /// Aggregate host objective template (`{goals}`, `{ledger}`).
    pub aggregate_objective: String,
    /// Legacy objectives migrated to the template.
    pub legacy_objectives: LegacyObjectives,
    /// Criteria policy.
    pub criteria: CriteriaRules,
    /// How `create-goals` derives goals from the brief.
    pub brief: BriefRules,
    /// Steering policy (used by `steer` and the hook channel).
    pub steering: SteeringRules,
    /// Gate rule selection.
    pub gate: GateSelection,
    /// Mutation lock timing.
    pub lock: LockRules,
    /// Ledger verification policy.
    pub ledger: LedgerRules,
    /// Byte caps.
    pub limits: Limits,
    /// Blocker escalation.
    pub blockers: BlockerPolicy,
    /// Team-worker markers.
    pub team: TeamRules,
    /// Workflow registry identity.
    pub workflow: WorkflowIdentity,
    /// What the goal-loop hooks read (docs/hook-contracts.md#h-1).
    pub hooks: ProfileHooks,
    /// Texts file (`texts/<name>.json`).
    pub texts: String,
    /// Compatibility with a foreign tool's command line, state and output
    /// (docs/engine.md#ge-1); every key is off when absent.
    #[serde(default)]
    pub compat: Compat,
}

/// `compat` keys: what a profile that stands in for a foreign tool (the
/// `omx` profile for `omx ultragoal`) adds to the engine's own behaviour.
/// Every key is additive or stricter; none turns off a safety check.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Compat {
    /// A word accepted (and skipped) right after the profile name, so that
    /// `evidence-gate omx ultragoal <sub>` and `omx ultragoal <sub>` work.
    #[serde(default)]
    pub subcommand_word: Option<String>,
    /// Subcommand aliases (`create` → `create-goals`).
    #[serde(default)]
    pub subcommand_aliases: BTreeMap<String, String>,
    /// Extra keys written on every ledger entry: `{"at": "ts", "kind":
    /// "event"}` copies `at` to `ts` and `kind` to `event`.
    #[serde(default)]
    pub ledger_aliases: BTreeMap<String, String>,
    /// Kind of the audit-only entry `complete-goals` appends when it resumes
    /// an in-progress goal (none when absent).
    #[serde(default)]
    pub resume_entry: Option<String>,
    /// Whether the run-final checkpoint also appends a `goal_completed`
    /// entry for the goal, before `aggregate_completed`.
    #[serde(default)]
    pub per_goal_completion: bool,
    /// Kind of the entry `record-review-blockers` appends first, recording
    /// the failed final review (none when absent).
    #[serde(default)]
    pub review_failed_entry: Option<String>,
    /// Whether `checkpoint --status blocked` is a non-terminal note: the
    /// goal stays `in_progress` and active.
    #[serde(default)]
    pub blocked_non_terminal: bool,
    /// Gate rule file applied to final and batch gates when `checkpoint
    /// --strict` is given (absent: `--strict` is an unknown flag).
    #[serde(default)]
    pub strict_gate: Option<String>,
    /// Whether summaries also carry camelCase counts and the
    /// `aggregateComplete`, `artifactComplete`, `activeGoalId` keys.
    #[serde(default)]
    pub camel_summary: bool,
    /// Whether `instruction` in JSON output is the handoff text (the
    /// structured form moves to `instructionPayload`).
    #[serde(default)]
    pub instruction_string: bool,
    /// Extra names of top-level JSON output keys, per subcommand:
    /// `{"add-goal": {"goal": "addedGoal"}}` repeats `goal` as `addedGoal`.
    #[serde(default)]
    pub output_aliases: BTreeMap<String, BTreeMap<String, String>>,
    /// Whether the goal-loop hooks take an unscoped plan that records no
    /// owning session, once this engine has written it, as this session's
    /// plan (the foreign tool keeps one run per workspace), as
    /// `stop.adopt_unowned_unscoped_plan` does for every plan. It only ever
    /// adds resumes and steering targets.
    #[serde(default)]
    pub adopt_unowned_plan: bool,
    /// Session-authority check of mutations (none when absent).
    #[serde(default)]
    pub session_authority: Option<SessionAuthority>,
    /// Where the command line puts the project root of this profile:
    /// `repository` (the default) walks up to the nearest `.git` or state
    /// directory; `cwd` takes the current directory (and reads its rules
    /// there, as the hooks read the payload `cwd`'s), as the foreign tool
    /// keeps its state in the directory it runs in.
    #[serde(default)]
    pub project_root: ProjectRoot,
    /// Whether the aggregate objective (and the aggregate handoff's plan and
    /// ledger lines) name the state files by their path from the git
    /// worktree root, so that a project nested in a repository names
    /// `apps/web/.omx/ultragoal/goals.json`; the plan records the prefix as
    /// `statePathPrefix`.
    #[serde(default)]
    pub state_path_prefix: bool,
    /// Whether `checkpoint --status complete` of a non-final goal leaves the
    /// next goal pending for `complete-goals` to start, as if `--no-advance`
    /// were given (the foreign tool's checkpoint starts nothing).
    #[serde(default)]
    pub no_checkpoint_advance: bool,
}

/// `compat/projectRoot`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum ProjectRoot {
    /// The nearest directory holding `.git` or a state directory.
    #[default]
    Repository,
    /// The current directory.
    Cwd,
}

/// `compat/sessionAuthority`: a mutation refuses to run when the session
/// environment variable names a session other than the workspace's session
/// pointer file records; `create-goals` also refuses when the variable is
/// set and no pointer exists.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionAuthority {
    /// The environment variable (`OMX_SESSION_ID`).
    pub env: String,
    /// The repo-relative pointer file (`.omx/state/session.json`).
    pub pointer: String,
    /// The key of the session id in the pointer file (`session_id`).
    pub id_key: String,
}

/// `session` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionRules {
    /// Explicit scope flag.
    pub flag: String,
    /// Environment fallback, first non-empty normalised value wins.
    pub env: Vec<String>,
    /// `{sid}` of attempt directories when no sid is known.
    pub attempt_fallback: String,
}

/// `hostGoal` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HostGoalRules {
    /// Host-goal snapshot flag.
    pub flag: String,
    /// Accepted synonyms of the flag.
    pub aliases: Vec<String>,
    /// `create-goals` mode flag.
    pub mode_flag: String,
    /// Accepted synonyms of the mode flag.
    pub mode_aliases: Vec<String>,
    /// Whether a complete checkpoint needs a snapshot.
    pub required: bool,
    /// Noun used in reconciliation messages.
    pub noun: String,
    /// Host tool names (`get`, `create`, `update`); empty = no native goal API.
    pub tools: BTreeMap<String, String>,
}

impl HostGoalRules {
    /// The flag and its aliases.
    pub fn all_flags(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.flag.as_str()).chain(self.aliases.iter().map(String::as_str))
    }
    /// The mode flag and its aliases.
    pub fn all_mode_flags(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.mode_flag.as_str()).chain(self.mode_aliases.iter().map(String::as_str))
    }
}

/// `legacyObjectives` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LegacyObjectives {
    /// Objectives equal to one of these are migrated.
    pub exact: Vec<String>,
    /// Objectives starting with one of these are migrated.
    pub prefixes: Vec<String>,
}

/// `criteria` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CriteriaRules {
    /// Seed C001–C003 on new goals.
    pub seed: bool,
    /// Whether an empty criteria list fails a criteria gate.
    pub require_non_empty: bool,
    /// `expectedEvidence` prefixes that mark a legacy criterion as seeded.
    pub seeded_markers: Vec<String>,
}

/// How the brief becomes goals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Derivation {
    /// Every bullet at any depth is a goal; else paragraphs (docs/differences.md#r-1).
    Bullets,
    /// Parent items of the Stories/Goals sections are goals, nested lines
    /// fold into their objective, acceptance-criteria, checklist and review
    /// sections are dropped.
    Stories,
}

/// `brief` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BriefRules {
    /// `bullets` or `stories`.
    pub derivation: Derivation,
    /// Whether `create-goals` takes repeated `--goal "Title::Objective"`.
    pub goal_flag: bool,
    /// Most goals derived from a brief without an explicit Stories/Goals
    /// section; more is `ULW_LOOP_BRIEF_TOO_MANY_GOALS`. `null`: no cap.
    pub max_implicit_goals: Option<u32>,
}

/// `steering` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SteeringRules {
    /// Enabled kinds, in help order.
    pub kinds: Vec<String>,
    /// Prompt markers for hook steering.
    pub directive_markers: Vec<String>,
    /// Key names no proposal may carry.
    pub protected_keys: Vec<String>,
    /// Whether a proposal whose wording asks to weaken completion (skip or
    /// bypass tests, review or the quality gate, auto-complete) is refused
    /// (`ULW_LOOP_STEERING_WEAKENS_COMPLETION`) instead of only warned about.
    pub refuse_weakening: bool,
}

/// `gate` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GateSelection {
    /// Gate rule file for final and batch gates (`surface` = resolve the surface).
    #[serde(rename = "final")]
    pub final_rules: String,
}

/// `lock` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LockRules {
    /// CLI lock wait.
    pub timeout_ms: u64,
    /// Lock wait inside hook handlers.
    pub hook_timeout_ms: u64,
}

/// `ledger` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LedgerRules {
    /// Severity of unchained records after the chain start.
    pub foreign_records: ForeignRecords,
}

/// Severity of foreign ledger records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ForeignRecords {
    /// An error finding.
    Error,
    /// A warning finding.
    Warning,
}

/// `limits` keys (bytes).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Limits {
    /// `goals.json` cap.
    pub max_plan_bytes: u64,
    /// Any JSON input (`--…-json`, payload and gate files).
    pub max_input_bytes: u64,
    /// `--brief-file` cap.
    pub max_brief_bytes: u64,
    /// Raw host snapshots larger than this are stored as a digest.
    pub max_embedded_snapshot_bytes: u64,
    /// Normalised gates larger than this are stored as a digest.
    pub max_embedded_gate_bytes: u64,
    /// One ledger record.
    pub max_ledger_record_bytes: u64,
}

/// `blockers` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BlockerPolicy {
    /// Occurrences (or goals) that escalate to `needs_user_decision`.
    pub escalate_after: u64,
}

/// `team` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TeamRules {
    /// Environment markers of a team worker.
    pub worker_env: Vec<WorkerEnv>,
    /// Hook-payload agent types treated as workers.
    pub worker_agent_types: Vec<String>,
}

/// One worker environment marker.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerEnv {
    /// Variable name.
    pub name: String,
    /// Values that mark a worker.
    pub values: Vec<String>,
}

/// `workflow` keys.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowIdentity {
    /// Identity in the workflow registry.
    pub name: String,
    /// Role registered by `create-goals`.
    pub role: String,
}

/// `hooks` keys: the profile facts the goal-loop hooks need besides
/// `stateDir`, `commandPrefix` (what agents type) and
/// `steering/directiveMarkers` (docs/hook-contracts.md#h-1).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProfileHooks {
    /// Command words (file names) that run this profile from a shell.
    pub cli_words: Vec<String>,
    /// Subcommands the team boundary guard denies to workers.
    pub mutating_subcommands: Vec<String>,
    /// Name of the stop-resume directive template (`rules/directives/`).
    pub stop_directive: String,
    /// Whether ultrawork injection may run while this profile is in effect.
    pub ultrawork_injection: bool,
}

/// Every texts file, by key (`rules/texts/*.json`, mounted at `/texts/<name>`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct TextsFamily(pub BTreeMap<String, Texts>);

impl RuleFamily for TextsFamily {
    const KEY: &'static str = "texts";
    fn check(&self) -> Result<(), Problem> {
        for (key, t) in &self.0 {
            if t.schema != 1 {
                return Err(Problem::at(
                    format!("/{}/schema", crate::json::pointer_token(key)),
                    format!("unsupported texts schema {}", t.schema),
                ));
            }
        }
        Ok(())
    }
}

/// Agent-facing texts of one profile (`{name}` placeholders).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Texts {
    /// File format version (1).
    pub schema: u32,
    /// The usage block, one line per element.
    pub help: Vec<String>,
    /// The kind help attached to `steer --kind` errors (`{kinds}`).
    pub steer_usage: Vec<String>,
    /// Goal instruction (handoff) fragments.
    pub instruction: InstructionTexts,
    /// Blocked-decision handoff lines.
    pub blocked_handoff: Vec<String>,
    /// Decision text when a goal records none.
    pub blocked_decision_fallback: String,
    /// `complete-goals` text for a complete run.
    pub all_complete: String,
    /// `complete-goals` text for a stalled run.
    pub stalled: String,
    /// `guidance` of `checkpoint --print-template`, one sentence per element.
    pub template_guidance: Vec<String>,
    /// Extra guidance sentence for evidence-layout v1 plans.
    pub template_guidance_v1: String,
}

/// Fragments of the goal instruction (docs/differences.md#r-7).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[allow(missing_docs)]
pub struct InstructionTexts {
    pub header_aggregate: String,
    pub header_per_story: String,
    pub meta: Vec<String>,
    pub active_goal: Vec<String>,
    pub criteria_header: String,
    pub criterion_line: String,
    pub remaining_tag: String,
    pub no_criteria: String,
    pub constraints_header: String,
    pub common: Vec<String>,
    pub per_story: Vec<String>,
    pub aggregate: Vec<String>,
    pub aggregate_final: Vec<String>,
    pub aggregate_non_final: Vec<String>,
    pub evidence_layout: Vec<String>,
    pub non_final: Vec<String>,
    #[serde(rename = "final")]
    pub final_block: Vec<String>,
    pub aggregate_checkpoint: Vec<String>,
    pub failed: Vec<String>,
    pub payload_header: String,
}

/// The shared external-authorisation classifier word lists (`rules/blockers.json`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BlockerRules {
    /// File format version (1).
    pub schema: u32,
    /// Authorisation words (`word*` matches a word prefix).
    pub auth_words: Vec<String>,
    /// Words saying something is missing.
    pub missing_words: Vec<String>,
    /// Container-registry words.
    pub registry_words: Vec<String>,
    /// Words of an anonymous / HTTP 401 failure.
    pub http401_words: Vec<String>,
    /// Words of an HTTP 403 / missing `read:packages` failure.
    pub http403_words: Vec<String>,
    /// Signature strings.
    pub signatures: BlockerSignatures,
}

/// Signature vocabulary of the classifier.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BlockerSignatures {
    /// Signature without registry words.
    pub generic: String,
    /// Registry signature prefix.
    pub registry_prefix: String,
    /// Registry signature suffix.
    pub registry_suffix: String,
    /// Part for a 401 / anonymous failure.
    pub http401: String,
    /// Part for a 403 / read:packages failure.
    pub http403: String,
    /// Part when neither applies.
    pub registry_unknown: String,
    /// `requiredExternalDecision` template (`{signature}`).
    pub decision: String,
}

impl RuleFamily for BlockerRules {
    const KEY: &'static str = "blockers";
    fn check(&self) -> Result<(), Problem> {
        if self.schema != 1 {
            return Err(Problem::at("/schema", "unsupported blockers schema"));
        }
        for (key, list) in [
            ("authWords", &self.auth_words),
            ("missingWords", &self.missing_words),
            ("registryWords", &self.registry_words),
            ("http401Words", &self.http401_words),
            ("http403Words", &self.http403_words),
        ] {
            if list.is_empty() {
                return Err(Problem::at(format!("/{key}"), "must not be empty"));
            }
            for (i, w) in list.iter().enumerate() {
                if w.trim().is_empty() || w.trim() != w || w.to_lowercase() != *w {
                    return Err(Problem::at(
                        format!("/{key}/{i}"),
                        "words are non-blank, trimmed and lower-case",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// JSON Schema of a profile.
pub fn profile_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(Profile)).expect("schemas serialise")
}

/// JSON Schema of `rules/blockers.json`.
pub fn blocker_rules_schema() -> Value {
    serde_json::to_value(schemars::schema_for!(BlockerRules)).expect("schemas serialise")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_profiles_validate() {
        let rules = crate::rules::RuleSet::embedded().unwrap();
        let p: Profiles = rules.family().unwrap();
        assert_eq!(p.0.len(), 3);
        let t: TextsFamily = rules.family().unwrap();
        for prof in p.0.values() {
            assert!(t.0.contains_key(texts_key(&prof.texts).unwrap()));
        }
    }

    /// Looking one profile up decodes it alone, and gives exactly the
    /// family's entry, with the embedded defaults and with an override.
    #[test]
    fn lookup_gives_the_family_entry_alone() {
        let layer = br#"{"profiles": {"omx": {"commandPrefix": "omx-x ultragoal"}}}"#;
        for rules in [
            crate::rules::RuleSet::embedded().unwrap(),
            crate::rules::RuleSet::load(&[crate::rules::Layer {
                name: "user",
                bytes: layer,
            }])
            .unwrap(),
        ] {
            let all: Profiles = rules.family().unwrap();
            for (name, p) in &all.0 {
                let one = Profiles::lookup(&rules, name).unwrap();
                assert_eq!(format!("{one:?}"), format!("{p:?}"), "{name}");
            }
            assert!(matches!(
                Profiles::lookup(&rules, "nope"),
                Err(ProfileError::Unknown { .. })
            ));
            assert!(matches!(
                Profiles::lookup(&rules, "omx/x"),
                Err(ProfileError::Unknown { .. })
            ));
        }
        let over = crate::rules::RuleSet::load(&[crate::rules::Layer {
            name: "user",
            bytes: layer,
        }])
        .unwrap();
        assert_eq!(
            Profiles::lookup(&over, "omx").unwrap().command_prefix,
            "omx-x ultragoal"
        );
    }
}
