//! The goal-loop hooks (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6): `stop` (resume an unfinished plan),
//! `user-prompt-submit` (steering directives and ultrawork), `pre-tool-use`
//! (the `create_goal` guard and the team boundary guard) and
//! `pre-tool-use-spawn` (fan-out cap and gate preflight).
//!
//! These modules decode nothing and encode nothing: they turn an event into
//! a [`Decision`]. Goal knowledge (plans, predicates, progress, the state
//! lock and writer) comes from [`crate::goals`]; the hooks add only their own
//! policy (budgets, guards, texts).

mod boulder;
mod prompt;
mod prompts;
mod shell;
mod spawn;
mod stop;
mod tools;
mod ultrawork;

use std::sync::OnceLock;

use cap_std::fs::Dir;
use regex::Regex;
use serde_json::json;

use super::code::HookCode;
use super::diagnostics::Diagnostics;
use super::directive::Template;
use super::event::{Body, Decision, Envelope, HookEvent};
use super::witness::{HookState, StateFault};
use crate::ambient::{self, Ambient};
use crate::goals::loop_state::{self, LocatedView};
use crate::goals::{Engine, EngineOptions, Profile, SidSource, StatePaths, SurfaceInputs, team};
use crate::rules::goal_loop::{
    CreateGoalGuardRules, DenyFor, SpawnRules, StopRules, TeamGuardRules, UserPromptSubmitRules,
};
use crate::rules::hooks::{Directives, HooksRules};
use crate::rules::profiles::Profiles;
use crate::rules::{RuleFamily, RuleSet};
use crate::store::{LockError, MutationLock};

/// Placeholders of the stop-resume templates (docs/hook-contracts.md#h-4).
pub(crate) const STOP_PLACEHOLDERS: &[&str] = &[
    "GOAL_ID",
    "GOAL_TITLE",
    "CLI",
    "SCOPE_FLAG",
    "RESUME_COUNT",
    "MAX_RESUMES",
];
/// Placeholders of the `create_goal` deny template (docs/hook-contracts.md#h-6).
pub(crate) const CREATE_GOAL_PLACEHOLDERS: &[&str] = &["PROBLEMS", "ALLOWED_KEYS"];
/// Placeholders of the ultrawork pointer template (docs/hook-contracts.md#h-5).
pub(crate) const POINTER_PLACEHOLDERS: &[&str] = &["SKILL_PATH", "GOAL_STEP"];

/// Placeholders of the ultrawork template: the goal step, which names the
/// `create_goal`/`update_goal` tools only on Codex (the one host that has them).
pub(crate) const ULTRAWORK_PLACEHOLDERS: &[&str] = &["GOAL_STEP"];
/// Static text of the reason templates (the rendered reason is ≤ 2 KiB).
const MAX_STATIC_REASON: usize = 1536;
/// Static text of the injected context templates (shortened per host later).
const MAX_STATIC_CONTEXT: usize = 16 * 1024;

/// One profile: what every hook reads of it before it knows which profile
/// applies (its head), the whole profile decoded when a hook first reads
/// more, and its stop directive, compiled on first use (only the Stop hook
/// renders it). An override decodes and compiles everything up front, as
/// every part.
#[derive(Debug, Clone)]
pub(crate) struct LoopProfile {
    head: ProfileHead,
    rules: std::sync::Arc<RuleSet>,
    /// The profile (the same allocation the rule set shares with the
    /// engine a call builds).
    full: OnceLock<std::sync::Arc<Profile>>,
    stop_directive: OnceLock<Template>,
}

/// The fields of a profile a goal-loop hook reads of every profile `--profile
/// auto` selects: its name, its state directory (whether it has a plan here
/// at all), its steering markers (which profile a prompt steers) and its
/// team-worker environment markers (whether the caller is a worker). A tool
/// call, a steering prompt or a stop then decodes in full only the profiles
/// it reads more of: one, or none, not three.
#[derive(Debug, Clone, serde::Deserialize)]
struct ProfileHead {
    name: String,
    #[serde(rename = "stateDir")]
    state_dir: String,
    steering: HeadSteering,
    team: HeadTeam,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadSteering {
    directive_markers: Vec<String>,
}

#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct HeadTeam {
    worker_env: Vec<crate::rules::profiles::WorkerEnv>,
}

/// Every profile's head, in the order of [`Profiles`] (by name).
#[derive(Debug, serde::Deserialize)]
#[serde(transparent)]
struct ProfileHeads(std::collections::BTreeMap<String, ProfileHead>);

impl RuleFamily for ProfileHeads {
    const KEY: &'static str = Profiles::KEY;
}

/// A [`ProfileHead`] of an embedded profile, compiled from its file by the
/// build (`build.rs`; scanning the three files for these fields cost a
/// steering prompt about as much as decoding one profile in full). A unit
/// test checks the table against the embedded files.
#[derive(Debug)]
struct HeadInfo {
    name: &'static str,
    state_dir: &'static str,
    directive_markers: &'static [&'static str],
    worker_env: &'static [(&'static str, &'static [&'static str])],
}

mod head_table {
    use super::HeadInfo;
    include!(concat!(env!("OUT_DIR"), "/profile_heads.rs"));
}

impl ProfileHead {
    fn of(h: &HeadInfo) -> ProfileHead {
        let strings = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect();
        ProfileHead {
            name: h.name.to_owned(),
            state_dir: h.state_dir.to_owned(),
            steering: HeadSteering {
                directive_markers: strings(h.directive_markers),
            },
            team: HeadTeam {
                worker_env: h
                    .worker_env
                    .iter()
                    .map(|(name, values)| crate::rules::profiles::WorkerEnv {
                        name: (*name).to_owned(),
                        values: strings(values),
                    })
                    .collect(),
            },
        }
    }
}

impl LoopProfile {
    /// The profile's name (its key in the rules).
    pub(crate) fn name(&self) -> &str {
        &self.head.name
    }

    /// Whether its state directory is absent from `root` (a missing path
    /// component): then it has no plan there, and no locator needs the
    /// whole profile to say so. Anything else at that path (a directory, a
    /// symlink, a file) is for the locator to judge.
    pub(crate) fn absent_from(&self, root: &Dir) -> bool {
        matches!(
            crate::goals::loop_state::open_state_dir(root, &self.head.state_dir),
            Ok(None)
        )
    }

    /// Its steering markers.
    pub(crate) fn directive_markers(&self) -> &[String] {
        &self.head.steering.directive_markers
    }

