//! `record-review-blockers` and the review-blocked flow without the dead
//! end (R§7.3, goal-engine.md §3.6).

use crate::goals_support::*;
use serde_json::json;

fn final_goal_in_progress() -> Repo {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    repo
}

fn review(repo: &Repo, id: &str, snap: &str) -> Run {
    ulw(
        repo,
        &[
            "record-review-blockers",
            "--goal-id",
            id,
            "--title",
            "Resolve final code-review blockers",
            "--objective",
            "Fix the two blocking findings",
            "--evidence",
            "reviewer: two blocking findings",
            "--codex-goal-json",
            snap,
        ],
    )
}

#[test]
fn review_blockers_block_the_final_goal_and_reopen_it_after_resolution() {
    let repo = final_goal_in_progress();
    let v = expect_ok(&review(&repo, "G002-b", &active(&repo)));
    let new_id = v["goal"]["id"].as_str().unwrap().to_owned();
    assert_eq!(new_id, "G003-resolve-final-code-review-blockers");
    assert_eq!(v["goal"]["resolves"], json!(["G002-b"]));
    assert_eq!(v["blockedGoal"]["status"], "review_blocked");
    assert_eq!(v["blockedGoal"]["reviewBlockedBy"], json!([new_id]));
    let kinds: Vec<&str> = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["goal_review_blocked", "goal_added", "blocker_recorded"],
        "three entries, one append"
    );
    assert!(
        v["ledgerEntries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["revision"] == v["revision"])
    );
    assert!(plan(&repo).get("activeGoalId").is_none());
    let text = eg(&repo, "ulw-loop", &["status"]).stdout;
    assert!(text.contains("G002-b [review_blocked]"), "{text}");

    let started = start(&repo);
    assert_eq!(started["goal"]["id"], new_id.as_str());
    assert!(
        started["instruction"]["text"]
            .as_str()
            .unwrap()
            .contains("Not the final"),
        "the resolution goal is never final"
    );
    pass_all(&repo, &new_id);
    let v = expect_ok(&checkpoint_complete(&repo, &new_id, &[]));
    assert_eq!(v["ledgerEntry"]["kind"], "goal_completed");
    assert_eq!(v["next"]["goal"]["id"], "G002-b");
    assert_eq!(v["next"]["goal"]["attempt"], 2, "a new attempt");
    assert_eq!(
        v["next"]["goal"]["attemptDir"],
        ".omo/evidence/ulw/session/G002-b/a2"
    );
    let reopened = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(reopened["reopenedFrom"], "review_blocked");
    pass_all(&repo, "G002-b");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G002-b",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
                &complete(&repo),
            ],
        ),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert_eq!(
        e["details"]["field"], "qualityGate",
        "the re-opened goal must pass the final gate again"
    );
    let gate = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let v = expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G002-b",
            "--status",
            "complete",
            "--evidence",
            "x",
            "--codex-goal-json",
            &complete(&repo),
            "--quality-gate-json",
            &gate,
        ],
    ));
    assert_eq!(v["ledgerEntry"]["kind"], "aggregate_completed");
}

#[test]
fn review_blocker_errors() {
    let repo = final_goal_in_progress();
    let e = expect_error(
        &review(&repo, "G9", &active(&repo)),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_goal_not_found");
    let e = expect_error(
        &review(&repo, "G001-a", &active(&repo)),
        "ULW_LOOP_TRANSITION_INVALID",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_goal_not_in_progress");
    assert_eq!(e["message"], "G001-a is complete.");
    let e = expect_error(
        &review(&repo, "G002-b", &complete(&repo)),
        "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("status mismatch: expected active")
    );
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "record-review-blockers",
                "--goal-id",
                "G002-b",
                "--title",
                "t",
                "--objective",
                "o",
                "--evidence",
                "e",
            ],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--codex-goal-json");
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let e = expect_error(
        &review(&repo, "G001-a", &active(&repo)),
        "ULW_LOOP_NOT_FINAL_STORY",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_not_final_story");
    assert_eq!(e["details"]["goalId"], "G001-a");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
    });
    edit_goal(&repo, "G002-b", |g| {
        g.insert("status".into(), json!("complete"));
    });
    expect_error(
        &review(&repo, "G002-b", &active(&repo)),
        "ULW_LOOP_PLAN_COMPLETE",
    );
}

#[test]
fn a_failed_resolution_goal_stalls_naming_both_goals() {
    let repo = final_goal_in_progress();
    let v = expect_ok(&review(&repo, "G002-b", &active(&repo)));
    let new_id = v["goal"]["id"].as_str().unwrap().to_owned();
    start(&repo);
    expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            &new_id,
            "--status",
            "failed",
            "--evidence",
            "could not fix",
        ],
    ));
    let r = expect_ok(&ulw(&repo, &["complete-goals"]));
    assert_eq!(r["state"], "stalled");
    assert_eq!(r["stalledGoalIds"], json!(["G002-b", new_id]));
}
