//! Threat-model I4 and I6 regressions: evidence must prove
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

// --- I4: evidence proves something other than itself ------------------------------

fn self_payload(deliverables: Value) -> Value {
    let mut p = payload(deliverables);
    p["summary"] = json!("Implemented the limiter and ran its tests; see the deliverables.");
    p
}

#[test]
fn a_structured_receipt_whose_only_deliverable_is_itself_is_refused() {
    let h = HookRepo::new();
    let path = ".omo/evidence/self.json";
    h.write(
        path,
        serde_json::to_vec(&self_payload(json!([{"path": path}]))).unwrap(),
    );
    let reason = blocked_fresh(&h, &h.codex_receipt(path), "EVIDENCE_SELF_ONLY");
    assert!(reason.contains("itself"), "{reason}");
    // A glob that would match the payload does not count it.
    let glob = ".omo/evidence/glob.json";
    h.write(
        glob,
        serde_json::to_vec(&self_payload(json!([{"glob": ".omo/evidence/glob.json"}]))).unwrap(),
    );
    blocked_fresh(&h, &h.codex_receipt(glob), "GLOB_TOO_FEW_MATCHES");
    // Deliverables only under the evidence root prove nothing either.
    h.write(".omo/evidence/log.txt", "cargo test: 12 passed\n");
    let logs = ".omo/evidence/logs.json";
    h.write(
        logs,
        serde_json::to_vec(&self_payload(
            json!([{"path": ".omo/evidence/log.txt"}, {"glob": ".omo/evidence/*.json"}]),
        ))
        .unwrap(),
    );
    blocked_fresh(&h, &h.codex_receipt(logs), "EVIDENCE_SELF_ONLY");
    assert!(h.ledger().is_empty(), "nothing accepted");
    // Honest use: a payload naming a real deliverable (beside its log) passes.
    h.write("src/limiter.rs", "pub fn limit() {}\n");
    let real = ".omo/evidence/real.json";
    h.write(
        real,
        serde_json::to_vec(&self_payload(
            json!([{"path": "src/limiter.rs"}, {"path": ".omo/evidence/log.txt"}]),
        ))
        .unwrap(),
    );
    assert_allow(&h.stop(&h.codex_receipt(real)));
    assert_eq!(h.ledger()[0]["kind"], "receipt_accepted");
}