    /// Its team-worker environment markers.
    pub(crate) fn worker_env(&self) -> &[crate::rules::profiles::WorkerEnv] {
        &self.head.team.worker_env
    }

    /// The whole profile, decoded on first use (the rule set validated it
    /// when it was loaded; the embedded profiles are validated by the test
    /// suite).
    pub(crate) fn profile(&self) -> &std::sync::Arc<Profile> {
        lazy(&self.full, || self.build_full())
    }

    fn build_full(&self) -> Result<std::sync::Arc<Profile>, String> {
        crate::rules::profiles::Profiles::lookup_shared(&self.rules, &self.head.name)
            .map_err(|e| rules_error(e.into_rules_error()))
    }
}

/// The compiled goal-loop policy: every family plus the templates and
/// patterns derived from them. With the embedded rules alone (validated by
/// the test suite) each part is decoded on first use, so a call decodes
/// only the families its event reads; with an override every part is
/// compiled up front, so that any fault is reported before the decision.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    rules: std::sync::Arc<RuleSet>,
    stop: OnceLock<StopRules>,
    prompt: OnceLock<PromptPart>,
    create_goal: OnceLock<CreateGoalPart>,
    spawn: OnceLock<SpawnPart>,
    team: OnceLock<TeamPart>,
    directives: OnceLock<Directives>,
    profiles: OnceLock<Vec<LoopProfile>>,
}

/// `user_prompt_submit.*` and its two ultrawork templates, compiled when a
/// prompt without a steering marker first renders one (an override
/// compiles them up front, as every part).
#[derive(Debug, Clone)]
pub(crate) struct PromptPart {
    pub rules: UserPromptSubmitRules,
    templates: OnceLock<UltraworkTemplates>,
}

/// The ultrawork directive and its pointer form.
#[derive(Debug, Clone)]
pub(crate) struct UltraworkTemplates {
    pub ultrawork: Template,
    pub ultrawork_pointer: Template,
}

/// `create_goal_guard.*` and its deny template, compiled when a denial first
/// renders it (an override compiles it up front, as every part).
#[derive(Debug, Clone)]
pub(crate) struct CreateGoalPart {
    pub rules: CreateGoalGuardRules,
    deny: OnceLock<Template>,
}

/// `spawn.*` and its lower-cased gate message patterns.
#[derive(Debug, Clone)]
pub(crate) struct SpawnPart {
    pub rules: SpawnRules,
    gate_messages: Vec<String>,
}

/// `team_guard.*` and its agent-type pattern.
#[derive(Debug, Clone)]
pub(crate) struct TeamPart {
    pub rules: TeamGuardRules,
    agent_type: Option<Regex>,
}

