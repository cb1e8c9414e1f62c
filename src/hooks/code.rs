//! Diagnostic codes of the hooks (docs/hook-contracts.md#h-9): what goes to
//! `diagnostics.jsonl`. Finding codes (`RECEIPT_*`) live in
//! [`crate::evidence::Code`]. Names are stable API.

use std::fmt;

use serde::{Serialize, Serializer};

/// How a diagnostic bears on the decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DiagClass {
    /// The hook could not do its job and allowed (fail safe on plumbing).
    Plumbing,
    /// Informational (the user's switch).
    Info,
    /// The repository's rules were invalid; embedded defaults were used.
    Degraded,
    /// A policy decision worth recording (cap reached, waiver).
    Policy,
    /// A fault in the hooks' own trust state: the gated call was blocked or
    /// denied (docs/threat-model.md#i2).
    TrustState,
}

/// Level written in the `level` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Informational.
    Info,
    /// Attention.
    Warn,
    /// A failure of the hook itself.
    Error,
}

macro_rules! diag_codes {
    ($( $variant:ident = $name:literal, $class:ident, $level:ident, $summary:literal; )*) => {
        /// A stable diagnostic code; `Display` is the SCREAMING_SNAKE name.
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum HookCode {
            $(
                #[doc = $summary]
                $variant,
            )*
        }

        impl HookCode {
            /// Every code, in catalogue order.
            pub const ALL: &'static [HookCode] = &[$(HookCode::$variant),*];

            /// The stable name.
            pub fn name(self) -> &'static str {
                match self { $(HookCode::$variant => $name,)* }
            }

            /// Its class.
            pub fn class(self) -> DiagClass {
                match self { $(HookCode::$variant => DiagClass::$class,)* }
            }

            /// Its level in diagnostics records.
            pub fn level(self) -> Level {
                match self { $(HookCode::$variant => Level::$level,)* }
            }

            /// One-sentence meaning.
            pub fn summary(self) -> &'static str {
                match self { $(HookCode::$variant => $summary,)* }
            }
        }
    };
}

