//! Regressions found by an adversarial review of the goal-engine CLI: each
//! test drives the real binary and asserts the code and the exit status.

use crate::goals_support::*;
use serde_json::json;

/// `repair --accept-plan` commits a `ledger_repaired` entry as the plan's
/// `lastMutation`; the recovery check must count it as landed, or every
/// later command re-appends it and `status` reports `recoverable` forever.
#[test]
fn accept_plan_entry_is_not_replayed_by_later_mutations() {
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["revision"] = json!(5);
    write_plan(&repo, &p);
    let v = expect_ok(&ulw(
        &repo,
        &[
            "repair",
            "--accept-plan",
            "--rationale",
            "hand edit was intended",
        ],
    ));
    assert_eq!(v["revision"], 6);
    let records = ledger(&repo).len();

    let check = ulw(&repo, &["repair", "--check"]);
    assert_eq!(check.code, 0, "{}", check.stdout);
    let v = check.json();
    assert_eq!(v["consistency"], "ok", "{v}");
    assert_eq!(v["findings"], json!([]), "{v}");
    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["consistency"],
        "ok"
    );

    let v = expect_ok(&ulw(&repo, &["repair"]));
    assert_eq!(v["actions"], json!([]), "{v}");
    assert_eq!(ledger(&repo).len(), records, "repair appended nothing");

    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let kinds = kinds(&repo);
    assert_eq!(kinds.len(), records + 1, "{kinds:?}");
    assert_eq!(kinds.last().unwrap(), "goal_added");
}

/// A ledger entry over `limits/maxLedgerRecordBytes` is refused before the
/// plan is replaced; otherwise the plan's `lastMutation` could never reach
/// the ledger and every later mutation failed in the recovery check.
#[test]
fn oversized_ledger_entry_leaves_the_plan_untouched() {
    let repo = repo_with_plan("- a");
    let evidence = "e".repeat(1_500_000);
    let batch = json!([{
        "kind": "add_subgoal", "title": "t", "objective": "o",
        "evidence": evidence, "rationale": "r"
    }]);
    repo.write("big.json", batch.to_string());
    let before_plan = std::fs::read(state(&repo, "goals.json")).unwrap();
    let before_ledger = std::fs::read(state(&repo, "ledger.jsonl")).unwrap();

    let e = expect_error(
        &ulw(&repo, &["steer", "--proposals-json", "big.json"]),
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
    assert_eq!(e["details"]["flag"], "ledger entry", "{e}");
    assert_eq!(
        std::fs::read(state(&repo, "goals.json")).unwrap(),
        before_plan
    );
    assert_eq!(
        std::fs::read(state(&repo, "ledger.jsonl")).unwrap(),
        before_ledger
    );

    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["consistency"],
        "ok"
    );
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
}

/// A profile override naming a steering kind the engine does not have is
/// a rules error, not a silently ignored entry.
#[test]
fn unknown_steering_kind_in_profile_is_rules_invalid() {
    let repo = Repo::new();
    repo.user_rules(
        r#"{"profiles":{"ulw-loop":{"steering":{"kinds":["add_subgoal","add_sub_goal"]}}}}"#,
    );
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief", "- a"]),
        "ULW_LOOP_RULES_INVALID",
    );
    assert_eq!(
        e["details"]["pointer"], "/profiles/ulw-loop/steering/kinds/1",
        "{e}"
    );
    assert!(!repo.join(STATE).exists(), "nothing was written");
}

/// `add-goal --json` answers `{ok, plan, goal, summary}` like the Node tool
/// (R§3.4); the plan was missing.
#[test]
fn add_goal_json_carries_the_plan() {
    let repo = repo_with_plan("- a");
    let v = expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(&keys[..4], ["ok", "plan", "goal", "summary"], "{keys:?}");
    assert_eq!(v["plan"], plan(&repo));
    assert_eq!(v["plan"]["goals"][1]["id"], v["goal"]["id"]);

    let e = expect_error(
        &ulw(&repo, &["add-goal", "--title", "c"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--objective");
}

/// `checkpoint --print-template` for a pending goal names the attempt
/// directory that `checkpoint --start-pending` will start and check the
/// gate against (attempt 1), not the never-used attempt 0, so the printed
/// template, filled in, completes the goal.
#[test]
fn template_of_a_pending_goal_matches_start_pending() {
    let repo = Repo::new();
    expect_ok(&eg(
        &repo,
        "ultragoal",
        &["create-goals", "--brief", "- a", "--json"],
    ));
    let t = expect_ok(&eg(
        &repo,
        "ultragoal",
        &[
            "checkpoint",
            "--print-template",
            "--goal-id",
            "G001-a",
            "--json",
        ],
    ));
    assert_eq!(
        t["attemptDir"], ".omagy/evidence/ultragoal/session/G001-a/a1",
        "{t}"
    );
    let gate = filled_gate(&repo, "ultragoal", "G001-a", &[]);
    // `gate check --goal-id` checks the pending goal's gate as
    // `checkpoint --start-pending` will: against the next attempt.
    let check = repo.run(
        "evidence-gate",
        &[
            "gate",
            "check",
            &gate,
            "--profile",
            "ultragoal",
            "--goal-id",
            "G001-a",
            "--format",
            "json",
        ],
        None,
    );
    assert_eq!(check.code, 0, "{}{}", check.stdout, check.stderr);
    let r = eg(
        &repo,
        "ultragoal",
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--start-pending",
            "--evidence",
            "done and reviewed",
            "--quality-gate-json",
            &gate,
            "--json",
        ],
    );
    let v = expect_ok(&r);
    assert_eq!(v["goal"]["status"], "complete", "{v}");
    assert_eq!(
        v["goal"]["attemptDir"],
        ".omagy/evidence/ultragoal/session/G001-a/a1"
    );

    let e = expect_error(
        &eg(
            &repo,
            "ultragoal",
            &[
                "checkpoint",
                "--print-template",
                "--goal-id",
                "G009",
                "--json",
            ],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert_eq!(e["details"]["goalId"], "G009");
}

/// `legacyCode: "ulw_loop_goal_not_found"` only where the Node tool emitted
/// the lower-case code (checkpoint, record-review-blockers); the template
/// printer used `ULW_LOOP_GOAL_NOT_FOUND` (goal-engine.md §4.4).
#[test]
fn template_goal_not_found_has_no_legacy_code() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(
            &repo,
            &["checkpoint", "--print-template", "--goal-id", "G9"],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert!(e.get("legacyCode").is_none(), "{e}");
    assert_eq!(e["message"], "Unknown ulw-loop id: G9.");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "record-review-blockers",
                "--goal-id",
                "G9",
                "--title",
                "t",
                "--objective",
                "o",
                "--evidence",
                "e",
                "--codex-goal-json",
                "{}",
            ],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_goal_not_found");
}

/// The CI audit counts the accept-plan entry as landed too: after a
/// deliberate `repair --accept-plan`, `verify-evidence` reports no
/// `LEDGER_BEHIND_PLAN` (a warning that `--strict` would turn into a failure).
#[test]
fn audit_after_accept_plan_has_no_behind_plan_warning() {
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["revision"] = json!(4);
    write_plan(&repo, &p);
    expect_ok(&ulw(
        &repo,
        &[
            "repair",
            "--accept-plan",
            "--rationale",
            "hand edit was intended",
        ],
    ));
    let r = repo.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !r.stdout.contains("LEDGER_BEHIND_PLAN"),
        "spurious warning: {}",
        r.stdout
    );
}
