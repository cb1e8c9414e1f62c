//! Host auto-detection (docs/hook-contracts.md#h-1): payload signals beat environment
//! signals, because environments leak between nested tools.

use serde_json::{Map, Value};

use super::{Host, HostSource};

const GEMINI_EVENTS: &[&str] = &["AfterAgent", "BeforeAgent", "BeforeTool", "AfterTool"];
const AGY_KEYS: &[&str] = &["conversationId", "hookEventName", "toolName", "toolInput"];

/// Applies the detection table; `flag` is `--host` (`None` for `auto`), `env`
/// tells whether an environment variable is set (non-empty).
pub fn detect(
    flag: Option<Host>,
    payload: Option<&Map<String, Value>>,
    env: &dyn Fn(&str) -> bool,
) -> (Host, HostSource) {
    if let Some(h) = flag {
        return (h, HostSource::Flag);
    }
    if let Some(obj) = payload {
        let event = obj.get("hook_event_name");
        if event.is_none() && AGY_KEYS.iter().any(|k| obj.contains_key(*k)) {
            return (Host::Agy, HostSource::Payload);
        }
        let gemini_event = event
            .and_then(Value::as_str)
            .is_some_and(|e| GEMINI_EVENTS.contains(&e));
        if gemini_event || obj.contains_key("prompt_response") {
            return (Host::Gemini, HostSource::Payload);
        }
        if obj.contains_key("turn_id") || obj.contains_key("model") {
            return (Host::Codex, HostSource::Payload);
        }
    }
    if env("GEMINI_PROJECT_DIR") || env("GEMINI_SESSION_ID") {
        return (Host::Gemini, HostSource::Env);
    }
    if env("CLAUDE_PROJECT_DIR") {
        return (Host::ClaudeCode, HostSource::Env);
    }
    (Host::Common, HostSource::Fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(s: &str) -> Map<String, Value> {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn table_order() {
        let none = |_: &str| false;
        assert_eq!(
            detect(Some(Host::Gemini), Some(&obj(r#"{"turn_id":"t"}"#)), &none),
            (Host::Gemini, HostSource::Flag)
        );
        assert_eq!(
            detect(None, Some(&obj(r#"{"conversationId":"c"}"#)), &none).0,
            Host::Agy
        );
        // hook_event_name present: not agy even with camelCase keys.
        assert_eq!(
            detect(
                None,
                Some(&obj(r#"{"hook_event_name":"Stop","toolName":"x"}"#)),
                &none
            )
            .0,
            Host::Common
        );
        assert_eq!(
            detect(
                None,
                Some(&obj(r#"{"hook_event_name":"AfterAgent","turn_id":"t"}"#)),
                &none
            )
            .0,
            Host::Gemini
        );
        assert_eq!(
            detect(None, Some(&obj(r#"{"model":null}"#)), &none),
            (Host::Codex, HostSource::Payload)
        );
        let claude = |k: &str| k == "CLAUDE_PROJECT_DIR";
        assert_eq!(
            detect(None, Some(&obj(r#"{"session_id":"s"}"#)), &claude),
            (Host::ClaudeCode, HostSource::Env)
        );
        let both = |k: &str| k == "CLAUDE_PROJECT_DIR" || k == "GEMINI_SESSION_ID";
        assert_eq!(detect(None, None, &both).0, Host::Gemini);
        assert_eq!(
            detect(None, None, &none),
            (Host::Common, HostSource::Fallback)
        );
    }
}
