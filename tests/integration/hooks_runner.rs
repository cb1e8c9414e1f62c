//! The common hook machinery (hooks.md §1): every failure of plumbing exits
//! 0 with empty stdout and exactly one diagnostics line (§10 (10)).

use serde_json::{Value, json};

use crate::hooks_support::*;

/// Exit 0, empty stdout, exactly one diagnostics record with `code`.
fn one_diag(h: &HookRepo, run: &crate::common::Run, code: &str) -> Value {
    assert_allow(run);
    let d = h.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], code);
    d[0].clone()
}

#[test]
fn usage_errors_exit_zero_with_one_stderr_line() {
    for args in [
        &["hook", "subagent-stop", "--hots", "codex"][..],
        &["hook", "nope"],
        &["hook"],
        &["hook", "subagent-stop", "--host", "vim"],
        &["hook", "stop", "--profile", "omx"],
        &["hook", "user-prompt-submit", "--with-ultrawork=yes"],
    ] {
        let h = HookRepo::new();
        let run = h.run(args, b"{}", &[]);
        let d = one_diag(&h, &run, "HOOK_USAGE");
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert_eq!(d["outcome"], "allow");
        assert_eq!(d["level"], "error");
    }
}

#[test]
fn help_prints_the_synopsis() {
    let h = HookRepo::new();
    let run = h.run(&["hook", "--help"], b"", &[]);
    assert_allow(&run);
    assert!(run.stderr.contains("usage: evidence-gate hook"));
}

#[test]
fn invalid_json_of_every_kind() {
    let cases: &[(&[u8], &str)] = &[
        (b"", "HOOK_STDIN_EMPTY"),
        (b"  \n\t ", "HOOK_STDIN_EMPTY"),
        (b"{not json", "HOOK_JSON_INVALID"),
        (b"{} {}", "HOOK_JSON_INVALID"),
        (b"{\"a\":1,\"a\":2}", "HOOK_JSON_INVALID"),
        (b"\xff\xfe\x00", "HOOK_JSON_INVALID"),
        (b"\x80{}", "HOOK_JSON_INVALID"),
        (b"[1,2]", "HOOK_PAYLOAD_INVALID"),
        (b"\"SubagentStop\"", "HOOK_PAYLOAD_INVALID"),
    ];
    for (stdin, code) in cases {
        let h = HookRepo::new();
        let run = h.run(&["hook", "subagent-stop"], stdin, &[]);
        let d = one_diag(&h, &run, code);
        assert_eq!(run.stderr, "");
        let text = serde_json::to_string(&d).unwrap();
        assert!(!text.contains("not json"), "never input content");
    }
}

#[test]
fn json_error_records_position() {
    let h = HookRepo::new();
    let run = h.run(&["hook", "subagent-stop"], b"{\n  \"a\": }", &[]);
    let d = one_diag(&h, &run, "HOOK_JSON_INVALID");
    assert_eq!(d["detail"]["line"], 2);
}

#[test]
fn byte_order_marks_are_handled() {
    let h = HookRepo::new();
    let payload = h.codex(Some("done")).to_string();
    let mut utf8 = b"\xEF\xBB\xBF".to_vec();
    utf8.extend_from_slice(payload.as_bytes());
    block_reason(&h.run(&["hook", "subagent-stop"], &utf8, &[]));
    let utf16: Vec<u8> = [0xFF, 0xFE]
        .into_iter()
        .chain(payload.encode_utf16().flat_map(u16::to_le_bytes))
        .collect();
    block_reason(&h.run(&["hook", "subagent-stop"], &utf16, &[]));
}

#[test]
fn oversized_stdin_is_not_drained() {
    let h = HookRepo::new();
    h.user_rules(r#"{"hooks":{"max_stdin_bytes":65536}}"#);
    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(70_000));
    let run = h.run(&["hook", "subagent-stop"], big.as_bytes(), &[]);
    let d = one_diag(&h, &run, "HOOK_STDIN_TOO_LARGE");
    assert_eq!(d["detail"]["max"], 65536);
}

#[test]
fn unreadable_stdin() {
    let h = HookRepo::new();
    let dir = h.repo.mkdir("a-directory");
    let run = h.run_with(
        &["hook", "subagent-stop"],
        Stdin::Dir(&dir),
        Stdout::Piped,
        &[],
        false,
    );
    one_diag(&h, &run, "HOOK_STDIN_READ");
}

