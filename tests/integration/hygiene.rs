//! Threat-model I4 and I6 regressions (issue 13): evidence must prove
//! something other than itself, a copied receipt stays a copy whatever its
//! spacing, and text means what it shows. Each attack sits next to the
//! honest use it must not break.

use serde_json::{Value, json};

use crate::common::Repo;
use crate::evidence_cli::{payload, verify};
use crate::hooks_support::*;

fn codes(run: &crate::common::Run) -> Vec<String> {
    run.codes()
}

// --- I4: reuse protection on the normalized digest --------------------------------

#[test]
fn a_copied_receipt_with_one_space_added_is_reused() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    // Another worker copies it: one space added, CRLF line ending, a
    // zero-width space. Same words, so still RECEIPT_REUSED.
    let copy = RECEIPT_TEXT.replacen(' ', "  ", 1) + "\r\n\u{200B}";
    h.write(".omo/evidence/copy.md", &copy);
    let mut other = h.codex_receipt(".omo/evidence/copy.md");
    other["agent_id"] = json!("agent-2");
    let reason = blocked_with(&h, &other, "RECEIPT_REUSED");
    assert!(reason.contains(WORKER), "{reason}");
    // Honest use: the same worker's re-fire passes, and the second worker's
    // own receipt passes.
    assert_allow(&h.stop(&h.codex_receipt(R)));
    h.write(
        ".omo/evidence/own.md",
        "Changed src/parser.rs to reject empty keys; ran `cargo test parser`: 7 passed, 0 failed.",
    );
    assert_allow(&h.stop(&{
        let mut p = h.codex_receipt(".omo/evidence/own.md");
        p["agent_id"] = json!("agent-2");
        p
    }));
    let accepted: Vec<Value> = h
        .ledger()
        .into_iter()
        .filter(|e| e["kind"] == "receipt_accepted")
        .collect();
    assert_eq!(accepted.len(), 3);
    assert!(accepted.iter().all(|e| {
        e["receipt"]["normalized_sha256"]
            .as_str()
            .is_some_and(|s| s.len() == 64)
    }));
}

#[test]
fn a_copied_payload_rebound_to_another_agent_is_reused() {
    let h = HookRepo::new();
    h.write("src/lib.rs", "pub fn f() {}\n");
    let mine = payload(json!([{"path": "src/lib.rs"}]));
    h.write(".omo/evidence/p.json", serde_json::to_vec(&mine).unwrap());
    assert_allow(&h.stop(&h.codex_receipt(".omo/evidence/p.json")));
    let mut copy = mine.clone();
    copy["agent"] = json!({"id": "agent-2"});
    h.write(
        ".omo/evidence/q.json",
        serde_json::to_string_pretty(&copy).unwrap(),
    );
    let mut other = h.codex_receipt(".omo/evidence/q.json");
    other["agent_id"] = json!("agent-2");
    blocked_with(&h, &other, "RECEIPT_REUSED");
}

// --- I6: blank means nothing shows ------------------------------------------------

#[test]
fn a_summary_or_by_made_of_invisible_characters_is_blank() {
    let r = Repo::new();
    r.write("src/lib.rs", "pub fn f() {}\n");
    for (field, value) in [
        ("summary", "\u{200B}"),
        ("summary", "\u{0}"),
        ("summary", "\u{FEFF}\u{2060} \u{200D}"),
        ("by", "\u{200B}"),
        ("by", "\u{0}"),
    ] {
        let mut p = payload(json!([{"path": "src/lib.rs"}]));
        if field == "by" {
            p["verification"]["by"] = json!(value);
        } else {
            p[field] = json!(value);
        }
        let run = verify(&r, &p, &[]);
        assert_eq!(run.code, 1, "{field}={value:?}: {}", run.stdout);
        assert!(
            codes(&run).contains(&"EVIDENCE_SCHEMA_INVALID".to_owned()),
            "{field}={value:?}: {:?}",
            codes(&run)
        );
    }
    // A placeholder hidden by invisible characters is still a placeholder.
    let mut p = payload(json!([{"path": "src/lib.rs"}]));
    p["summary"] = json!("T\u{200B}O\u{2060}D\u{0}O");
    let run = verify(&r, &p, &[]);
    assert_eq!(codes(&run), ["PLACEHOLDER_TEXT"], "{}", run.stdout);
    // Honest use: a normal non-ASCII summary and `by` pass.
    let mut p = payload(json!([{"path": "src/lib.rs"}]));
    p["summary"] = json!("Überprüft: 完了");
    p["verification"]["by"] = json!("Prüfer – 検証者");
    let run = verify(&r, &p, &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn a_receipt_padded_with_invisible_characters_is_too_short() {
    let h = HookRepo::new();
    let padded = format!("ok{}", "\u{200B}".repeat(60));
    h.write(".omo/evidence/r.md", &padded);
    blocked_with(
        &h,
        &h.codex_receipt(".omo/evidence/r.md"),
        "RECEIPT_TOO_SHORT",
    );
    // Honest use: a real receipt in another script passes.
    h.write(
        ".omo/evidence/de.md",
        "Überprüft: src/limiter.rs begrenzt Anmeldeversuche; `cargo test limiter`: 12 bestanden. 完了",
    );
    let mut p = h.codex_receipt(".omo/evidence/de.md");
    p["agent_id"] = json!("agent-2");
    assert_allow(&h.stop(&p));
}

#[test]
fn goal_engine_text_inputs_made_of_invisible_characters_are_blank() {
    let r = Repo::new();
    let run = r.run(
        "evidence-gate",
        &[
            "ulw-loop",
            "create-goals",
            "--brief",
            "\u{200B}\u{FEFF}",
            "--json",
        ],
        None,
    );
    assert_ne!(run.code, 0, "{} {}", run.stdout, run.stderr);
    assert!(
        format!("{}{}", run.stdout, run.stderr).contains("ULW_LOOP_BRIEF_REQUIRED"),
        "{} {}",
        run.stdout,
        run.stderr
    );
    // Honest use: a non-ASCII brief creates the plan.
    let run = r.run(
        "evidence-gate",
        &[
            "ulw-loop",
            "create-goals",
            "--brief",
            "Überprüfung des Parsers: 完了",
            "--json",
        ],
        None,
    );
    assert_eq!(run.code, 0, "{} {}", run.stdout, run.stderr);
}
