//! `gate check --goal-id`: the plan context comes from the real goal engine
//! (scope, attempt directory, scope criteria, the plan's gate rules), read
//! without a lock and without writing.

use serde_json::Value;

use crate::goals_support::{Repo, filled_gate, goal, pass_all, repo_with_plan, start};

fn final_goal_repo() -> (Repo, String) {
    let repo = repo_with_plan("- Rate limit the login endpoint");
    start(&repo);
    let id = goal_ids_first(&repo);
    pass_all(&repo, &id);
    (repo, id)
}

fn goal_ids_first(repo: &Repo) -> String {
    crate::goals_support::goal_ids(repo)[0].clone()
}

fn check(repo: &Repo, file: &str, extra: &[&str]) -> crate::common::Run {
    let mut args = vec!["gate", "check", file, "--json"];
    args.extend_from_slice(extra);
    repo.run_env(
        "evidence-gate",
        &args,
        None,
        &crate::goals_support::clean_env(),
    )
}

#[test]
fn a_filled_template_passes_in_plan_context_and_nothing_is_written() {
    let (repo, id) = final_goal_repo();
    let gate = filled_gate(&repo, "ulw-loop", &id, &[]);
    let before = repo.snapshot();
    let run = check(&repo, &gate, &["--goal-id", &id]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let v = run.json();
    assert_eq!(v["verdict"], "pass");
    assert_eq!(v["rules"], "lazycodex");
    assert_eq!(v["scope"]["kind"], "run");
    assert_eq!(v["scope"]["dir"], goal(&repo, &id)["attemptDir"]);
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(!codes.contains(&"GATE_PLAN_CONTEXT_SKIPPED"), "{codes:?}");
    assert_eq!(before, repo.snapshot(), "gate check --goal-id is read-only");
}

#[test]
fn plan_context_checks_run_coverage_and_references() {
    let (repo, id) = final_goal_repo();
    let path = filled_gate(&repo, "ulw-loop", &id, &[]);
    let mut gate: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join(&path)).unwrap()).unwrap();
    gate["criteriaCoverage"]["totalCriteria"] = 4.into();
    gate["criteriaCoverage"]["passCount"] = 4.into();
    gate["manualQa"]["surfaceEvidence"][0]["criterionRef"] = format!("{id}:C999").into();
    repo.write("gates/bad.json", serde_json::to_string(&gate).unwrap());
    let run = check(&repo, "gates/bad.json", &["--goal-id", &id]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let codes: Vec<String> = run.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect();
    for c in [
        "GATE_CRITERION_REF_UNKNOWN",
        "GATE_COVERAGE_MISMATCH",
        "GATE_CRITERION_UNCOVERED",
    ] {
        assert!(codes.contains(&c.to_owned()), "{c} in {codes:?}");
    }
    // Without plan context the plan's checks are skipped and say so.
    let run = check(&repo, "gates/bad.json", &[]);
    let codes: Vec<String> = run.json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        codes.contains(&"GATE_PLAN_CONTEXT_SKIPPED".to_owned()),
        "{codes:?}"
    );
}

#[test]
fn another_surface_than_the_plans_is_warned_about() {
    let (repo, id) = final_goal_repo();
    let gate = filled_gate(&repo, "ulw-loop", &id, &[]);
    let run = check(&repo, &gate, &["--goal-id", &id, "--surface", "omo-senpi"]);
    let v = run.json();
    assert_eq!(v["rules"], "omo-senpi");
    let codes: Vec<&str> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"GATE_RULES_NOT_PLAN"), "{codes:?}");
}

#[test]
fn unknown_goal_or_corrupt_plan_cannot_be_checked() {
    let (repo, id) = final_goal_repo();
    let gate = filled_gate(&repo, "ulw-loop", &id, &[]);
    let run = check(&repo, &gate, &["--goal-id", "G999-nope"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.json()["error"]["details"]["code"],
        "ULW_LOOP_GOAL_NOT_FOUND"
    );
    repo.write(".omo/ulw-loop/goals.json", "{not json");
    let run = check(&repo, &gate, &["--goal-id", &id]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.json()["error"]["details"]["code"],
        "ULW_LOOP_PLAN_CORRUPT"
    );
}
