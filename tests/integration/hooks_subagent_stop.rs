//! `evidence-gate hook subagent-stop`: the evidence receipt gate driven
//! through the real binary (hooks.md §3, regression tests §10 (1)–(4)).

use std::time::{Duration, SystemTime};

use serde_json::json;

use crate::hooks_support::*;

// --- Node-parity decisions -------------------------------------------------

#[test]
fn valid_receipt_passes_and_is_recorded() {
    let h = with_receipt();
    let run = h.stop(&h.codex_receipt(R));
    assert_allow(&run);
    let ledger = h.ledger();
    assert_eq!(ledger.len(), 1);
    let e = &ledger[0];
    assert_eq!(e["kind"], "receipt_accepted");
    assert_eq!(e["seq"], 1);
    assert_eq!(e["receipt"]["path"], R);
    assert_eq!(e["receipt"]["form"], "plain");
    assert_eq!(e["receipt"]["size"], RECEIPT_TEXT.len());
    assert_eq!(e["files"][0]["path"], R);
    assert_eq!(e["agent_type"], WORKER);
    assert!(e["rules_digest"].as_str().unwrap().starts_with("sha256:"));
    let sha = e["receipt"]["sha256"].as_str().unwrap();
    assert!(
        h.join(&format!(".omo/evidence-gate/receipts/{sha}.json"))
            .is_file()
    );
    assert!(h.attempts().is_empty());
    assert!(h.diagnostics().is_empty(), "an accept writes no diagnostic");
}

#[test]
fn no_receipt_blocks_with_directive() {
    let h = HookRepo::new();
    let reason = blocked_with(
        &h,
        &h.codex(Some("All done, tests pass.")),
        "RECEIPT_MISSING",
    );
    assert!(reason.contains("attempt 1 of 3"), "{reason}");
    assert!(reason.contains("EVIDENCE_RECORDED:"));
    assert!(reason.contains(".omo/evidence/"));
    assert!(reason.contains("All done, tests pass."));
    assert!(reason.len() <= 2048);
    let a = h.attempts();
    assert_eq!(a[0]["count"], 1);
    assert_eq!(a[0]["last_findings"], json!(["RECEIPT_MISSING"]));
}

#[test]
fn unrelated_agents_pass_without_state() {
    let h = HookRepo::new();
    for kind in ["lazycodex-explorer", "", "lazycodex-worker-highx"] {
        let mut p = h.codex(Some("no receipt"));
        p["agent_type"] = json!(kind);
        assert_allow(&h.stop(&p));
    }
    let mut p = h.codex(Some("no receipt"));
    p["agent_type"] = json!(null);
    assert_allow(&h.stop(&p));
    assert!(
        !h.join(".omo/evidence-gate").exists(),
        "no state, no diagnostic"
    );
}

#[test]
fn stop_hook_active_bypasses_nothing() {
    let h = HookRepo::new();
    let mut p = h.codex(Some("done"));
    p["stop_hook_active"] = json!(true);
    blocked_with(&h, &p, "RECEIPT_MISSING");
}

// --- (1) null fields ----------------------------------------------------------

#[test]
fn codex_null_last_message_blocks() {
    let h = HookRepo::new();
    let p = fixture("codex/subagent-stop/synth-null-last-message.json", h.path());
    let reason = blocked_with(&h, &p, "RECEIPT_MISSING");
    assert!(reason.contains("(none)"), "{reason}");
    let p = fixture("codex/subagent-stop/synth-null-transcripts.json", h.path());
    blocked_with(&h, &p, "RECEIPT_MISSING");
}

// --- (2) context pressure only from the child transcript tail --------------------

fn pressure_repo() -> HookRepo {
    let h = HookRepo::new();
    h.write(
        "transcripts/parent.jsonl",
        "{\"msg\":\"Context compacted\"}\n",
    );
    h.write(
        "transcripts/child.jsonl",
        "{\"msg\":\"working\"}\n{\"event\":\"context_length_exceeded\"}\n",
    );
    h.write("transcripts/clean.jsonl", "{\"msg\":\"working\"}\n");
    h
}

