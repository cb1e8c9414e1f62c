//! One named regression test per weakness of the Node tool this engine fixes
//! (R§10, goal-engine.md §12). Broader coverage of each lives in the topic
//! modules; these pin the exact scenario the reference describes.

use std::process::{Command, Stdio};

use crate::goals_support::*;
use serde_json::{Value, json};

#[test]
fn r10_01_parallel_record_evidence_keeps_every_update() {
    let repo = repo_with_plan("- a\n- b\n- c\n- d\n- e\n- f");
    let mut p = plan(&repo);
    for g in p["goals"].as_array_mut().unwrap() {
        g["status"] = json!("in_progress");
    }
    write_plan(&repo, &p);
    let mut children = Vec::new();
    for id in goal_ids(&repo) {
        for c in ["C001", "C002", "C003"] {
            let mut cmd = Command::new(crate::common::bin("evidence-gate"));
            crate::common::isolate_home(&mut cmd);
            cmd.args([
                "ulw-loop",
                "record-evidence",
                "--goal-id",
                &id,
                "--criterion-id",
                c,
                "--status",
                "pass",
                "--evidence",
                "x",
                "--accept-seeded",
                "probe",
                "--lock-timeout-ms",
                "60000",
                "--json",
            ])
            .current_dir(repo.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
            for (k, v) in clean_env() {
                cmd.env(k, v);
            }
            children.push(cmd.spawn().unwrap());
        }
    }
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let passed = plan(&repo)["goals"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["successCriteria"].as_array().unwrap().clone())
        .filter(|c| c["status"] == "pass")
        .count();
    assert_eq!(passed, 18, "the anchor kept 5 of 18");
}

#[test]
fn r10_02_plan_and_ledger_are_one_revision_and_one_append() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    let entries = v["ledgerEntries"].as_array().unwrap();
    assert_eq!(entries.len(), 2);
    assert!(entries.iter().all(|e| e["revision"] == v["revision"]));
    let lm = &plan(&repo)["lastMutation"];
    assert_eq!(lm["revision"], v["revision"]);
    assert_eq!(
        lm["entries"].as_array().unwrap().len(),
        2,
        "the plan carries its own pending audit"
    );
}

#[test]
fn r10_03_force_archives_instead_of_truncating() {
    let repo = repo_with_plan("- a");
    let before = std::fs::read(state(&repo, "ledger.jsonl")).unwrap();
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- b", "--force"]));
    let archived = std::fs::read(
        repo.join(v["archived"].as_str().unwrap())
            .join("ledger.jsonl"),
    )
    .unwrap();
    assert!(
        archived.starts_with(&before),
        "the old audit trail survives byte for byte"
    );
}

#[test]
fn r10_04_status_and_criteria_never_write() {
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["codexObjective"] = json!("Complete all ulw-loop stories in .omo/ulw-loop/goals.json: a");
    write_plan(&repo, &p);
    let before = repo.snapshot();
    expect_ok(&ulw(&repo, &["status"]));
    expect_ok(&ulw(&repo, &["criteria", "--goal-id", "G001-a"]));
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn r10_07_a_never_started_goal_cannot_be_completed_by_accident() {
    let repo = repo_with_plan("- a\n- b");
    let e = expect_error(
        &checkpoint_complete(&repo, "G001-a", &[]),
        "ULW_LOOP_TRANSITION_INVALID",
    );
    assert_eq!(e["details"]["from"], "pending");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    expect_error(
        &checkpoint_complete(&repo, "G001-a", &[]),
        "ULW_LOOP_TRANSITION_INVALID",
    );
    assert_eq!(
        kinds(&repo)
            .iter()
            .filter(|k| *k == "goal_completed")
            .count(),
        1,
        "no second goal_completed"
    );
}

#[test]
fn r10_08_review_blocked_goal_is_reopened_not_a_dead_end() {
    let repo = repo_with_plan("- a\n- b");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("review_blocked"));
        g.insert("reviewBlockedBy".into(), json!(["G002-b"]));
    });
    start(&repo);
    pass_all(&repo, "G002-b");
    let v = expect_ok(&checkpoint_complete(&repo, "G002-b", &[]));
    assert_eq!(
        v["ledgerEntry"]["kind"], "goal_completed",
        "the resolution goal is not final"
    );
    assert_eq!(v["next"]["state"], "started");
    assert_eq!(v["next"]["goal"]["id"], "G001-a");
    assert_eq!(v["next"]["goal"]["attempt"], 1);
    let started = ledger(&repo)
        .into_iter()
        .rev()
        .find(|e| e["kind"] == "goal_started")
        .unwrap();
    assert_eq!(started["reopenedFrom"], "review_blocked");
    let t = v["next"]["instruction"]["text"].as_str().unwrap();
    assert!(
        t.contains("Final story"),
        "the re-opened goal must pass the final gate again"
    );
}

#[test]
fn r10_09_stuck_is_not_done() {
    let repo = repo_with_plan("- a");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("blocked"));
    });
    let v = expect_ok(&ulw(&repo, &["complete-goals"]));
    assert_eq!(v["state"], "stalled");
    assert_eq!(v["runComplete"], false);
}

