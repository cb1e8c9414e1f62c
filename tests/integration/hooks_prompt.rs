//! `evidence-gate hook user-prompt-submit` (hooks.md §5): steering markers
//! and ultrawork injection.

use std::path::Path;

use serde_json::{Value, json};

use crate::goals_support::{clean_env, eg};
use crate::hooks_support::*;

const SID: &str = "019a0000-0000-7000-8000-00000000a001";

fn prompt(h: &HookRepo, args: &[&str], payload: &Value) -> crate::common::Run {
    prompt_env(h, args, payload, &[])
}

fn prompt_env(
    h: &HookRepo,
    args: &[&str],
    payload: &Value,
    env: &[(&str, &str)],
) -> crate::common::Run {
    let mut a = vec!["--host", "codex"];
    a.extend_from_slice(args);
    let mut all = clean_env();
    all.extend_from_slice(env);
    h.hook("user-prompt-submit", &a, payload, &all)
}

fn transcript_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hosts/codex/transcripts")
            .join(name),
    )
    .unwrap()
}

fn ulw(h: &HookRepo) -> Value {
    fixture("codex/user-prompt-submit/synth-ulw-word.json", h.path())
}

#[test]
fn regression_6_ulw_injects_and_bulwark_does_not() {
    let h = HookRepo::new();
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
    assert!(text.starts_with("<ultrawork-mode>"), "{text}");
    assert!(text.ends_with("</ultrawork-mode>"), "{text}");
    assert!(text.contains("ULTRAWORK MODE ENABLED!"));
    assert!(
        text.contains("Call create_goal with `objective` only"),
        "{text}"
    );
    assert!(text.len() <= 4000, "the Codex cap: {}", text.len());
    assert!(!text.contains('\r'));
    let v = prompt(&h, &["--with-ultrawork"], &ulw(&h)).json();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    let bulwark = fixture("codex/user-prompt-submit/synth-bulwark.json", h.path());
    assert_allow(&prompt(&h, &["--with-ultrawork"], &bulwark));
    for word in [
        "ULW: go",
        "/ulw",
        "start the ulw-loop",
        "(ultrawork) please",
    ] {
        let mut p = ulw(&h);
        p["prompt"] = json!(word);
        context_text(&prompt(&h, &["--with-ultrawork"], &p));
    }
    for word in ["ulwx", "ultraworks", "my_ulw_var"] {
        let mut p = ulw(&h);
        p["prompt"] = json!(word);
        assert_allow(&prompt(&h, &["--with-ultrawork"], &p));
    }
    assert!(h.diagnostics().is_empty());
}

#[test]
fn regression_6_an_injected_tag_in_the_tail_prevents_reinjection_and_a_quoted_one_does_not() {
    let h = HookRepo::new();
    h.write(
        "transcripts/injected.jsonl",
        transcript_fixture("ultrawork-injected.jsonl"),
    );
    let mut p = ulw(&h);
    p["transcript_path"] = json!(h.join("transcripts/injected.jsonl"));
    assert_allow(&prompt(&h, &["--with-ultrawork"], &p));
    let quoted =
        json!({"type": "message", "role": "user", "content": "what does <ultrawork-mode> do?"});
    h.write("transcripts/quoted.jsonl", format!("{quoted}\n"));
    p["transcript_path"] = json!(h.join("transcripts/quoted.jsonl"));
    context_text(&prompt(&h, &["--with-ultrawork"], &p));
    // An injection older than the 512,000-byte tail is history.
    let mut old = transcript_fixture("ultrawork-injected.jsonl");
    while old.len() < 600_000 {
        old.extend_from_slice(
            b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"step\"}\n",
        );
    }
    h.write("transcripts/old.jsonl", &old);
    p["transcript_path"] = json!(h.join("transcripts/old.jsonl"));
    context_text(&prompt(&h, &["--with-ultrawork"], &p));
    // Claude Code records the same shape.
    let c = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hosts/claude-code/transcripts/ultrawork-injected.jsonl"),
    )
    .unwrap();
    h.write("transcripts/claude.jsonl", &c);
    let mut cp = fixture("claude-code/user-prompt-submit/synth-plain.json", h.path());
    cp["prompt"] = json!("ulw: again");
    cp["transcript_path"] = json!(h.join("transcripts/claude.jsonl"));
    let run = h.hook(
        "user-prompt-submit",
        &["--host", "claude-code", "--with-ultrawork"],
        &cp,
        &clean_env(),
    );
    assert_allow(&run);
}

