//! Which host a hook event came from and how that was decided. The adapters
//! in [`super::host`] and the event and diagnostics types all name it, so it
//! sits below them (docs/architecture.md#module-graph).

use serde::Serialize;

/// A host whose hook contract an adapter implements.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Host {
    /// OpenAI Codex CLI.
    Codex,
    /// Anthropic Claude Code.
    ClaudeCode,
    /// Google Gemini CLI.
    Gemini,
    /// Antigravity CLI.
    Agy,
    /// Unknown: the union of the Codex and Claude Code decoders, the Codex encoder.
    Common,
}

impl Host {
    /// The four named hosts (what `--host` and `init` accept besides `auto`).
    pub const NAMED: &'static [Host] = &[Host::Codex, Host::ClaudeCode, Host::Gemini, Host::Agy];

    /// The wire name (`--host` value, diagnostics `host` field).
    pub fn name(self) -> &'static str {
        match self {
            Self::Codex => "codex",
            Self::ClaudeCode => "claude-code",
            Self::Gemini => "gemini",
            Self::Agy => "agy",
            Self::Common => "common",
        }
    }

    /// Parses a `--host` value other than `auto`.
    /// `gemini-cli` (the adapter folder's and npm package's name) is an alias
    /// of `gemini`.
    pub fn from_name(s: &str) -> Option<Host> {
        let s = if s == "gemini-cli" { "gemini" } else { s };
        Self::NAMED.iter().copied().find(|h| h.name() == s)
    }
}

/// How the host was determined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum HostSource {
    /// `--host`.
    Flag,
    /// A payload key.
    Payload,
    /// An environment variable.
    Env,
    /// Nothing matched.
    Fallback,
}

impl HostSource {
    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Flag => "flag",
            Self::Payload => "payload",
            Self::Env => "env",
            Self::Fallback => "fallback",
        }
    }
}
