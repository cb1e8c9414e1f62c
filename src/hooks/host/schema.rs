//! JSON Schema of the hook input payload (`evidence-gate schema hook-input`):
//! the union of the payloads the decoder accepts for some host and some
//! subcommand (docs/hook-contracts.md#h-2). The decoder is hand-written, so
//! the schema is written as data here; a test decodes every fixture of
//! `tests/schemas/cases.json` for this schema with every host and
//! subcommand and checks that the schema accepts exactly the payloads some
//! pair decodes.
//!
//! What the decoder requires:
//! - the payload is a JSON object; hosts add fields freely;
//! - the event name (`hook_event_name`, or `hookEventName` when the snake
//!   spelling is absent or `null`), when given, is a string naming an event
//!   some host sends;
//! - prompt events carry `prompt`, a string;
//! - tool events carry `tool_name`, a non-empty string;
//! - `SubagentStop` carries the keys `agent_id` and `agent_type` (either
//!   spelling), each a string or `null`.
//!
//! Every other field is optional: absent, `null` and mistyped values decode
//! to "not given".

use serde_json::{Value, json};

/// Events whose family is Stop.
const STOP_EVENTS: &[&str] = &["SubagentStop", "Stop", "AfterAgent", "PostInvocation"];
/// Events whose family is Prompt.
const PROMPT_EVENTS: &[&str] = &["UserPromptSubmit", "BeforeAgent"];
/// Events whose family is Tool.
const TOOL_EVENTS: &[&str] = &["PreToolUse", "BeforeTool"];

/// The spellings of one field: snake_case, then camelCase when it differs.
fn spellings(snake: &str) -> Vec<String> {
    let mut out = vec![snake.to_owned()];
    let mut camel = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            camel.extend(c.to_uppercase());
            upper = false;
        } else {
            camel.push(c);
        }
    }
    if camel != snake {
        out.push(camel);
    }
    out
}

/// The first non-null spelling of `snake` satisfies `value` (which must
/// refuse `null`); with `required`, one spelling must be non-null.
fn first_non_null(snake: &str, value: &Value, required: bool) -> Value {
    let names = spellings(snake);
    let mut branches = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let mut props = serde_json::Map::new();
        for earlier in &names[..i] {
            props.insert(earlier.clone(), json!({"type": "null"}));
        }
        props.insert(name.clone(), value.clone());
        branches.push(json!({"type": "object", "required": [name], "properties": props}));
    }
    if !required {
        let props: serde_json::Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), json!({"type": "null"})))
            .collect();
        branches.push(json!({"type": "object", "properties": props}));
    }
    json!({"anyOf": branches})
}

/// The payload's event name is one of `events`.
fn event_is(events: &[&str]) -> Value {
    first_non_null(
        "hook_event_name",
        &json!({"type": "string", "enum": events}),
        true,
    )
}

/// The schema document.
pub(crate) fn schema() -> Value {
    let all: Vec<&str> = STOP_EVENTS
        .iter()
        .chain(PROMPT_EVENTS)
        .chain(TOOL_EVENTS)
        .copied()
        .collect();
    let agent_keys: Vec<Value> = ["agent_id", "agent_type"]
        .iter()
        .map(|k| {
            let names = spellings(k);
            json!({
                "allOf": [
                    {"anyOf": names.iter().map(|n| json!({
                        "type": "object", "required": [n], "properties": {n.as_str(): true}
                    })).collect::<Vec<_>>()},
                    first_non_null(k, &json!({"type": "string"}), false)
                ]
            })
        })
        .collect();
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "hook input payload (standard input of `evidence-gate hook EVENT`)",
        "description": "The union of the payloads the hook decoder accepts for some host and some subcommand (docs/hook-contracts.md#h-2). Fields are accepted in snake_case and camelCase (snake_case wins when both are non-null); unknown fields are allowed, and optional fields that are null or mistyped count as absent.",
        "type": "object",
        "allOf": [
            first_non_null("hook_event_name", &json!({"type": "string", "enum": all}), false),
            {
                "if": event_is(PROMPT_EVENTS),
                "then": first_non_null("prompt", &json!({"type": "string"}), true)
            },
            {
                "if": event_is(TOOL_EVENTS),
                "then": first_non_null("tool_name", &json!({"type": "string", "minLength": 1}), true)
            },
            {
                "if": event_is(&["SubagentStop"]),
                "then": {"allOf": agent_keys}
            }
        ]
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::Value;

    use super::super::decode::{Context, decode};
    use super::super::{Host, HostSource};
    use crate::hooks::event::HookEvent;

    const HOSTS: &[Host] = &[
        Host::Codex,
        Host::ClaudeCode,
        Host::Gemini,
        Host::Agy,
        Host::Common,
    ];

    /// Whether some host decodes `payload` for some subcommand.
    fn decoder_accepts(payload: &Value) -> bool {
        let Value::Object(obj) = payload else {
            return false;
        };
        let env = |_: &str| None;
        let ctx = Context {
            process_cwd: Path::new("/proc-cwd"),
            env: &env,
        };
        HOSTS.iter().any(|&host| {
            HookEvent::ALL
                .iter()
                .any(|&event| decode(event, host, HostSource::Flag, obj, &ctx).is_ok())
        })
    }

    #[test]
    // Test fixtures in the source tree, read by the test alone.
    #[allow(clippy::disallowed_methods)]
    fn the_schema_accepts_exactly_what_the_decoder_accepts_on_every_fixture() {
        let cases = crate::test_support::schema_cases("hook-input");
        let schema = super::schema();
        let validator = jsonschema::validator_for(&schema).unwrap();
        for c in &cases {
            let payload: Value = serde_json::from_slice(&std::fs::read(&c.path).unwrap()).unwrap();
            let file = &c.file;
            assert_eq!(decoder_accepts(&payload), c.valid, "decoder, {file}");
            assert_eq!(validator.is_valid(&payload), c.valid, "schema, {file}");
        }
        let checked = crate::test_support::tally(&cases);
        assert!(checked.0 >= 10 && checked.1 >= 5, "{checked:?}");
    }
}