#[test]
fn ultrawork_needs_the_flag_a_willing_profile_and_no_context_pressure() {
    let h = HookRepo::new();
    assert_allow(&prompt(&h, &[], &ulw(&h)));
    assert_allow(&prompt(
        &h,
        &["--with-ultrawork", "--profile", "ultragoal"],
        &ulw(&h),
    ));
    let mut p = ulw(&h);
    p["prompt"] = json!("ulw: context compacted again, continue");
    assert_allow(&prompt(&h, &["--with-ultrawork"], &p));
    h.write(
        "transcripts/pressure.jsonl",
        transcript_fixture("context-pressure-tail.jsonl"),
    );
    let mut p = ulw(&h);
    p["transcript_path"] = json!(h.join("transcripts/pressure.jsonl"));
    assert_allow(&prompt(&h, &["--with-ultrawork"], &p));
    // A live ultragoal plan owns persistence for this session.
    let mut ug = plan(Some(SID), Some("U1"), vec![goal("U1", "in_progress", &[])]);
    ug["profile"] = json!("ultragoal");
    h.write_plan(&format!("{UG}/{SID}"), &ug);
    assert_allow(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
    h.write_plan(&format!("{ULW}/{SID}"), &{
        let mut p = plan(Some(SID), Some("G1"), vec![goal("G1", "in_progress", &[])]);
        p["updatedAt"] = json!("2026-12-30T10:00:00.000Z");
        p
    });
    context_text(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
}

#[test]
fn an_existing_skill_file_gets_the_pointer() {
    let h = HookRepo::new();
    h.write("skills/ultrawork/SKILL.md", "# Ultrawork\n");
    h.user_rules(
        r#"{"user_prompt_submit": {"ultrawork_skill_path": "skills/ultrawork/SKILL.md"}}"#,
    );
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
    assert!(
        text.contains(&format!(
            "{}",
            h.join("skills/ultrawork/SKILL.md").display()
        )),
        "{text}"
    );
    assert!(text.len() < 600, "the pointer is short: {}", text.len());
    std::fs::remove_file(h.join("skills/ultrawork/SKILL.md")).unwrap();
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
    assert!(
        text.contains("Triage"),
        "missing skill: the full text: {text}"
    );
}

#[test]
fn a_long_directive_is_cut_at_a_line_with_a_note() {
    let h = HookRepo::new();
    let mut long = String::from("<ultrawork-mode>\n");
    for i in 0..200 {
        long.push_str(&format!(
            "{i}. keep going and verify every claim with a real command\n"
        ));
    }
    long.push_str("</ultrawork-mode>\n");
    h.user_rules(json!({"directives": {"ultrawork": long}}).to_string());
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &ulw(&h)));
    assert!(
        h.diagnostics().is_empty(),
        "the long override is valid: {:?}",
        h.diagnostics()
    );
    assert!(text.len() <= 4000, "{}", text.len());
    assert!(text.ends_with("[ultrawork directive shortened to fit this host's context limit]"));
    let mut cp = fixture("claude-code/user-prompt-submit/synth-plain.json", h.path());
    cp["prompt"] = json!("ulw");
    let run = h.hook(
        "user-prompt-submit",
        &["--host", "claude-code", "--with-ultrawork"],
        &cp,
        &clean_env(),
    );
    let text = context_text(&run);
    assert!(
        text.len() > 4000 && text.len() <= 9000,
        "Claude Code's cap: {}",
        text.len()
    );
}

#[test]
fn gemini_before_agent_gets_its_context_shape() {
    let h = HookRepo::new();
    let mut p = fixture(
        "gemini/user-prompt-submit/synth-before-agent.json",
        h.path(),
    );
    p["prompt"] = json!("ulw fix the bug");
    let run = h.hook(
        "user-prompt-submit",
        &["--host", "gemini", "--with-ultrawork"],
        &p,
        &clean_env(),
    );
    let v = run.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "BeforeAgent");
    assert!(
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .starts_with("<ultrawork-mode>")
    );
    let plain = fixture(
        "gemini/user-prompt-submit/synth-before-agent.json",
        h.path(),
    );
    assert_allow(&h.hook(
        "user-prompt-submit",
        &["--host", "gemini", "--with-ultrawork"],
        &plain,
        &clean_env(),
    ));
    let claude = fixture("claude-code/user-prompt-submit/synth-plain.json", h.path());
    assert_allow(&h.hook(
        "user-prompt-submit",
        &["--host", "claude-code"],
        &claude,
        &clean_env(),
    ));
    let codex = fixture("codex/user-prompt-submit/synth-plain.json", h.path());
    assert_allow(&prompt(&h, &["--with-ultrawork"], &codex));
}