fn template(
    directives: &Directives,
    name: &str,
    key: &str,
    allowed: &[&'static str],
    required: &[&str],
    max_static: usize,
) -> Result<Template, String> {
    let text = directives
        .0
        .get(name)
        .ok_or_else(|| format!("{key}: no directive template named `{name}`"))?;
    let t = Template::compile(text, allowed).map_err(|e| format!("/directives/{name}: {e}"))?;
    if t.static_len() > max_static {
        return Err(format!(
            "/directives/{name}: the static text is over {max_static} bytes"
        ));
    }
    for r in required {
        if !t.uses(r) {
            return Err(format!(
                "/directives/{name}: the template must contain {{{{{r}}}}}"
            ));
        }
    }
    Ok(t)
}

fn rules_error(x: crate::rules::RulesError) -> String {
    x.to_string()
}

impl Policy {
    /// Compiles the policy; an error names the rules key at fault. The
    /// embedded rules alone are compiled part by part on first use.
    pub(crate) fn compile(set: &std::sync::Arc<RuleSet>) -> Result<Policy, String> {
        let p = Policy {
            rules: std::sync::Arc::clone(set),
            stop: OnceLock::new(),
            prompt: OnceLock::new(),
            create_goal: OnceLock::new(),
            spawn: OnceLock::new(),
            team: OnceLock::new(),
            directives: OnceLock::new(),
            profiles: OnceLock::new(),
        };
        if !set.is_embedded_only() {
            p.compile_all()?;
        }
        Ok(p)
    }

    /// [`Policy::compile`] with every part compiled now, whatever the rules
    /// (`doctor` and the tests check the embedded rules this way).
    pub(crate) fn compile_eager(set: &RuleSet) -> Result<Policy, String> {
        let p = Policy::compile(&std::sync::Arc::new(set.clone()))?;
        p.compile_all()?;
        Ok(p)
    }

    /// Compiles every part now (each error is returned, none is kept).
    pub(crate) fn compile_all(&self) -> Result<(), String> {
        fill(&self.stop, || self.build_stop())?;
        fill(&self.directives, || self.build_directives())?;
        fill(&self.prompt, || self.build_prompt())?;
        let prompt = self.prompt();
        fill(&prompt.templates, || self.build_ultrawork(&prompt.rules))?;
        fill(&self.create_goal, || self.build_create_goal())?;
        let create_goal = self.create_goal();
        fill(&create_goal.deny, || {
            self.build_create_goal_deny(&create_goal.rules)
        })?;
        fill(&self.spawn, || self.build_spawn())?;
        fill(&self.team, || self.build_team())?;
        fill(&self.profiles, || self.build_profiles())?;
        for p in self.profiles() {
            fill(&p.full, || p.build_full())?;
            fill(&p.stop_directive, || self.build_stop_directive(p.profile()))?;
        }
        Ok(())
    }

    fn build_stop(&self) -> Result<StopRules, String> {
        self.rules.family().map_err(rules_error)
    }

    fn build_directives(&self) -> Result<Directives, String> {
        self.rules.family().map_err(rules_error)
    }

    fn build_prompt(&self) -> Result<PromptPart, String> {
        let rules: UserPromptSubmitRules = self.rules.family().map_err(rules_error)?;
        Ok(PromptPart {
            rules,
            templates: OnceLock::new(),
        })
    }

    fn build_ultrawork(&self, rules: &UserPromptSubmitRules) -> Result<UltraworkTemplates, String> {
        let directives = self.directives();
        let ultrawork = template(
            directives,
            &rules.ultrawork_directive,
            "/user_prompt_submit/ultrawork_directive",
            ULTRAWORK_PLACEHOLDERS,
            &[],
            MAX_STATIC_CONTEXT,
        )?;
        let ultrawork_pointer = template(
            directives,
            &rules.ultrawork_pointer_directive,
            "/user_prompt_submit/ultrawork_pointer_directive",
            POINTER_PLACEHOLDERS,
            &["SKILL_PATH"],
            MAX_STATIC_CONTEXT,
        )?;
        for (name, t) in [
            (&rules.ultrawork_directive, &ultrawork),
            (&rules.ultrawork_pointer_directive, &ultrawork_pointer),
        ] {
            if !t.render(&|_| String::new()).contains(&rules.ultrawork_tag) {
                return Err(format!(
                    "/directives/{name}: the text must contain user_prompt_submit.ultrawork_tag"
                ));
            }
        }
        Ok(UltraworkTemplates {
            ultrawork,
            ultrawork_pointer,
        })
    }

    fn build_create_goal(&self) -> Result<CreateGoalPart, String> {
        let rules: CreateGoalGuardRules = self.rules.family().map_err(rules_error)?;
        Ok(CreateGoalPart {
            rules,
            deny: OnceLock::new(),
        })
    }

    fn build_create_goal_deny(&self, rules: &CreateGoalGuardRules) -> Result<Template, String> {
        template(
            self.directives(),
            &rules.directive,
            "/create_goal_guard/directive",
            CREATE_GOAL_PLACEHOLDERS,
            &["PROBLEMS"],
            MAX_STATIC_REASON,
        )
    }

    fn build_spawn(&self) -> Result<SpawnPart, String> {
        let rules: SpawnRules = self.rules.family().map_err(rules_error)?;
        let gate_messages = rules
            .gate_message_patterns
            .iter()
            .map(|p| p.to_lowercase())
            .collect();
        Ok(SpawnPart {
            rules,
            gate_messages,
        })
    }

    fn build_team(&self) -> Result<TeamPart, String> {
        let rules: TeamGuardRules = self.rules.family().map_err(rules_error)?;
        let agent_type = match &rules.deny_for {
            DenyFor::AnySubagent => None,
            DenyFor::AgentType(re) => {
                Some(Regex::new(re).map_err(|x| format!("/team_guard/deny_for: {x}"))?)
            }
        };
        Ok(TeamPart { rules, agent_type })
    }

    fn build_profiles(&self) -> Result<Vec<LoopProfile>, String> {
        let heads: Vec<ProfileHead> = if self.rules.is_embedded_only() {
            head_table::HEADS.iter().map(ProfileHead::of).collect()
        } else {
            let heads: ProfileHeads = self.rules.family().map_err(rules_error)?;
            heads.0.into_values().collect()
        };
        Ok(heads
            .into_iter()
            .map(|head| {
                // The whole profile is decoded through the rule set's shared
                // decodings: the engine this call may build looks it up there.
                LoopProfile {
                    head,
                    rules: std::sync::Arc::clone(&self.rules),
                    full: OnceLock::new(),
                    stop_directive: OnceLock::new(),
                }
            })
            .collect())
    }

    /// `profile`'s `hooks.stopDirective`, compiled.
    fn build_stop_directive(&self, p: &Profile) -> Result<Template, String> {
        template(
            self.directives(),
            &p.hooks.stop_directive,
            &format!("/profiles/{}/hooks/stopDirective", p.name),
            STOP_PLACEHOLDERS,
            &["GOAL_ID"],
            MAX_STATIC_REASON,
        )
    }

    /// `stop.*`.
    pub(crate) fn stop(&self) -> &StopRules {
        lazy(&self.stop, || self.build_stop())
    }

    fn directives(&self) -> &Directives {
        lazy(&self.directives, || self.build_directives())
    }

    /// `user_prompt_submit.*`.
    pub(crate) fn prompt(&self) -> &PromptPart {
        lazy(&self.prompt, || self.build_prompt())
    }

    /// The ultrawork templates.
    pub(crate) fn ultrawork(&self) -> &UltraworkTemplates {
        let prompt = self.prompt();
        lazy(&prompt.templates, || self.build_ultrawork(&prompt.rules))
    }

    /// `create_goal_guard.*`.
    pub(crate) fn create_goal(&self) -> &CreateGoalPart {
        lazy(&self.create_goal, || self.build_create_goal())
    }

    /// The `create_goal` deny template.
    pub(crate) fn create_goal_deny(&self) -> &Template {
        let part = self.create_goal();
        lazy(&part.deny, || self.build_create_goal_deny(&part.rules))
    }

    /// `spawn.*`.
    pub(crate) fn spawn(&self) -> &SpawnPart {
        lazy(&self.spawn, || self.build_spawn())
    }

    /// `team_guard.*`.
    pub(crate) fn team(&self) -> &TeamPart {
        lazy(&self.team, || self.build_team())
    }

    /// Every profile, in the rules' order (ties between plans go to the first).
    pub(crate) fn profiles(&self) -> &[LoopProfile] {
        lazy(&self.profiles, || self.build_profiles()).as_slice()
    }

    /// The profiles `--profile` selects (`auto`: all).
    pub(crate) fn candidates(&self, flag: &str) -> Vec<&LoopProfile> {
        self.profiles()
            .iter()
            .filter(|p| flag == "auto" || p.name() == flag)
            .collect()
    }

    /// Renders a stop-resume directive (docs/hook-contracts.md#h-4) within `max` bytes.
    pub(crate) fn render_stop(
        &self,
        p: &LoopProfile,
        (goal_id, goal_title): (&str, &str),
        scope_sid: Option<&str>,
        count: u64,
        max_resumes: u64,
        max: usize,
    ) -> String {
        let title = clip_chars(goal_title, 120);
        let scope = scope_sid
            .map(|s| format!(" {} {s}", p.profile().session.flag))
            .unwrap_or_default();
        let directive = lazy(&p.stop_directive, || self.build_stop_directive(p.profile()));
        let text = directive.render(&|slot| match slot {
            "GOAL_ID" => goal_id.to_owned(),
            "GOAL_TITLE" => title.clone(),
            "CLI" => p.profile().command_prefix.clone(),
            "SCOPE_FLAG" => scope.clone(),
            "RESUME_COUNT" => count.to_string(),
            "MAX_RESUMES" => max_resumes.to_string(),
            _ => String::new(),
        });
        super::host::encode::cap_bytes(text.trim_end(), max)
    }
}

/// Sets `cell` from `build` unless set; the error is returned, not kept.
fn fill<T>(cell: &OnceLock<T>, build: impl FnOnce() -> Result<T, String>) -> Result<(), String> {
    if cell.get().is_none() {
        let _ = cell.set(build()?);
    }
    Ok(())
}

/// The part in `cell`, built on first use. Only the embedded rules reach a
/// build here (an override is compiled whole by [`Policy::compile`]), and
/// the test suite compiles every embedded part.
fn lazy<T>(cell: &OnceLock<T>, build: impl FnOnce() -> Result<T, String>) -> &T {
    cell.get_or_init(|| build().unwrap_or_else(|e| panic!("embedded goal-loop rules: {e}")))
}

/// `s` cut to `max` characters, `…`-suffixed when cut.
pub(crate) fn clip_chars(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Everything one goal-loop decision needs.
pub(crate) struct Ctx<'a> {
    /// Ambient access (transcripts, the environment).
    pub amb: &'a dyn Ambient,
    /// The run's diagnostics.
    pub diag: &'a Diagnostics<'a>,
    /// The workspace root (`cwd`).
    pub root: &'a Dir,
    /// `cwd`'s canonical form when it is the process's directory.
    pub canonical_cwd: Option<&'a std::path::Path>,
    /// The workspace's canonical root, resolved once per call (names the
    /// per-user state); `None` when it could not be resolved.
    pub workspace: Option<&'a std::path::Path>,
    /// The envelope.
    pub env: &'a Envelope,
    /// Common hook rules.
    pub hooks: &'a HooksRules,
    /// The compiled goal-loop policy.
    pub policy: &'a Policy,
    /// The merged rules (the engine is built from them for gate preflights).
    pub rules: &'a RuleSet,
    /// `--profile`.
    pub profile_flag: &'a str,
    /// `--with-ultrawork`.
    pub with_ultrawork: bool,
    /// The hooks' per-user state of the workspace, opened by the first step
    /// of the call that needs it and shared by the others ([`Ctx::hook_state`]).
    pub hook_state: std::cell::OnceCell<Result<HookState, StateFault>>,
}

/// A session's plan and the profile it belongs to.
pub(crate) struct Found<'a> {
    /// The profile.
    pub profile: &'a LoopProfile,
    /// The plan's view and its state directory.
    pub located: LocatedView,
}