#[test]
fn a_payload_proving_only_itself_fails_verify_evidence() {
    let r = Repo::new();
    let run = verify(&r, &self_payload(json!([{"path": "p.json"}])), &[]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(codes(&run), ["EVIDENCE_SELF_ONLY"], "{}", run.stdout);
    // Spelled with `./` and given under an explicit root: still itself.
    r.write(
        "p.json",
        serde_json::to_vec(&self_payload(json!([{"path": "p.json"}]))).unwrap(),
    );
    let run = r.run(
        "verify-evidence",
        &["--format", "json", "--root", ".", "./p.json"],
        None,
    );
    assert_eq!(codes(&run), ["EVIDENCE_SELF_ONLY"], "{}", run.stdout);
    // A glob matching only the payload matches nothing.
    let run = verify(&r, &self_payload(json!([{"glob": "*.json"}])), &[]);
    assert_eq!(codes(&run), ["GLOB_TOO_FEW_MATCHES"], "{}", run.stdout);
    // Honest use: real deliverables pass, and a glob over them still counts
    // every real match.
    r.write("src/lib.rs", "pub fn f() {}\n");
    r.write("src/main.rs", "fn main() {}\n");
    let run = verify(
        &r,
        &self_payload(json!([{"glob": "src/*.rs", "min": 2}, {"path": "p.json"}])),
        &[],
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
    let run = verify(&r, &self_payload(json!([{"glob": "**/*", "min": 2}])), &[]);
    assert_eq!(run.code, 0, "{}", run.stdout);
}

// --- I6: bidi controls in paths, unprintable text in reports -------------------------

#[test]
fn a_right_to_left_override_in_a_path_is_refused_and_never_echoed_raw() {
    let r = Repo::new();
    let evil = "src/\u{202E}sr.nim\u{2066}.rs";
    r.write(
        "p.json",
        serde_json::to_vec(&payload(json!([{"path": evil}]))).unwrap(),
    );
    for format in ["text", "github", "junit", "sarif", "json"] {
        let run = r.run("verify-evidence", &["--format", format, "p.json"], None);
        assert_eq!(run.code, 1, "{format}: {}", run.stdout);
        assert!(
            run.stdout.contains("PATH_CONTROL_CHAR"),
            "{format}: {}",
            run.stdout
        );
        if format != "json" {
            // JSON carries the value itself; the human and CI formats escape it.
            assert!(
                !run.stdout.contains('\u{202E}') && !run.stdout.contains('\u{2066}'),
                "{format}: raw bidi control in {:?}",
                run.stdout
            );
            // SARIF percent-encodes the location; the others escape as \u{..}.
            let escaped = if format == "sarif" {
                "src/%E2%80%AEsr.nim%E2%81%A6.rs"
            } else {
                "\\u{202e}"
            };
            assert!(run.stdout.contains(escaped), "{format}: {}", run.stdout);
        }
    }
    // A zero-width space is a valid path character but is escaped in the
    // annotation, so `src/a\u{200b}b.rs` never looks like `src/ab.rs`.
    r.write(
        "z.json",
        serde_json::to_vec(&payload(json!([{"path": "src/a\u{200B}b.rs"}]))).unwrap(),
    );
    let run = r.run("verify-evidence", &["--format", "github", "z.json"], None);
    assert!(!run.stdout.contains('\u{200B}'), "{:?}", run.stdout);
    assert!(
        run.stdout
            .contains("file=src/a\\u{200b}b.rs,title=FILE_MISSING"),
        "{}",
        run.stdout
    );
    // Honest use: non-ASCII paths are valid and printed as they are.
    r.write("docs/Überprüft 完了.md", "notes\n");
    r.write(
        "q.json",
        serde_json::to_vec(&payload(json!([{"path": "docs/Überprüft 完了.md"}]))).unwrap(),
    );
    let run = r.run("verify-evidence", &["--format", "github", "q.json"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
    r.write(
        "q2.json",
        serde_json::to_vec(&payload(json!([{"path": "docs/Fehlt 完了.md"}]))).unwrap(),
    );
    let run = r.run("verify-evidence", &["--format", "github", "q2.json"], None);
    assert!(
        run.stdout
            .contains("file=docs/Fehlt 完了.md,title=FILE_MISSING"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stdout.contains("\\u{"),
        "nothing to escape: {}",
        run.stdout
    );
}

#[test]
fn the_audit_catches_a_re_spaced_copy_the_claim_index_missed() {
    use evidence_gate::hooks::receipt::reuse::normalized_text;
    let h = HookRepo::new();
    let first = RECEIPT_TEXT.to_owned();
    let copy = RECEIPT_TEXT.replacen(' ', "  ", 1) + "\r\n";
    h.write(".omo/evidence/a.md", &first);
    h.write(".omo/evidence/b.md", &copy);
    let entry = |agent: &str, path: &str, text: &str| -> serde_json::Map<String, Value> {
        let sha = evidence_gate::internals::sha256_hex(text.as_bytes());
        serde_json::from_value(json!({
            "kind": "receipt_accepted", "ts": "2026-12-01T10:00:00.000Z", "host": "codex",
            "session_id": "sess-1", "agent_id": agent, "agent_type": WORKER, "turn_id": "turn-1",
            "rules_digest": "sha256:00",
            "receipt": {"path": path, "size": text.len(), "sha256": sha,
                        "normalized_sha256": normalized_text(text.as_bytes()),
                        "form": "plain", "freshness": "unchecked"},
            "files": [{"path": path, "size": text.len(), "sha256": sha}],
        }))
        .unwrap()
    };
    let entries = [
        entry("agent-1", ".omo/evidence/a.md", &first),
        entry("agent-2", ".omo/evidence/b.md", &copy),
    ];
    let (ledger, _) = evidence_gate::internals::chain_records(0, None, &entries);
    h.write(".omo/evidence-gate/ledger.jsonl", &ledger);
    let run = h.repo.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert_eq!(codes(&run), ["LEDGER_RECEIPT_REUSED"], "{}", run.stdout);
    // Honest use: two different receipts of two workers pass.
    let other = "Changed src/parser.rs to reject empty keys; ran `cargo test parser`: 7 passed.";
    h.write(".omo/evidence/b.md", other);
    let entries = [
        entry("agent-1", ".omo/evidence/a.md", &first),
        entry("agent-2", ".omo/evidence/b.md", other),
    ];
    let (ledger, _) = evidence_gate::internals::chain_records(0, None, &entries);
    h.write(".omo/evidence-gate/ledger.jsonl", &ledger);
    let run = h.repo.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(run.code, 0, "{}", run.stdout);
}
