//! Every `RECEIPT_*` finding code through the real binary, and structured
//! receipts verified as evidence payload v1 (hooks.md §3.3–§3.6).

use serde_json::json;

use crate::hooks_support::*;

// --- Every RECEIPT_* code ---------------------------------------------------------

#[test]
fn placeholder_token_and_content() {
    let h = HookRepo::new();
    blocked_fresh(&h, &h.codex_receipt("<path>"), "RECEIPT_PLACEHOLDER");
    h.write(
        ".omo/evidence/p.md",
        "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do.",
    );
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/p.md"),
        "RECEIPT_PLACEHOLDER",
    );
}

#[test]
fn lexically_invalid_paths() {
    let h = with_receipt();
    for t in [
        ".omo/evidence/../evidence/receipt.md",
        "~/receipt.md",
        ".omo/evidence/sub/",
        ".omo\\evidence\\receipt.md",
    ] {
        blocked_fresh(&h, &h.codex_receipt(t), "RECEIPT_PATH_INVALID");
    }
}

#[test]
fn paths_outside_the_evidence_root() {
    let h = with_receipt();
    h.write("src/lib.rs", RECEIPT_TEXT);
    for t in [
        "src/lib.rs",
        "/etc/passwd",
        ".omo/evidencex/r.md",
        ".omo/evidence",
    ] {
        blocked_fresh(&h, &h.codex_receipt(t), "RECEIPT_OUTSIDE_ROOT");
    }
    // Absolute paths inside cwd are accepted.
    let abs = h.join(R);
    assert_allow(&h.stop(&h.codex_receipt(abs.to_str().unwrap())));
}

#[test]
fn symlinked_leaf_and_symlinked_evidence_root() {
    let h = HookRepo::new();
    h.write("elsewhere.md", RECEIPT_TEXT);
    h.repo
        .symlink("../../elsewhere.md", ".omo/evidence/link.md");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/link.md"),
        "RECEIPT_SYMLINK",
    );
    let h = HookRepo::new();
    std::fs::remove_dir(h.join(".omo/evidence")).unwrap();
    h.write("real-evidence/r.md", RECEIPT_TEXT);
    h.repo.symlink("../real-evidence", ".omo/evidence");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/r.md"),
        "RECEIPT_SYMLINK",
    );
}

#[test]
fn hard_linked_receipt() {
    let h = HookRepo::new();
    h.write("outside.md", RECEIPT_TEXT);
    std::fs::hard_link(h.join("outside.md"), h.join(".omo/evidence/hl.md")).unwrap();
    blocked_with(
        &h,
        &h.codex_receipt(".omo/evidence/hl.md"),
        "RECEIPT_HARDLINK",
    );
}

#[test]
fn missing_directory_fifo_and_empty() {
    let h = HookRepo::new();
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/none.md"),
        "RECEIPT_NOT_FOUND",
    );
    h.repo.mkdir(".omo/evidence/dir");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/dir"),
        "RECEIPT_NOT_REGULAR",
    );
    let fifo = h.join(".omo/evidence/fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/fifo"),
        "RECEIPT_NOT_REGULAR",
    );
    h.write(".omo/evidence/empty.md", "");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/empty.md"),
        "RECEIPT_EMPTY",
    );
}

#[test]
fn unreadable_receipt() {
    let h = HookRepo::new();
    for d in ["", ".omo", ".omo/evidence"] {
        chmod(&h.join(d), 0o777);
    }
    h.write(".omo/evidence/locked.md", RECEIPT_TEXT);
    chmod(&h.join(".omo/evidence/locked.md"), 0o000);
    let run = h.run_with(
        &["hook", "subagent-stop"],
        Stdin::Bytes(
            h.codex_receipt(".omo/evidence/locked.md")
                .to_string()
                .as_bytes(),
        ),
        Stdout::Piped,
        &[],
        true,
    );
    let reason = block_reason(&run);
    assert_eq!(reason_codes(&reason), ["RECEIPT_UNREADABLE"], "{reason}");
}

#[test]
fn too_large_not_text_and_too_short() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_receipt_bytes":1024}}"#,
    );
    h.write(".omo/evidence/big.md", "x".repeat(2000));
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/big.md"),
        "RECEIPT_TOO_LARGE",
    );
    h.write(
        ".omo/evidence/bin.md",
        b"\xff\xfe\x00\x01 not text at all, just bytes here...",
    );
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/bin.md"),
        "RECEIPT_NOT_TEXT",
    );
    h.write(".omo/evidence/short.md", "  done, tests pass  \n");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/short.md"),
        "RECEIPT_TOO_SHORT",
    );
}