fn with_transcripts(h: &HookRepo, msg: &str, parent: &str, child: &str) -> serde_json::Value {
    let mut p = h.codex(Some(msg));
    p["transcript_path"] = json!(h.join(parent).to_str().unwrap());
    p["agent_transcript_path"] = json!(h.join(child).to_str().unwrap());
    p
}

#[test]
fn parent_transcript_marker_releases_no_worker() {
    let h = pressure_repo();
    let p = with_transcripts(
        &h,
        "done",
        "transcripts/parent.jsonl",
        "transcripts/clean.jsonl",
    );
    blocked_with(&h, &p, "RECEIPT_MISSING");
}

#[test]
fn child_tail_marker_releases_and_records_a_waiver() {
    let h = pressure_repo();
    let p = with_transcripts(
        &h,
        "done",
        "transcripts/clean.jsonl",
        "transcripts/child.jsonl",
    );
    assert_allow(&h.stop(&p));
    assert_eq!(h.diag_codes(), ["SUBAGENT_CONTEXT_PRESSURE"]);
    assert_eq!(h.diagnostics()[0]["level"], "info");
    let l = h.ledger();
    assert_eq!(l[0]["kind"], "receipt_waived");
    assert_eq!(l[0]["reason"], "context_pressure");
    assert_eq!(l[0]["findings"][0]["code"], "RECEIPT_MISSING");
    assert!(h.attempts().is_empty());
}

#[test]
fn marker_only_in_final_message_does_not_release() {
    let h = pressure_repo();
    let p = with_transcripts(
        &h,
        "context compacted, so I stop here",
        "transcripts/clean.jsonl",
        "transcripts/clean.jsonl",
    );
    blocked_with(&h, &p, "RECEIPT_MISSING");
    // Even with a marker in the child's tail, quoting one is no escape.
    let p = with_transcripts(
        &h,
        "CONTEXT_LENGTH_EXCEEDED",
        "transcripts/clean.jsonl",
        "transcripts/child.jsonl",
    );
    blocked_with(&h, &p, "RECEIPT_MISSING");
}

#[test]
fn marker_outside_the_child_tail_does_not_release() {
    let h = HookRepo::new();
    let mut big = String::from("{\"msg\":\"context compacted\"}\n");
    let line = format!("{{\"msg\":\"{}\"}}\n", "x".repeat(1000));
    while big.len() < 300 * 1024 {
        big.push_str(&line);
    }
    h.write("transcripts/child.jsonl", &big);
    let p = with_transcripts(
        &h,
        "done",
        "transcripts/child.jsonl",
        "transcripts/child.jsonl",
    );
    blocked_with(&h, &p, "RECEIPT_MISSING");
}

#[test]
fn claude_child_transcript_marker_releases() {
    let h = HookRepo::new();
    h.repo.write(
        "transcripts/subagents/agent-a1b2c3d4.jsonl",
        "{\"type\":\"system\",\"content\":\"Your input exceeds the context window\"}\n",
    );
    let p = fixture(
        "claude-code/subagent-stop/synth-stop-hook-active-absent.json",
        h.path(),
    );
    assert_allow(&h.stop_env(&p, &[("CLAUDE_PROJECT_DIR", h.path().to_str().unwrap())]));
    assert_eq!(h.diag_codes(), ["SUBAGENT_CONTEXT_PRESSURE"]);
    assert_eq!(h.diagnostics()[0]["host"], "claude-code");
    assert_eq!(h.diagnostics()[0]["host_source"], "env");
}

// --- (3) last receipt wins, reuse, staleness ------------------------------------

#[test]
fn last_receipt_beats_an_earlier_quoted_one() {
    let h = with_receipt();
    let msg = "The directive said `EVIDENCE_RECORDED: <path>`; earlier I wrote\n\
               EVIDENCE_RECORDED: .omo/evidence/missing-old.md\nNow fixed.\n\
               EVIDENCE_RECORDED: .omo/evidence/receipt.md";
    assert_allow(&h.stop(&h.codex(Some(msg))));
    let l = h.ledger();
    assert_eq!(l[0]["kind"], "receipt_accepted");
    assert_eq!(l[0]["earlier_receipts"], 2);
}

