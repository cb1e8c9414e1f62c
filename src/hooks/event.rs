//! The normalized internal events and decisions (docs/hook-contracts.md#h-2).

use std::path::PathBuf;

use serde_json::Value;

use super::host_id::{Host, HostSource};

/// A hook subcommand (docs/hook-contracts.md#h-1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HookEvent {
    /// `subagent-stop`: the evidence receipt gate.
    SubagentStop,
    /// `stop`: goal-loop resume.
    Stop,
    /// `user-prompt-submit`: steering and ultrawork.
    UserPromptSubmit,
    /// `pre-tool-use`: tool guards.
    PreToolUse,
    /// `pre-tool-use-spawn`: fan-out cap and gate preflight.
    PreToolUseSpawn,
}

impl HookEvent {
    /// Every subcommand the product defines.
    pub const ALL: &'static [HookEvent] = &[
        HookEvent::SubagentStop,
        HookEvent::Stop,
        HookEvent::UserPromptSubmit,
        HookEvent::PreToolUse,
        HookEvent::PreToolUseSpawn,
    ];

    /// The subcommand name.
    pub fn name(self) -> &'static str {
        match self {
            Self::SubagentStop => "subagent-stop",
            Self::Stop => "stop",
            Self::UserPromptSubmit => "user-prompt-submit",
            Self::PreToolUse => "pre-tool-use",
            Self::PreToolUseSpawn => "pre-tool-use-spawn",
        }
    }

    /// Parses a subcommand name.
    pub fn from_name(s: &str) -> Option<HookEvent> {
        Self::ALL.iter().copied().find(|e| e.name() == s)
    }

    /// The event family.
    pub fn family(self) -> Family {
        match self {
            Self::SubagentStop | Self::Stop => Family::Stop,
            Self::UserPromptSubmit => Family::Prompt,
            Self::PreToolUse | Self::PreToolUseSpawn => Family::Tool,
        }
    }
}

/// One of the three event families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// `subagent-stop`, `stop`.
    Stop,
    /// `user-prompt-submit`.
    Prompt,
    /// `pre-tool-use`, `pre-tool-use-spawn`.
    Tool,
}

/// The agent a hook fired inside.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AgentRef {
    /// Agent (child thread) id.
    pub id: Option<String>,
    /// Agent type (the matcher field).
    pub kind: Option<String>,
}

/// Fields every family shares.
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The host whose contract decoded the payload.
    pub host: Host,
    /// How the host was determined.
    pub host_source: HostSource,
    /// Event name as sent, or the subcommand's default.
    pub wire_event: String,
    /// Session id (raw).
    pub session_id: Option<String>,
    /// Turn id (raw).
    pub turn_id: Option<String>,
    /// Workspace root (absolute).
    pub cwd: PathBuf,
    /// Main (parent) session transcript.
    pub transcript: Option<PathBuf>,
    /// Set when the hook fired inside a subagent.
    pub agent: Option<AgentRef>,
    /// Informational.
    pub permission_mode: Option<String>,
    /// Informational.
    pub model: Option<String>,
}

/// Whether a stop ends the main agent's turn or a subagent's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The main agent.
    Main,
    /// A subagent.
    Subagent,
}

/// `subagent-stop` / `stop`.
#[derive(Debug, Clone, PartialEq)]
pub struct StopEvent {
    /// Main or subagent.
    pub scope: Scope,
    /// The host's loop flag (never trusted as a bypass).
    pub stop_hook_active: Option<bool>,
    /// The agent's final message.
    pub last_message: Option<String>,
    /// The child (subagent) transcript.
    pub child_transcript: Option<PathBuf>,
}

/// `user-prompt-submit`.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptEvent {
    /// The prompt text.
    pub prompt: String,
}

/// `pre-tool-use`, `pre-tool-use-spawn`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolEvent {
    /// Tool name.
    pub tool_name: String,
    /// Tool call id.
    pub tool_use_id: Option<String>,
    /// Tool input (a string holding a JSON object is parsed once).
    pub tool_input: Value,
}

/// A decoded payload: the envelope and its family's fields.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// Shared fields.
    pub envelope: Envelope,
    /// Family fields.
    pub body: Body,
}

/// Family-specific fields.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// Stop family.
    Stop(StopEvent),
    /// Prompt family.
    Prompt(PromptEvent),
    /// Tool family.
    Tool(ToolEvent),
}

/// What a hook decided (docs/hook-contracts.md#h-2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The call proceeds; no output.
    Allow,
    /// Allow plus a short user-visible message (stop family).
    Notify {
        /// The message.
        message: String,
    },
    /// The agent keeps working; `reason` is its next instruction (stop family).
    Block {
        /// Never empty.
        reason: String,
    },
    /// The agent keeps working because the hook's own trust state is at
    /// fault (docs/threat-model.md#i2): `reason` tells the agent, `message` tells
    /// the user that they must act (stop family).
    Halt {
        /// Never empty.
        reason: String,
        /// The user-visible `systemMessage`.
        message: String,
    },
    /// The tool call is refused (tool family).
    Deny {
        /// Never empty.
        reason: String,
    },
    /// Text added as developer context (prompt family).
    Context {
        /// The text.
        text: String,
    },
}

impl Decision {
    /// The `outcome` word of diagnostics records.
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Notify { .. } => "notify",
            Self::Block { .. } | Self::Halt { .. } => "block",
            Self::Deny { .. } => "deny",
            Self::Context { .. } => "context",
        }
    }
}
