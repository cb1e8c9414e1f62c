//! `pre-tool-use` (docs/hook-contracts.md#h-6): the `create_goal` guard and
//! the team boundary guard, chosen by tool name; any other tool passes.

use serde_json::Value;

use super::Ctx;
use super::shell::{self, Grammar, ProfileWords};
use crate::hooks::event::{Decision, ToolEvent};

/// Dispatches by tool name.
pub(super) fn decide(c: &Ctx<'_>, t: &ToolEvent) -> Decision {
    if c.policy
        .create_goal()
        .rules
        .tool_names
        .contains(&t.tool_name)
    {
        return create_goal(c, &t.tool_input);
    }
    if c.policy.team().rules.shell_tools.contains(&t.tool_name) {
        return team_guard(c, &t.tool_input);
    }
    Decision::Allow
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn quoted(key: &str) -> String {
    format!("`{}`", super::clip_chars(key, 64))
}

/// The problems of a `create_goal` input (docs/hook-contracts.md#h-6): not an object; a
/// missing, non-string or blank `objective`; keys outside `allowed_keys`.
pub(crate) fn create_goal_problems(input: &Value, allowed: &[String]) -> Vec<String> {
    let Value::Object(m) = input else {
        let what = match input {
            Value::Null => "no input".to_owned(),
            other => format!("{} input", kind_of(other)),
        };
        return vec![format!("it has {what} instead of a JSON object")];
    };
    let mut problems = Vec::new();
    match m.get("objective") {
        None => problems.push("`objective` is missing".to_owned()),
        Some(Value::String(s)) if s.trim().is_empty() => {
            problems.push("`objective` is blank".to_owned());
        }
        Some(Value::String(_)) => {}
        Some(other) => problems.push(format!("`objective` is {}, not a string", kind_of(other))),
    }
    let extra: Vec<&String> = m.keys().filter(|k| !allowed.contains(k)).collect();
    if !extra.is_empty() {
        let mut names: Vec<String> = extra.iter().take(10).map(|k| quoted(k)).collect();
        if extra.len() > 10 {
            names.push(format!("and {} more", extra.len() - 10));
        }
        problems.push(format!(
            "it passes {} {}",
            if extra.len() == 1 {
                "the key"
            } else {
                "the keys"
            },
            names.join(", ")
        ));
    }
    problems
}

fn create_goal(c: &Ctx<'_>, input: &Value) -> Decision {
    let rules = &c.policy.create_goal().rules;
    let problems = create_goal_problems(input, &rules.allowed_keys);
    if problems.is_empty() {
        return Decision::Allow;
    }
    let allowed = rules
        .allowed_keys
        .iter()
        .map(|k| quoted(k))
        .collect::<Vec<_>>()
        .join(", ");
    let problems = problems.join("; ");
    let text = c.policy.create_goal_deny().render(&|slot| match slot {
        "PROBLEMS" => problems.clone(),
        "ALLOWED_KEYS" => allowed.clone(),
        _ => String::new(),
    });
    Decision::Deny {
        reason: text.trim_end().to_owned(),
    }
}

fn team_guard(c: &Ctx<'_>, input: &Value) -> Decision {
    let Some(marker) = c.worker_marker() else {
        return Decision::Allow;
    };
    let Some(cmd) = shell::command_text(input, c.policy.team().rules.max_command_bytes) else {
        return Decision::Allow;
    };
    let candidates = c.policy.candidates(c.profile_flag);
    let grammar = Grammar {
        profiles: candidates
            .iter()
            .map(|p| ProfileWords {
                cli_words: &p.profile().hooks.cli_words,
                parents: &p.profile().parent_commands,
                name: &p.profile().name,
                mutating: &p.profile().hooks.mutating_subcommands,
            })
            .collect(),
        launchers: &c.policy.team().rules.launchers,
        exempt: &c.policy.team().rules.exempt_flags,
    };
    let Some((word, sub)) = shell::mutation(&cmd, &grammar) else {
        return Decision::Allow;
    };
    Decision::Deny {
        reason: format!(
            "evidence-gate: `{word} {sub}` changes goal state, which only the leader (the main session) does; this call comes from a team worker ({marker}). Report your evidence instead (a receipt or an evidence payload) and let the leader record, checkpoint or steer. Read-only commands such as `status --json`, `criteria`, `checkpoint --print-template` and `--help` stay available."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn create_goal_problems_cover_the_node_holes() {
        let allowed = vec!["objective".to_owned()];
        assert!(create_goal_problems(&json!({"objective": "Ship"}), &allowed).is_empty());
        let p = create_goal_problems(&json!({"objective": "Ship", "token_budget": 5}), &allowed);
        assert_eq!(p, ["it passes the key `token_budget`"]);
        assert_eq!(
            create_goal_problems(&json!("text"), &allowed),
            ["it has a string input instead of a JSON object"]
        );
        assert_eq!(
            create_goal_problems(&json!({"status": "active"}), &allowed),
            ["`objective` is missing", "it passes the key `status`"]
        );
        assert_eq!(
            create_goal_problems(&json!({"objective": "  "}), &allowed),
            ["`objective` is blank"]
        );
        assert_eq!(
            create_goal_problems(&Value::Null, &allowed),
            ["it has no input instead of a JSON object"]
        );
    }
}
