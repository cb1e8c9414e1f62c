//! Validation batches (R§5 with goal-engine.md §6): declaration, readiness
//! with `requiresDecision`, the batch-final == run-final rule, closed
//! batches are immutable, membership maintenance after steering, and
//! `revise_batch`.

use crate::goals_support::*;
use serde_json::{Value, json};

fn batches_of(repo: &Repo) -> Value {
    plan(repo)["validationBatches"].clone()
}

fn final_checkpoint(repo: &Repo, id: &str, gate: &str) -> Run {
    ulw(
        repo,
        &[
            "checkpoint",
            "--goal-id",
            id,
            "--status",
            "complete",
            "--evidence",
            "all done",
            "--codex-goal-json",
            &complete(repo),
            "--quality-gate-json",
            gate,
        ],
    )
}

#[test]
fn the_declaration_is_read_from_a_file_and_stored_normalised() {
    let repo = Repo::new();
    repo.write(
        "batches.json",
        json!([{"batchId": " VB1 ", "memberIds": [" G001-a", "G002-b "], "finalGoalId": "G002-b"}])
            .to_string(),
    );
    expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "- a\n- b",
            "--validation-batch-json",
            "batches.json",
        ],
    ));
    assert_eq!(batches_of(&repo), vb1());
    let empty = Repo::new();
    expect_ok(&ulw(
        &empty,
        &[
            "create-goals",
            "--brief",
            "- a",
            "--validation-batch-json",
            "[]",
        ],
    ));
    assert_eq!(batches_of(&empty), json!([]), "stored even when empty");
}

#[test]
fn a_batch_final_goal_with_an_open_member_fails_and_lists_it() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    edit_goal(&repo, "G002-b", |g| {
        g.insert("status".into(), json!("in_progress"));
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    });
    let e = expect_error(
        &checkpoint_complete(&repo, "G002-b", &[]),
        "ULW_LOOP_VALIDATION_BATCH_OPEN",
    );
    assert_eq!(
        e["details"],
        json!({"batchId": "VB1", "open": ["G001-a"], "requiresDecision": []})
    );
    assert_eq!(e["message"], "Validation batch has unresolved members.");
}

#[test]
fn steering_blocked_members_require_a_decision() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    expect_ok(&steer(
        &repo,
        &["--kind", "mark_blocked_superseded", "--goal-id", "G001-a"],
    ));
    edit_goal(&repo, "G002-b", |g| {
        g.insert("status".into(), json!("in_progress"));
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    });
    let e = expect_error(
        &checkpoint_complete(&repo, "G002-b", &[]),
        "ULW_LOOP_VALIDATION_BATCH_OPEN",
    );
    assert_eq!(e["details"]["requiresDecision"], json!(["G001-a"]));
    assert!(e["message"].as_str().unwrap().ends_with(
        " Members G001-a require a user decision (steer --kind unblock, mark_blocked_superseded or revise_batch)."
    ));
    // The decision: drop the blocked member from the batch.
    let r = steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB1",
            "--member-ids",
            r#"["G002-b", "G003-c"]"#,
        ],
    );
    expect_ok(&r);
    assert_eq!(
        batches_of(&repo)[0]["memberIds"],
        json!(["G002-b", "G003-c"]),
        "a blocked member may go without a decision"
    );
}

#[test]
fn the_run_final_goal_that_is_also_batch_final_closes_both_in_one_checkpoint() {
    let repo = with_batch("- a\n- b", vb1());
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    pass_all(&repo, "G002-b");
    let gate = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let v = expect_ok(&final_checkpoint(&repo, "G002-b", &gate));
    let kinds: Vec<&str> = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["aggregate_completed", "batch_closed"]);
    assert_eq!(v["ledgerEntries"][1]["message"], "VB1");
    assert_eq!(
        v["ledgerEntries"][0]["revision"],
        v["ledgerEntries"][1]["revision"]
    );
    let p = plan(&repo);
    assert_eq!(p["validationBatches"][0]["closedByGoalId"], "G002-b");
    assert!(p["validationBatches"][0]["closedAt"].is_string());
    assert_eq!(p["aggregateCompletion"]["status"], "complete");
    let l = ledger(&repo);
    let tail: Vec<&str> = l[l.len() - 2..]
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(tail, ["aggregate_completed", "batch_closed"], "one append");
}

