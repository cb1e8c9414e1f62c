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
    // The claim lives in the per-user state, the accept is in the witness,
    // and the in-tree ledger is its byte-identical mirror.
    assert!(
        h.hook_state()
            .join(format!("receipts/{sha}.json"))
            .is_file()
    );
    assert!(!h.join(".omo/evidence-gate/receipts").exists());
    assert_eq!(h.witness(), ledger);
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
fn a_child_tail_marker_outside_a_host_record_releases_no_worker() {
    // Threat-model I5 replaces the old "any marker in the child's tail"
    // escape: this synthetic line is no record a host is known to write,
    // so the worker is held to its receipt and nothing is waived.
    let h = pressure_repo();
    let p = with_transcripts(
        &h,
        "done",
        "transcripts/clean.jsonl",
        "transcripts/child.jsonl",
    );
    blocked_with(&h, &p, "RECEIPT_MISSING");
    assert!(h.ledger().is_empty(), "no waiver");
    assert!(
        !h.diag_codes()
            .contains(&"SUBAGENT_CONTEXT_PRESSURE".to_owned())
    );
}

#[test]
fn a_worker_printing_a_marker_in_a_shell_command_does_not_waive_its_receipt() {
    // The attack: `echo context_length_exceeded` lands in the child's
    // transcript as tool output (Codex rollout `function_call_output`,
    // Claude Code `tool_result`), right at the end of the tail.
    let h = HookRepo::new();
    h.write(
        "transcripts/codex-child.jsonl",
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"function_call\",\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":[\\\"echo\\\",\\\"context_length_exceeded\\\"]}\"}}\n\
         {\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"output\":\"context_length_exceeded\\nContext compacted\"}}\n",
    );
    h.write("transcripts/clean.jsonl", "{\"msg\":\"working\"}\n");
    let p = with_transcripts(
        &h,
        "done",
        "transcripts/clean.jsonl",
        "transcripts/codex-child.jsonl",
    );
    for _ in 0..3 {
        blocked_with(&h, &p, "RECEIPT_MISSING");
    }
    assert!(h.ledger().is_empty(), "never a waiver");
    h.repo.write(
        "transcripts/subagents/agent-a1b2c3d4.jsonl",
        "{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"tool_result\",\"content\":\"context_length_exceeded\"}]}}\n",
    );
    let p = fixture(
        "claude-code/subagent-stop/synth-stop-hook-active-absent.json",
        h.path(),
    );
    let run = h.stop_env(&p, &[("CLAUDE_PROJECT_DIR", h.path().to_str().unwrap())]);
    assert_eq!(reason_codes(&block_reason(&run)), ["RECEIPT_MISSING"]);
    // The honest path next to it: a valid receipt still passes.
    h.write(R, RECEIPT_TEXT);
    let mut ok = h.codex_receipt(R);
    ok["agent_transcript_path"] = json!(h.join("transcripts/codex-child.jsonl").to_str().unwrap());
    assert_allow(&h.stop(&ok));
    assert_eq!(h.ledger().last().unwrap()["kind"], "receipt_accepted");
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
fn claude_child_transcript_marker_without_a_recorded_shape_releases_no_worker() {
    // Claude Code's compaction record has not been captured from the real
    // host: the escape is off for it (threat-model §6, fail closed).
    let h = HookRepo::new();
    h.repo.write(
        "transcripts/subagents/agent-a1b2c3d4.jsonl",
        "{\"type\":\"system\",\"content\":\"Your input exceeds the context window\"}\n",
    );
    let p = fixture(
        "claude-code/subagent-stop/synth-stop-hook-active-absent.json",
        h.path(),
    );
    let run = h.stop_env(&p, &[("CLAUDE_PROJECT_DIR", h.path().to_str().unwrap())]);
    assert_eq!(reason_codes(&block_reason(&run)), ["RECEIPT_MISSING"]);
    assert!(h.ledger().is_empty());
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
    let digest = evidence_gate::internals::sha256_hex(RECEIPT_TEXT.as_bytes());
    let claim = h.hook_state().join(format!("receipts/{digest}.json"));
    std::fs::create_dir_all(claim.parent().unwrap()).unwrap();
    std::fs::write(&claim, "").unwrap();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let rec: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&claim).unwrap())
        .expect("a whole claim replaced the torn one");
    assert_eq!(rec["path"], R, "{rec}");
    // And it protects again: another agent's copy is reuse.
    h.write(".omo/evidence/copy.md", RECEIPT_TEXT);
    let mut other = h.codex_receipt(".omo/evidence/copy.md");
    other["agent_id"] = json!("agent-2");
    blocked_with(&h, &other, "RECEIPT_REUSED");
    let names: Vec<_> = std::fs::read_dir(h.hook_state().join("receipts"))
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
    let dir = h.hook_state().join("attempts");
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

// --- Trust state out of the agent's reach (threat-model.md §3, I2) -------------

/// Attack: a regular file where `.omo/evidence-gate/` should be.
/// Before, the hook allowed every receipt-less stop with no record; now the
/// counters live in the per-user state, and the mirror that cannot be kept
/// blocks with `HOOK_STATE_IO`, the file and the fix, telling the user.
#[test]
fn a_file_in_place_of_the_state_dir_still_blocks() {
    let h = HookRepo::new();
    h.write(".omo/evidence-gate", "not a directory");
    for _ in 0..4 {
        let (reason, message) = halt_reason(&h.stop(&h.codex(Some("done"))));
        assert!(reason.contains("HOOK_STATE_IO"), "{reason}");
        assert!(reason.contains(".omo/evidence-gate"), "{reason}");
        assert!(message.contains("the user must act"), "{message}");
        assert!(message.contains("evidence-gate doctor --fix"), "{message}");
    }
}

/// Attack: a regular file where `attempts/` was kept, a FIFO as
/// `.mutation.lock` and a future-dated lock file. None of them is hook
/// state any more: the stop is blocked and counted as for anyone.
#[test]
fn planted_locks_and_counters_in_the_tree_change_nothing() {
    let h = HookRepo::new();
    h.write(".omo/evidence-gate/attempts", "junk");
    let lock = h.join(".omo/evidence-gate/.mutation.lock");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&lock)
            .status()
            .unwrap()
            .success()
    );
    let reason = blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
    assert!(reason.contains("attempt 1 of 3"), "{reason}");
    std::fs::remove_file(&lock).unwrap();
    h.write(
        ".omo/evidence-gate/.mutation.lock",
        r#"{"pid":1,"acquiredAt":"2099-01-01T00:00:00.000Z"}"#,
    );
    let f = std::fs::File::options().write(true).open(&lock).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(3600 * 24 * 365))
        .unwrap();
    let reason = blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
    assert!(reason.contains("attempt 2 of 3"), "{reason}");
    assert_eq!(h.attempts()[0]["count"], 2);
    assert!(h.diag_codes().is_empty(), "{:?}", h.diag_codes());
}

