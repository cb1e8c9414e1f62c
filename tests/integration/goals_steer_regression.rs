//! Named regression tests for the steering weaknesses of the Node tool
//! (R§10 items 13, 14, 23–27; goal-engine.md §12): each pins the exact
//! scenario the reference describes.

use crate::goals_support::*;
use serde_json::json;

#[test]
fn r10_13_revise_criterion_resets_a_pass_recorded_against_the_old_wording() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C002",
            "--scenario",
            "empty body is rejected with 400",
        ],
    ));
    assert_eq!(
        goal(&repo, "G001-a")["successCriteria"][1]["status"],
        "pending"
    );
}

#[test]
fn r10_14_complete_goals_cannot_be_superseded_and_blocks_can_be_lifted() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    expect_rejected(
        &steer(
            &repo,
            &["--kind", "mark_blocked_superseded", "--goal-id", "G001-a"],
        ),
        "ULW_LOOP_STEERING_REJECTED",
        "mark_blocked_superseded requires unresolved target",
    );
    expect_ok(&steer(
        &repo,
        &["--kind", "mark_blocked_superseded", "--goal-id", "G002-b"],
    ));
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "unblock",
            "--goal-id",
            "G002-b",
            "--user-decision",
            "go",
        ],
    ));
    assert_eq!(start(&repo)["goal"]["id"], "G002-b");
}

#[test]
fn r10_23_a_reused_key_is_a_conflict_not_a_silent_dedupe() {
    let repo = repo_with_plan("- a\n- b");
    expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "k"],
    ));
    let r = steer(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "t",
            "--objective",
            "o",
            "--idempotency-key",
            "k",
        ],
    );
    expect_rejected(
        &r,
        "ULW_LOOP_STEERING_KEY_CONFLICT",
        "idempotency key conflict",
    );
    let dup = json!({"kind": "add_subgoal", "title": "t", "objective": "o", "evidence": "e", "rationale": "r", "idempotencyKey": "twice"});
    let v = expect_ok(&ulw(
        &repo,
        &["steer", "--proposals-json", &json!([dup, dup]).to_string()],
    ));
    assert_eq!(v["results"][1]["deduped"], true);
    assert_eq!(
        plan(&repo)["goals"].as_array().unwrap().len(),
        3,
        "applied once"
    );
    assert!(
        kinds(&repo).contains(&"steering_deduped".to_owned()),
        "deduped events are recorded"
    );
}

#[test]
fn r10_24_no_keyword_rejections() {
    let repo = repo_with_plan("- a\n- b");
    let v = expect_ok(&ulw(
        &repo,
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "we must remove a flaky test",
            "--rationale",
            "it flakes",
        ],
    ));
    assert_eq!(v["warnings"][0]["code"], "WEAKENED_COMPLETION_WORDING");
    let d = json!({
        "kind": "split_subgoal", "goalId": "G002-b", "evidence": "e", "rationale": "r",
        "childGoals": [{"title": "b1", "objective": "x", "completeBy": "friday"}]
    })
    .to_string();
    expect_ok(&ulw(&repo, &["steer", "--directive-json", &d]));
}

#[test]
fn r10_25_every_field_reaches_every_channel() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let items = json!([
        {"kind": "revise_criterion", "goalId": "G001-a", "criterionId": "C001", "userModel": "edge", "evidence": "e", "rationale": "r"},
        {"kind": "mark_blocked_superseded", "goalId": "G002-b", "blockedReason": "license", "evidence": "e", "rationale": "r"}
    ]);
    expect_ok(&ulw(
        &repo,
        &["steer", "--proposals-json", &items.to_string()],
    ));
    assert_eq!(
        goal(&repo, "G001-a")["successCriteria"][0]["userModel"],
        "edge"
    );
    assert_eq!(goal(&repo, "G002-b")["blockedReason"], "license");
    expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--target-goal-id", "G002-b"],
    ));
    assert_eq!(ledger(&repo).last().unwrap()["goalId"], "G002-b");
}

#[test]
fn r10_26_reorder_keeps_completed_goals_in_place() {
    let repo = repo_with_plan("- a\n- b\n- c");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    expect_ok(&steer(
        &repo,
        &["--kind", "reorder_pending", "--order", r#"["G003-c"]"#],
    ));
    assert_eq!(goal_ids(&repo), ["G001-a", "G003-c", "G002-b"]);
}

#[test]
fn r10_27_batches_evolve_and_blocked_members_ask_for_a_decision() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB1",
            "--member-ids",
            r#"["G001-a", "G002-b", "G003-c"]"#,
        ],
    ));
    assert_eq!(
        plan(&repo)["validationBatches"][0]["memberIds"],
        json!(["G001-a", "G002-b", "G003-c"])
    );
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
}