#[test]
fn closed_batches_are_immutable() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    let mut p = plan(&repo);
    p["validationBatches"][0]["closedAt"] = json!("2026-01-01T00:00:00.000Z");
    p["validationBatches"][0]["closedByGoalId"] = json!("G002-b");
    write_plan(&repo, &p);
    expect_rejected(
        &steer(
            &repo,
            &[
                "--kind",
                "revise_batch",
                "--batch-id",
                "VB1",
                "--final-goal-id",
                "G001-a",
            ],
        ),
        "ULW_LOOP_STEERING_REJECTED",
        "revise_batch batch closed",
    );
    let before = batches_of(&repo);
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G001-a",
            "--children",
            r#"[{"title": "a1", "objective": "x"}]"#,
        ],
    ));
    assert_eq!(
        batches_of(&repo),
        before,
        "maintenance skips closed batches"
    );
    assert!(!kinds(&repo).contains(&"batch_updated".to_owned()));
}

#[test]
fn a_split_member_is_replaced_in_place_in_the_same_append() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    let n = ledger(&repo).len();
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G001-a",
            "--children",
            r#"[{"title": "a1", "objective": "x"}, {"title": "a2", "objective": "y"}]"#,
        ],
    ));
    assert_eq!(
        batches_of(&repo)[0]["memberIds"],
        json!(["G004-a1", "G005-a2", "G002-b"])
    );
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    assert_eq!(l[n]["kind"], "steering_accepted");
    assert_eq!(l[n + 1]["kind"], "batch_updated");
    assert_eq!(l[n + 1]["before"], vb1());
    assert_eq!(l[n + 1]["mutationKind"], "split_subgoal");
    assert_eq!(l[n + 1]["proposalDigest"], l[n]["proposalDigest"]);
    assert_eq!(l[n]["revision"], l[n + 1]["revision"]);
}

#[test]
fn a_waived_member_is_resolved() {
    let repo = with_batch("- a\n- b", vb1());
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "mark_blocked_superseded",
            "--goal-id",
            "G001-a",
            "--user-decision",
            "the user dropped a",
        ],
    ));
    start(&repo);
    pass_all(&repo, "G002-b");
    let gate = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let v = expect_ok(&final_checkpoint(&repo, "G002-b", &gate));
    assert_eq!(v["ledgerEntries"][1]["kind"], "batch_closed");
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["summary"]["waived"], 1);
    assert_eq!(
        s["summary"]["complete"], 1,
        "a waived goal never counts as complete"
    );
}

#[test]
fn revise_batch_evolves_a_batch() {
    let repo = with_batch("- a\n- b\n- c\n- d", vb1());
    // Add a goal (added goals are never members by themselves).
    expect_ok(&steer(
        &repo,
        &["--kind", "add_subgoal", "--title", "e", "--objective", "e"],
    ));
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB1",
            "--member-ids",
            r#"["G001-a", "G002-b", "G005-e"]"#,
            "--final-goal-id",
            "G005-e",
        ],
    ));
    assert_eq!(batches_of(&repo)[0]["finalGoalId"], "G005-e");
    // Removing a healthy member needs a user decision.
    let args = [
        "--kind",
        "revise_batch",
        "--batch-id",
        "VB1",
        "--member-ids",
        r#"["G002-b", "G005-e"]"#,
    ];
    expect_rejected(
        &steer(&repo, &args),
        "ULW_LOOP_STEERING_REJECTED",
        "revise_batch weakens batch",
    );
    let mut with = args.to_vec();
    with.extend(["--user-decision", "a ships separately"]);
    expect_ok(&steer(&repo, &with));
    assert_eq!(
        batches_of(&repo)[0]["memberIds"],
        json!(["G002-b", "G005-e"])
    );
    // A second batch, and the membership rules.
    let rejected = |args: &[&str], reason: &str| {
        expect_rejected(&steer(&repo, args), "ULW_LOOP_STEERING_REJECTED", reason);
    };
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c"]"#,
            "--final-goal-id",
            "G003-c",
        ],
        "revise_batch requires two members",
    );
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c", "G9"]"#,
            "--final-goal-id",
            "G003-c",
        ],
        "revise_batch unknown member",
    );
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c", "G002-b"]"#,
            "--final-goal-id",
            "G003-c",
        ],
        "revise_batch member overlap",
    );
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c", "G004-d"]"#,
        ],
        "revise_batch requires finalGoalId",
    );
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c", "G004-d"]"#,
            "--final-goal-id",
            "G001-a",
        ],
        "revise_batch requires finalGoalId",
    );
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            r#"["G003-c", "G004-d"]"#,
            "--final-goal-id",
            "G004-d",
        ],
    ));
    // Deleting needs a decision, then removes the batch.
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            "[]",
        ],
        "revise_batch weakens batch",
    );
    rejected(
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB9",
            "--member-ids",
            "[]",
            "--user-decision",
            "x",
        ],
        "revise_batch unknown batch",
    );
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB2",
            "--member-ids",
            "[]",
            "--user-decision",
            "no joint review",
        ],
    ));
    let batches = batches_of(&repo);
    let ids: Vec<&str> = batches
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["batchId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["VB1"]);
}