/// The per-user counter cannot be written: blocked with `HOOK_STATE_IO`
/// forever (no release without the counter), the user told to act.
#[test]
fn an_unwritable_counter_blocks_with_state_io() {
    let h = HookRepo::new();
    std::fs::create_dir_all(h.hook_state()).unwrap();
    std::fs::write(h.hook_state().join("attempts"), "junk").unwrap();
    for _ in 0..5 {
        let (reason, _) = halt_reason(&h.stop(&h.codex(Some("done"))));
        assert!(reason.contains("HOOK_STATE_IO"), "{reason}");
        assert!(reason.contains("attempts"), "{reason}");
    }
    assert!(h.ledger().is_empty(), "no override was recorded");
}

/// A per-user state directory inside the workspace (XDG_STATE_HOME pointed
/// into the repository) is refused: blocked, with the fix.
#[test]
fn a_state_home_inside_the_workspace_blocks() {
    let h = HookRepo::new();
    let inside = h.join("state");
    let run = h.stop_env(
        &h.codex(Some("done")),
        &[("XDG_STATE_HOME", inside.to_str().unwrap())],
    );
    let (reason, message) = halt_reason(&run);
    assert!(reason.contains("HOOK_STATE_IO"), "{reason}");
    assert!(message.contains("XDG_STATE_HOME"), "{message}");
}

#[test]
fn held_gate_lock_times_out_to_a_block() {
    let h = HookRepo::new();
    std::fs::create_dir_all(h.hook_state()).unwrap();
    let lock = std::fs::File::create(h.hook_state().join("gate.lock")).unwrap();
    lock.lock().unwrap();
    let (reason, message) = halt_reason(&h.stop(&h.codex(Some("done"))));
    assert!(reason.contains("HOOK_LOCK_TIMEOUT"), "{reason}");
    assert!(message.contains("the user must act"), "{message}");
    assert_eq!(h.diag_codes(), ["HOOK_LOCK_TIMEOUT"]);
    assert!(h.attempts().is_empty());
    lock.unlock().unwrap();
}

