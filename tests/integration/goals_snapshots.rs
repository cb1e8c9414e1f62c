//! Snapshots of the goal engine's agent-facing texts (usage, status, the
//! goal handoff, the blocked-decision handoff, the stalled report): agents
//! act on these words, so every change is reviewed in the diff.

use crate::goals_support::*;
use serde_json::json;

#[test]
fn usage_block() {
    let repo = Repo::new();
    insta::assert_snapshot!(eg(&repo, "ulw-loop", &["help"]).stdout);
    insta::assert_snapshot!(eg(&repo, "ultragoal", &["help"]).stdout);
}

#[test]
fn status_text() {
    let repo = repo_with_plan("- Add login rate limiting\n- Document the limits");
    start(&repo);
    insta::assert_snapshot!(eg(&repo, "ulw-loop", &["status"]).stdout);
}

#[test]
fn handoff_of_a_non_final_and_of_the_final_goal() {
    let repo = repo_with_plan("- Add login rate limiting\n- Document the limits");
    insta::assert_snapshot!(eg(&repo, "ulw-loop", &["complete-goals"]).stdout);
    pass_all(&repo, "G001-add-login-rate-limiting");
    let v = expect_ok(&checkpoint_complete(
        &repo,
        "G001-add-login-rate-limiting",
        &[],
    ));
    insta::assert_snapshot!(v["next"]["instruction"]["text"].as_str().unwrap());
}

#[test]
fn session_scoped_handoff_names_the_session() {
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "- only goal",
            "--session-id",
            "session-A",
        ],
    ));
    let text = eg(
        &repo,
        "ulw-loop",
        &["complete-goals", "--session-id", "session-A"],
    )
    .stdout;
    for token in [
        "record-review-blockers --session-id session-A",
        "checkpoint --session-id session-A",
        "complete-goals --session-id session-A --retry-failed",
        ".omo/ulw-loop/session-A/goals.json",
    ] {
        assert!(text.contains(token), "missing {token}:\n{text}");
    }
}

#[test]
fn ultragoal_handoff() {
    let repo = Repo::new();
    expect_ok(&eg(
        &repo,
        "ultragoal",
        &[
            "create-goals",
            "--brief",
            "- Ship the importer\n- Document it",
            "--json",
        ],
    ));
    insta::assert_snapshot!(eg(&repo, "ultragoal", &["complete-goals"]).stdout);
}

#[test]
fn blocked_and_stalled_reports() {
    let repo = repo_with_plan("- a\n- b");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("needs_user_decision"));
        g.insert(
            "requiredExternalDecision".into(),
            json!("Resolve external authorization: EXTERNAL_AUTHORIZATION_REQUIRED"),
        );
        g.insert("nonRetriable".into(), json!(true));
    });
    edit_goal(&repo, "G002-b", |g| {
        g.insert("status".into(), json!("complete"));
    });
    insta::assert_snapshot!(eg(&repo, "ulw-loop", &["complete-goals"]).stdout);
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("failed"));
    });
    insta::assert_snapshot!(eg(&repo, "ulw-loop", &["complete-goals"]).stdout);
}
