//! threat-model.md I9–I11 through the real binaries: the audited repository
//! does not configure its auditor, a repository override only tightens, no
//! downgrade to unchained ledgers, and no agent-written clock orders
//! recordings. Each attack sits next to the honest use that must still pass.

use serde_json::{Value, json};

use crate::ci_support::*;
use crate::common::Repo;
use crate::goals_support::{expect_ok, ulw};
use crate::hooks_support::{HookRepo, block_reason};

fn codes_of(out: &crate::common::Run) -> Vec<(String, String)> {
    findings(out)
        .into_iter()
        .map(|(c, s, _, _)| (c, s))
        .collect()
}

// ---- I9: repository mode ---------------------------------------------------

#[test]
fn committed_rules_that_move_the_state_dir_do_not_hide_tampered_state() {
    let r = Repo::new();
    Run4::new(&r, STATE);
    // The agent stubs the deliverable, then points every profile's state
    // directory and evidence root somewhere empty.
    r.write(DELIVERABLE, "pub fn limit() -> u32 { todo!() }\n");
    r.write(
        ".evidence-gate/rules.json",
        json!({"profiles": {
            "ulw-loop": {"stateDir": ".nothing/ulw", "evidenceRoot": ".nothing/ev"},
            "ultragoal": {"stateDir": ".nothing/ug", "evidenceRoot": ".nothing/ev"},
        }})
        .to_string(),
    );
    let out = audit(&r, &["--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        codes_of(&out).contains(&("LEDGER_DIGEST_MISMATCH".into(), "error".into())),
        "{:?}",
        codes_of(&out)
    );
    let v = out.json();
    assert_eq!(v["policy"]["sources"], json!(["embedded"]));
    assert_eq!(v["policy"]["repositoryRules"], "ignored");
    let embedded_digest = v["policy"]["digest"].as_str().unwrap().to_owned();
    assert!(embedded_digest.starts_with("sha256:"));
    let text = r.run("verify-evidence", &["--strict"], None);
    assert_eq!(text.code, 1);
    let header = text.stdout.lines().next().unwrap();
    assert_eq!(
        header,
        format!(
            "policy {embedded_digest} (embedded); .evidence-gate/rules.json not applied (--repo-rules applies it)"
        )
    );
    // The operator may opt in; the digest then names the other policy.
    let opted = audit(&r, &["--repo-rules", "--allow-empty"]);
    let v = opted.json();
    assert_eq!(v["policy"]["repositoryRules"], "applied");
    assert_eq!(
        v["policy"]["sources"],
        json!(["embedded", ".evidence-gate/rules.json"])
    );
    assert_ne!(v["policy"]["digest"], embedded_digest.as_str());
}

#[test]
fn an_honest_repository_passes_and_names_its_policy() {
    let r = Repo::new();
    Run4::new(&r, STATE);
    r.write("strict.json", r#"{"subagent_stop":{"max_attempts":5}}"#);
    let out = audit(&r, &["--strict", "--rules", "strict.json"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let v = out.json();
    assert_eq!(v["policy"]["sources"], json!(["embedded", "strict.json"]));
    assert_eq!(v["policy"]["repositoryRules"], Value::Null);
}

// ---- I9: hooks and the engine ----------------------------------------------

#[test]
fn a_repository_override_cannot_relax_the_subagent_stop_gate() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_attempts":1,"reuse_protection":false,"evidence_root":"anywhere","gated_agents":"^nobody$"}}"#,
    );
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(reason.contains("attempt 1 of 3"), "{reason}");
    let mut ignored: Vec<String> = h
        .diagnostics()
        .iter()
        .filter(|d| d["code"] == "RULES_RELAXATION_IGNORED")
        .map(|d| d["detail"]["pointer"].as_str().unwrap().to_owned())
        .collect();
    ignored.sort();
    assert_eq!(
        ignored,
        [
            "/subagent_stop/evidence_root",
            "/subagent_stop/max_attempts",
            "/subagent_stop/reuse_protection",
        ]
    );
}

#[test]
fn a_repository_override_that_tightens_applies_and_gated_agents_are_or_ed() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_attempts":5,"gated_agents":"^my-team-worker$"}}"#,
    );
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(reason.contains("attempt 1 of 5"), "{reason}");
    let mut other = h.codex(Some("done"));
    other["agent_type"] = json!("my-team-worker");
    other["agent_id"] = json!("agent-2");
    block_reason(&h.stop(&other));
    assert!(h.diag_codes().is_empty(), "{:?}", h.diag_codes());
}

