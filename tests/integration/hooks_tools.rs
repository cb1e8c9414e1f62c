//! `evidence-gate hook pre-tool-use` (hooks.md §6.1, §6.2, §6.4): the
//! `create_goal` guard and the team boundary guard.

use serde_json::{Value, json};

use crate::goals_support::clean_env;
use crate::hooks_support::*;

fn tool(h: &HookRepo, host: &str, payload: &Value) -> crate::common::Run {
    tool_env(h, host, payload, &[])
}

fn tool_env(
    h: &HookRepo,
    host: &str,
    payload: &Value,
    extra: &[(&str, &str)],
) -> crate::common::Run {
    let mut env = clean_env();
    env.push(("OMO_TEAM_ROLE", ""));
    env.push(("OMAGY_TEAM_ROLE", ""));
    env.extend_from_slice(extra);
    h.hook("pre-tool-use", &["--host", host], payload, &env)
}

fn create_goal(h: &HookRepo, input: Value) -> crate::common::Run {
    let p = h.codex_event(
        "PreToolUse",
        "s1",
        json!({"tool_name": "create_goal", "tool_use_id": "call_x", "tool_input": input}),
    );
    tool(h, "codex", &p)
}

#[test]
fn create_goal_with_objective_only_passes() {
    let h = HookRepo::new();
    let p = fixture("codex/pre-tool-use/synth-create-goal.json", h.path());
    assert_allow(&tool(&h, "codex", &p));
    assert_allow(&create_goal(&h, json!({"objective": "Ship the parser"})));
    assert!(h.diagnostics().is_empty());
}

#[test]
fn regression_7_create_goal_denies_budgets_non_objects_and_missing_objectives() {
    let h = HookRepo::new();
    let reason = deny_reason(&tool(
        &h,
        "codex",
        &fixture(
            "codex/pre-tool-use/synth-create-goal-string-input.json",
            h.path(),
        ),
    ));
    assert!(
        reason.contains("`token_budget`"),
        "a JSON-string input is parsed first: {reason}"
    );
    assert!(reason.contains("`objective` only"), "{reason}");
    assert!(reason.contains("update_goal"), "{reason}");
    let reason = deny_reason(&tool(
        &h,
        "codex",
        &fixture("codex/pre-tool-use/synth-create-goal-budget.json", h.path()),
    ));
    assert!(reason.contains("the key `token_budget`"), "{reason}");
    // The Node guard let these two through.
    let reason = deny_reason(&create_goal(&h, json!("make it fast")));
    assert!(
        reason.contains("a string input instead of a JSON object"),
        "{reason}"
    );
    let reason = deny_reason(&create_goal(&h, json!(42)));
    assert!(reason.contains("a number input"), "{reason}");
    let reason = deny_reason(&create_goal(&h, json!({"status": "active"})));
    assert!(reason.contains("`objective` is missing"), "{reason}");
    assert!(reason.contains("the key `status`"), "{reason}");
    let reason = deny_reason(&create_goal(&h, json!({"objective": " "})));
    assert!(reason.contains("`objective` is blank"), "{reason}");
    let reason = deny_reason(&create_goal(&h, json!({"objective": ["a"]})));
    assert!(
        reason.contains("`objective` is an array, not a string"),
        "{reason}"
    );
    // `update_goal` is host-owned and unchecked.
    let p = h.codex_event(
        "PreToolUse",
        "s1",
        json!({"tool_name": "update_goal", "tool_input": {"status": "complete"}}),
    );
    assert_allow(&tool(&h, "codex", &p));
    assert!(h.diagnostics().is_empty());
}

