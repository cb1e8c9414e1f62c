//! The goal-loop hook families of `rules/hooks.json` (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6):
//! `stop`, `user_prompt_submit`, `create_goal_guard`, `spawn`, `team_guard`.
//! Directive templates are validated where their policy compiles
//! ([`crate::hooks::goal_loop::Policy`]), because that needs the
//! `directives` family too.

use serde::Deserialize;

use super::{Problem, RuleFamily};
use crate::sandbox::{PathLimits, RelPath};

/// `stop.*` (docs/hook-contracts.md#h-4).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StopRules {
    /// Resume an unscoped plan that records no owner session (single-session users).
    pub adopt_unowned_unscoped_plan: bool,
    /// Resumes allowed while goal and criteria state stay unchanged (1 … 20).
    pub max_resumes_without_progress: u64,
    /// The stop that pauses auto-resume is a one-time `Notify`.
    pub notify_when_stuck: bool,
    /// Other continuation owners the hook defers to (docs/engine.md#ge-4).
    pub defer_owners: Vec<DeferOwner>,
}

/// One continuation owner (docs/engine.md#ge-4). Only the `boulder` kind exists.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeferOwner {
    /// The owner's file format.
    pub kind: DeferKind,
    /// Its state file, relative to `cwd`.
    pub file: String,
    /// Prefixes put before the session id in the owner's `session_ids`.
    pub session_prefixes: Vec<String>,
    /// Cap of the state file read.
    pub max_bytes: u64,
    /// Bytes of the active plan markdown searched for a checklist line.
    pub plan_scan_bytes: u64,
}

/// Continuation-owner formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum DeferKind {
    /// The start-work continuation's `.omo/boulder.json`.
    Boulder,
}

impl RuleFamily for StopRules {
    const KEY: &'static str = "stop";

    fn check(&self) -> Result<(), Problem> {
        in_range(
            "/max_resumes_without_progress",
            self.max_resumes_without_progress,
            1,
            20,
        )?;
        for (i, o) in self.defer_owners.iter().enumerate() {
            RelPath::parse(&o.file, PathLimits::default()).map_err(|p| {
                Problem::at(
                    format!("/defer_owners/{i}/file"),
                    format!("is not a clean relative path: {}", p.describe()),
                )
            })?;
            in_range(
                &format!("/defer_owners/{i}/max_bytes"),
                o.max_bytes,
                1024,
                16 * 1024 * 1024,
            )?;
            in_range(
                &format!("/defer_owners/{i}/plan_scan_bytes"),
                o.plan_scan_bytes,
                1024,
                16 * 1024 * 1024,
            )?;
        }
        Ok(())
    }
}

/// `user_prompt_submit.*` (docs/hook-contracts.md#h-5).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UserPromptSubmitRules {
    /// Cap of the JSON object after a steering marker.
    pub max_directive_bytes: u64,
    /// Whole words that ask for ultrawork (ASCII case-insensitive).
    pub ultrawork_triggers: Vec<String>,
    /// The tag that opens an injection; its presence in the transcript tail
    /// (as recorded hook output) means "already injected".
    pub ultrawork_tag: String,
    /// Bytes of the main transcript's tail searched for an earlier injection.
    pub ultrawork_tail_bytes: u64,
    /// Ultrawork skill file (absolute, or relative to `cwd`); when it exists
    /// the short pointer template is injected instead of the full text.
    pub ultrawork_skill_path: Option<String>,
    /// Template of the full injection.
    pub ultrawork_directive: String,
    /// Template of the pointer injection (`{{SKILL_PATH}}`).
    pub ultrawork_pointer_directive: String,
    /// Per-host cap of injected context (bytes).
    pub max_context_bytes: ContextCaps,
}

/// Per-host context caps (hosts cap injected text near 10,000 characters;
/// the Codex App truncates large hook output earlier).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ContextCaps {
    /// Codex (and the `common` host, which uses its encoder).
    pub codex: usize,
    /// Claude Code.
    #[serde(rename = "claude-code")]
    pub claude_code: usize,
    /// Gemini CLI.
    pub gemini: usize,
}

impl RuleFamily for UserPromptSubmitRules {
    const KEY: &'static str = "user_prompt_submit";

    fn check(&self) -> Result<(), Problem> {
        in_range(
            "/max_directive_bytes",
            self.max_directive_bytes,
            1024,
            1024 * 1024,
        )?;
        for (i, t) in self.ultrawork_triggers.iter().enumerate() {
            if t.is_empty() || !t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                return Err(Problem::at(
                    format!("/ultrawork_triggers/{i}"),
                    "a trigger is one word of ASCII letters, digits and `_`",
                ));
            }
        }
        if self.ultrawork_tag.trim().is_empty() {
            return Err(Problem::at("/ultrawork_tag", "must not be blank"));
        }
        in_range(
            "/ultrawork_tail_bytes",
            self.ultrawork_tail_bytes,
            1024,
            1024 * 1024,
        )?;
        let c = &self.max_context_bytes;
        for (key, v) in [
            ("codex", c.codex),
            ("claude-code", c.claude_code),
            ("gemini", c.gemini),
        ] {
            in_range(&format!("/max_context_bytes/{key}"), v as u64, 512, 10_000)?;
        }
        Ok(())
    }
}