#[test]
fn structured_required_rejects_plain() {
    let h = with_receipt();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"require_structured":true}}"#,
    );
    blocked_with(&h, &h.codex_receipt(R), "RECEIPT_STRUCTURED_REQUIRED");
}

#[test]
fn spent_verification_budget_blocks() {
    let h = with_receipt();
    let run = h.stop_env(
        &h.codex_receipt(R),
        &[("EVIDENCE_GATE_TEST_FAULT", "budget-spent")],
    );
    let reason = block_reason(&run);
    assert_eq!(reason_codes(&reason), ["RECEIPT_VERIFY_TIMEOUT"]);
}

// --- Structured receipts -------------------------------------------------------------

fn sha256_of(bytes: &[u8]) -> String {
    evidence_gate::internals::sha256_hex(bytes)
}

fn payload(h: &HookRepo, extra: serde_json::Value) -> serde_json::Value {
    let lib = b"pub fn limiter() {}\n";
    h.write("src/limiter.rs", lib);
    let mut p = json!({
        "evidence": 1,
        "summary": "Added the login limiter; unit tests pass.",
        "deliverables": [{"path": "src/limiter.rs", "sha256": sha256_of(lib)}],
        "verification": {"verdict": "passed", "by": "lazycodex-worker-medium",
                         "checks": [{"command": "cargo test limiter", "exitCode": 0}]}
    });
    for (k, v) in extra.as_object().unwrap() {
        p[k] = v.clone();
    }
    p
}

#[test]
fn structured_receipt_is_verified_fully_and_bound() {
    let h = HookRepo::new();
    let p = payload(
        &h,
        json!({"agent": {"type": WORKER, "id": "agent-1", "session": "sess-1", "turn": "turn-1"}}),
    );
    h.write(".omo/evidence/e.evidence.json", p.to_string());
    assert_allow(&h.stop(&h.codex_receipt(".omo/evidence/e.evidence.json")));
    let l = h.ledger();
    assert_eq!(l[0]["receipt"]["form"], "payload");
    let files: Vec<&str> = l[0]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, [".omo/evidence/e.evidence.json", "src/limiter.rs"]);
}

#[test]
fn structured_receipt_bound_elsewhere_is_a_mismatch() {
    let h = HookRepo::new();
    let p = payload(&h, json!({"agent": {"session": "another-session"}}));
    h.write(".omo/evidence/e.json", p.to_string());
    blocked_with(
        &h,
        &h.codex_receipt(".omo/evidence/e.json"),
        "RECEIPT_BINDING_MISMATCH",
    );
}

#[test]
fn invalid_payloads_and_pipeline_findings_block() {
    let h = HookRepo::new();
    h.write(".omo/evidence/bad.json", "{\"evidence\": 1, ");
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/bad.json"),
        "RECEIPT_PAYLOAD_INVALID",
    );
    h.write(
        ".omo/evidence/schema.json",
        r#"{"evidence": 1, "summary": "x"}"#,
    );
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/schema.json"),
        "RECEIPT_PAYLOAD_INVALID",
    );
    let mut p = payload(&h, json!({}));
    p["deliverables"][0]["sha256"] = json!("0".repeat(64));
    h.write(".omo/evidence/mismatch.json", p.to_string());
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/mismatch.json"),
        "DIGEST_MISMATCH",
    );
    let mut p = payload(&h, json!({}));
    p["verification"]["verdict"] = json!("failed");
    h.write(".omo/evidence/failed.json", p.to_string());
    blocked_fresh(
        &h,
        &h.codex_receipt(".omo/evidence/failed.json"),
        "VERDICT_NOT_PASSED",
    );
}

#[test]
fn a_json_receipt_that_is_not_a_payload_is_plain() {
    let h = HookRepo::new();
    h.write(
        ".omo/evidence/notes.json",
        json!({"notes": RECEIPT_TEXT}).to_string(),
    );
    assert_allow(&h.stop(&h.codex_receipt(".omo/evidence/notes.json")));
    assert_eq!(h.ledger()[0]["receipt"]["form"], "plain");
}