diag_codes! {
    HookUsage = "HOOK_USAGE", Plumbing, Error, "Unknown hook event or flag; the hook allowed.";
    HookDisabled = "HOOK_DISABLED", Info, Info, "`EVIDENCE_GATE_HOOKS=off`: the hook allowed without checking.";
    HookStdinEmpty = "HOOK_STDIN_EMPTY", Plumbing, Error, "Standard input was empty or whitespace.";
    HookStdinTooLarge = "HOOK_STDIN_TOO_LARGE", Plumbing, Error, "Standard input exceeded `hooks.max_stdin_bytes`.";
    HookStdinRead = "HOOK_STDIN_READ", Plumbing, Error, "Standard input could not be read.";
    HookJsonInvalid = "HOOK_JSON_INVALID", Plumbing, Error, "Standard input is not one UTF-8 JSON value (bad encoding, syntax or trailing bytes).";
    HookPayloadInvalid = "HOOK_PAYLOAD_INVALID", Plumbing, Error, "The payload is not an object, or a required field is missing or mistyped.";
    HookEventMismatch = "HOOK_EVENT_MISMATCH", Plumbing, Error, "The payload's event belongs to another hook subcommand.";
    HookEventUnsupported = "HOOK_EVENT_UNSUPPORTED", Plumbing, Error, "The host cannot deliver this event (hooks.md §2.3).";
    HookCwdInvalid = "HOOK_CWD_INVALID", Plumbing, Error, "The payload's `cwd` is not an existing directory.";
    HookRulesInvalid = "HOOK_RULES_INVALID", Degraded, Warn, "A rules override failed validation; the hook continued without the repository's file (or, when the user's file or `--rules` is invalid, on the embedded defaults).";
    HookStateIo = "HOOK_STATE_IO", TrustState, Error, "Hook trust state (the per-user state directory, the gate-ledger mirror, a goal state directory) could not be read or written; the gated call was blocked or denied until the user runs `evidence-gate doctor --fix`.";
    HookLockTimeout = "HOOK_LOCK_TIMEOUT", TrustState, Error, "The gate lock or a goal state lock was not taken within its wait; the gated call was blocked or denied.";
    HookDeadline = "HOOK_DEADLINE", Plumbing, Error, "The watchdog fired at `hooks.deadline_ms`; the hook allowed.";
    HookPanic = "HOOK_PANIC", Plumbing, Error, "A panic was caught; the hook allowed.";
    HookOutputWrite = "HOOK_OUTPUT_WRITE", Plumbing, Error, "Writing the decision to standard output failed.";
    SubagentCapReached = "SUBAGENT_CAP_REACHED", Policy, Warn, "The attempt cap was reached; the worker stopped without accepted evidence and an override was recorded.";
    SubagentContextPressure = "SUBAGENT_CONTEXT_PRESSURE", Policy, Info, "Context pressure in the child transcript waived the receipt; a waiver was recorded.";
    GateLedgerRewound = "GATE_LEDGER_REWOUND", Policy, Warn, "The in-tree gate ledger had lost records of its per-user witness; they were restored and the rewind recorded in both.";
    GateLedgerForged = "GATE_LEDGER_FORGED", Policy, Warn, "The in-tree gate ledger held records its per-user witness never wrote; they were dropped from it and recorded in both.";
    // Goal-loop hooks (docs/hook-contracts.md#h-4, docs/hook-contracts.md#h-6).
    HookEnvInvalid = "HOOK_ENV_INVALID", Degraded, Warn, "`OMO_SPAWN_FANOUT_LIMIT` is not a positive integer; `spawn.fanout_limit` was used.";
    HookPlanUnreadable = "HOOK_PLAN_UNREADABLE", TrustState, Error, "The session's goal plan exists but cannot be read (corrupt JSON, a FIFO, directory or symlink, oversized): the Stop hook held the stop (within the resume budget, then paused with a notice) and the spawn guard denied, until the user restores `goals.json` from version control (`repair --check` says what is wrong); the prompt hook, which gates nothing, passed it over.";
    StopStuck = "STOP_STUCK", Policy, Info, "Auto-resume paused: goal and criteria state did not change over the allowed resumes; a stuck marker was written.";
    StopDeferUnverified = "STOP_DEFER_UNVERIFIED", Policy, Info, "A continuation owner's file (`.omo/boulder.json`) claims the session, but a file the agent can write does not silence a resume by itself (threat-model.md I5): the resume went ahead.";
    SteerWorkerIgnored = "STEER_WORKER_IGNORED", Policy, Info, "A steering directive from a team worker was ignored (only the leader changes goal state).";
    // docs/threat-model.md#i9: repository policy only tightens.
    RulesRelaxationIgnored = "RULES_RELAXATION_IGNORED", Policy, Warn, "A value of the repository's `.evidence-gate/rules.json` would relax policy and was ignored (threat-model.md I9); relax it in `$XDG_CONFIG_HOME/evidence-gate/rules.json` or the wiring's `--rules`.";
    UserDecisionUnverified = "USER_DECISION_UNVERIFIED", Policy, Warn, "A user decision in the plan (waiver, supersede or unblock with --user-decision) was not carried by a recorded user prompt of the session made before it; the Stop hook resumed the agent.";
}

impl fmt::Display for HookCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl Serialize for HookCode {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_stable() {
        let names: Vec<&str> = HookCode::ALL.iter().map(|c| c.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "duplicate names");
        // The stable list (docs/hook-contracts.md#h-9): a rename is a breaking change.
        assert_eq!(
            names.join(" "),
            "HOOK_USAGE HOOK_DISABLED HOOK_STDIN_EMPTY HOOK_STDIN_TOO_LARGE HOOK_STDIN_READ \
             HOOK_JSON_INVALID HOOK_PAYLOAD_INVALID HOOK_EVENT_MISMATCH HOOK_EVENT_UNSUPPORTED \
             HOOK_CWD_INVALID HOOK_RULES_INVALID HOOK_STATE_IO HOOK_LOCK_TIMEOUT HOOK_DEADLINE \
             HOOK_PANIC HOOK_OUTPUT_WRITE SUBAGENT_CAP_REACHED SUBAGENT_CONTEXT_PRESSURE \
             GATE_LEDGER_REWOUND GATE_LEDGER_FORGED HOOK_ENV_INVALID HOOK_PLAN_UNREADABLE STOP_STUCK \
             STOP_DEFER_UNVERIFIED STEER_WORKER_IGNORED RULES_RELAXATION_IGNORED \
             USER_DECISION_UNVERIFIED"
        );
        for c in HookCode::ALL {
            assert!(c.summary().ends_with('.'));
        }
    }
}
