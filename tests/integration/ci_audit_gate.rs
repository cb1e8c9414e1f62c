//! Repository mode on hook gate ledgers written by the real
//! `evidence-gate hook subagent-stop` (hooks.md §3.11): accepted receipts are
//! re-hashed, a digest accepted twice is caught, waivers and overrides warn
//! (and fail under `--strict`).

use serde_json::json;

use crate::ci_support::findings;
use crate::hooks_support::*;

const GATE_LEDGER: &str = ".omo/evidence-gate/ledger.jsonl";

fn audit(h: &HookRepo, extra: &[&str]) -> crate::common::Run {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    h.repo.run("verify-evidence", &args, None)
}

#[test]
fn an_accepted_receipt_is_re_hashed() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    let out = audit(&h, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = out.json();
    let report = &v["reports"][0];
    assert_eq!(report["kind"], "gate-ledger");
    assert_eq!(report["subject"], GATE_LEDGER);
    assert_eq!(report["files"][0]["path"], R);

    h.write(R, format!("{RECEIPT_TEXT} (edited after acceptance)"));
    let out = audit(&h, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "LEDGER_DIGEST_MISMATCH");
    assert_eq!(f[0].2.as_deref(), Some(R));
    assert_eq!(f[0].3["ledger"], GATE_LEDGER);
    assert_eq!(f[0].3["kind"], "receipt_accepted");

    std::fs::remove_file(h.join(R)).unwrap();
    let out = audit(&h, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["LEDGER_FILE_MISSING"]);
}

#[test]
fn a_structured_receipt_records_its_deliverables_and_is_audited_as_a_payload() {
    let h = HookRepo::new();
    let lib = b"pub fn limiter() {}\n";
    h.write("src/limiter.rs", lib);
    let payload = json!({
        "evidence": 1,
        "summary": "Added the login limiter; unit tests pass.",
        "deliverables": [{"path": "src/limiter.rs", "sha256": evidence_gate::internals::sha256_hex(lib)}],
        "verification": {"verdict": "passed", "by": WORKER, "checks": [{"command": "cargo test limiter", "exitCode": 0}]},
    });
    let rel = ".omo/evidence/G001/limiter.evidence.json";
    h.write(rel, payload.to_string());
    assert_allow(&h.stop(&h.codex_receipt(rel)));
    let out = audit(&h, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = out.json();
    let kinds: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["gate-ledger", "payload"]);
    assert_eq!(v["reports"][1]["subject"], rel);

    h.write("src/limiter.rs", "pub fn limiter() { todo!() }\n");
    let out = audit(&h, &[]);
    assert_eq!(out.code, 1);
    let mut codes = out.codes();
    codes.sort();
    assert_eq!(codes, ["DIGEST_MISMATCH", "LEDGER_DIGEST_MISMATCH"]);
}

#[test]
fn a_digest_accepted_for_two_agents_is_reused() {
    let h = with_receipt();
    assert_allow(&h.stop(&h.codex_receipt(R)));
    // The same stop firing again is not reuse.
    assert_allow(&h.stop(&h.codex_receipt(R)));
    assert_eq!(h.ledger().len(), 2);
    assert_eq!(audit(&h, &[]).code, 0);
    // A lost reuse index lets a second agent's identical receipt through;
    // the audit still catches it from the ledger.
    std::fs::remove_dir_all(h.hook_state().join("receipts")).unwrap();
    let mut other = h.codex_receipt(R);
    other["agent_id"] = json!("agent-2");
    assert_allow(&h.stop(&other));
    let out = audit(&h, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "LEDGER_RECEIPT_REUSED");
    assert_eq!(f[0].2.as_deref(), Some(R));
    assert_eq!(
        (f[0].3["ledgerLine"].as_u64(), f[0].3["firstLine"].as_u64()),
        (Some(3), Some(1))
    );
}

#[test]
fn waivers_warn_and_fail_under_strict() {
    // The waiver entry the hook appends on a host compaction record (no host
    // record shape is pinned yet, threat-model I5, so the entry is written
    // here in the hook's format).
    let h = HookRepo::new();
    let entry: serde_json::Map<String, serde_json::Value> = serde_json::from_value(json!({
        "kind": "receipt_waived", "ts": "2026-12-01T10:00:00.000Z", "host": "codex",
        "session_id": "sess-1", "agent_id": "agent-1", "agent_type": WORKER, "turn_id": "turn-1",
        "rules_digest": "sha256:00", "reason": "context_pressure",
        "findings": [{"code": "RECEIPT_MISSING", "path": null, "message": "no receipt"}],
    }))
    .unwrap();
    let (ledger, _) = evidence_gate::internals::chain_records(0, None, &[entry]);
    h.write(".omo/evidence-gate/ledger.jsonl", &ledger);
    assert_eq!(h.ledger()[0]["kind"], "receipt_waived");
    let out = audit(&h, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let f = findings(&out);
    assert_eq!(
        (f[0].0.as_str(), f[0].1.as_str()),
        ("LEDGER_RECEIPT_WAIVED", "warning")
    );
    assert_eq!(f[0].3["line"], 1);
    assert_eq!(f[0].3["findings"], json!(["RECEIPT_MISSING"]));
    let strict = audit(&h, &["--strict"]);
    assert_eq!(strict.code, 1);
    let f = findings(&strict);
    assert_eq!(
        (f[0].0.as_str(), f[0].1.as_str()),
        ("LEDGER_RECEIPT_WAIVED", "error")
    );
    let gh = h.repo.run("verify-evidence", &["--format", "github"], None);
    assert!(
        gh.stdout.starts_with(&format!(
            "::warning file={GATE_LEDGER},line=1,title=LEDGER_RECEIPT_WAIVED::"
        )),
        "{}",
        gh.stdout
    );
}

#[test]
fn overrides_warn_and_fail_under_strict() {
    let h = HookRepo::new();
    let p = h.codex(Some("done"));
    for _ in 0..3 {
        block_reason(&h.stop(&p));
    }
    h.stop(&p);
    assert_eq!(h.ledger()[0]["kind"], "receipt_override");
    let out = audit(&h, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let f = findings(&out);
    assert_eq!(
        (f[0].0.as_str(), f[0].1.as_str()),
        ("LEDGER_RECEIPT_OVERRIDE", "warning")
    );
    assert_eq!(f[0].3["count"], 3);
    let strict = audit(&h, &["--strict"]);
    assert_eq!(strict.code, 1);
    assert_eq!(strict.codes(), ["LEDGER_RECEIPT_OVERRIDE"]);
}

#[test]
fn an_edited_gate_ledger_breaks_its_chain() {
    let h = with_receipt();
    for agent in ["agent-1", "agent-2", "agent-3"] {
        h.write(R, format!("{RECEIPT_TEXT} ({agent})"));
        let mut p = h.codex_receipt(R);
        p["agent_id"] = json!(agent);
        assert_allow(&h.stop(&p));
    }
    let path = h.join(GATE_LEDGER);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replacen("agent-2", "agent-9", 1)).unwrap();
    let out = audit(&h, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert!(
        f.iter().any(|(c, _, p, d)| c == "LEDGER_CHAIN_BROKEN"
            && p.as_deref() == Some(GATE_LEDGER)
            && d["line"] == 3),
        "{f:?}"
    );
}