#[test]
fn second_agents_identical_receipt_is_reused() {
    let h = with_receipt();
    h.write(".omo/evidence/copy.md", RECEIPT_TEXT);
    assert_allow(&h.stop(&h.codex_receipt(R)));
    // A re-fire of the same stop is accepted again.
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let mut other = h.codex_receipt(".omo/evidence/copy.md");
    other["agent_id"] = json!("agent-2");
    let reason = blocked_with(&h, &other, "RECEIPT_REUSED");
    assert!(
        reason.contains(WORKER),
        "names the earlier agent type: {reason}"
    );
    // The same agent in another turn may not reuse it either.
    let mut later = h.codex_receipt(R);
    later["turn_id"] = json!("turn-2");
    blocked_with(&h, &later, "RECEIPT_REUSED");
}

/// A claim torn by a crash between create and write (an empty file under
/// the receipt's digest) claims nothing: the stop it belonged to is not
/// locked out as "reused", and the next accept writes a whole claim.
#[test]
fn a_torn_reuse_claim_claims_nothing_and_is_replaced() {
    let h = with_receipt();
    let digest = evidence_gate::digest::sha256_hex(RECEIPT_TEXT.as_bytes());
    let claim = format!(".omo/evidence-gate/receipts/{digest}.json");
    h.write(&claim, "");
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let rec: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(h.join(&claim)).unwrap())
            .expect("a whole claim replaced the torn one");
    assert_eq!(rec["path"], R, "{rec}");
    // And it protects again: another agent's copy is reuse.
    h.write(".omo/evidence/copy.md", RECEIPT_TEXT);
    let mut other = h.codex_receipt(".omo/evidence/copy.md");
    other["agent_id"] = json!("agent-2");
    blocked_with(&h, &other, "RECEIPT_REUSED");
    let names: Vec<_> = std::fs::read_dir(h.join(".omo/evidence-gate/receipts"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, [format!("{digest}.json")], "no temp file is left");
}

#[test]
fn receipt_older_than_the_child_transcript_is_stale() {
    let h = with_receipt();
    let f = std::fs::File::options()
        .write(true)
        .open(h.join(R))
        .unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(3600))
        .unwrap();
    h.write("transcripts/child.jsonl", "{\"msg\":\"start\"}\n");
    let mut p = h.codex_receipt(R);
    p["agent_transcript_path"] = json!(h.join("transcripts/child.jsonl").to_str().unwrap());
    blocked_with(&h, &p, "RECEIPT_STALE");
    // Without a child transcript the check is skipped and the ledger says so.
    assert_allow(&h.stop(&h.codex_receipt(R)));
    assert_eq!(h.ledger()[0]["receipt"]["freshness"], "unchecked");
}

#[test]
fn fresh_receipt_records_checked_freshness() {
    let h = HookRepo::new();
    h.write("transcripts/child.jsonl", "{\"msg\":\"start\"}\n");
    h.write(R, RECEIPT_TEXT);
    let mut p = h.codex_receipt(R);
    p["agent_transcript_path"] = json!(h.join("transcripts/child.jsonl").to_str().unwrap());
    assert_allow(&h.stop(&p));
    assert_eq!(h.ledger()[0]["receipt"]["freshness"], "checked");
}

// --- (4) attempt cap and unwritable state ---------------------------------------