#[test]
fn revise_batch_refuses_a_complete_final() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    expect_rejected(
        &steer(
            &repo,
            &[
                "--kind",
                "revise_batch",
                "--batch-id",
                "VB1",
                "--final-goal-id",
                "G001-a",
            ],
        ),
        "ULW_LOOP_STEERING_REJECTED",
        "revise_batch final already complete",
    );
}

/// The reference's end-to-end run (R§2.5): three goals of three criteria,
/// a batch of two members closed by the run-final goal. The final gate may
/// state the batch's coverage (`6/6`) while the plan holds nine passing
/// criteria, or the run's (`9/9`); both close batch and run in one checkpoint.
#[test]
fn reference_run_batch_of_two_closed_by_the_run_final_goal_with_6_of_6_and_9_of_9() {
    for (counts, label) in [(6, "batch counts"), (9, "run counts")] {
        let repo = with_batch(
            "- a\n- b\n- c",
            json!([{"batchId": "VB1", "memberIds": ["G002-b", "G003-c"], "finalGoalId": "G003-c"}]),
        );
        start(&repo);
        pass_all(&repo, "G001-a");
        expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
        pass_all(&repo, "G002-b");
        expect_ok(&checkpoint_complete(&repo, "G002-b", &[]));
        pass_all(&repo, "G003-c");
        let path = filled_gate(&repo, "ulw-loop", "G003-c", &[]);
        let mut gate: Value =
            serde_json::from_str(&std::fs::read_to_string(repo.join(&path)).unwrap()).unwrap();
        assert_eq!(
            gate["criteriaCoverage"]["totalCriteria"], 9,
            "the template states the run's counts"
        );
        if counts == 6 {
            // Keep only the surface rows of the batch members' criteria.
            let rows: Vec<Value> = gate["manualQa"]["surfaceEvidence"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|r| !r["criterionRef"].as_str().unwrap().starts_with("G001-a:"))
                .cloned()
                .collect();
            assert_eq!(rows.len(), 6);
            gate["manualQa"]["surfaceEvidence"] = Value::Array(rows);
            for case in gate["manualQa"]["adversarialCases"].as_array_mut().unwrap() {
                case["criterionRef"] = json!("G002-b:C001");
            }
            gate["criteriaCoverage"]["totalCriteria"] = json!(6);
            gate["criteriaCoverage"]["passCount"] = json!(6);
        }
        repo.write(
            "gates/final.json",
            serde_json::to_string_pretty(&gate).unwrap(),
        );
        let v = expect_ok(&final_checkpoint(&repo, "G003-c", "gates/final.json"));
        let kinds: Vec<&str> = v["ledgerEntries"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, ["aggregate_completed", "batch_closed"], "{label}");
        let p = plan(&repo);
        assert_eq!(p["aggregateCompletion"]["status"], "complete", "{label}");
        assert_eq!(
            p["validationBatches"][0]["closedByGoalId"], "G003-c",
            "{label}"
        );
        let passed = p["goals"]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["successCriteria"].as_array().unwrap().iter())
            .filter(|c| c["status"] == "pass")
            .count();
        assert_eq!(passed, 9, "{label}: the plan holds 9/9 passing criteria");
        let status = expect_ok(&ulw(&repo, &["status"]));
        assert_eq!(status["summary"]["runComplete"], true, "{label}");
    }
}