#[test]
fn r10_10_one_goal_blocked_repeatedly_escalates() {
    let repo = repo_with_plan("- a\n- b");
    let mut counts = Vec::new();
    for _ in 0..3 {
        let v = expect_ok(&ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "blocked",
                "--evidence",
                "NPM token missing for the registry",
            ],
        ));
        counts.push(v["ledgerEntry"]["blockerOccurrenceCount"].as_u64().unwrap());
        if v["goal"]["status"] == "needs_user_decision" {
            break;
        }
        edit_goal(&repo, "G001-a", |g| {
            g.insert("status".into(), json!("pending"));
        });
    }
    assert_eq!(counts, [1, 2, 3], "the anchor stayed at 1, 2, 2, 2");
    assert_eq!(goal(&repo, "G001-a")["status"], "needs_user_decision");
}

#[test]
fn r10_11_completion_clears_the_whole_blocker_set() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    edit_goal(&repo, "G001-a", |g| {
        for (k, v) in [
            ("blockedReason", json!("old")),
            ("blockerSignature", json!("EXTERNAL_AUTHORIZATION_REQUIRED")),
            ("blockerOccurrenceCount", json!(2)),
            (
                "requiredExternalDecision",
                json!("Resolve external authorization: X"),
            ),
            ("nonRetriable", json!(true)),
            ("failureReason", json!("old")),
        ] {
            g.insert(k.into(), v);
        }
    });
    let v = expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    let g = goal(&repo, "G001-a");
    for k in [
        "blockedReason",
        "blockerSignature",
        "blockerOccurrenceCount",
        "requiredExternalDecision",
        "nonRetriable",
        "failureReason",
    ] {
        assert!(g.get(k).is_none(), "{k} survived completion");
        assert!(
            v["ledgerEntry"].get(k).is_none(),
            "{k} copied into goal_completed"
        );
    }
}

#[test]
fn r10_12_a_complete_run_is_frozen() {
    let repo = repo_with_plan("- a");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
        g["successCriteria"][0]["status"] = json!("pass");
    });
    expect_error(
        &ulw(&repo, &["add-goal", "--title", "b", "--objective", "b"]),
        "ULW_LOOP_PLAN_COMPLETE",
    );
    expect_error(
        &ulw(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G001-a",
                "--criterion-id",
                "C001",
                "--status",
                "fail",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_PLAN_COMPLETE",
    );
    assert_eq!(
        goal(&repo, "G001-a")["successCriteria"][0]["status"],
        "pass",
        "a completed run cannot be un-passed"
    );
}

#[test]
fn r10_15_seeded_placeholders_need_revision_or_an_audited_override() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    expect_error(
        &ulw(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G001-a",
                "--criterion-id",
                "C001",
                "--status",
                "pass",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_CRITERION_SEEDED",
    );
    expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--status",
            "fail",
            "--evidence",
            "not yet",
        ],
    ));
    let v = expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "x",
            "--accept-seeded",
            "the placeholder states the real check",
        ],
    ));
    assert_eq!(
        v["ledgerEntry"]["acceptedSeeded"],
        "the placeholder states the real check"
    );
}

#[test]
fn r10_17_gate_and_snapshot_are_never_silently_ignored() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_error(
        &checkpoint_complete(
            &repo,
            "G001-a",
            &["--quality-gate-json", "{\"nonsense\":true}"],
        ),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    let snap = json!({"goal": {"objective": "unrelated", "status": "active"}}).to_string();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "failed",
            "--evidence",
            "broken",
            "--codex-goal-json",
            &snap,
        ],
    ));
    assert_eq!(
        v["ledgerEntry"]["codexGoal"]["goal"]["objective"],
        "unrelated"
    );
    assert_eq!(v["ledgerEntry"]["hostGoalReconciliation"], "mismatch");
    assert_eq!(v["warnings"][0]["code"], "HOST_GOAL_MISMATCH");
}

fn task_scoped_setup() -> (Repo, String, Vec<String>) {
    let repo = repo_with_plan("- Build the rate limiter for the login endpoint\n- Write the docs");
    start(&repo);
    let id = goal_ids(&repo)[0].clone();
    pass_all(&repo, &id);
    let snap = json!({"goal": {"objective": "Finish the tasks tracked in .omo/ulw-loop/goals.json", "status": "complete"}}).to_string();
    let args = vec![
        "checkpoint".to_owned(),
        "--goal-id".into(),
        id.clone(),
        "--status".into(),
        "complete".into(),
        "--evidence".into(),
        format!("{id} implementation done, tests passed; see .omo/ulw-loop/goals.json"),
        "--codex-goal-json".into(),
        snap.clone(),
    ];
    (repo, snap, args)
}

