//! The verification budget of structured receipts (hooks.md §3.6) covers
//! glob expansion: a payload of many globs over a large tree must end in a
//! counted `RECEIPT_VERIFY_TIMEOUT` block, never in the watchdog's allow.
//! (A timed drill would be a timed assertion; the deadline is checked at the
//! library call the hook makes instead.)

use std::time::{Duration, Instant};

use cap_std::fs::Dir;
use evidence_gate::evidence::{Code, Root, Verdict, VerifyOptions, payload, verify_payload};
use evidence_gate::rules::RuleSet;
use evidence_gate::rules::evidence::EvidenceRules;
use serde_json::json;

use crate::common::Repo;
use crate::hooks_support::*;

const PAYLOAD: &str = ".omo/evidence/worker.json";

fn glob_payload(h: &HookRepo, globs: &[&str]) {
    let deliverables: Vec<_> = globs.iter().map(|g| json!({"glob": g})).collect();
    h.write(
        PAYLOAD,
        json!({
            "evidence": 1,
            "summary": "Added the login limiter; the whole test suite passes.",
            "deliverables": deliverables,
            "verification": {"verdict": "passed", "by": WORKER},
        })
        .to_string(),
    );
}

/// Glob expansion honours the deadline the hook passes in: past it no
/// directory is walked and the only finding is the timeout (before, every
/// glob was expanded regardless, and a payload of many globs over a large
/// tree outlasted the hook's watchdog, which allows).
#[test]
fn an_expired_deadline_stops_glob_expansion() {
    let repo = Repo::new();
    repo.write("src/a/one.rs", "fn a() {}\n");
    let rules: EvidenceRules = RuleSet::embedded().unwrap().family().unwrap();
    let dir = Dir::open_ambient_dir(repo.path(), cap_std::ambient_authority()).unwrap();
    let root = Root::new(dir, &rules).unwrap();
    let p = payload::from_value(crate::evidence_cli::payload(json!([
        {"glob": "**/*.none"},
        {"glob": "src/**/*.zz"},
        {"glob": "**/*.rs"},
    ])))
    .unwrap();
    let past = Instant::now()
        .checked_sub(Duration::from_millis(1))
        .unwrap();
    let opts = VerifyOptions {
        plan: None,
        deadline: Some(past),
        payload_path: None,
    };
    let r = verify_payload(&root, &p, "p", opts);
    let codes: Vec<Code> = r.findings().iter().map(|f| f.code).collect();
    assert_eq!(
        (r.verdict(), codes),
        (Verdict::Error, vec![Code::VerifyTimeout])
    );
    assert!(r.files().is_empty());
    let r = verify_payload(&root, &p, "p", VerifyOptions::default());
    let codes: Vec<Code> = r.findings().iter().map(|f| f.code).collect();
    assert_eq!(codes, [Code::GlobTooFewMatches, Code::GlobTooFewMatches]);
}

#[test]
fn within_budget_globs_still_verify() {
    let h = HookRepo::new();
    h.write("src/a/one.rs", "fn a() {}\n");
    glob_payload(&h, &["src/**/*.rs"]);
    let run = h.stop(&h.codex_receipt(PAYLOAD));
    assert_allow(&run);
    let accepted = &h.ledger()[0];
    assert_eq!(accepted["kind"], "receipt_accepted");
    let files: Vec<&str> = accepted["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, [PAYLOAD, "src/a/one.rs"]);
}

/// A verification budget that ends after the watchdog would turn
/// `RECEIPT_VERIFY_TIMEOUT` (a counted block) into the watchdog's allow: such
/// rules are invalid, and the hook runs on the embedded defaults.
#[test]
fn a_budget_past_the_watchdog_is_invalid_rules() {
    for (rules, valid) in [
        (r#"{"subagent_stop": {"verify_budget_ms": 10000}}"#, false),
        (r#"{"hooks": {"deadline_ms": 2800}}"#, false),
        (
            r#"{"hooks": {"deadline_ms": 2800}, "subagent_stop": {"verify_budget_ms": 1500, "max_attempts": 5}}"#,
            true,
        ),
    ] {
        let h = HookRepo::new();
        h.user_rules(rules);
        let run = h.stop(&h.codex(Some("no receipt")));
        let reason = block_reason(&run);
        let codes = h.diag_codes();
        if valid {
            assert!(codes.is_empty(), "{rules}: {codes:?}");
            assert!(reason.contains("attempt 1 of 5"), "{reason}");
        } else {
            assert_eq!(codes, ["HOOK_RULES_INVALID"], "{rules}");
            let problem = h.diagnostics()[0]["detail"]["problem"].to_string();
            assert!(
                problem.contains("/subagent_stop/verify_budget_ms"),
                "{problem}"
            );
            assert!(
                reason.contains("attempt 1 of 3"),
                "embedded defaults: {reason}"
            );
        }
        let doctor = h.run(
            &["doctor", "--json", "--host", "codex"],
            b"",
            &[("HOME", h.state_home.path().to_str().unwrap())],
        );
        let v: serde_json::Value = serde_json::from_str(&doctor.stdout).unwrap();
        let check = v["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "rules.valid")
            .unwrap()
            .clone();
        assert_eq!(
            check["status"],
            if valid { "ok" } else { "fail" },
            "{check}"
        );
    }
}