#[test]
fn missing_required_fields_and_wrong_types() {
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p.as_object_mut().unwrap().remove("agent_type");
    let d = one_diag(&h, &h.stop(&p), "HOOK_PAYLOAD_INVALID");
    assert_eq!(d["detail"]["field"], "agent_type");
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p["agent_id"] = json!(42);
    one_diag(&h, &h.stop(&p), "HOOK_PAYLOAD_INVALID");
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p["hook_event_name"] = json!(["SubagentStop"]);
    one_diag(&h, &h.stop(&p), "HOOK_PAYLOAD_INVALID");
}

#[test]
fn event_of_another_subcommand() {
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p["hook_event_name"] = json!("Stop");
    let d = one_diag(&h, &h.stop(&p), "HOOK_EVENT_MISMATCH");
    assert_eq!(d["detail"]["sent"], "Stop");
}

#[test]
fn hosts_without_subagent_stop() {
    let h = HookRepo::new();
    let p = fixture("gemini/stop/synth-after-agent.json", h.path());
    let d = one_diag(&h, &h.stop(&p), "HOOK_EVENT_UNSUPPORTED");
    assert_eq!(d["host"], "gemini");
    assert_eq!(d["host_source"], "payload");
    let h = HookRepo::new();
    let p = fixture("agy/stop/synth-stop.json", h.path());
    let d = one_diag(&h, &h.stop(&p), "HOOK_EVENT_UNSUPPORTED");
    assert_eq!(d["host"], "agy");
    let h = HookRepo::new();
    let run = h.run(
        &["hook", "subagent-stop", "--host", "gemini"],
        h.codex(Some("x")).to_string().as_bytes(),
        &[],
    );
    let d = one_diag(&h, &run, "HOOK_EVENT_UNSUPPORTED");
    assert_eq!(d["host_source"], "flag");
}

#[test]
fn cwd_that_is_not_a_directory() {
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p["cwd"] = json!(h.join("no/such/dir").to_str().unwrap());
    let d = one_diag(&h, &h.stop(&p), "HOOK_CWD_INVALID");
    assert_eq!(d["session_id"], "sess-1");
    assert_eq!(d["agent_type"], WORKER);
}

#[test]
fn invalid_repository_rules_continue_on_embedded_defaults() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_attempts":99,"min_receipt_chars":1}}"#,
    );
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(
        reason.contains("attempt 1 of 3"),
        "embedded cap, not a partial override"
    );
    assert_eq!(h.diag_codes(), ["HOOK_RULES_INVALID"]);
    let d = &h.diagnostics()[0];
    assert_eq!(d["level"], "warn");
    assert!(
        d["detail"]["problem"]
            .as_str()
            .unwrap()
            .contains("max_attempts")
    );
    // A template with an unknown placeholder is invalid too.
    let h = HookRepo::new();
    h.user_rules(r#"{"directives":{"subagent-stop":"{{NOPE}} {{RECEIPT_MARKER}}"}}"#);
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(reason.contains("evidence-gate refused this stop"));
    assert_eq!(h.diag_codes(), ["HOOK_RULES_INVALID"]);
    // An unreadable --rules file as well.
    let h = HookRepo::new();
    let run = h.run(
        &["hook", "subagent-stop", "--rules", "missing.json"],
        h.codex(Some("done")).to_string().as_bytes(),
        &[],
    );
    block_reason(&run);
    assert_eq!(h.diag_codes(), ["HOOK_RULES_INVALID"]);
}

