//! The hook rule families (`rules/hooks.json`, docs/hook-contracts.md#h-1, docs/hook-contracts.md#h-3) and the
//! directive templates (`rules/directives/*.md`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Problem, RuleFamily};
use crate::sandbox::{PathLimits, RelPath};

/// Common hook policy (`hooks.*`).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HooksRules {
    /// stdin cap in bytes (64 KiB … 64 MiB).
    pub max_stdin_bytes: u64,
    /// Watchdog deadline in milliseconds (500 … 30000).
    pub deadline_ms: u64,
    /// Wait for the gate lock in milliseconds.
    pub lock_wait_ms: u64,
    /// Wait for the steering lock in milliseconds (≤ `deadline_ms` − 500).
    pub steering_lock_wait_ms: u64,
    /// What a plumbing failure emits.
    pub on_plumbing_failure: PlumbingPolicy,
    /// Size above which `diagnostics.jsonl` is rotated.
    pub diagnostics_max_bytes: u64,
    /// Bytes read from the end of a transcript.
    pub transcript_tail_bytes: u64,
    /// Context-pressure markers (raw bytes, ASCII case-insensitive).
    pub context_pressure_markers: Vec<String>,
    /// Cap of block reasons and messages (hard maximum 2048).
    pub max_reason_bytes: usize,
    /// Host-specific switches.
    pub hosts: HostRules,
}

/// What a plumbing failure emits (never a block).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlumbingPolicy {
    /// No output.
    Allow,
    /// A `systemMessage` on stop-family events.
    AllowAndNotify,
}

/// Host-specific switches.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostRules {
    /// agy switches.
    pub agy: AgyRules,
}

/// agy switches (docs/hook-contracts.md#h-2).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgyRules {
    /// The `decision` value agy reads as "keep working".
    pub stop_block_decision: AgyStopDecision,
}

/// agy's disputed blocking value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AgyStopDecision {
    /// `{"decision":"block"}`.
    Block,
    /// `{"decision":"continue"}`.
    Continue,
}

impl AgyStopDecision {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Block => "block",
            Self::Continue => "continue",
        }
    }
}

impl RuleFamily for HooksRules {
    const KEY: &'static str = "hooks";

    fn check(&self) -> Result<(), Problem> {
        in_range(
            "/max_stdin_bytes",
            self.max_stdin_bytes,
            64 * 1024,
            64 * 1024 * 1024,
        )?;
        in_range("/deadline_ms", self.deadline_ms, 500, 30_000)?;
        in_range("/lock_wait_ms", self.lock_wait_ms, 1, self.deadline_ms)?;
        in_range(
            "/steering_lock_wait_ms",
            self.steering_lock_wait_ms,
            1,
            self.deadline_ms - 500,
        )?;
        in_range(
            "/diagnostics_max_bytes",
            self.diagnostics_max_bytes,
            4096,
            256 * 1024 * 1024,
        )?;
        in_range(
            "/transcript_tail_bytes",
            self.transcript_tail_bytes,
            1024,
            1024 * 1024,
        )?;
        in_range("/max_reason_bytes", self.max_reason_bytes as u64, 256, 2048)?;
        for (i, m) in self.context_pressure_markers.iter().enumerate() {
            if m.trim().is_empty() || !m.is_ascii() || m.len() > 256 {
                return Err(Problem::at(
                    format!("/context_pressure_markers/{i}"),
                    "must be non-blank ASCII of at most 256 bytes",
                ));
            }
        }
        Ok(())
    }
}

/// The `subagent_stop.*` family (docs/hook-contracts.md#h-3).
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubagentStopRules {
    /// Regex over the agent type; matching agents are gated.
    pub gated_agents: String,
    /// The receipt marker.
    pub receipt_marker: String,
    /// Directory receipts must lie under, relative to `cwd`.
    pub evidence_root: String,
    /// Reject receipts with more than one hard link.
    pub reject_hardlinks: bool,
    /// Receipt size cap.
    pub max_receipt_bytes: u64,
    /// Minimum characters of a plain receipt after trimming.
    pub min_receipt_chars: usize,
    /// Substrings that mark a plain receipt as a placeholder (case-insensitive).
    pub placeholder_patterns: Vec<String>,
    /// Plain receipts fail; an evidence payload is required.
    pub require_structured: bool,
    /// Budget for verifying one receipt, in milliseconds.
    pub verify_budget_ms: u64,
    /// Refuse a receipt digest already accepted for another agent or turn.
    pub reuse_protection: bool,
    /// Refuse receipts older than the child transcript.
    pub check_freshness: bool,
    /// Attempt counters older than this are ignored.
    pub attempt_ttl_hours: u64,
    /// Blocks before the cap releases the worker (1 … 10).
    pub max_attempts: u64,
    /// The cap's allow is a user-visible notification.
    pub notify_on_override: bool,
    /// Characters of the last message echoed in the block reason.
    pub message_excerpt_chars: usize,
    /// Name of the block-reason template in `directives`.
    pub directive: String,
}

impl RuleFamily for SubagentStopRules {
    const KEY: &'static str = "subagent_stop";

    fn check(&self) -> Result<(), Problem> {
        regex::Regex::new(&self.gated_agents)
            .map_err(|e| Problem::at("/gated_agents", format!("invalid regex: {e}")))?;
        let m = &self.receipt_marker;
        if m.trim().is_empty() || m.chars().any(char::is_whitespace) || m.len() > 64 {
            return Err(Problem::at(
                "/receipt_marker",
                "must be 1–64 bytes without whitespace",
            ));
        }
        RelPath::parse(&self.evidence_root, PathLimits::default()).map_err(|p| {
            Problem::at(
                "/evidence_root",
                format!("is not a clean relative path: {}", p.describe()),
            )
        })?;
        in_range(
            "/max_receipt_bytes",
            self.max_receipt_bytes,
            1024,
            256 * 1024 * 1024,
        )?;
        in_range("/min_receipt_chars", self.min_receipt_chars as u64, 1, 4000)?;
        if self.placeholder_patterns.iter().any(|p| p.is_empty()) {
            return Err(Problem::at(
                "/placeholder_patterns",
                "patterns must be non-empty",
            ));
        }
        in_range("/verify_budget_ms", self.verify_budget_ms, 10, 25_000)?;
        in_range("/attempt_ttl_hours", self.attempt_ttl_hours, 1, 24 * 30)?;
        in_range("/max_attempts", self.max_attempts, 1, 10)?;
        in_range(
            "/message_excerpt_chars",
            self.message_excerpt_chars as u64,
            0,
            1000,
        )?;
        if self.directive.is_empty() {
            return Err(Problem::at("/directive", "must name a directive template"));
        }
        Ok(())
    }
}

/// True when a regex is anchored at both ends (`^…$`); `doctor` warns otherwise.
pub(crate) fn is_anchored(pattern: &str) -> bool {
    pattern.starts_with('^') && pattern.ends_with('$') && !pattern.ends_with("\\$")
}

/// The directive templates: name → text (`rules/directives/<name>.md`).
/// Each behaviour validates its own template's placeholders when it compiles
/// its policy.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub(crate) struct Directives(pub BTreeMap<String, String>);

impl RuleFamily for Directives {
    const KEY: &'static str = "directives";

    fn check(&self) -> Result<(), Problem> {
        for (name, text) in &self.0 {
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
                return Err(Problem::at(
                    format!("/{name}"),
                    "directive names use only ASCII letters, digits and `-`",
                ));
            }
            if text.len() > 16 * 1024 {
                return Err(Problem::at(format!("/{name}"), "is over 16 KiB"));
            }
        }
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