/// A session's plan that exists but cannot be read, and its profile.
pub(crate) struct UnreadablePlan<'a> {
    /// The profile.
    pub profile: &'a LoopProfile,
    /// The scope and the error.
    pub what: Box<loop_state::Unreadable>,
}

impl UnreadablePlan<'_> {
    /// `--session-id <sid>` for rendered commands of a scoped plan.
    pub(crate) fn scope_flag(&self) -> String {
        self.what
            .paths
            .sid
            .as_deref()
            .map(|s| format!(" {} {s}", self.profile.profile().session.flag))
            .unwrap_or_default()
    }

    /// The one-line fix shown with `HOOK_PLAN_UNREADABLE`.
    pub(crate) fn fix(&self) -> String {
        let file = self.what.paths.goals();
        format!(
            "restore {file} from version control (`git checkout -- {file}`); `{} repair{} --check` says what is wrong",
            self.profile.profile().command_prefix,
            self.scope_flag()
        )
    }
}

/// The plans of a session over the candidate profiles.
pub(crate) struct Resolved<'a> {
    /// The plan the hooks act on, if one was read.
    pub found: Option<Found<'a>>,
    /// Plans that exist but could not be read, in profile order.
    pub unreadable: Vec<UnreadablePlan<'a>>,
}

impl<'a> Ctx<'a> {
    /// Resolves the session's plan over `candidates` (docs/hook-contracts.md#h-4): live
    /// plans (not run-complete) beat finished ones, then the latest
    /// `updatedAt`, then profile order. Each plan is decided from its bound
    /// view when its ledger vouches for one ([`loop_state::locate_view`]).
    /// A plan that exists but cannot be read is returned apart: the Stop
    /// hook and the spawn guard refuse on it (docs/threat-model.md#i2), the
    /// prompt hook passes it over.
    pub(crate) fn resolve_view(&self, candidates: &[&'a LoopProfile]) -> Resolved<'a> {
        let now = crate::time::rfc3339_ms(std::time::SystemTime::now());
        let mut found: Vec<(usize, Found<'a>)> = Vec::new();
        let mut unreadable = Vec::new();
        for (i, p) in candidates.iter().enumerate() {
            // The locator opens the state directory first and finds
            // nothing where it is absent.
            if p.absent_from(self.root) {
                continue;
            }
            match loop_state::locate_view(
                self.root,
                p.profile(),
                self.env.session_id.as_deref(),
                self.policy.stop().adopt_unowned_unscoped_plan,
                &now,
            ) {
                Ok(Some(located)) => found.push((
                    i,
                    Found {
                        profile: p,
                        located,
                    },
                )),
                Ok(None) => {}
                Err(what) => unreadable.push(UnreadablePlan { profile: p, what }),
            }
        }
        found.sort_by(|(ia, a), (ib, b)| {
            let live = |f: &Found<'_>| !f.located.view.run_complete;
            let updated = |f: &Found<'_>| f.located.view.updated_at();
            live(b)
                .cmp(&live(a))
                .then_with(|| updated(b).cmp(&updated(a)))
                .then_with(|| ia.cmp(ib))
        });
        let best = found.into_iter().next().map(|(_, f)| f);
        if let Some(f) = &best {
            self.diag.set_profile(Some(&f.profile.profile().name));
        } else if let Some(u) = unreadable.first() {
            self.diag.set_profile(Some(&u.profile.profile().name));
        }
        Resolved {
            found: best,
            unreadable,
        }
    }

    /// Writes the `HOOK_PLAN_UNREADABLE` line of `u` with `outcome`.
    pub(crate) fn plan_unreadable(&self, u: &UnreadablePlan<'_>, outcome: &str, summary: &str) {
        self.diag.write(
            HookCode::HookPlanUnreadable,
            outcome,
            summary,
            Some(json!({
                "profile": u.profile.profile().name,
                "file": u.what.paths.goals(),
                "error": u.what.error.code(),
                "message": super::host::encode::cap_bytes(&u.what.error.message, 800),
                "fix": u.fix(),
            })),
        );
    }

    /// A fingerprint of an unreadable plan for the resume budget: its
    /// error and the `lstat` of `goals.json` (kind, size, mtime, inode; never
    /// opened, so a FIFO cannot hang the hook). It changes when the file
    /// does, so a fresh fault gets a fresh budget.
    pub(crate) fn unreadable_digest(&self, u: &UnreadablePlan<'_>) -> String {
        let file = u.what.paths.goals();
        let meta = match self.root.symlink_metadata(&file) {
            Ok(m) => {
                use cap_fs_ext::MetadataExt;
                format!(
                    "{:?} {} {:?} {}",
                    m.file_type(),
                    m.len(),
                    m.modified().ok(),
                    m.ino()
                )
            }
            Err(e) => format!("{:?}", e.kind()),
        };
        let text = format!(
            "{file}\n{}\n{}\n{meta}",
            u.what.error.code(),
            u.what.error.message
        );
        crate::digest::sha256_hex(text.as_bytes())
    }

    fn env_worker(&self) -> Option<String> {
        let var = |k: &str| ambient::var(self.amb, k);
        self.policy
            .profiles()
            .iter()
            .find_map(|p| team::env_marker(p.worker_env(), &var))
    }

    /// Why the caller is a team worker for the shell guard (docs/hook-contracts.md#h-6),
    /// or `None` for the leader. The host payload decides first
    /// (docs/threat-model.md#i13): a payload naming a subagent (`agent_id`) is a
    /// worker whatever the environment or `team_guard.deny_for` says; then
    /// a worker environment marker of any profile; then an agent type alone
    /// under `team_guard.deny_for`.
    pub(crate) fn worker_marker(&self) -> Option<String> {
        if let Some(agent) = &self.env.agent
            && agent.id.is_some()
        {
            return Some(match &agent.kind {
                Some(k) => format!("agent_type:{k}"),
                None => "subagent".to_owned(),
            });
        }
        if let Some(m) = self.env_worker() {
            return Some(m);
        }
        let agent = self.env.agent.as_ref()?;
        match &self.policy.team().agent_type {
            None => Some(match &agent.kind {
                Some(k) => format!("agent_type:{k}"),
                None => "subagent".to_owned(),
            }),
            Some(re) => agent
                .kind
                .as_deref()
                .filter(|k| re.is_match(k))
                .map(|k| format!("agent_type:{k}")),
        }
    }

    /// Why a steering directive comes from a team worker (docs/engine.md
    /// docs/hook-contracts.md#h-10 on the hook channel): a worker environment marker, an agent type
    /// matching `team/workerAgentTypes`, or a subagent (non-empty agent id).
    pub(crate) fn steering_worker(&self, profile: &Profile) -> Option<String> {
        if let Some(m) = self.env_worker() {
            return Some(m);
        }
        let agent = self.env.agent.as_ref()?;
        agent
            .kind
            .as_deref()
            .and_then(|k| team::agent_type_marker(profile, k))
            .or_else(|| agent.id.as_ref().map(|_| "subagent".to_owned()))
    }

    /// The goal engine of `profile` over this payload's root, scoped to
    /// `sid` (the payload's session is the attempt-directory fallback). Only
    /// the gate preflight needs the surface inputs.
    pub(crate) fn engine_for(
        &self,
        profile: &LoopProfile,
        sid: Option<String>,
        with_surface: bool,
    ) -> Result<Engine, String> {
        let opts = EngineOptions {
            profile: profile.profile().name.clone(),
            session: sid.map_or(SidSource::None, SidSource::Flag),
            env_sid: self
                .env
                .session_id
                .as_deref()
                .and_then(crate::goals::session::normalize),
            lock_timeout_ms: None,
            root_abs: self.env.cwd.to_str().map(str::to_owned),
            surface: if with_surface {
                self.surface_inputs()
            } else {
                SurfaceInputs::default()
            },
            // The workspace's per-user `hooks/`, already open for this call.
            diagnostics: match self
                .hook_state()
                .ok()
                .and_then(|hs| hs.dir().try_clone().ok())
            {
                Some(dir) => crate::goals::diagnostics::Sink::in_dir(dir),
                None => crate::goals::diagnostics::Sink::open(self.amb, self.canonical_cwd),
            },
            worktree_prefix: if profile.profile().compat.state_path_prefix {
                crate::ambient::worktree_prefix(self.amb, &self.env.cwd)
            } else {
                String::new()
            },
            clock: None,
        };
        let root = self.root.try_clone().map_err(|e| e.to_string())?;
        Engine::new(root, self.rules, opts).map_err(|e| e.message)
    }

    /// The session's plan scope in one profile without reading a scoped
    /// plan (steering reads it under the lock); a problem writes
    /// `HOOK_PLAN_UNREADABLE`.
    pub(crate) fn resolve_scope(
        &self,
        p: &LoopProfile,
    ) -> Option<(crate::goals::StatePaths, loop_state::Ownership)> {
        let now = crate::time::rfc3339_ms(std::time::SystemTime::now());
        match loop_state::locate_scope(
            self.root,
            p.profile(),
            self.env.session_id.as_deref(),
            self.policy.stop().adopt_unowned_unscoped_plan,
            &now,
        ) {
            Ok(found) => found,
            Err(e) => {
                self.diag.write(
                    HookCode::HookPlanUnreadable,
                    "context",
                    &format!(
                        "the {} plan of this session could not be read",
                        p.profile().display_name
                    ),
                    Some(json!({
                        "profile": p.profile().name,
                        "error": e.code(),
                        "message": super::host::encode::cap_bytes(&e.message, 800),
                    })),
                );
                None
            }
        }
    }

    /// The gate surface inputs only the binary can read (docs/gates.md
    /// docs/hook-contracts.md#h-2): the environment variable and the marker next to the executable.
    fn surface_inputs(&self) -> SurfaceInputs {
        SurfaceInputs::read(self.amb, self.rules)
    }

    /// The plan's binding to its ledger when the plan is tampered with
    /// (docs/threat-model.md#i7); a ledger that cannot be read to check it is a
    /// state fault that blocks (docs/threat-model.md#i2).
    /// `plan` was read from `dir`.
    pub(crate) fn tampered_binding(
        &self,
        dir: &Dir,
        paths: &StatePaths,
        plan: &crate::goals::plan::Plan,
    ) -> Result<Option<crate::goals::binding::Binding>, Decision> {
        // Whether this machine's hooks observed the engine's head in this
        // ledger (per-user state, out of the agent's reach): then a plan
        // that names no head over foreign lines is not taken for legacy
        // (docs/threat-model.md#i7).
        let seen = || {
            let state_dir = paths.file("");
            self.hook_state()
                .ok()
                .and_then(|hs| hs.observed_seq(state_dir.trim_end_matches('/')))
                .is_some()
        };
        match loop_state::binding_in(dir, paths, plan, &seen) {
            Ok(b) if b.tampered() => Ok(Some(b)),
            Ok(_) => Ok(None),
            Err(e) => Err(self.state_io(
                "the goal ledger could not be read to check the plan's binding",
                &paths.ledger(),
                &e.message,
            )),
        }
    }

    /// A fault in goal-loop state a decision depends on (docs/threat-model.md
    /// docs/threat-model.md#i2): writes a `HOOK_STATE_IO` line and blocks the stop (`tool`:
    /// denies the call), telling the user to act. A sabotaged side file must
    /// not switch the resume or the fan-out cap off.
    pub(crate) fn state_io(&self, what: &str, path: &str, e: &dyn std::fmt::Display) -> Decision {
        self.fault(
            HookCode::HookStateIo,
            what,
            path,
            &e.to_string(),
            false,
            DOCTOR_FIX,
        )
    }

    /// [`Ctx::state_io`] for the tool family: the call is denied.
    pub(crate) fn state_io_tool(
        &self,
        what: &str,
        path: &str,
        e: &dyn std::fmt::Display,
    ) -> Decision {
        self.fault(
            HookCode::HookStateIo,
            what,
            path,
            &e.to_string(),
            true,
            DOCTOR_FIX,
        )
    }

    /// The hooks' per-user state of the workspace (from its canonical root,
    /// resolved once per call): opened at the first use, then the same
    /// handles for every step of the call (a fault is the same fault).
    pub(crate) fn hook_state(&self) -> Result<&HookState, StateFault> {
        self.hook_state
            .get_or_init(|| HookState::open(self.amb, &self.env.cwd, self.workspace))
            .as_ref()
            .map_err(Clone::clone)
    }

    /// Opens the per-user directory that keeps the hooks' side files of the
    /// plan scope `paths` (resume and spawn counters, stuck markers, their
    /// lock; a plan that could not be read has its budget there too):
    /// `<user state>/hooks/goal-loop/<16 hex of the state path>/`, out of
    /// the agent's reach (docs/threat-model.md#tm-3). A fault blocks (`tool`: denies).
    pub(crate) fn side_state(
        &self,
        paths: &crate::goals::StatePaths,
        tool: bool,
    ) -> Result<SideState, Decision> {
        let hs = self.hook_state().map_err(|f| {
            self.fault(
                HookCode::HookStateIo,
                &f.what,
                &f.path,
                &f.error,
                tool,
                f.fix,
            )
        })?;
        let key = &crate::digest::sha256_hex(paths.file("").as_bytes())[..16];
        let rel = format!("goal-loop/{key}");
        let base = hs.display(&rel);
        let dir = hs.subdir(&rel).map_err(|e| {
            self.fault(
                HookCode::HookStateIo,
                "the per-user goal-loop state could not be opened",
                &base,
                &e.to_string(),
                tool,
                DOCTOR_FIX,
            )
        })?;
        let wait = std::time::Duration::from_millis(self.hooks.lock_wait_ms);
        let lock_path = format!("{base}/{}", crate::goals::state::LOCK);
        let lock = match loop_state::lock_side_files(&dir, wait, "hook") {
            Ok(l) => l,
            Err(LockError::Timeout { waited_ms, .. }) => {
                return Err(self.fault(
                    HookCode::HookLockTimeout,
                    &format!("the goal-loop side-file lock was not taken within {waited_ms} ms"),
                    &lock_path,
                    "another hook call holds it",
                    tool,
                    "wait for the other hook call to end; if none runs, run `evidence-gate doctor --fix`",
                ));
            }
            Err(LockError::Unsafe { what }) => {
                return Err(self.fault(
                    HookCode::HookStateIo,
                    "the goal-loop side-file lock is unusable",
                    &lock_path,
                    &format!("it is {what}"),
                    tool,
                    DOCTOR_FIX,
                ));
            }
            Err(LockError::Io(e)) => {
                return Err(self.fault(
                    HookCode::HookStateIo,
                    "the goal-loop side-file lock could not be taken",
                    &lock_path,
                    &e.to_string(),
                    tool,
                    DOCTOR_FIX,
                ));
            }
        };
        let side = SideState { dir, base, lock };
        if let Err(e) = self.migrate_side(paths, &side) {
            side.release();
            return Err(self.fault(
                HookCode::HookStateIo,
                "the in-tree resume counters of an earlier version could not be migrated",
                &e.0,
                &e.1,
                tool,
                DOCTOR_FIX,
            ));
        }
        Ok(side)
    }

    /// Migrates, once per plan scope, the resume counters an earlier version
    /// kept in the tree (`<state>/auto-resume-<key>.json`) into `side`, under
    /// its lock; [`SIDE_MIGRATED`] records that it ran, and the in-tree files
    /// are never read again. For the same progress digest the larger count
    /// wins, but a migrated count stays below `stop.max_resumes_without_progress`,
    /// so a counter planted in the tree can spend at most the budget of the
    /// current progress, never the last resume. Where the per-user counter
    /// names another digest it is newer and kept. In-tree stuck markers
    /// (`auto-resume-<key>.stuck`) are not migrated: the agent can write them,
    /// and a file the agent can write must not silence a resume by itself
    /// (docs/threat-model.md#tm-3); a goal that is really stuck pauses again after
    /// its budget. Errors are `(path, error)`.
    fn migrate_side(
        &self,
        paths: &crate::goals::StatePaths,
        side: &SideState,
    ) -> Result<(), (String, String)> {
        let io = |name: &str, e: &dyn std::fmt::Display| (side.display(name), e.to_string());
        match side.dir.symlink_metadata(SIDE_MIGRATED) {
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io(SIDE_MIGRATED, &e)),
        }
        // A tree without the state directory (or an unsafe one) has nothing
        // to migrate: nothing there is trusted anyway.
        if let Ok(Some(legacy)) = crate::goals::state::open_chain(self.root, &paths.dir, false) {
            let max = self.policy.stop().max_resumes_without_progress;
            for name in legacy_counters(&legacy) {
                let display = format!("{}{name}", paths.file(""));
                let Ok(Some(bytes)) =
                    loop_state::read_side_file(&legacy, &name, &display, 64 * 1024)
                else {
                    continue;
                };
                let Some((old, digest)) = counter_of(&bytes) else {
                    continue;
                };
                let old = old.min(max.saturating_sub(1));
                let current =
                    loop_state::read_side_file(&side.dir, &name, &side.display(&name), 64 * 1024)
                        .map_err(|e| (side.display(&name), e.message.clone()))?;
                let keep = match current.as_deref().and_then(counter_of) {
                    Some((count, d)) => d != digest || count >= old,
                    None => old == 0,
                };
                if keep {
                    continue;
                }
                let v = json!({
                    "count": old,
                    "progressDigest": digest,
                    "updatedAt": crate::time::rfc3339_ms(std::time::SystemTime::now()),
                    "migrated": true,
                });
                loop_state::write_side_file(&side.dir, &name, v.to_string().as_bytes())
                    .map_err(|e| io(&name, &e))?;
            }
        }
        let marker = json!({"v": 1, "at": crate::time::rfc3339_ms(std::time::SystemTime::now())});
        loop_state::write_side_file(&side.dir, SIDE_MIGRATED, marker.to_string().as_bytes())
            .map_err(|e| io(SIDE_MIGRATED, &e))
    }

    /// Records the head of the plan's goal ledger in the per-user state
    /// (docs/threat-model.md#tm-3), so that local `verify-evidence` can tell a
    /// ledger that fell behind. Best effort: no gated decision depends on
    /// it, and a fault is left to `doctor`.
    pub(crate) fn observe_head(&self, dir: &Dir, paths: &StatePaths) {
        let state_dir = paths.file("");
        let state_dir = state_dir.trim_end_matches('/');
        let Some(head) = super::witness::ledger_head(dir, state_dir) else {
            return;
        };
        if let Ok(hs) = self.hook_state() {
            let _ = hs.observe_head(&head);
        }
    }

    fn fault(
        &self,
        code: HookCode,
        what: &str,
        path: &str,
        error: &str,
        tool: bool,
        fix: &str,
    ) -> Decision {
        self.diag.write(
            code,
            if tool { "deny" } else { "block" },
            &format!("{what}; the call was refused until the user acts"),
            Some(json!({"path": path, "error": error, "fix": fix})),
        );
        let reason = format!(
            "evidence-gate {code}: {what} ({path}: {error}). This is a fault in the hook's own state, not in your work: do not try to work around it; the user must fix it ({fix})."
        );
        if tool {
            Decision::Deny { reason }
        } else {
            Decision::Halt {
                reason,
                message: format!(
                    "evidence-gate: {code} at {path} — the user must act: {fix}. The goal loop is held until then."
                ),
            }
        }
    }
}

/// The fix shown with a fault in hook state.
const DOCTOR_FIX: &str = "run `evidence-gate doctor --fix`";

/// The per-user side-file directory of one plan, locked.
pub(crate) struct SideState {
    /// The directory.
    pub dir: Dir,
    base: String,
    lock: MutationLock,
}

impl SideState {
    /// The ambient path of a side file (messages only).
    pub(crate) fn display(&self, name: &str) -> String {
        format!("{}/{name}", self.base)
    }

    /// Releases the lock.
    pub(crate) fn release(self) {
        let _ = self.lock.release();
    }
}

/// Written in a plan scope's per-user side directory once the in-tree resume
/// counters of earlier versions were migrated ([`Ctx::side_state`]).
pub(crate) const SIDE_MIGRATED: &str = "migrated.json";
/// In-tree side files looked at, at most, by the migration.
const MAX_LEGACY_SIDE: usize = 10_000;

/// The names of the in-tree resume counters in `legacy` (regular entries
/// only; the read itself follows no symlink).
fn legacy_counters(legacy: &Dir) -> Vec<String> {
    let Ok(entries) = legacy.entries() else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .take(MAX_LEGACY_SIDE)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("auto-resume-") && n.ends_with(".json") && !n.contains('/'))
        .collect()
}

/// `(count, progressDigest)` of a resume counter's JSON.
fn counter_of(bytes: &[u8]) -> Option<(u64, String)> {
    let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let count = v.get("count")?.as_u64()?;
    let digest = v.get("progressDigest")?.as_str()?.to_owned();
    Some((count, digest))
}

/// Decides one goal-loop event.
pub(crate) fn decide(c: &Ctx<'_>, event: HookEvent, body: &Body) -> Decision {
    match (event, body) {
        (HookEvent::Stop, Body::Stop(s)) => stop::decide(c, s),
        (HookEvent::UserPromptSubmit, Body::Prompt(p)) => prompt::decide(c, p),
        (HookEvent::PreToolUse, Body::Tool(t)) => tools::decide(c, t),
        (HookEvent::PreToolUseSpawn, Body::Tool(t)) => spawn::decide(c, t),
        _ => Decision::Allow,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::rules::Layer;

    /// The policy of the embedded rules under `layer` as a `--rules` file.
    fn compile_override(layer: &[u8]) -> Result<Policy, String> {
        let set = RuleSet::load(&[Layer {
            name: "--rules",
            bytes: layer,
        }])
        .unwrap();
        Policy::compile(&Arc::new(set))
    }

    /// With the embedded rules alone a part is decoded on first use, and
    /// only the parts used: a prompt decodes no stop, tool or spawn rules.
    #[test]
    fn embedded_parts_are_compiled_on_first_use() {
        let set = Arc::new(RuleSet::embedded().unwrap());
        let p = Policy::compile(&set).unwrap();
        assert!(p.stop.get().is_none() && p.prompt.get().is_none());
        assert!(!p.prompt().rules.ultrawork_tag.is_empty());
        assert!(p.prompt.get().is_some());
        // The ultrawork templates (and the directives they come from) wait
        // for a prompt without a steering marker to render one.
        assert!(p.prompt().templates.get().is_none() && p.directives.get().is_none());
        assert!(
            p.ultrawork()
                .ultrawork
                .render(&|_| String::new())
                .contains(&p.prompt().rules.ultrawork_tag)
        );
        assert!(p.prompt().templates.get().is_some() && p.directives.get().is_some());
        for unused in [
            p.stop.get().is_some(),
            p.create_goal.get().is_some(),
            p.spawn.get().is_some(),
            p.team.get().is_some(),
            p.profiles.get().is_some(),
        ] {
            assert!(!unused);
        }
        // `--profile auto` sees every profile's head, and decodes no
        // profile in full until a hook reads more than the head.
        let names: Vec<&str> = p.candidates("auto").iter().map(|l| l.name()).collect();
        assert_eq!(names, ["omx", "ultragoal", "ulw-loop"]);
        assert!(p.profiles().iter().all(|l| l.full.get().is_none()));
        let ulw = p.candidates("ulw-loop")[0];
        // The whole profile is the rule set's shared decoding, which the
        // engine then looks up, and its head agrees with it.
        let full = Arc::clone(ulw.profile());
        let shared = crate::rules::profiles::Profiles::lookup_shared(&set, "ulw-loop").unwrap();
        assert!(Arc::ptr_eq(&full, &shared));
        assert!(
            p.profiles()
                .iter()
                .filter(|l| l.full.get().is_some())
                .count()
                == 1
        );
        for l in p.profiles() {
            let whole = l.profile();
            assert_eq!(l.name(), whole.name);
            assert_eq!(l.directive_markers(), whole.steering.directive_markers);
            assert_eq!(
                format!("{:?}", l.worker_env()),
                format!("{:?}", whole.team.worker_env)
            );
        }
        // The `create_goal` deny template waits for a denial to render it.
        assert!(p.create_goal().deny.get().is_none());
        assert!(
            p.create_goal_deny()
                .render(&|_| "PROBLEM".to_owned())
                .contains("PROBLEM")
        );
        assert!(p.create_goal().deny.get().is_some());
        // A profile's stop directive waits for the Stop hook to render it.
        assert!(
            p.profiles()
                .iter()
                .all(|l| l.stop_directive.get().is_none())
        );
        let text = p.render_stop(ulw, ("G1", "Title"), None, 1, 3, 2048);
        assert!(text.contains("G1"), "{text}");
        assert!(ulw.stop_directive.get().is_some());
        // Every embedded part compiles (a lazy part would panic otherwise),
        // each profile's stop directive included.
        let eager = Policy::compile_eager(&set).unwrap();
        assert!(eager.prompt().templates.get().is_some());
        assert!(eager.create_goal().deny.get().is_some());
        assert!(eager.profiles().iter().all(|l| l.full.get().is_some()));
        assert!(
            eager
                .profiles()
                .iter()
                .all(|l| l.stop_directive.get().is_some())
        );
    }

    /// An override's stop directive is compiled up front with every part: a
    /// fault in it is reported to a prompt hook too.
    #[test]
    fn an_override_stop_directive_is_compiled_up_front() {
        // `stop-resume` (ulw-loop's stop directive) without `{{GOAL_ID}}`.
        let layer = br#"{"directives": {"stop-resume": "Keep going."}}"#;
        let err = compile_override(layer).unwrap_err();
        assert!(
            err.contains("stop-resume") && err.contains("GOAL_ID"),
            "{err}"
        );
    }

    /// The head table the build compiled is every embedded profile's head
    /// as the rules decode it, in the same order.
    #[test]
    fn the_compiled_head_table_is_the_embedded_profiles() {
        let set = RuleSet::embedded().unwrap();
        let decoded: ProfileHeads = set.family().unwrap();
        let table: Vec<ProfileHead> = head_table::HEADS.iter().map(ProfileHead::of).collect();
        assert_eq!(
            format!("{table:?}"),
            format!("{:?}", decoded.0.into_values().collect::<Vec<_>>())
        );
        let full: Profiles = set.family().unwrap();
        assert_eq!(table.len(), full.0.len());
        for (h, p) in table.iter().zip(full.0.values()) {
            assert_eq!(h.name, p.name);
            assert_eq!(h.steering.directive_markers, p.steering.directive_markers);
            assert_eq!(
                format!("{:?}", h.team.worker_env),
                format!("{:?}", p.team.worker_env)
            );
        }
    }

    /// A profile whose state directory is absent is passed over without
    /// decoding it; anything at that path (a directory, a symlink, a file) is
    /// left to the locator, which reports what is wrong with it.
    #[test]
    #[allow(clippy::disallowed_methods)]
    fn an_absent_state_directory_is_told_from_the_head() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Dir::open_ambient_dir(tmp.path(), cap_std::ambient_authority()).unwrap();
        let set = Arc::new(RuleSet::embedded().unwrap());
        let p = Policy::compile(&set).unwrap();
        let all = p.candidates("auto");
        assert!(all.iter().all(|l| l.absent_from(&root)));
        let [a, b, c] = all.as_slice() else {
            panic!("three profiles")
        };
        let path = |l: &LoopProfile| tmp.path().join(&l.head.state_dir);
        // The parent alone is still absent; the directory itself is not.
        std::fs::create_dir_all(path(a).parent().unwrap()).unwrap();
        assert!(a.absent_from(&root));
        std::fs::create_dir_all(path(a)).unwrap();
        assert!(!a.absent_from(&root));
        // A symlink or a file in its place is not absent.
        std::fs::create_dir_all(path(b).parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(tmp.path(), path(b)).unwrap();
        assert!(!b.absent_from(&root));
        std::fs::create_dir_all(path(c).parent().unwrap()).unwrap();
        std::fs::write(path(c), b"x").unwrap();
        assert!(!c.absent_from(&root));
        assert!(p.profiles().iter().all(|l| l.full.get().is_none()));
    }

    /// An override's heads are decoded from the merged rules, not taken from
    /// the table: an override's steering marker is seen.
    #[test]
    fn an_override_profile_head_is_decoded_from_the_rules() {
        let layer =
            br#"{"profiles": {"ulw-loop": {"steering": {"directiveMarkers": ["MY_STEER"]}}}}"#;
        let p = compile_override(layer).unwrap();
        let ulw = p.candidates("ulw-loop")[0];
        assert_eq!(ulw.directive_markers(), ["MY_STEER"]);
        assert_eq!(ulw.profile().steering.directive_markers, ["MY_STEER"]);
    }

    /// An override's ultrawork templates are compiled up front too: a
    /// directive without the ultrawork tag is reported to a steering prompt.
    #[test]
    fn an_override_ultrawork_template_is_compiled_up_front() {
        let layer = br#"{"directives": {"ultrawork": "Work hard."}}"#;
        let err = compile_override(layer).unwrap_err();
        assert!(err.contains("ultrawork_tag"), "{err}");
    }

    /// An override is compiled whole up front: a fault in a part the event
    /// does not use is still reported.
    #[test]
    fn an_override_is_compiled_whole() {
        let layer = br#"{"create_goal_guard": {"directive": "no-such-directive"}}"#;
        let e = compile_override(layer).unwrap_err();
        assert!(e.contains("create_goal_guard"), "{e}");
        let honest = br#"{"stop": {"max_resumes_without_progress": 3}}"#;
        let p = compile_override(honest).unwrap();
        assert!(p.stop.get().is_some() && p.team.get().is_some());
        assert_eq!(p.stop().max_resumes_without_progress, 3);
    }
}