#[test]
fn r10_18_task_scoped_snapshots_need_an_explicit_audited_flag() {
    let (repo, _, args) = task_scoped_setup();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let e = expect_error(&ulw(&repo, &a), "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH");
    assert_eq!(e["details"]["taskScopedEligible"], "completed");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("--accept-task-scoped-snapshot")
    );
    let mut a = a.clone();
    a.extend([
        "--accept-task-scoped-snapshot",
        "the host goal was created for the first task only",
    ]);
    let v = expect_ok(&ulw(&repo, &a));
    assert_eq!(v["ledgerEntry"]["hostGoalReconciliation"], "task_scoped");
    assert_eq!(
        v["ledgerEntry"]["taskScopedAcceptance"]["kind"],
        "completed"
    );
    assert_eq!(
        v["ledgerEntry"]["taskScopedAcceptance"]["rationale"],
        "the host goal was created for the first task only"
    );
    assert_eq!(v["warnings"][0]["code"], "HOST_GOAL_TASK_SCOPED");
    assert!(
        plan(&repo).get("aggregateCompletion").is_none(),
        "a non-final acceptance completes nothing"
    );
}

#[test]
fn r10_28_corrupt_plans_and_missing_inputs_have_their_own_codes() {
    let repo = repo_with_plan("- a");
    std::fs::write(state(&repo, "goals.json"), "{").unwrap();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
    assert_ne!(e["code"], "ULW_LOOP_UNEXPECTED");
    let repo = repo_with_plan("- a");
    start(&repo);
    expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
                "nope.json",
            ],
        ),
        "ULW_LOOP_INPUT_NOT_FOUND",
    );
}

#[test]
fn r10_29_argument_parser_quirks_are_gone() {
    let repo = Repo::new();
    let v = expect_ok(&eg(
        &repo,
        "ulw-loop",
        &["create-goals", "--json", "status", "page", "redesign"],
    ));
    assert_eq!(
        v["plan"]["goals"][0]["objective"], "status page redesign",
        "the first word is kept"
    );
    expect_error(
        &ulw(&repo, &["status", "--session-id", ".."]),
        "ULW_LOOP_SESSION_ID_INVALID",
    );
    let repo = Repo::new();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "- a",
            "--codex-goal-mode",
            "per-story",
        ],
    ));
    assert_eq!(
        v["plan"]["codexGoalMode"], "per_story",
        "the documented spelling works"
    );
}

#[test]
fn r10_30_brief_parsing_keeps_content() {
    let repo = Repo::new();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "# Goal\nShip the importer\n\n## Later\nDocument it",
        ],
    ));
    let objectives: Vec<&str> = v["plan"]["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["objective"].as_str().unwrap())
        .collect();
    assert_eq!(objectives, ["Ship the importer", "Document it"]);
    let long = format!("- {}", "y".repeat(1300));
    expect_error(
        &ulw(&repo, &["create-goals", "--brief", &long, "--force"]),
        "ULW_LOOP_BRIEF_ITEM_TOO_LONG",
    );
}

#[test]
fn r10_31_attempt_dir_is_persisted_at_start() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    assert_eq!(
        goal(&repo, "G001-a")["attemptDir"],
        ".omo/evidence/ulw/session/G001-a/a1"
    );
    // Whatever later changes the inputs of the computation (here the
    // template itself), the started attempt keeps its directory.
    repo.user_rules(
        r#"{"profiles":{"ulw-loop":{"attemptDirTemplate":".omo/evidence/moved/{sid}/{goalId}/a{attempt}"}}}"#,
    );
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(
        s["currentAttemptDir"],
        ".omo/evidence/ulw/session/G001-a/a1"
    );
    let t = expect_ok(&ulw(&repo, &["checkpoint", "--print-template"]));
    assert_eq!(
        t["attemptDir"], ".omo/evidence/ulw/session/G001-a/a1",
        "template and gate use the same directory"
    );
}

#[test]
fn r10_35_the_ledger_head_comes_from_the_index() {
    let repo = repo_with_plan("- a");
    let idx: Value =
        serde_json::from_slice(&std::fs::read(state(&repo, ".ledger.idx")).unwrap()).unwrap();
    assert_eq!(idx["lastSeq"], 1);
    assert_eq!(
        idx["ledgerBytes"],
        std::fs::metadata(state(&repo, "ledger.jsonl"))
            .unwrap()
            .len()
    );
    std::fs::write(state(&repo, ".ledger.idx"), serde_json::to_vec(&json!({
        "version": 1, "ledgerBytes": idx["ledgerBytes"], "records": 41, "lastSeq": 1, "lastRevision": 1,
        "lastRecordOffset": idx["lastRecordOffset"], "lastRecordSha256": idx["lastRecordSha256"], "keysBytes": 0
    })).unwrap()).unwrap();
    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["records"],
        41,
        "a valid index is trusted, the ledger is not rescanned"
    );
}

#[test]
fn r10_36_inputs_and_embedded_payloads_are_bounded() {
    let repo = Repo::new();
    repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"limits":{"maxBriefBytes":32}}}}"#,
    );
    repo.write("brief.md", "- a very long brief that exceeds the cap\n");
    expect_error(
        &ulw(&repo, &["create-goals", "--brief-file", "brief.md"]),
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
}