#[test]
fn a_malformed_directive_is_reported_and_never_falls_through_to_ultrawork() {
    let h = HookRepo::new();
    let p = fixture(
        "codex/user-prompt-submit/synth-steer-malformed.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &p));
    assert!(
        text.starts_with("evidence-gate steering: rejected"),
        "{text}"
    );
    assert!(text.contains("not valid JSON"), "{text}");
    assert!(text.contains("plan unchanged"), "{text}");
    assert!(!text.contains("{\"kind\""), "no input echo: {text}");
    let mut q = p.clone();
    q["prompt"] = json!("ulw OMO_ULW_LOOP_STEER: [1, 2]");
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &q));
    assert!(text.contains("must be one JSON object"), "{text}");
    q["prompt"] = json!(format!(
        "OMO_ULW_LOOP_STEER: {{\"evidence\": \"{}\"}}",
        "x".repeat(70_000)
    ));
    let text = context_text(&prompt(&h, &[], &q));
    assert!(text.contains("over the 65536-byte limit"), "{text}");
    // Ordinary prose never changes anything.
    q["prompt"] = json!("please use OMO_ULW_LOOP_STEER later");
    assert_allow(&prompt(&h, &[], &q));
}

#[test]
fn a_directive_without_a_plan_applies_nothing() {
    let h = HookRepo::new();
    let p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &[], &p));
    assert_eq!(
        text,
        "evidence-gate steering: no ulw-loop plan exists for this session; nothing was applied"
    );
    let mut ug = p.clone();
    ug["prompt"] = json!(
        "OMAGY_ULTRAGOAL_STEER: {\"kind\":\"annotate_ledger\",\"evidence\":\"e\",\"rationale\":\"r\"}"
    );
    let text = context_text(&prompt(&h, &[], &ug));
    assert!(
        text.contains("no ultragoal plan exists"),
        "the marker selects the profile: {text}"
    );
    assert!(h.diagnostics().is_empty());
}

#[test]
fn a_directive_from_a_team_worker_is_ignored() {
    let h = HookRepo::new();
    h.write_plan(
        &format!("{ULW}/{SID}"),
        &plan(Some(SID), Some("G1"), vec![goal("G1", "in_progress", &[])]),
    );
    let plan_before = std::fs::read(h.join(&format!("{ULW}/{SID}/goals.json"))).unwrap();
    let mut p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    p["agent_id"] = json!("agent-7");
    p["agent_type"] = json!("lazycodex-worker-high");
    let text = context_text(&prompt(&h, &[], &p));
    assert!(text.contains("ignored"), "{text}");
    let d = h.diagnostics();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["code"], "STEER_WORKER_IGNORED");
    assert_eq!(d[0]["detail"]["worker"], "agent_type:lazycodex-worker-high");
    let leader = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    let run = prompt_env(&h, &[], &leader, &[("OMO_TEAM_ROLE", "worker")]);
    assert!(context_text(&run).contains("env:OMO_TEAM_ROLE"));
    assert_eq!(
        std::fs::read(h.join(&format!("{ULW}/{SID}/goals.json"))).unwrap(),
        plan_before
    );
    assert_eq!(
        h.files_in(&format!("{ULW}/{SID}")),
        ["goals.json"],
        "no lock, no ledger"
    );
}

fn engine_plan(h: &HookRepo) {
    engine_plan_of(h, "- parse the config\n- add tests");
}