/// Honest use: a fresh repository with no prior state blocks, counts,
/// releases at the cap and records the override in witness and mirror.
#[test]
fn the_cap_release_is_recorded_in_witness_and_mirror() {
    let h = HookRepo::new();
    let p = h.codex(Some("done"));
    for n in 1..=3 {
        assert!(block_reason(&h.stop(&p)).contains(&format!("attempt {n} of 3")));
    }
    h.stop(&p);
    let ledger = h.ledger();
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0]["kind"], "receipt_override");
    assert_eq!(h.witness(), ledger);
}

/// Attack: deleting or truncating the in-tree gate ledger. The
/// witness restores it and `GATE_LEDGER_REWOUND` is recorded in both.
#[test]
fn a_deleted_or_truncated_mirror_is_restored_and_recorded() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let mirror = h.join(".omo/evidence-gate/ledger.jsonl");
    std::fs::remove_file(&mirror).unwrap();
    blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
    let ledger = h.ledger();
    assert_eq!(ledger[0]["kind"], "receipt_accepted", "{ledger:?}");
    assert_eq!(ledger[1]["kind"], "gate_ledger_rewound");
    assert_eq!(ledger[1]["code"], "GATE_LEDGER_REWOUND");
    assert_eq!(ledger[1]["restored_records"], 1);
    assert_eq!(h.witness(), ledger);
    assert!(h.diag_codes().contains(&"GATE_LEDGER_REWOUND".to_owned()));
    // Truncated to nothing: restored again, with a second record.
    std::fs::write(&mirror, "").unwrap();
    blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
    let ledger = h.ledger();
    assert_eq!(ledger.len(), 3);
    assert_eq!(ledger[2]["kind"], "gate_ledger_rewound");
    assert_eq!(h.witness(), ledger);
    // The restored chain verifies.
    let home = h.state_home.path().to_str().unwrap();
    let run = h.repo.run_env(
        "verify-evidence",
        &["--format", "json"],
        None,
        &[("XDG_STATE_HOME", home), ("HOME", home)],
    );
    assert!(
        run.stdout.contains("GATE_LEDGER_REWOUND"),
        "CI sees the rewind: {}{}",
        run.stdout,
        run.stderr
    );
}

/// Attack: a hand-written mirror line the witness never wrote.
/// It is dropped from the mirror, `GATE_LEDGER_FORGED` is recorded in both,
/// and no later decision sees it.
#[test]
fn a_forged_mirror_line_is_dropped_and_recorded() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let mirror = h.join(".omo/evidence-gate/ledger.jsonl");
    let mut bytes = std::fs::read(&mirror).unwrap();
    let last = evidence_gate::internals::record_hash(bytes.strip_suffix(b"\n").unwrap());
    let e: serde_json::Map<String, serde_json::Value> = serde_json::from_value(json!({
        "kind": "receipt_accepted", "ts": "2099-01-01T00:00:00.000Z",
        "receipt": {"path": "src/stub.rs", "sha256": "0".repeat(64)}
    }))
    .unwrap();
    let (forged, _) = evidence_gate::internals::chain_records(1, Some(&last), &[e]);
    bytes.extend_from_slice(&forged);
    std::fs::write(&mirror, &bytes).unwrap();
    blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
    let ledger = h.ledger();
    assert_eq!(ledger.len(), 2, "{ledger:?}");
    assert_eq!(ledger[1]["kind"], "gate_ledger_forged");
    assert_eq!(ledger[1]["forged_records"], 1);
    assert_eq!(
        ledger[1]["forged_sha256"][0],
        evidence_gate::internals::record_hash(forged.strip_suffix(b"\n").unwrap())
    );
    assert!(
        !std::fs::read_to_string(&mirror)
            .unwrap()
            .contains("stub.rs")
    );
    assert_eq!(h.witness(), ledger);
    assert!(h.diag_codes().contains(&"GATE_LEDGER_FORGED".to_owned()));
}