#[test]
fn rules_file_flag_applies() {
    let h = HookRepo::new();
    h.write("my-rules.json", r#"{"subagent_stop":{"max_attempts":5}}"#);
    let run = h.run(
        &["hook", "subagent-stop", "--rules", "my-rules.json"],
        h.codex(Some("done")).to_string().as_bytes(),
        &[],
    );
    assert!(block_reason(&run).contains("attempt 1 of 5"));
}

#[test]
fn emergency_switch_allows_everything() {
    let h = HookRepo::new();
    let run = h.stop_env(&h.codex(Some("done")), &[("EVIDENCE_GATE_HOOKS", "off")]);
    one_diag(&h, &run, "HOOK_DISABLED");
    assert_eq!(h.diagnostics()[0]["level"], "info");
    assert!(h.attempts().is_empty());
    // Even input that would be a plumbing failure is just "disabled".
    let h = HookRepo::new();
    let run = h.run(
        &["hook", "subagent-stop"],
        b"",
        &[("EVIDENCE_GATE_HOOKS", "OFF")],
    );
    one_diag(&h, &run, "HOOK_DISABLED");
}

#[test]
fn injected_panic_is_caught() {
    let h = HookRepo::new();
    let run = h.stop_env(
        &h.codex(Some("done")),
        &[("EVIDENCE_GATE_TEST_FAULT", "panic")],
    );
    let d = one_diag(&h, &run, "HOOK_PANIC");
    assert_eq!(run.stderr, "", "the panic message goes to diagnostics only");
    assert!(
        d["detail"]["panic"]
            .as_str()
            .unwrap()
            .contains("injected test fault")
    );
    assert!(
        d["detail"]["file"]
            .as_str()
            .unwrap()
            .ends_with("hooks/handle.rs")
    );
    assert!(d["detail"]["line"].as_u64().unwrap() > 0);
}

#[test]
fn expired_deadline_allows() {
    let h = HookRepo::new();
    let started = std::time::Instant::now();
    let run = h.stop_env(
        &h.codex(Some("done")),
        &[("EVIDENCE_GATE_TEST_FAULT", "hang")],
    );
    let d = one_diag(&h, &run, "HOOK_DEADLINE");
    // The diagnostic proves the watchdog ended the hang; the bound only turns
    // a watchdog that never fires into a failure instead of a stalled suite
    // (generous: a loaded 2-core machine must not make it flaky).
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    assert_eq!(d["session_id"], "sess-1");
}

#[test]
fn failed_stdout_write_is_recorded() {
    let h = HookRepo::new();
    let run = h.run_with(
        &["hook", "subagent-stop"],
        Stdin::Bytes(h.codex(Some("done")).to_string().as_bytes()),
        Stdout::DevFull,
        &[],
        false,
    );
    assert_eq!(run.code, 0);
    assert_eq!(h.diag_codes(), ["HOOK_OUTPUT_WRITE"]);
}

#[test]
fn allow_and_notify_policy_for_plumbing_failures() {
    let h = HookRepo::new();
    h.user_rules(r#"{"hooks":{"on_plumbing_failure":"allow_and_notify"}}"#);
    let run = h.run(&["hook", "subagent-stop"], b"{oops", &[]);
    assert_eq!(run.code, 0);
    let v = run.json();
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("HOOK_JSON_INVALID")
    );
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("evidence-gate doctor"), "{msg}");
    assert!(
        !msg.contains(".omo/evidence-gate/diagnostics.jsonl"),
        "{msg}"
    );
    assert_eq!(h.diagnostics()[0]["outcome"], "notify");
}