/// `create_goal_guard.*` (docs/hook-contracts.md#h-6).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CreateGoalGuardRules {
    /// Tool names the guard applies to.
    pub tool_names: Vec<String>,
    /// The only keys a call may carry (`objective` must be one of them).
    pub allowed_keys: Vec<String>,
    /// Template of the deny reason.
    pub directive: String,
}

impl RuleFamily for CreateGoalGuardRules {
    const KEY: &'static str = "create_goal_guard";

    fn check(&self) -> Result<(), Problem> {
        if !self.allowed_keys.iter().any(|k| k == "objective") {
            return Err(Problem::at(
                "/allowed_keys",
                "must contain `objective` (the guard requires it)",
            ));
        }
        if self.directive.is_empty() {
            return Err(Problem::at("/directive", "must name a directive template"));
        }
        Ok(())
    }
}

/// When the fan-out counter starts over (docs/hook-contracts.md#h-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(crate) enum SpawnReset {
    /// A fresh budget per goal attempt (`<active goal id>#a<attempt>`).
    GoalAttempt,
    /// A fresh budget per turn (`turn_id`).
    Turn,
    /// Never (the Node behaviour).
    Never,
}

/// `spawn.*` (docs/hook-contracts.md#h-6).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SpawnRules {
    /// Spawn tool names of every host.
    pub tool_names: Vec<String>,
    /// `tool_input` keys holding the spawned agent's type (first string wins).
    pub agent_type_keys: Vec<String>,
    /// `tool_input` keys holding the spawn's message.
    pub message_keys: Vec<String>,
    /// Bytes of each message searched.
    pub message_scan_bytes: usize,
    /// Texts that mark a gate-review message when a message contains one,
    /// ignoring case; the gate-reviewer role names of every surface are
    /// always added.
    pub gate_message_patterns: Vec<String>,
    /// Allowed spawns per reset period (1 … 10,000).
    pub fanout_limit: u64,
    /// Environment variable that overrides the limit.
    pub fanout_env: String,
    /// When the counter starts over.
    pub reset: SpawnReset,
}

impl RuleFamily for SpawnRules {
    const KEY: &'static str = "spawn";

    fn check(&self) -> Result<(), Problem> {
        for (i, p) in self.gate_message_patterns.iter().enumerate() {
            if p.trim().is_empty() {
                return Err(Problem::at(
                    format!("/gate_message_patterns/{i}"),
                    "a pattern must not be blank",
                ));
            }
        }
        in_range("/fanout_limit", self.fanout_limit, 1, 10_000)?;
        in_range(
            "/message_scan_bytes",
            self.message_scan_bytes as u64,
            256,
            1024 * 1024,
        )?;
        if self.agent_type_keys.is_empty() {
            return Err(Problem::at(
                "/agent_type_keys",
                "must name at least one key",
            ));
        }
        Ok(())
    }
}

/// Who counts as a worker for the team boundary guard (docs/hook-contracts.md#h-6).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum DenyFor {
    /// Any call made inside a subagent (the payload names an agent).
    AnySubagent,
    /// Calls whose agent type matches this regex.
    AgentType(String),
}

/// `team_guard.*` (docs/hook-contracts.md#h-6).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct TeamGuardRules {
    /// Shell tool names of every host.
    pub shell_tools: Vec<String>,
    /// Who is a worker.
    pub deny_for: DenyFor,
    /// Bytes of the command inspected.
    pub max_command_bytes: usize,
    /// Words that run the next word as a command (`bash -lc`, `env`, `npx`).
    pub launchers: Vec<String>,
    /// Flags that make a mutating subcommand read-only.
    pub exempt_flags: Vec<String>,
}

impl RuleFamily for TeamGuardRules {
    const KEY: &'static str = "team_guard";

    fn check(&self) -> Result<(), Problem> {
        if let DenyFor::AgentType(re) = &self.deny_for {
            regex::Regex::new(re)
                .map_err(|e| Problem::at("/deny_for/agent_type", format!("invalid regex: {e}")))?;
        }
        in_range(
            "/max_command_bytes",
            self.max_command_bytes as u64,
            256,
            1024 * 1024,
        )?;
        Ok(())
    }
}

fn in_range(pointer: &str, v: u64, lo: u64, hi: u64) -> Result<(), Problem> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(Problem::at(
            pointer,
            format!("must be between {lo} and {hi}"),
        ))
    }
}