#[test]
fn the_users_rules_file_may_relax() {
    let h = HookRepo::new();
    h.user_rules(r#"{"subagent_stop":{"max_attempts":2}}"#);
    // The repository cannot undo the user's choice in either direction but up.
    h.write(
        ".evidence-gate/rules.json",
        r#"{"subagent_stop":{"max_attempts":1}}"#,
    );
    let reason = block_reason(&h.stop(&h.codex(Some("done"))));
    assert!(reason.contains("attempt 1 of 2"), "{reason}");
    assert_eq!(h.diag_codes(), ["RULES_RELAXATION_IGNORED"]);
}

#[test]
fn the_engine_ignores_a_moved_state_dir_and_warns() {
    let repo = Repo::new();
    repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"stateDir":".work/loop","limits":{"maxBriefBytes":4096}}}}"#,
    );
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a"]));
    assert_eq!(v["plan"]["goalsPath"], ".omo/ulw-loop/goals.json");
    let warnings = v["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["code"], "RULES_RELAXATION_IGNORED");
    assert_eq!(warnings[0]["pointer"], "/profiles/ulw-loop/stateDir");
    // The same key from the user's configuration applies.
    let repo = Repo::new();
    repo.user_rules(r#"{"profiles":{"ulw-loop":{"stateDir":".work/loop"}}}"#);
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a"]));
    assert_eq!(v["plan"]["goalsPath"], ".work/loop/goals.json");
    assert!(v.get("warnings").is_none(), "{v}");
}

#[test]
fn doctor_reports_an_ignored_relaxation() {
    let h = HookRepo::new();
    h.write(
        ".evidence-gate/rules.json",
        r#"{"hooks":{"context_pressure_markers":["anything the agent prints"]}}"#,
    );
    let run = h.run(
        &["doctor", "--json", "--host", "codex"],
        b"",
        &[("HOME", h.state_home.path().to_str().unwrap())],
    );
    assert!(
        run.stdout.contains("RULES_RELAXATION_IGNORED")
            && run.stdout.contains("/hooks/context_pressure_markers"),
        "{}",
        run.stdout
    );
}

// ---- I10: no downgrade -----------------------------------------------------

/// Strips the chain (and `revision`) from the ledger and makes the plan
/// Node-style (no revision, no lastMutation; completion without ledgerSeq).
fn strip_to_node_style(r: &Repo, run: &mut Run4) {
    let lines: Vec<String> = run
        .entries
        .iter()
        .map(|e| {
            let mut e = e.clone();
            e.shift_remove("revision");
            e.shift_remove("qualityGateSha256");
            serde_json::to_string(&e).unwrap() + "\n"
        })
        .collect();
    std::fs::write(r.join(&run.ledger()), lines.concat()).unwrap();
    let plan = run.plan.as_object_mut().unwrap();
    plan.shift_remove("revision");
    plan.shift_remove("lastMutation");
    plan.insert(
        "aggregateCompletion".into(),
        json!({"status": "complete", "completedAt": "2026-01-02T03:04:04.000Z", "evidence": "limiter done"}),
    );
    // Node-style: no plan binding either (`write_plan` would re-bind and rewrite the ledger).
    run.write_plan_unbound(r);
}

#[test]
fn a_stripped_chain_with_a_forged_unchained_completion_fails_strict() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    run.entries.pop();
    strip_to_node_style(&r, &mut run);
    let forged = json!({"at": "2026-01-02T03:05:00.000Z", "kind": "aggregate_completed", "goalId": "G001", "status": "complete", "qualityGate": {"anything": true}});
    let mut bytes = std::fs::read(r.join(&run.ledger())).unwrap();
    bytes.extend_from_slice(format!("{forged}\n").as_bytes());
    std::fs::write(r.join(&run.ledger()), bytes).unwrap();
    let out = audit(&r, &["--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let codes = codes_of(&out);
    assert!(
        codes.contains(&("LEDGER_NOT_CHAINED".into(), "error".into())),
        "{codes:?}"
    );
    assert!(
        codes.contains(&("COMPLETION_UNBACKED".into(), "error".into())),
        "{codes:?}"
    );
    let text = r.run("verify-evidence", &["--strict"], None);
    assert!(text.stdout.contains("--allow-legacy"), "{}", text.stdout);
}

#[test]
fn an_unchained_completion_after_the_chain_start_is_never_legacy() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    run.entries.pop();
    run.plan["aggregateCompletion"]
        .as_object_mut()
        .unwrap()
        .shift_remove("ledgerSeq");
    run.plan["revision"] = json!(3);
    run.plan
        .as_object_mut()
        .unwrap()
        .shift_remove("lastMutation");
    run.write(&r);
    let forged = json!({"at": "2026-01-02T03:05:00.000Z", "kind": "aggregate_completed", "goalId": "G001", "status": "complete", "qualityGate": {"anything": true}});
    let mut bytes = std::fs::read(r.join(&run.ledger())).unwrap();
    bytes.extend_from_slice(format!("{forged}\n").as_bytes());
    std::fs::write(r.join(&run.ledger()), bytes).unwrap();
    for flags in [&["--allow-legacy"][..], &[]] {
        let out = audit(&r, flags);
        assert_eq!(out.code, 1, "{}", out.stdout);
        let codes = codes_of(&out);
        assert!(
            codes.contains(&("LEDGER_FOREIGN_RECORD".into(), "error".into())),
            "{codes:?}"
        );
        assert!(
            codes.contains(&("COMPLETION_UNBACKED".into(), "error".into())),
            "{codes:?}"
        );
    }
}

#[test]
fn a_legacy_node_ledger_passes_with_allow_legacy() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    let node_gate = json!({"codeReview": {"recommendation": "APPROVE"}});
    run.entries[3].insert("qualityGate".into(), node_gate);
    strip_to_node_style(&r, &mut run);
    let out = audit(&r, &["--strict", "--allow-legacy"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let codes = codes_of(&out);
    // Legacy, and reported as such: no chain, no plan binding (I7).
    assert_eq!(
        codes,
        [
            ("LEDGER_NOT_CHAINED".to_owned(), "warning".to_owned()),
            ("PLAN_NOT_BOUND".to_owned(), "info".to_owned())
        ]
    );
    let text = r.run("verify-evidence", &["--allow-legacy"], None);
    assert!(text.stdout.contains("legacy"), "{}", text.stdout);
    // Without the flag the same ledger is an error.
    assert_eq!(audit(&r, &[]).code, 1);
}

// ---- I11: no agent-written clock decides -----------------------------------

fn receipt(r: &Repo) -> Value {
    r.write(
        ".omo/evidence/G001/receipt.md",
        crate::hooks_support::RECEIPT_TEXT,
    );
    rec(r, ".omo/evidence/G001/receipt.md", "receipt")
}

#[test]
fn a_gate_ledger_line_dated_2099_does_not_excuse_a_stubbed_deliverable() {
    let r = Repo::new();
    Run4::new(&r, STATE);
    r.write(DELIVERABLE, "pub fn limit() -> u32 { todo!() }\n");
    let forged: serde_json::Map<String, Value> = serde_json::from_value(json!({
        "kind": "receipt_accepted",
        "ts": "2099-01-01T00:00:00.000Z",
        "agent_type": "lazycodex-worker-high",
        "receipt": receipt(&r),
        "files": [rec(&r, DELIVERABLE, "deliverable")],
    }))
    .unwrap();
    r.write(
        ".omo/evidence-gate/ledger.jsonl",
        evidence_gate::internals::chain_records(0, None, &[forged]).0,
    );
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let f = findings(&out);
    let stub = f
        .iter()
        .find(|(c, _, p, _)| c == "LEDGER_DIGEST_MISMATCH" && p.as_deref() == Some(DELIVERABLE))
        .unwrap_or_else(|| panic!("{f:?}"));
    assert_eq!(stub.3["ledger"], format!("{STATE}/ledger.jsonl"));
}

#[test]
fn a_gate_ledger_recording_yields_to_the_goal_ledgers() {
    let r = Repo::new();
    Run4::new(&r, STATE);
    // A worker's receipt recorded an earlier draft; the goal engine's
    // recording is the one the tree must match.
    let mut draft = rec(&r, DELIVERABLE, "deliverable");
    draft["sha256"] = json!("0".repeat(64));
    let accepted: serde_json::Map<String, Value> = serde_json::from_value(json!({
        "kind": "receipt_accepted",
        "ts": "2026-01-02T03:04:03.000Z",
        "agent_type": "lazycodex-worker-high",
        "receipt": receipt(&r),
        "files": [draft],
    }))
    .unwrap();
    r.write(
        ".omo/evidence-gate/ledger.jsonl",
        evidence_gate::internals::chain_records(0, None, &[accepted]).0,
    );
    let out = audit(&r, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

// ---- I10: the recorded final gate is re-validated -------------------------

#[test]
fn a_hand_chained_completion_with_a_gate_that_does_not_pass_is_unbacked() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    run.plan["gateRules"] = json!("lazycodex");
    run.entries[3].insert("qualityGate".into(), json!({"anything": true}));
    run.write(&r);
    let out = audit(&r, &["--strict"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let f = findings(&out);
    let unbacked = f
        .iter()
        .find(|(c, _, _, _)| c == "COMPLETION_UNBACKED")
        .unwrap_or_else(|| panic!("{f:?}"));
    assert!(
        unbacked.3["gate"]
            .as_str()
            .unwrap()
            .contains("lazycodex rules"),
        "{:?}",
        unbacked.3
    );
}

#[test]
fn a_real_final_gate_passes_its_re_validation() {
    for (profile, state) in [
        ("ulw-loop", ".omo/ulw-loop"),
        ("ultragoal", ".omagy/ultragoal"),
    ] {
        let repo = crate::ci_audit_engine::finished_run(profile, state);
        let plan: Value = serde_json::from_slice(
            &std::fs::read(repo.join(&format!("{state}/goals.json"))).unwrap(),
        )
        .unwrap();
        assert!(plan["gateRules"].is_string(), "{profile}");
        let ledger = std::fs::read_to_string(repo.join(&format!("{state}/ledger.jsonl"))).unwrap();
        let last: Value = ledger
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .rfind(|e| e["kind"] == "aggregate_completed")
            .expect("a final entry");
        assert!(last["qualityGate"].is_object(), "{profile}: {last}");
        let out = audit(&repo, &["--strict"]);
        assert_eq!(out.code, 0, "{profile}: {}", out.stdout);
    }
}

#[test]
fn a_repository_rules_file_that_is_not_applied_is_not_read() {
    let r = Repo::new();
    Run4::new(&r, STATE);
    r.write(".evidence-gate/rules.json", "{ not json");
    let out = audit(&r, &["--strict"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(out.json()["policy"]["repositoryRules"], "ignored");
    // Opting in reads it, and an invalid file cannot be verified with.
    let out = audit(&r, &["--repo-rules"]);
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert_eq!(out.codes(), ["RULES_INVALID"]);
}
