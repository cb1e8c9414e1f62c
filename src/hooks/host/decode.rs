//! Decode tables (docs/hook-contracts.md#h-2): each host's spellings of the normalized
//! fields. Every field is accepted in snake_case and camelCase; snake_case
//! wins. Optional fields decode absent, `null` and wrong-typed values (and
//! empty ids and paths) to `None`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::{Host, HostSource};
use crate::hooks::event::{
    AgentRef, Body, Decoded, Envelope, Family, HookEvent, PromptEvent, Scope, StopEvent, ToolEvent,
};

/// Why a payload could not be decoded (all plumbing failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// A required field is missing or mistyped (`HOOK_PAYLOAD_INVALID`).
    PayloadInvalid {
        /// The field, in its snake_case spelling.
        field: &'static str,
        /// What is wrong (never the value).
        problem: &'static str,
    },
    /// The event belongs to another subcommand (`HOOK_EVENT_MISMATCH`).
    EventMismatch {
        /// The event name sent.
        sent: String,
    },
    /// The host cannot deliver this event (`HOOK_EVENT_UNSUPPORTED`).
    EventUnsupported,
}

/// One host's spellings (snake_case; camelCase is derived).
struct Spellings {
    event: &'static [&'static str],
    session: &'static [&'static str],
    turn: &'static [&'static str],
    cwd: &'static [&'static str],
    transcript: &'static [&'static str],
    child_transcript: &'static [&'static str],
    agent_id: &'static [&'static str],
    agent_type: &'static [&'static str],
    last_message: &'static [&'static str],
    stop_hook_active: &'static [&'static str],
    prompt: &'static [&'static str],
    tool_name: &'static [&'static str],
    tool_input: &'static [&'static str],
    tool_use_id: &'static [&'static str],
    permission_mode: &'static [&'static str],
    model: &'static [&'static str],
    session_env: Option<&'static str>,
    cwd_env: Option<&'static str>,
}

const CODEX: Spellings = Spellings {
    event: &["hook_event_name"],
    session: &["session_id"],
    turn: &["turn_id"],
    cwd: &["cwd"],
    transcript: &["transcript_path"],
    child_transcript: &["agent_transcript_path"],
    agent_id: &["agent_id"],
    agent_type: &["agent_type"],
    last_message: &["last_assistant_message"],
    stop_hook_active: &["stop_hook_active"],
    prompt: &["prompt"],
    tool_name: &["tool_name"],
    tool_input: &["tool_input"],
    tool_use_id: &["tool_use_id"],
    permission_mode: &["permission_mode"],
    model: &["model"],
    session_env: None,
    cwd_env: None,
};

const CLAUDE: Spellings = Spellings {
    turn: &[],
    model: &[],
    ..CODEX
};

const GEMINI: Spellings = Spellings {
    event: &["hook_event_name"],
    session: &["session_id"],
    turn: &[],
    cwd: &["cwd"],
    transcript: &["transcript_path"],
    child_transcript: &[],
    agent_id: &[],
    agent_type: &[],
    last_message: &["prompt_response"],
    stop_hook_active: &["stop_hook_active"],
    prompt: &["prompt"],
    tool_name: &["tool_name"],
    tool_input: &["tool_input"],
    tool_use_id: &[],
    permission_mode: &[],
    model: &[],
    session_env: Some("GEMINI_SESSION_ID"),
    cwd_env: Some("GEMINI_PROJECT_DIR"),
};

const AGY: Spellings = Spellings {
    event: &["hook_event_name"],
    session: &["conversation_id", "session_id"],
    turn: &["turn_id"],
    cwd: &["cwd", "workspace_path"],
    transcript: &["transcript_path"],
    child_transcript: &[],
    agent_id: &[],
    agent_type: &[],
    last_message: &["last_assistant_message"],
    stop_hook_active: &["stop_hook_active"],
    prompt: &["prompt", "user_message"],
    tool_name: &["tool_name"],
    tool_input: &["tool_input", "arguments"],
    tool_use_id: &["tool_call_id"],
    permission_mode: &[],
    model: &[],
    session_env: None,
    cwd_env: None,
};

fn spellings(host: Host) -> &'static Spellings {
    match host {
        // `common` is the union of Codex and Claude Code, which is Codex's table.
        Host::Codex | Host::Common => &CODEX,
        Host::ClaudeCode => &CLAUDE,
        Host::Gemini => &GEMINI,
        Host::Agy => &AGY,
    }
}