#[test]
fn deny_shapes_per_host() {
    let h = HookRepo::new();
    let mut p = fixture("gemini/pre-tool-use/synth-before-tool.json", h.path());
    p["tool_name"] = json!("create_goal");
    p["tool_input"] = json!({"objective": "x", "token_budget": 1});
    let run = tool(&h, "gemini", &p);
    let v = run.json();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["decision", "reason"]);
    assert_eq!(v["decision"], "deny");
    let mut p = fixture("agy/pre-tool-use/synth-pre-tool-use.json", h.path());
    p["toolName"] = json!("create_goal");
    p["toolInput"] = json!({"objective": "x", "token_budget": 1});
    let run = tool(&h, "agy", &p);
    let v = run.json();
    assert_eq!(v["decision"], "deny");
    assert_eq!(v.as_object().unwrap().len(), 2);
    // The agy fixture's own call (`ls`) passes with no output at all.
    assert_allow(&tool(
        &h,
        "agy",
        &fixture("agy/pre-tool-use/synth-pre-tool-use.json", h.path()),
    ));
}

#[test]
fn regression_9_a_workers_mutating_command_is_denied_and_reads_pass() {
    let h = HookRepo::new();
    let reason = deny_reason(&tool(
        &h,
        "codex",
        &fixture(
            "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
            h.path(),
        ),
    ));
    assert!(
        reason.contains("`ulw-loop checkpoint` changes goal state"),
        "{reason}"
    );
    assert!(
        reason.contains("agent_type:lazycodex-worker-low"),
        "{reason}"
    );
    let reason = deny_reason(&tool(
        &h,
        "claude-code",
        &fixture(
            "claude-code/pre-tool-use/synth-subagent-bash-checkpoint.json",
            h.path(),
        ),
    ));
    assert!(reason.contains("only the leader"), "{reason}");
    let worker = fixture(
        "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
        h.path(),
    );
    for cmd in [
        "omo ulw-loop status --json",
        "omo ulw-loop checkpoint --print-template --goal-id G001",
        "omo ulw-loop --help",
        "omo ulw-loop criteria --goal-id G001",
        "cargo test && git diff",
    ] {
        let mut p = worker.clone();
        p["tool_input"] = json!({"cmd": cmd});
        assert_allow(&tool(&h, "codex", &p));
    }
    for cmd in [
        "cd repo && omo ulw-loop record-evidence --goal-id G001 --criterion-id C001",
        "OMO_X=1 npx omo ulw-loop steer --kind annotate_ledger",
        "omo checkpoint --goal-id G001",
        "omagy ultragoal create-goals --brief x",
    ] {
        let mut p = worker.clone();
        p["tool_input"] = json!({"cmd": cmd});
        deny_reason(&tool(&h, "codex", &p));
    }
    let mut p = worker.clone();
    p["tool_input"] = json!({"command": ["bash", "-lc", "omo ulw-loop checkpoint --goal-id G1"]});
    deny_reason(&tool(&h, "codex", &p));
    // The leader (no agent in the payload) runs the same command freely.
    let mut leader = worker.clone();
    leader.as_object_mut().unwrap().remove("agent_id");
    leader.as_object_mut().unwrap().remove("agent_type");
    assert_allow(&tool(&h, "codex", &leader));
    assert_allow(&tool(
        &h,
        "codex",
        &fixture("codex/pre-tool-use/synth-shell.json", h.path()),
    ));
    assert_allow(&tool(
        &h,
        "claude-code",
        &fixture("claude-code/pre-tool-use/synth-bash.json", h.path()),
    ));
    assert!(h.diagnostics().is_empty());
}

#[test]
fn a_worker_environment_marks_a_worker_on_hosts_without_agent_fields() {
    let h = HookRepo::new();
    let mut p = fixture("gemini/pre-tool-use/synth-before-tool.json", h.path());
    p["tool_input"] = json!({"command": "omo ulw-loop checkpoint --goal-id G1"});
    assert_allow(&tool(&h, "gemini", &p));
    let run = tool_env(&h, "gemini", &p, &[("OMO_TEAM_ROLE", "worker")]);
    let v = run.json();
    assert_eq!(v["decision"], "deny");
    assert!(v["reason"].as_str().unwrap().contains("env:OMO_TEAM_ROLE"));
    let mut a = fixture("agy/pre-tool-use/synth-pre-tool-use.json", h.path());
    a["toolInput"] = json!({"command": "omagy ultragoal checkpoint --goal-id U1"});
    let run = tool_env(&h, "agy", &a, &[("OMAGY_TEAM_ROLE", "worker")]);
    assert_eq!(run.json()["decision"], "deny");
}