/// A plan of session `SID` written by the engine from `brief`.
fn engine_plan_of(h: &HookRepo, brief: &str) {
    let run = eg(
        &h.repo,
        "ulw-loop",
        &[
            "create-goals",
            "--session-id",
            SID,
            "--brief",
            brief,
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

fn ledger(h: &HookRepo) -> Vec<Value> {
    read_jsonl(&h.join(&format!("{ULW}/{SID}/ledger.jsonl")))
}

#[test]
fn an_accepted_directive_is_applied_and_a_resubmission_dedupes() {
    let h = HookRepo::new();
    engine_plan(&h);
    let before = ledger(&h).len();
    let p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &p));
    assert_eq!(
        text,
        "evidence-gate steering: accepted annotate_ledger (source user_prompt_submit)"
    );
    let l = ledger(&h);
    assert_eq!(l.len(), before + 1);
    let e = l.last().unwrap();
    assert_eq!(e["kind"], "steering_accepted", "{e}");
    assert_eq!(e["channel"], "hook");
    assert_eq!(
        e["steering"]["source"], "user_prompt_submit",
        "a directive without source is the hook's: {e}"
    );
    assert_eq!(
        e["steering"]["directiveText"],
        "{\"kind\":\"annotate_ledger\",\"evidence\":\"user asked\",\"rationale\":\"record\"}"
    );
    assert_eq!(e["steering"]["promptSignature"].as_str().unwrap().len(), 64);
    let text = context_text(&prompt(&h, &[], &p));
    assert_eq!(
        text,
        "evidence-gate steering: deduped annotate_ledger (source user_prompt_submit)"
    );
    assert_eq!(ledger(&h).last().unwrap()["kind"], "steering_deduped");
    assert!(h.diagnostics().is_empty(), "{:?}", h.diagnostics());
    // The engine accepts the state it wrote.
    let status = eg(
        &h.repo,
        "ulw-loop",
        &["status", "--session-id", SID, "--json"],
    );
    assert_eq!(status.code, 0, "{}", status.stdout);
}

#[test]
fn a_rejected_directive_is_audited_with_its_reasons() {
    let h = HookRepo::new();
    engine_plan(&h);
    let mut p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    p["prompt"] = json!(
        "OMO_ULW_LOOP_STEER: {\"kind\":\"revise_pending_wording\",\"targetGoalId\":\"NOPE\",\"revisedTitle\":\"x\",\"evidence\":\"e\",\"rationale\":\"r\"}"
    );
    let text = context_text(&prompt(&h, &[], &p));
    assert!(text.starts_with("evidence-gate steering: rejected revise_pending_wording (source user_prompt_submit); reasons: "), "{text}");
    assert_eq!(ledger(&h).last().unwrap()["kind"], "steering_rejected");
    // A parse-level problem writes nothing and names the engine's code.
    let n = ledger(&h).len();
    p["prompt"] = json!(
        "OMO_ULW_LOOP_STEER: {\"kind\":\"annotate_ledger\",\"source\":\"bogus\",\"evidence\":\"e\",\"rationale\":\"r\"}"
    );
    let text = context_text(&prompt(&h, &[], &p));
    assert!(
        text.starts_with("evidence-gate steering: rejected: "),
        "{text}"
    );
    assert!(
        text.ends_with("(ULW_LOOP_STEERING_SOURCE_INVALID); plan unchanged"),
        "{text}"
    );
    assert_eq!(ledger(&h).len(), n);
}

#[test]
fn a_busy_state_asks_to_resend() {
    let h = HookRepo::new();
    engine_plan(&h);
    h.user_rules(r#"{"hooks": {"steering_lock_wait_ms": 50}}"#);
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(h.join(&format!("{ULW}/{SID}/.mutation.lock")))
        .unwrap();
    lock.lock().unwrap();
    let p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &[], &p));
    drop(lock);
    assert_eq!(
        text,
        "evidence-gate steering: state busy, resend; plan unchanged"
    );
    assert_eq!(h.diag_codes(), ["HOOK_LOCK_TIMEOUT"]);
}

#[test]
fn a_corrupt_plan_is_reported_and_nothing_is_applied() {
    let h = HookRepo::new();
    h.write(&format!("{ULW}/goals.json"), "{ corrupt");
    let p = fixture(
        "codex/user-prompt-submit/synth-steer-directive.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &[], &p));
    assert!(
        text.contains("no ulw-loop plan exists for this session"),
        "{text}"
    );
    let d = h.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "HOOK_PLAN_UNREADABLE");
    assert_eq!(d[0]["profile"], "ulw-loop");
    // A corrupt scoped plan reaches the engine, which names the problem.
    h.write(&format!("{ULW}/{SID}/goals.json"), "{ corrupt");
    let text = context_text(&prompt(&h, &[], &p));
    assert!(
        text.ends_with("(ULW_LOOP_PLAN_CORRUPT); plan unchanged"),
        "{text}"
    );
}