/// Event names a host sends for a subcommand; `None` = the host cannot
/// deliver it (docs/hook-contracts.md#h-2).
pub fn wire_events(event: HookEvent, host: Host) -> Option<&'static [&'static str]> {
    use HookEvent as E;
    match (event, host) {
        (E::SubagentStop, Host::Codex | Host::ClaudeCode | Host::Common) => Some(&["SubagentStop"]),
        (E::Stop, Host::Codex | Host::ClaudeCode | Host::Common) => Some(&["Stop"]),
        (E::Stop, Host::Gemini) => Some(&["AfterAgent"]),
        (E::Stop, Host::Agy) => Some(&["Stop", "PostInvocation"]),
        (E::UserPromptSubmit, Host::Codex | Host::ClaudeCode | Host::Common) => {
            Some(&["UserPromptSubmit"])
        }
        (E::UserPromptSubmit, Host::Gemini) => Some(&["BeforeAgent"]),
        (E::PreToolUse | E::PreToolUseSpawn, Host::Codex | Host::ClaudeCode | Host::Common) => {
            Some(&["PreToolUse"])
        }
        (E::PreToolUse, Host::Gemini) => Some(&["BeforeTool"]),
        (E::PreToolUse, Host::Agy) => Some(&["PreToolUse"]),
        (E::SubagentStop | E::PreToolUseSpawn, Host::Gemini | Host::Agy)
        | (E::UserPromptSubmit, Host::Agy) => None,
    }
}

fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The first non-null value among the spellings (each snake, then camel).
fn raw<'a>(obj: &'a Map<String, Value>, names: &[&str]) -> Option<&'a Value> {
    for n in names {
        if let Some(v) = obj.get(*n).filter(|v| !v.is_null()) {
            return Some(v);
        }
        if let Some(v) = obj.get(&camel(n)).filter(|v| !v.is_null()) {
            return Some(v);
        }
    }
    None
}

fn present(obj: &Map<String, Value>, names: &[&str]) -> bool {
    names
        .iter()
        .any(|n| obj.contains_key(*n) || obj.contains_key(&camel(n)))
}

fn opt_string(obj: &Map<String, Value>, names: &[&str]) -> Option<String> {
    raw(obj, names)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn opt_text(obj: &Map<String, Value>, names: &[&str]) -> Option<String> {
    raw(obj, names).and_then(Value::as_str).map(str::to_owned)
}

/// What decoding needs from outside the payload.
pub struct Context<'a> {
    /// The process working directory (absolute).
    pub process_cwd: &'a Path,
    /// Environment lookup.
    pub env: &'a dyn Fn(&str) -> Option<String>,
}

/// Decodes a payload for `event` with `host`'s table.
pub fn decode(
    event: HookEvent,
    host: Host,
    host_source: HostSource,
    obj: &Map<String, Value>,
    ctx: &Context<'_>,
) -> Result<Decoded, DecodeError> {
    let Some(names) = wire_events(event, host) else {
        return Err(DecodeError::EventUnsupported);
    };
    let sp = spellings(host);
    let wire_event = match raw(obj, sp.event) {
        None => names[0].to_owned(),
        Some(Value::String(s)) if names.contains(&s.as_str()) => s.clone(),
        Some(Value::String(s)) => return Err(DecodeError::EventMismatch { sent: s.clone() }),
        Some(_) => {
            return Err(DecodeError::PayloadInvalid {
                field: "hook_event_name",
                problem: "must be a string",
            });
        }
    };
    let envelope = envelope(host, host_source, wire_event, sp, obj, ctx);
    let body = decode_body(event.family(), host, obj, &envelope)?;
    let mut envelope = envelope;
    if event == HookEvent::SubagentStop {
        envelope.agent = Some(required_agent(sp, obj)?);
    }
    Ok(Decoded { envelope, body })
}

fn required_agent(sp: &Spellings, obj: &Map<String, Value>) -> Result<AgentRef, DecodeError> {
    for (field, names) in [("agent_id", sp.agent_id), ("agent_type", sp.agent_type)] {
        if !present(obj, names) {
            return Err(DecodeError::PayloadInvalid {
                field,
                problem: "is required for subagent-stop",
            });
        }
        if raw(obj, names).is_some_and(|v| !v.is_string()) {
            return Err(DecodeError::PayloadInvalid {
                field,
                problem: "must be a string or null",
            });
        }
    }
    Ok(AgentRef {
        id: opt_string(obj, sp.agent_id),
        kind: opt_string(obj, sp.agent_type),
    })
}

fn resolve(base: &Path, p: &str) -> PathBuf {
    let p = Path::new(p);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    }
}

fn envelope(
    host: Host,
    host_source: HostSource,
    wire_event: String,
    sp: &Spellings,
    obj: &Map<String, Value>,
    ctx: &Context<'_>,
) -> Envelope {
    let env = |k: Option<&str>| k.and_then(|k| (ctx.env)(k)).filter(|v| !v.is_empty());
    let cwd = opt_string(obj, sp.cwd)
        .or_else(|| env(sp.cwd_env))
        .map(|c| resolve(ctx.process_cwd, &c))
        .unwrap_or_else(|| ctx.process_cwd.to_path_buf());
    let transcript = opt_string(obj, sp.transcript).map(|t| resolve(&cwd, &t));
    let agent_id = opt_string(obj, sp.agent_id);
    let agent_kind = opt_string(obj, sp.agent_type);
    // Inside a subagent the host adds the agent fields; a `null` one is an
    // absent one (a serializer's `None`), so a main-thread payload carrying
    // `"agent_id": null` is never taken for a subagent (which would silence
    // the Stop resume and treat the leader as a team worker).
    let agent = if raw(obj, sp.agent_id).is_some() || raw(obj, sp.agent_type).is_some() {
        Some(AgentRef {
            id: agent_id,
            kind: agent_kind,
        })
    } else {
        None
    };
    Envelope {
        host,
        host_source,
        wire_event,
        session_id: opt_string(obj, sp.session).or_else(|| env(sp.session_env)),
        turn_id: opt_string(obj, sp.turn),
        transcript,
        agent,
        permission_mode: opt_string(obj, sp.permission_mode),
        model: opt_string(obj, sp.model),
        cwd,
    }
}