#[test]
fn deny_for_narrows_only_payloads_without_an_agent_id() {
    // threat-model.md I13: a payload naming a subagent (agent_id) is a worker
    // whatever `team_guard.deny_for` says; the narrowing regex decides only
    // for a payload that carries an agent type alone (a main session started
    // with an agent profile).
    let h = HookRepo::new();
    h.user_rules(r#"{"team_guard": {"deny_for": {"agent_type": "^team-"}}}"#);
    let p = fixture(
        "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
        h.path(),
    );
    deny_reason(&tool(&h, "codex", &p));
    let mut typed_only = p.clone();
    typed_only.as_object_mut().unwrap().remove("agent_id");
    assert_allow(&tool(&h, "codex", &typed_only));
    typed_only["agent_type"] = json!("team-executor");
    deny_reason(&tool(&h, "codex", &typed_only));
    assert!(h.diagnostics().is_empty(), "{:?}", h.diagnostics());
}

#[test]
fn regression_i13_a_subagent_cannot_hide_a_mutation_from_the_team_guard() {
    let h = HookRepo::new();
    let worker = fixture(
        "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
        h.path(),
    );
    // The payload names a subagent; the worker's own shell drops or
    // overrides the environment marker, quotes or escapes the words.
    for cmd in [
        "env -u OMO_TEAM_ROLE evidence-gate ulw-loop add-goal --title x --objective y",
        "OMO_TEAM_ROLE=leader evidence-gate ulw-loop add-goal --title x",
        "X=1 evidence-gate ulw-loop add-goal --title x",
        "X=\"a b\" evidence-gate ulw-loop add-goal --title x",
        "evidence-gate ulw''-loop steer --kind mark_blocked_superseded --goal-id G001",
        "evidence-gate ulw\\-loop steer --kind mark_blocked_superseded --goal-id G001",
        "evidence-gate ulw-loop add-goal --help=no --title x",
        "evidence-gate ulw-loop add-goal --title x --help",
        "bash -lc 'cd . && evidence-gate \"ulw-loop\" checkpoint --goal-id G001'",
    ] {
        let mut p = worker.clone();
        p["tool_input"] = json!({"cmd": cmd});
        let reason = deny_reason(&tool_env(&h, "codex", &p, &[("OMO_TEAM_ROLE", "leader")]));
        assert!(reason.contains("only the leader"), "{cmd}: {reason}");
    }
    let mut p = worker.clone();
    p["tool_input"] = json!({"command": ["env", "-u", "OMO_TEAM_ROLE", "ulw-loop", "add-goal"]});
    deny_reason(&tool(&h, "codex", &p));
    assert!(h.diagnostics().is_empty(), "{:?}", h.diagnostics());
}

#[test]
fn honest_i13_the_leader_mutates_and_a_worker_reads_and_mentions() {
    let h = HookRepo::new();
    let worker = fixture(
        "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
        h.path(),
    );
    let mut leader = worker.clone();
    leader.as_object_mut().unwrap().remove("agent_id");
    leader.as_object_mut().unwrap().remove("agent_type");
    for cmd in [
        "env -u OMO_TEAM_ROLE evidence-gate ulw-loop add-goal --title x --objective y",
        "evidence-gate ulw''-loop steer --kind annotate_ledger",
    ] {
        let mut p = leader.clone();
        p["tool_input"] = json!({"cmd": cmd});
        assert_allow(&tool(&h, "codex", &p));
    }
    // A worker's read-only commands, and a command that only mentions the
    // words as data (an echo or a commit message), pass.
    for cmd in [
        "evidence-gate ulw-loop status --json",
        "env -u OMO_TEAM_ROLE evidence-gate ulw-loop status",
        "evidence-gate ulw-loop checkpoint --print-template --goal-id G001",
        "echo 'next: ulw-loop checkpoint --goal-id G001'",
        "git commit -m \"ulw-loop steer: reorder\"",
    ] {
        let mut p = worker.clone();
        p["tool_input"] = json!({"cmd": cmd});
        assert_allow(&tool(&h, "codex", &p));
    }
    assert!(h.diagnostics().is_empty(), "{:?}", h.diagnostics());
}

#[test]
fn other_tools_pass_untouched() {
    let h = HookRepo::new();
    let p = h.codex_event(
        "PreToolUse",
        "s1",
        json!({"tool_name": "apply_patch", "agent_id": "a", "agent_type": "lazycodex-worker-low",
               "tool_input": {"command": "omo ulw-loop checkpoint"}}),
    );
    assert_allow(&tool(&h, "codex", &p));
    assert!(h.diagnostics().is_empty());
}

#[test]
fn goal_loop_events_fail_safe_on_payloads_they_cannot_use() {
    let cases: &[(&str, &str, Value, &str)] = &[
        (
            "pre-tool-use",
            "codex",
            json!({"hook_event_name": "PreToolUse", "tool_input": {}}),
            "HOOK_PAYLOAD_INVALID",
        ),
        (
            "user-prompt-submit",
            "codex",
            json!({"hook_event_name": "UserPromptSubmit", "prompt": 5}),
            "HOOK_PAYLOAD_INVALID",
        ),
        (
            "stop",
            "codex",
            json!({"hook_event_name": "UserPromptSubmit", "prompt": "x"}),
            "HOOK_EVENT_MISMATCH",
        ),
        (
            "pre-tool-use-spawn",
            "codex",
            json!({"hook_event_name": "Stop"}),
            "HOOK_EVENT_MISMATCH",
        ),
        (
            "user-prompt-submit",
            "agy",
            json!({"conversationId": "c", "prompt": "ulw"}),
            "HOOK_EVENT_UNSUPPORTED",
        ),
        (
            "pre-tool-use-spawn",
            "gemini",
            json!({"hook_event_name": "BeforeTool", "tool_name": "spawn_agent"}),
            "HOOK_EVENT_UNSUPPORTED",
        ),
        (
            "stop",
            "codex",
            json!({"hook_event_name": "Stop", "cwd": "/no/such/dir"}),
            "HOOK_CWD_INVALID",
        ),
    ];
    for (event, host, payload, code) in cases {
        let h = HookRepo::new();
        let run = h.hook(
            event,
            &["--host", host, "--with-ultrawork"],
            payload,
            &clean_env(),
        );
        assert_allow(&run);
        let d = h.diagnostics();
        assert_eq!(d.len(), 1, "{event} {host}: {d:?}");
        assert_eq!(d[0]["code"], *code, "{event} {host}");
        assert_eq!(d[0]["event"], *event);
    }
}

/// Codex 0.171 sends its shell tool as `Bash` with a string
/// `tool_input.command` (recorded payload); inside a subagent (the
/// `agent_id`/`agent_type` Codex adds to a thread-spawned agent's hooks) a
/// mutating goal command is denied, and the leader's read-only call passes.
#[test]
fn codex_real_bash_payload_is_guarded_for_workers() {
    let h = HookRepo::new();
    let p = fixture(
        "codex/pre-tool-use/recorded-codex-0.171.0-bash-main-session-allow.json",
        h.path(),
    );
    assert_eq!(p["tool_name"], "Bash");
    assert_allow(&tool(&h, "codex", &p));
    let mut w = p.clone();
    w["agent_id"] = json!("01a23c31-aaaa-7000-8000-000000000001");
    w["agent_type"] = json!("lazycodex-worker-low");
    w["tool_input"] =
        json!({"command": "evidence-gate ulw-loop checkpoint --goal-id G1 --status complete"});
    let v = tool(&h, "codex", &w).json();
    assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny", "{v}");
    w["tool_input"] = json!({"command": "evidence-gate ulw-loop status --json"});
    assert_allow(&tool(&h, "codex", &w));
}