#[test]
fn three_blocks_then_override_and_notify() {
    let h = HookRepo::new();
    let p = h.codex(Some("done"));
    for n in 1..=3 {
        let reason = block_reason(&h.stop(&p));
        assert!(reason.contains(&format!("attempt {n} of 3")), "{reason}");
    }
    let run = h.stop(&p);
    assert_eq!(run.code, 0);
    let v = run.json();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["systemMessage"]);
    assert!(
        v["systemMessage"]
            .as_str()
            .unwrap()
            .contains("after 3 refusals")
    );
    let l = h.ledger();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["kind"], "receipt_override");
    assert_eq!(l[0]["count"], 3);
    assert_eq!(h.diag_codes(), ["SUBAGENT_CAP_REACHED"]);
    assert_eq!(h.diagnostics()[0]["level"], "warn");
    assert_eq!(h.diagnostics()[0]["outcome"], "notify");
    assert!(h.attempts().is_empty(), "the counter is cleared");
    // The next stop starts a fresh budget.
    assert!(block_reason(&h.stop(&p)).contains("attempt 1 of 3"));
}

#[test]
fn override_without_notify_is_a_silent_allow() {
    let h = HookRepo::new();
    h.user_rules(r#"{"subagent_stop":{"max_attempts":1,"notify_on_override":false}}"#);
    let p = h.codex(Some("done"));
    assert!(block_reason(&h.stop(&p)).contains("attempt 1 of 1"));
    assert_allow(&h.stop(&p));
    assert_eq!(h.diagnostics()[0]["outcome"], "allow");
}

#[test]
fn attempts_are_counted_per_session_and_agent() {
    let h = HookRepo::new();
    let p = h.codex(Some("done"));
    block_reason(&h.stop(&p));
    let mut other = h.codex(Some("done"));
    other["agent_id"] = json!("agent-2");
    assert!(block_reason(&h.stop(&other)).contains("attempt 1 of 3"));
    assert!(block_reason(&h.stop(&p)).contains("attempt 2 of 3"));
    assert_eq!(h.attempts().len(), 2);
}

#[test]
fn expired_counter_counts_zero() {
    let h = HookRepo::new();
    let p = h.codex(Some("done"));
    block_reason(&h.stop(&p));
    block_reason(&h.stop(&p));
    let dir = h.join(".omo/evidence-gate/attempts");
    let file = std::fs::read_dir(&dir)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut v: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    v["updated_at"] = json!("2020-01-01T00:00:00.000Z");
    std::fs::write(&file, v.to_string()).unwrap();
    assert!(block_reason(&h.stop(&p)).contains("attempt 1 of 3"));
}

#[test]
fn unwritable_state_never_blocks() {
    // A state directory that cannot be created (a file in its place).
    let h = HookRepo::new();
    h.write(".omo/evidence-gate", "not a directory");
    assert_allow(&h.stop(&h.codex(Some("done"))));
    // A read-only state directory, for a process that is not root.
    let h = HookRepo::new();
    let state = h.repo.mkdir(".omo/evidence-gate");
    chmod(h.path(), 0o755);
    chmod(&h.join(".omo"), 0o755);
    chmod(&state, 0o777);
    chmod(&h.join(".omo/evidence"), 0o755);
    let run_nobody = |p: &serde_json::Value| {
        h.run_with(
            &["hook", "subagent-stop"],
            Stdin::Bytes(p.to_string().as_bytes()),
            Stdout::Piped,
            &[],
            true,
        )
    };
    // Diagnostics are writable, the gate state is not.
    std::fs::create_dir(state.join("attempts")).unwrap();
    chmod(&state.join("attempts"), 0o555);
    for _ in 0..4 {
        assert_allow(&run_nobody(&h.codex(Some("done"))));
    }
    let codes = h.diag_codes();
    assert_eq!(codes.len(), 4, "{codes:?}");
    assert!(codes.iter().all(|c| c == "HOOK_STATE_IO"), "{codes:?}");
    // The whole state directory read-only: not even a diagnostic can be
    // written, and still nothing blocks.
    chmod(&state.join("attempts"), 0o755);
    chmod(&state, 0o555);
    for _ in 0..4 {
        assert_allow(&run_nobody(&h.codex(Some("done"))));
    }
    chmod(&state, 0o755);
}

#[test]
fn held_gate_lock_times_out_to_an_allow() {
    let h = HookRepo::new();
    let state = h.repo.mkdir(".omo/evidence-gate");
    let lock = std::fs::File::create(state.join(".mutation.lock")).unwrap();
    lock.lock().unwrap();
    assert_allow(&h.stop(&h.codex(Some("done"))));
    assert_eq!(h.diag_codes(), ["HOOK_LOCK_TIMEOUT"]);
    assert!(h.attempts().is_empty());
    lock.unlock().unwrap();
}

// --- Block reason rendering --------------------------------------------------------------

#[test]
fn block_reason_is_single_pass_and_bounded() {
    let h = HookRepo::new();
    let msg = format!("{{{{FINDINGS}}}} {}", "word ".repeat(2000));
    let reason = block_reason(&h.stop(&h.codex(Some(&msg))));
    assert!(reason.len() <= 2048, "{}", reason.len());
    assert!(reason.contains('…'));
    assert!(
        !reason.contains("{{FINDINGS}}"),
        "cut from the excerpt's start"
    );
    let h = HookRepo::new();
    let reason = block_reason(&h.stop(&h.codex(Some("ok {{FINDINGS}}"))));
    assert!(
        reason.contains("ok {{FINDINGS}}"),
        "inserted text is not rescanned"
    );
}

#[test]
fn custom_directive_template_from_rules() {
    let h = HookRepo::new();
    h.user_rules(r#"{"directives":{"short":"Refused {{ATTEMPT_COUNT}}/{{MAX_ATTEMPTS}}: {{FINDINGS}} -> {{RECEIPT_MARKER}}"},
            "subagent_stop":{"directive":"short"}}"#);
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(
        reason.starts_with("Refused 1/3: - RECEIPT_MISSING:"),
        "{reason}"
    );
}

// --- No full reads (hooks.md §8.3) ---------------------------------------------------

fn io_report(h: &HookRepo, p: &serde_json::Value) -> serde_json::Value {
    let report = h.state_home.path().join("io.jsonl");
    let _ = std::fs::remove_file(&report);
    let run = h.stop_env(p, &[("EVIDENCE_GATE_IO_REPORT", report.to_str().unwrap())]);
    assert_eq!(run.code, 0);
    read_jsonl(&report).pop().expect("one report line")
}

#[test]
fn transcripts_and_ledgers_are_read_only_at_their_tails() {
    let h = with_receipt();
    let line = format!("{{\"msg\":\"{}\"}}\n", "y".repeat(500));
    let big: String = std::iter::repeat_n(line.as_str(), 6000).collect();
    h.write("transcripts/child.jsonl", &big);
    h.write("transcripts/parent.jsonl", &big);
    let e: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(json!({"kind": "receipt_accepted", "pad": "z".repeat(300)}))
            .unwrap();
    let (ledger, _) = evidence_gate::ledger::chain_records(0, None, &vec![e; 10_000]);
    assert!(ledger.len() > 3 * 1024 * 1024);
    h.write(".omo/evidence-gate/ledger.jsonl", &ledger);
    let mut block = h.codex(Some("done"));
    block["agent_transcript_path"] = json!(h.join("transcripts/child.jsonl").to_str().unwrap());
    block["transcript_path"] = json!(h.join("transcripts/parent.jsonl").to_str().unwrap());
    let r = io_report(&h, &block);
    let reads = r["reads"].as_array().unwrap();
    assert_eq!(reads.len(), 1, "only the child transcript: {reads:?}");
    assert_eq!(reads[0]["bytes"], 65536);
    if cfg!(target_os = "linux") {
        assert!(r["file_bytes"].as_u64().unwrap() < 1024 * 1024, "{r}");
    }
    let mut accept = h.codex_receipt(R);
    accept["agent_transcript_path"] = block["agent_transcript_path"].clone();
    let r = io_report(&h, &accept);
    assert!(
        r["reads"].as_array().unwrap().is_empty(),
        "a valid receipt reads no transcript"
    );
    if cfg!(target_os = "linux") {
        assert!(r["file_bytes"].as_u64().unwrap() < 1024 * 1024, "{r}");
    }
    assert_eq!(h.ledger().last().unwrap()["seq"], 10_001);
}