/// Decodes the family fields of a payload (also used by fixture tests of
/// families whose subcommands arrive in later builds).
pub fn decode_body(
    family: Family,
    host: Host,
    obj: &Map<String, Value>,
    envelope: &Envelope,
) -> Result<Body, DecodeError> {
    let sp = spellings(host);
    Ok(match family {
        Family::Stop => Body::Stop(StopEvent {
            scope: if envelope.agent.is_some() {
                Scope::Subagent
            } else {
                Scope::Main
            },
            stop_hook_active: raw(obj, sp.stop_hook_active).and_then(Value::as_bool),
            last_message: opt_text(obj, sp.last_message),
            child_transcript: opt_string(obj, sp.child_transcript)
                .map(|t| resolve(&envelope.cwd, &t)),
        }),
        Family::Prompt => Body::Prompt(PromptEvent {
            prompt: match raw(obj, sp.prompt) {
                Some(Value::String(s)) => s.clone(),
                _ => {
                    return Err(DecodeError::PayloadInvalid {
                        field: "prompt",
                        problem: "is required and must be a string",
                    });
                }
            },
        }),
        Family::Tool => {
            let tool_name = match raw(obj, sp.tool_name) {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => {
                    return Err(DecodeError::PayloadInvalid {
                        field: "tool_name",
                        problem: "is required and must be a non-empty string",
                    });
                }
            };
            let tool_input = match raw(obj, sp.tool_input) {
                Some(Value::String(s)) => match crate::json::parse_strict_str(s) {
                    Ok(v @ Value::Object(_)) => v,
                    _ => Value::String(s.clone()),
                },
                Some(v) => v.clone(),
                None => Value::Null,
            };
            Body::Tool(ToolEvent {
                tool_name,
                tool_use_id: opt_string(obj, sp.tool_use_id),
                tool_input,
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    fn ctx_decode(host: Host, s: &str) -> Result<Decoded, DecodeError> {
        let env = |_: &str| None;
        let ctx = Context {
            process_cwd: Path::new("/proc-cwd"),
            env: &env,
        };
        decode(
            HookEvent::SubagentStop,
            host,
            HostSource::Flag,
            &obj(s),
            &ctx,
        )
    }

    #[test]
    fn nulls_and_empties_are_none_and_camel_case_is_accepted() {
        let d = ctx_decode(
            Host::Codex,
            r#"{"hook_event_name":"SubagentStop","session_id":"","turnId":"t1",
                "agent_id":null,"agent_type":"w","last_assistant_message":null,
                "agentTranscriptPath":"child.jsonl","cwd":"/repo","stop_hook_active":"yes"}"#,
        )
        .unwrap();
        assert_eq!(d.envelope.session_id, None);
        assert_eq!(d.envelope.turn_id.as_deref(), Some("t1"));
        let agent = d.envelope.agent.unwrap();
        assert_eq!((agent.id, agent.kind.as_deref()), (None, Some("w")));
        let Body::Stop(s) = d.body else { panic!() };
        assert_eq!(s.last_message, None);
        assert_eq!(s.stop_hook_active, None);
        assert_eq!(
            s.child_transcript.as_deref(),
            Some(Path::new("/repo/child.jsonl"))
        );
    }

    #[test]
    fn snake_case_wins() {
        let d = ctx_decode(
            Host::ClaudeCode,
            r#"{"session_id":"snake","sessionId":"camel","agent_id":"a","agent_type":""}"#,
        )
        .unwrap();
        assert_eq!(d.envelope.session_id.as_deref(), Some("snake"));
        assert_eq!(d.envelope.cwd, Path::new("/proc-cwd"));
        assert_eq!(d.envelope.agent.unwrap().kind, None);
    }

    #[test]
    fn errors() {
        assert_eq!(
            ctx_decode(Host::Gemini, "{}"),
            Err(DecodeError::EventUnsupported)
        );
        assert_eq!(
            ctx_decode(Host::Codex, r#"{"hook_event_name":"Stop"}"#),
            Err(DecodeError::EventMismatch {
                sent: "Stop".into()
            })
        );
        assert!(matches!(
            ctx_decode(Host::Codex, r#"{"agent_id":"a"}"#),
            Err(DecodeError::PayloadInvalid {
                field: "agent_type",
                ..
            })
        ));
        assert!(matches!(
            ctx_decode(Host::Codex, r#"{"agent_id":"a","agent_type":5}"#),
            Err(DecodeError::PayloadInvalid {
                field: "agent_type",
                ..
            })
        ));
    }
}