/// An unscoped plan's owner is read with each criterion's text checked and
/// skipped (the steering reads the plan whole under the lock): a repeated
/// key hidden in a criterion's evidence still makes the plan unreadable, as
/// it is to the engine. Honest use: the same plan without it is this
/// session's, and is not reported.
#[test]
fn an_unscoped_plan_with_a_fault_in_criterion_text_is_unreadable() {
    for fault in [false, true] {
        let h = HookRepo::new();
        let p = fixture(
            "codex/user-prompt-submit/synth-steer-directive.json",
            h.path(),
        );
        let mut doc = plan(
            Some(SID),
            Some("G001"),
            vec![goal("G001", "in_progress", &[("C001", "pending")])],
        );
        doc["goals"][0]["successCriteria"][0]["capturedEvidence"] =
            json!({"log": "x".repeat(4096), "exit": 0});
        h.write_plan(ULW, &doc);
        if fault {
            let file = format!("{ULW}/goals.json");
            let text = std::fs::read_to_string(h.join(&file)).unwrap();
            h.write(
                &file,
                text.replacen(r#""exit": 0"#, r#""exit": 0, "exit": 1"#, 1),
            );
        }
        let text = context_text(&prompt(&h, &[], &p));
        let unreadable = h.diag_codes().iter().any(|c| c == "HOOK_PLAN_UNREADABLE");
        assert_eq!(unreadable, fault, "{text} {:?}", h.diag_codes());
        assert_eq!(
            text.contains("no ulw-loop plan exists for this session"),
            fault,
            "{text}"
        );
    }
}

/// Claude Code and Gemini have no `create_goal`/`update_goal`
/// tools; their ultrawork text does not name them (recorded payloads).
#[test]
fn ultrawork_names_goal_tools_only_on_codex() {
    for (host, file) in [
        (
            "claude-code",
            "claude-code/user-prompt-submit/recorded-claude-code-2.1.332-ultrawork-inject.json",
        ),
        (
            "gemini",
            "gemini/user-prompt-submit/recorded-gemini-0.61.0-before-agent-replayed-reason.json",
        ),
    ] {
        let h = HookRepo::new();
        let mut p = fixture(file, h.path());
        p["prompt"] = json!("ulw fix the login page");
        let run = h.hook(
            "user-prompt-submit",
            &["--host", host, "--with-ultrawork"],
            &p,
            &clean_env(),
        );
        let text = context_text(&run);
        assert!(text.contains("ULTRAWORK MODE ENABLED!"), "{host}: {text}");
        assert!(
            !text.contains("create_goal") && !text.contains("update_goal"),
            "{host}: {text}"
        );
    }
    let h = HookRepo::new();
    let p = fixture(
        "codex/user-prompt-submit/recorded-codex-0.171.0-ultrawork-inject.json",
        h.path(),
    );
    let text = context_text(&prompt(&h, &["--with-ultrawork"], &p));
    assert!(text.contains("create_goal"), "{text}");
}

/// Gemini runs BeforeAgent again with our AfterAgent deny
/// reason as the prompt; the reason names `ulw-loop` but is no user request.
#[test]
fn gemini_replayed_deny_reason_gets_no_ultrawork() {
    let h = HookRepo::new();
    let p = fixture(
        "gemini/user-prompt-submit/recorded-gemini-0.61.0-before-agent-replayed-reason.json",
        h.path(),
    );
    assert!(p["prompt"].as_str().unwrap().starts_with("evidence-gate:"));
    let run = h.hook(
        "user-prompt-submit",
        &["--host", "gemini", "--with-ultrawork"],
        &p,
        &clean_env(),
    );
    assert_allow(&run);
    // Honest use: a user's own prompt naming ulw-loop still gets it.
    let mut q = p.clone();
    q["prompt"] = json!("please run the ulw-loop on this");
    let run = h.hook(
        "user-prompt-submit",
        &["--host", "gemini", "--with-ultrawork"],
        &q,
        &clean_env(),
    );
    assert!(context_text(&run).contains("ULTRAWORK MODE ENABLED!"));
}

/// Which plan the ultrawork decision follows is read as the Stop hook reads
/// it: from a plan's bound view when its ledger vouches for one, so a large
/// engine-written plan is not read (the hook stays under its read budget at
/// any plan size). The decision is the one the plan gives: a live ulw-loop
/// plan lets the injection through.
#[test]
fn ultrawork_decides_from_a_bound_view_without_reading_a_large_plan() {
    let h = HookRepo::new();
    let brief: String = (0..300)
        .map(|i| {
            format!("- part {i} of the service, with a title long enough to weigh something\n")
        })
        .collect();
    engine_plan_of(&h, &brief);
    let plan = h.join(&format!("{ULW}/{SID}/goals.json"));
    let plan_bytes = std::fs::metadata(&plan).unwrap().len();
    assert!(plan_bytes > 256 * 1024, "{plan_bytes}");
    let report = h.join("io-report.jsonl");
    let run = prompt_env(
        &h,
        &["--with-ultrawork"],
        &ulw(&h),
        &[("EVIDENCE_GATE_IO_REPORT", report.to_str().unwrap())],
    );
    assert!(context_text(&run).starts_with("<ultrawork-mode>"));
    let r = last_io_report(&report);
    if let Some(bytes) = r["file_bytes"].as_u64() {
        assert!(
            bytes < plan_bytes,
            "{bytes} bytes read beside a {plan_bytes}-byte plan"
        );
    }
    assert!(h.diagnostics().is_empty());
}