#[test]
fn multi_call_name_acts_as_hook_with_auto_host() {
    let h = HookRepo::new();
    let link = h.join("evidence-gate-hook-subagent-stop");
    std::os::unix::fs::symlink(crate::common::bin("evidence-gate"), &link).unwrap();
    let out = std::process::Command::new(&link)
        .current_dir(h.path())
        .env("XDG_STATE_HOME", h.state_home.path())
        .env("XDG_CONFIG_HOME", h.state_home.path().join("config"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(h.codex(Some("done")).to_string().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "block");
}

#[test]
fn diagnostics_go_to_the_user_state_dir_outside_repositories() {
    let h = HookRepo::new();
    std::fs::remove_dir_all(h.join(".git")).unwrap();
    std::fs::remove_dir_all(h.join(".omo")).unwrap();
    let run = h.run(&["hook", "subagent-stop"], b"nope", &[]);
    assert_allow(&run);
    assert!(!h.join(".omo").exists());
    let d = read_jsonl(&h.state_home.path().join("evidence-gate/diagnostics.jsonl"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["code"], "HOOK_JSON_INVALID");
}

/// A per-user state directory that belongs to another workspace is unusable:
/// the records go to the base per-user directory, never into the workspace.
#[test]
fn diagnostics_fall_back_to_the_base_user_dir_when_the_workspace_dir_is_unusable() {
    let h = HookRepo::new();
    let ws_dir = h.hook_state().parent().unwrap().to_path_buf();
    std::fs::create_dir_all(&ws_dir).unwrap();
    std::fs::write(
        ws_dir.join("workspace.json"),
        r#"{"version":1,"root":"/elsewhere"}"#,
    )
    .unwrap();
    assert_allow(&h.run(&["hook", "subagent-stop"], b"nope", &[]));
    assert!(h.diagnostics().is_empty());
    assert!(!h.join(".omo/evidence-gate/diagnostics.jsonl").exists());
    let d = read_jsonl(&h.state_home.path().join("evidence-gate/diagnostics.jsonl"));
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["code"], "HOOK_JSON_INVALID");
}

#[test]
fn diagnostics_records_have_the_documented_fields_and_rotate() {
    let h = HookRepo::new();
    h.user_rules(r#"{"hooks":{"diagnostics_max_bytes":4096}}"#);
    for _ in 0..12 {
        assert_allow(&h.run(&["hook", "subagent-stop"], b"nope", &[]));
    }
    let d = h.diagnostics();
    let keys: Vec<&String> = d[0].as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "v",
            "ts",
            "code",
            "level",
            "event",
            "host",
            "host_source",
            "profile",
            "session_id",
            "agent_id",
            "agent_type",
            "turn_id",
            "outcome",
            "message",
            "detail",
            "elapsed_us",
            "rules_digest",
            "version",
            "pid"
        ]
    );
    assert_eq!(d[0]["v"], 1);
    assert_eq!(d[0]["event"], "subagent-stop");
    let rotated = h.hook_state().join("diagnostics.jsonl.1");
    assert!(rotated.is_file(), "rotated");
    assert!(!h.join(".omo/evidence-gate/diagnostics.jsonl").exists());
    let total = d.len() + read_jsonl(&rotated).len();
    assert_eq!(total, 12);
}

#[test]
fn debug_switch_prints_one_trace_line() {
    let h = HookRepo::new();
    let run = h.stop_env(&h.codex(Some("done")), &[("EVIDENCE_GATE_DEBUG", "1")]);
    block_reason(&run);
    assert_eq!(run.stderr.lines().count(), 1);
    assert!(run.stderr.contains("outcome=block"));
}

#[test]
fn no_allow_path_emits_empty_object() {
    let h = HookRepo::new();
    h.write(R2, RECEIPT_TEXT);
    let mut cases = vec![
        h.codex_receipt(R2),
        fixture(
            "codex/subagent-stop/synth-unknown-agent-type.json",
            h.path(),
        ),
        fixture("codex/subagent-stop/synth-empty-agent-type.json", h.path()),
        fixture("gemini/stop/synth-after-agent.json", h.path()),
    ];
    cases.push(json!({"hook_event_name": "SubagentStop"}));
    for p in cases {
        let run = h.stop(&p);
        assert_allow(&run);
    }
}

const R2: &str = ".omo/evidence/r2.md";

/// Claude Code's Stop/SubagentStop block is exit 2 with the reason on
/// stderr, but a fail-open is still exit 0 with nothing on either stream:
/// a panic or an expired deadline on a payload that would block never
/// becomes an exit-2 block.
#[test]
fn claude_exit_2_block_still_fails_open_with_exit_0() {
    let h = HookRepo::new();
    let claude = [("CLAUDE_PROJECT_DIR", h.path().to_str().unwrap())];
    let p = fixture(
        "claude-code/subagent-stop/recorded-claude-code-2.1.332-block-no-receipt.json",
        h.path(),
    );
    // Honest use: no receipt blocks, exit 2, the reason once on stderr.
    let reason = claude_block_reason(&h.stop_env(&p, &claude));
    assert!(!reason.starts_with('{'), "plain text, not JSON: {reason}");
    assert!(!reason_codes(&reason).is_empty(), "{reason}");
    for fault in ["panic", "hang"] {
        let h = HookRepo::new();
        let p = fixture(
            "claude-code/subagent-stop/recorded-claude-code-2.1.332-block-no-receipt.json",
            h.path(),
        );
        let run = h.stop_env(
            &p,
            &[
                ("CLAUDE_PROJECT_DIR", h.path().to_str().unwrap()),
                ("EVIDENCE_GATE_TEST_FAULT", fault),
            ],
        );
        assert_eq!(run.code, 0, "{fault}: {}", run.stderr);
        assert_eq!(run.stdout, "", "{fault}");
        assert_eq!(run.stderr, "", "{fault}");
    }
}