/// Migration: counters and claims an earlier version kept in the tree are
/// read once (larger counter, union of claims), then never again.
#[test]
fn old_in_tree_counters_and_claims_are_migrated_once() {
    let h = with_receipt();
    let p = h.codex(Some("done"));
    let name = {
        // The counter file name of session `sess-1`, agent `agent-1`.
        block_reason(&h.stop(&p));
        let dir = h.hook_state().join("attempts");
        let n = std::fs::read_dir(&dir)
            .unwrap()
            .next()
            .unwrap()
            .unwrap()
            .file_name();
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::remove_file(h.hook_state().join("migrated.json")).unwrap();
        n.into_string().unwrap()
    };
    let now = evidence_gate::internals::rfc3339_ms(SystemTime::now());
    h.write(
        &format!(".omo/evidence-gate/attempts/{name}"),
        json!({"v": 1, "count": 2, "updated_at": now}).to_string(),
    );
    let digest = evidence_gate::internals::sha256_hex(b"another receipt");
    h.write(
        &format!(".omo/evidence-gate/receipts/{digest}.json"),
        json!({"v": 1, "path": "x.md", "session_id": "s-old", "agent_id": "a-old"}).to_string(),
    );
    assert!(block_reason(&h.stop(&p)).contains("attempt 3 of 3"));
    assert!(
        h.hook_state()
            .join(format!("receipts/{digest}.json"))
            .is_file()
    );
    assert!(h.hook_state().join("migrated.json").is_file());
    // After the migration the tree is never read again: resetting the old
    // counter does not reset the per-user one.
    h.write(
        &format!(".omo/evidence-gate/attempts/{name}"),
        json!({"v": 1, "count": 0, "updated_at": now}).to_string(),
    );
    h.stop(&p);
    assert_eq!(h.ledger().last().unwrap()["kind"], "receipt_override");
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
    let (ledger, _) = evidence_gate::internals::chain_records(0, None, &vec![e; 10_000]);
    assert!(ledger.len() > 3 * 1024 * 1024);
    h.write(".omo/evidence-gate/ledger.jsonl", &ledger);
    // The witness agrees with its mirror: only their tails are compared.
    std::fs::create_dir_all(h.hook_state()).unwrap();
    std::fs::write(h.hook_state().join("ledger.jsonl"), &ledger).unwrap();
    let mut block = h.codex(Some("done"));
    block["agent_transcript_path"] = json!(h.join("transcripts/child.jsonl").to_str().unwrap());
    block["transcript_path"] = json!(h.join("transcripts/parent.jsonl").to_str().unwrap());
    let r = io_report(&h, &block);
    let reads = r["reads"].as_array().unwrap();
    // Only the child transcript's tail, and only for a host whose compaction
    // record shape is pinned (threat-model I5).
    let pinned =
        evidence_gate::hooks::host_records::escape_enabled(evidence_gate::hooks::host::Host::Codex);
    assert_eq!(reads.len(), usize::from(pinned), "{reads:?}");
    if pinned {
        assert_eq!(reads[0]["bytes"], 65536);
        assert_eq!(reads[0]["path"], block["agent_transcript_path"]);
    }
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

// --- doctor --fix ----------------------------------------------------------------

fn doctor_checks(h: &HookRepo, args: &[&str]) -> Vec<serde_json::Value> {
    let mut a = vec!["doctor", "--json"];
    a.extend_from_slice(args);
    let run = h.run(&a, b"", &[]);
    let v: serde_json::Value =
        serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    v["checks"].as_array().unwrap().clone()
}

fn check_status(checks: &[serde_json::Value], id: &str) -> String {
    let c = checks
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no {id}: {checks:?}"));
    c["status"].as_str().unwrap().to_owned()
}

/// Without `--fix`, doctor reports and creates nothing.
#[test]
fn doctor_creates_no_state_without_fix() {
    let h = HookRepo::new();
    let checks = doctor_checks(&h, &[]);
    assert_eq!(check_status(&checks, "state.user"), "warn", "{checks:?}");
    assert!(!h.hook_state().exists());
    assert!(!h.join(".omo/evidence-gate").exists());
    let checks = doctor_checks(&h, &["--fix"]);
    assert_eq!(check_status(&checks, "state.user"), "ok", "{checks:?}");
    assert!(h.hook_state().join("attempts").is_dir());
}

/// The agent replaced `.omo/evidence-gate/` by a file: stops are blocked
/// (`HOOK_STATE_IO`) until `doctor --fix` removes it and restores the
/// mirror from the witness; then the gate works again.
#[test]
fn doctor_fix_removes_planted_junk_and_restores_the_mirror() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    std::fs::remove_dir_all(h.join(".omo/evidence-gate")).unwrap();
    h.write(".omo/evidence-gate", "junk");
    halt_reason(&h.stop(&h.codex(Some("done"))));
    let checks = doctor_checks(&h, &[]);
    assert_eq!(check_status(&checks, "state.tree"), "fail", "{checks:?}");
    assert!(
        h.join(".omo/evidence-gate").is_file(),
        "nothing changed without --fix"
    );
    let checks = doctor_checks(&h, &["--fix"]);
    assert_eq!(check_status(&checks, "state.tree"), "ok", "{checks:?}");
    let ledger = h.ledger();
    assert_eq!(ledger[0]["kind"], "receipt_accepted", "{ledger:?}");
    assert_eq!(ledger[1]["kind"], "gate_ledger_rewound");
    assert_eq!(h.witness(), ledger);
    blocked_with(&h, &h.codex(Some("done")), "RECEIPT_MISSING");
}
