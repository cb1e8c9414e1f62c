//! Plan-context finding codes through the real binary: the goal engine
//! verifies `--evidence-file` payloads against the plan.

use serde_json::json;

use crate::goals_support::{expect_error, repo_with_plan, start, ulw};

#[test]
fn an_unknown_criterion_in_a_payload_is_criterion_unknown() {
    let repo = repo_with_plan("- Rate limit");
    start(&repo);
    repo.write("src/feature.rs", "fn feature() {}\n");
    let payload = json!({
        "evidence": 1,
        "summary": "Rate limiting implemented and tested.",
        "goalId": "G001-rate-limit",
        "criterionIds": ["C001", "C999"],
        "deliverables": [{"path": "src/feature.rs"}],
        "verification": {"verdict": "passed", "by": "qa-executor", "checks": []}
    });
    repo.write("evidence/p.json", payload.to_string());
    let before = repo.snapshot();
    let run = ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-rate-limit",
            "--criterion-id",
            "C001",
            "--evidence-file",
            "evidence/p.json",
            "--accept-seeded",
            "test",
        ],
    );
    let err = expect_error(&run, "ULW_LOOP_EVIDENCE_REJECTED");
    let codes: Vec<&str> = err["details"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["CRITERION_UNKNOWN"]);
    let changed: Vec<_> = repo
        .snapshot()
        .into_iter()
        .filter(|e| !before.contains(e))
        .map(|e| e.0)
        .collect();
    assert!(
        changed.iter().all(|p| p.starts_with(".omo/ulw-loop")),
        "{changed:?}"
    );
    assert_eq!(
        crate::goals_support::goal(&repo, "G001-rate-limit")["successCriteria"][0]["status"],
        "pending"
    );
}
