//! Every `ULW_LOOP_*` code the implemented subcommands raise, driven through
//! the real binary: the code, the exit status and the details
//! (goal-engine.md §4.4). Codes owned by other commands (steering, review
//! blockers, workflow) are tested with those commands.

use crate::goals_support::*;
use serde_json::json;

#[test]
fn argument_missing_in_the_anchor_order() {
    let repo = repo_with_plan("- a\n- b");
    let e = expect_error(&ulw(&repo, &["checkpoint"]), "ULW_LOOP_ARGUMENT_MISSING");
    assert_eq!(e["details"]["flag"], "--goal-id");
    let e = expect_error(
        &ulw(&repo, &["checkpoint", "--goal-id", "G001-a"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--status");
    let e = expect_error(
        &ulw(
            &repo,
            &["checkpoint", "--goal-id", "G001-a", "--status", "complete"],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--evidence");
    // Present but blank, without an evidence file: the pipeline's evidence
    // step answers (goal-engine.md §3.4 step 4, §4.4), after the arguments
    // and the goal lookup.
    // Files, not directory mtimes: the refused command took and released the lock.
    let files = || -> Vec<(String, Vec<u8>)> {
        repo.snapshot()
            .into_iter()
            .filter(|(p, ..)| repo.join(p).is_file())
            .map(|(p, c, _)| (p, c))
            .collect()
    };
    let before = files();
    for status in ["failed", "blocked"] {
        let r = ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                status,
                "--evidence",
                " \t ",
            ],
        );
        assert_eq!(r.code, 1);
        let e = expect_error(&r, "ULW_LOOP_EVIDENCE_REQUIRED");
        assert_eq!(e["legacyCode"], "ulw_loop_evidence_required");
    }
    assert_eq!(files(), before, "a refused checkpoint writes nothing");
    expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G009-nope",
                "--status",
                "failed",
                "--evidence",
                " ",
            ],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    let e = expect_error(
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
            ],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--codex-goal-json");
    let e = expect_error(&ulw(&repo, &["criteria"]), "ULW_LOOP_ARGUMENT_MISSING");
    assert_eq!(e["details"]["flag"], "--goal-id");
    let e = expect_error(
        &ulw(&repo, &["add-goal", "--title", "t"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--objective");
    let e = expect_error(
        &ulw(&repo, &["repair", "--accept-plan"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--rationale");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "add-goal",
                "--title",
                "t",
                "--objective",
                "o",
                "--token-budget",
                "0",
            ],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--token-budget");
}

#[test]
fn status_invalid() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "done",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_STATUS_INVALID",
    );
    assert_eq!(e["details"]["status"], "done");
}

#[test]
fn record_evidence_flag_codes() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(&repo, &["record-evidence"]),
        "ULW_LOOP_GOAL_ID_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--goal-id");
    let e = expect_error(
        &ulw(&repo, &["record-evidence", "--goal-id", "G001-a"]),
        "ULW_LOOP_CRITERION_ID_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--criterion-id");
    let base = [
        "record-evidence",
        "--goal-id",
        "G001-a",
        "--criterion-id",
        "C001",
    ];
    let e = expect_error(&ulw(&repo, &base), "ULW_LOOP_EVIDENCE_STATUS_REQUIRED");
    assert_eq!(e["details"]["flag"], "--status");
    let mut args = base.to_vec();
    args.extend(["--status", "pending"]);
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_EVIDENCE_STATUS_INVALID");
    assert_eq!(e["details"]["status"], "pending");
    let mut args = base.to_vec();
    args.extend(["--status", "pass"]);
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_EVIDENCE_REQUIRED");
    assert_eq!(e["details"]["flag"], "--evidence");
}

#[test]
fn brief_codes() {
    let repo = Repo::new();
    expect_error(
        &ulw(&repo, &["create-goals", "--brief", "  "]),
        "ULW_LOOP_BRIEF_REQUIRED",
    );
    let long = format!("- {}", "x".repeat(1201));
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief", &long]),
        "ULW_LOOP_BRIEF_ITEM_TOO_LONG",
    );
    assert_eq!(
        e["details"],
        json!({"line": 1, "length": 1201, "max": 1200})
    );
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief-file", "nope.md"]),
        "ULW_LOOP_INPUT_NOT_FOUND",
    );
    assert_eq!(
        e["details"],
        json!({"flag": "--brief-file", "path": "nope.md"})
    );
    repo.mkdir("briefdir");
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief-file", "briefdir"]),
        "ULW_LOOP_IO_ERROR",
    );
    assert_eq!(e["details"]["path"], "briefdir");
    assert!(
        !repo.join(".omo").exists(),
        "failed create-goals writes nothing"
    );
}

#[test]
fn codex_goal_mode_invalid() {
    let repo = Repo::new();
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a",
                "--codex-goal-mode",
                "story",
            ],
        ),
        "ULW_LOOP_CODEX_GOAL_MODE_INVALID",
    );
    assert_eq!(e["details"]["value"], "story");
    let v = expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "- a",
            "--host-goal-mode",
            "per-story",
        ],
    ));
    assert_eq!(v["plan"]["codexGoalMode"], "per_story");
}

#[test]
fn json_input_invalid_and_not_found() {
    let repo = Repo::new();
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a",
                "--validation-batch-json",
                "[1,",
            ],
        ),
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
    assert_eq!(e["details"]["flag"], "--validation-batch-json");
    expect_error(
        &ulw(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a",
                "--validation-batch-json",
                "b.json",
            ],
        ),
        "ULW_LOOP_INPUT_NOT_FOUND",
    );
    repo.write("b.json", "{\"a\":1,\"a\":2}");
    expect_error(
        &ulw(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a",
                "--validation-batch-json",
                "b.json",
            ],
        ),
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
}

#[test]
fn codex_goal_json_invalid_and_not_found() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let base = [
        "checkpoint",
        "--goal-id",
        "G001-a",
        "--status",
        "complete",
        "--evidence",
        "x",
        "--codex-goal-json",
    ];
    let mut args = base.to_vec();
    args.push("{not json");
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_CODEX_GOAL_JSON_INVALID");
    assert_eq!(e["details"]["flag"], "--codex-goal-json");
    let mut args = base.to_vec();
    args.push("snap.json");
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_INPUT_NOT_FOUND");
    assert_eq!(e["details"]["path"], "snap.json");
    repo.write("snap.json", "not json");
    expect_error(&ulw(&repo, &args), "ULW_LOOP_CODEX_GOAL_JSON_INVALID");
}

#[test]
fn input_too_large() {
    let repo = Repo::new();
    repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"limits":{"maxInputBytes":64}}}}"#,
    );
    let big = format!("[{}]", "1,".repeat(60) + "1");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a",
                "--validation-batch-json",
                &big,
            ],
        ),
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
    assert_eq!(e["details"]["max"], 64);
}

#[test]
fn plan_invalid_for_version_profile_and_markers() {
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["version"] = json!(2);
    write_plan(&repo, &p);
    expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_INVALID");
    p["version"] = json!(1);
    p["profile"] = json!("ultragoal");
    write_plan(&repo, &p);
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_INVALID");
    assert_eq!(e["details"]["field"], "profile");
    let repo = Repo::new();
    expect_ok(&eg(
        &repo,
        "ultragoal",
        &["create-goals", "--brief", "- a", "--json"],
    ));
    let path = repo.join(".omagy/ultragoal/goals.json");
    let mut p: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    p["native_goal_parity"] = json!(true);
    std::fs::write(&path, serde_json::to_string_pretty(&p).unwrap()).unwrap();
    let r = eg(&repo, "ultragoal", &["status", "--json"]);
    let e = expect_error(&r, "ULW_LOOP_PLAN_INVALID");
    assert_eq!(e["details"]["field"], "native_goal_parity");
    assert_eq!(e["details"]["expected"], false);
}

#[test]
fn plan_corrupt_for_syntax_rules_and_size() {
    let repo = repo_with_plan("- a\n- b");
    std::fs::write(state(&repo, "goals.json"), "{\"version\":1,").unwrap();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
    assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
    for (edit, pointer) in [
        (json!({"/goals/0/status": "done"}), "/goals/0/status"),
        (json!({"/goals/1/id": "G001-a"}), "/goals/1/id"),
        (json!({"/goals/0/attempt": -1}), "/goals/0/attempt"),
        (
            json!({"/goals/0/successCriteria/1/id": "C001"}),
            "/goals/0/successCriteria/1/id",
        ),
        (
            json!({"/goals/0/successCriteria/0/userModel": "happyish"}),
            "/goals/0/successCriteria/0/userModel",
        ),
        (json!({"/revision": "x"}), "/revision"),
    ] {
        let repo = repo_with_plan("- a\n- b");
        let mut p = plan(&repo);
        for (ptr, v) in edit.as_object().unwrap() {
            *p.pointer_mut(ptr).unwrap() = v.clone();
        }
        write_plan(&repo, &p);
        let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
        assert_eq!(e["details"]["pointer"], pointer, "{e}");
    }
    let repo = repo_with_plan("- a\n- b");
    let mut p = plan(&repo);
    p["validationBatches"] =
        json!([{"batchId": "B", "memberIds": ["G001-a", "nope"], "finalGoalId": "G001-a"}]);
    write_plan(&repo, &p);
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
    assert_eq!(e["details"]["pointer"], "/validationBatches/0/memberIds/1");
    let mut p = plan(&repo);
    p.as_object_mut().unwrap().remove("validationBatches");
    p["aggregateCompletion"] = json!({"status": "complete"});
    p["aggregate_completion"] = json!({"status": "complete", "x": 1});
    write_plan(&repo, &p);
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
    assert_eq!(e["details"]["pointer"], "/aggregate_completion");
    repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"limits":{"maxPlanBytes":100}}}}"#,
    );
    expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
}

#[test]
fn plan_exists_and_plan_exists_complete() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief", "- b"]),
        "ULW_LOOP_PLAN_EXISTS",
    );
    assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
    });
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief", "- b"]),
        "ULW_LOOP_PLAN_EXISTS_COMPLETE",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("--session-id <new-id>")
    );
}

#[test]
fn goal_not_found_on_every_path() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(&repo, &["criteria", "--goal-id", "G9"]),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert_eq!(e["details"]["goalId"], "G9");
    // The anchor's criteria command already used the upper-case code.
    assert!(e.get("legacyCode").is_none(), "{e}");
    assert_eq!(e["message"], "Unknown ulw-loop id: G9.");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G9",
                "--criterion-id",
                "C001",
                "--status",
                "pass",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert!(e.get("legacyCode").is_none());
    assert_eq!(e["message"], "UlwLoop goal not found: G9.");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G9",
                "--status",
                "blocked",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_goal_not_found");
    assert_eq!(e["message"], "Unknown ulw-loop id: G9.");
}

#[test]
fn criterion_not_found_and_seeded() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G001-a",
                "--criterion-id",
                "C9",
                "--status",
                "pass",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_CRITERION_NOT_FOUND",
    );
    assert_eq!(
        e["details"],
        json!({"goalId": "G001-a", "criterionId": "C9"})
    );
    let e = expect_error(
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
    assert_eq!(
        e["details"],
        json!({"goalId": "G001-a", "criterionId": "C001"})
    );
}

#[test]
fn criteria_not_all_pass_for_essential_and_per_story_gates() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let e = expect_error(
        &checkpoint_complete(&repo, "G001-a", &[]),
        "ULW_LOOP_CRITERIA_NOT_ALL_PASS",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_criteria_not_all_pass");
    assert_eq!(
        e["message"],
        "Goal G001-a has unresolved essential success criteria."
    );
    assert_eq!(e["details"]["unresolved"].as_array().unwrap().len(), 2);
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            "- a\n- b",
            "--codex-goal-mode",
            "per_story",
        ],
    ));
    start(&repo);
    edit_goal(&repo, "G001-a", |g| {
        g["successCriteria"][0]["status"] = json!("pass");
        g["successCriteria"][1]["status"] = json!("pass");
    });
    let snap = json!({"goal": {"objective": "a", "status": "complete"}}).to_string();
    let e = expect_error(
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
                &snap,
            ],
        ),
        "ULW_LOOP_CRITERIA_NOT_ALL_PASS",
    );
    assert_eq!(e["message"], "Goal G001-a has unresolved success criteria.");
    assert_eq!(
        e["details"]["unresolved"],
        json!([{"id": "C003", "status": "pending"}])
    );
}

#[test]
fn criteria_not_all_pass_plan_wide_at_the_final_goal() {
    let repo = repo_with_plan("- a\n- b");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
    });
    start(&repo);
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
        "ULW_LOOP_CRITERIA_NOT_ALL_PASS",
    );
    assert_eq!(
        e["message"],
        "Ulw-loop aggregate has unresolved success criteria."
    );
    assert_eq!(e["details"]["unresolved"][0]["goalId"], "G001-a");
}

#[test]
fn codex_snapshot_mismatch_with_recovery_details() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let snap = json!({"goal": {"objective": "something else", "status": "active"}}).to_string();
    let e = expect_error(
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
                &snap,
            ],
        ),
        "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
    );
    assert_eq!(e["legacyCode"], "ulw_loop_codex_snapshot_mismatch");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Codex goal objective mismatch")
    );
    assert_eq!(e["details"]["actualObjective"], "something else");
    assert_eq!(e["details"]["expectedStatuses"], json!(["active"]));
    assert!(
        e["details"]["suggestedCommand"]
            .as_str()
            .unwrap()
            .starts_with("omo ulw-loop checkpoint")
    );
}

#[test]
fn quality_gate_invalid_without_a_gate_or_with_a_failing_one() {
    let repo = repo_with_plan("- a");
    start(&repo);
    pass_all(&repo, "G001-a");
    let snap = complete(&repo);
    let base = [
        "checkpoint",
        "--goal-id",
        "G001-a",
        "--status",
        "complete",
        "--evidence",
        "x",
        "--codex-goal-json",
        &snap,
    ];
    let e = expect_error(&ulw(&repo, &base), "ULW_LOOP_QUALITY_GATE_INVALID");
    assert_eq!(e["details"]["field"], "qualityGate");
    let mut args = base.to_vec();
    args.extend(["--quality-gate-json", "{\"codeReview\":{}}"]);
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_QUALITY_GATE_INVALID");
    assert_eq!(e["details"]["code"], "GATE_SECTION_MISSING");
    assert!(
        e["details"]["findings"].as_array().unwrap().len() > 1,
        "every finding is reported"
    );
    assert_eq!(
        goal(&repo, "G001-a")["status"],
        "in_progress",
        "a rejected gate changes nothing"
    );
}

#[test]
fn gate_loader_codes() {
    let repo = repo_with_plan("- a");
    start(&repo);
    let snap = complete(&repo);
    let base = [
        "checkpoint",
        "--goal-id",
        "G001-a",
        "--status",
        "complete",
        "--evidence",
        "x",
        "--codex-goal-json",
        &snap,
        "--quality-gate-json",
    ];
    let mut args = base.to_vec();
    args.push("gate.json");
    expect_error(&ulw(&repo, &args), "ULW_LOOP_INPUT_NOT_FOUND");
    repo.write("gate.json", "{oops");
    let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_JSON_INPUT_INVALID");
    assert_eq!(e["legacyCode"], "ulw_loop_json_input_invalid");
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "failed",
                "--evidence",
                "x",
                "--quality-gate-json",
                "{}",
            ],
        ),
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(
        e["details"]["flags"],
        json!(["--quality-gate-json", "--status"])
    );
}

#[test]
fn validation_batch_declaration_codes() {
    let repo = Repo::new();
    let brief = "- a\n- b\n- c";
    for (batches, code) in [
        (json!({"x": 1}), "ULW_LOOP_VALIDATION_BATCH_INVALID"),
        (
            json!([{"batchId": "B", "memberIds": ["G001-a"], "finalGoalId": "G001-a"}]),
            "ULW_LOOP_VALIDATION_BATCH_INVALID",
        ),
        (
            json!([{"batchId": "B", "memberIds": ["G001-a", "G002-b"], "finalGoalId": "G003-c"}]),
            "ULW_LOOP_VALIDATION_BATCH_FINAL_NOT_MEMBER",
        ),
        (
            json!([{"batchId": "B", "memberIds": ["G001-a", "G9"], "finalGoalId": "G001-a"}]),
            "ULW_LOOP_VALIDATION_BATCH_MEMBER_UNKNOWN",
        ),
        (
            json!([
                {"batchId": "B", "memberIds": ["G001-a", "G002-b"], "finalGoalId": "G002-b"},
                {"batchId": "C", "memberIds": ["G002-b", "G003-c"], "finalGoalId": "G003-c"}
            ]),
            "ULW_LOOP_VALIDATION_BATCH_OVERLAP",
        ),
    ] {
        let text = batches.to_string();
        expect_error(
            &ulw(
                &repo,
                &[
                    "create-goals",
                    "--brief",
                    brief,
                    "--validation-batch-json",
                    &text,
                ],
            ),
            code,
        );
    }
    assert!(!repo.join(".omo").exists());
}

fn batch_repo() -> Repo {
    with_batch("- a\n- b\n- c", vb1())
}

#[test]
fn validation_batch_open_and_gate_required() {
    let repo = batch_repo();
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("needs_user_decision"));
    });
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
    assert_eq!(e["details"]["batchId"], "VB1");
    assert_eq!(e["details"]["open"], json!(["G001-a"]));
    assert_eq!(e["details"]["requiresDecision"], json!(["G001-a"]));
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
    });
    let e = expect_error(
        &checkpoint_complete(&repo, "G002-b", &[]),
        "ULW_LOOP_VALIDATION_BATCH_GATE_REQUIRED",
    );
    assert_eq!(e["details"]["batchId"], "VB1");
}

#[test]
fn validation_batches_open_at_the_run_final_goal() {
    // G001 is superseded by the final goal G003, so it does not block G003
    // from being final, but VB1 cannot close until G003 itself completes.
    let repo = batch_repo();
    let mut p = plan(&repo);
    p["goals"][0]["steeringStatus"] = json!("superseded");
    p["goals"][0]["supersededBy"] = json!(["G003-c"]);
    p["goals"][1]["status"] = json!("complete");
    p["goals"][2]["status"] = json!("in_progress");
    for g in p["goals"].as_array_mut().unwrap() {
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    }
    write_plan(&repo, &p);
    let r = ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G003-c",
            "--status",
            "complete",
            "--evidence",
            "x",
            "--codex-goal-json",
            &complete(&repo),
        ],
    );
    let e = expect_error(&r, "ULW_LOOP_VALIDATION_BATCH_OPEN");
    assert_eq!(e["details"]["batchIds"], json!(["VB1"]));
    assert_eq!(e["message"], "Validation batches remain open.");
}

#[test]
fn lock_timeout_against_a_held_lock() {
    // Holding is an OS lock on an open descriptor (threat-model.md I3); the
    // holder record in the file only describes the holder.
    let repo = repo_with_plan("- a");
    std::fs::write(
        state(&repo, ".mutation.lock"),
        r#"{"pid":4242,"createdAt":"now"}"#,
    )
    .unwrap();
    let held = std::fs::File::options()
        .read(true)
        .write(true)
        .open(state(&repo, ".mutation.lock"))
        .unwrap();
    held.lock().unwrap();
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "add-goal",
                "--title",
                "b",
                "--objective",
                "b",
                "--lock-timeout-ms",
                "150",
            ],
        ),
        "ULW_LOOP_LOCK_TIMEOUT",
    );
    assert_eq!(e["details"]["lockPath"], ".omo/ulw-loop/.mutation.lock");
    assert_eq!(e["details"]["retryable"], true);
    assert_eq!(e["details"]["holder"]["pid"], 4242);
    assert!(e["details"]["waitedMs"].as_u64().unwrap() >= 150);
    assert_eq!(goal_ids(&repo).len(), 1, "nothing written");
    drop(held);
}

#[test]
fn plan_ledger_mismatch() {
    let repo = repo_with_plan("- a");
    let mut p = plan(&repo);
    p["revision"] = json!(7);
    write_plan(&repo, &p);
    let e = expect_error(
        &ulw(&repo, &["add-goal", "--title", "b", "--objective", "b"]),
        "ULW_LOOP_PLAN_LEDGER_MISMATCH",
    );
    assert_eq!(e["details"]["planRevision"], 7);
    assert_eq!(e["details"]["ledgerRevision"], 1);
    assert_eq!(e["details"]["lastSeq"], 1);
    assert!(
        e["details"]["remedy"]
            .as_str()
            .unwrap()
            .contains("repair --accept-plan")
    );
}

#[cfg(unix)]
#[test]
fn state_unsafe_for_symlinked_state() {
    let repo = repo_with_plan("- a");
    let outside = tempfile::tempdir().unwrap();
    std::fs::rename(
        state(&repo, "goals.json"),
        outside.path().join("goals.json"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("goals.json"),
        state(&repo, "goals.json"),
    )
    .unwrap();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_STATE_UNSAFE");
    assert_eq!(
        e["details"],
        json!({"path": ".omo/ulw-loop/goals.json", "finding": "PATH_SYMLINK"})
    );
    let repo = Repo::new();
    repo.mkdir(".omo");
    std::os::unix::fs::symlink(outside.path(), repo.join(".omo/ulw-loop")).unwrap();
    let e = expect_error(
        &ulw(&repo, &["create-goals", "--brief", "- a"]),
        "ULW_LOOP_STATE_UNSAFE",
    );
    assert_eq!(e["details"]["path"], ".omo/ulw-loop");
    assert!(
        std::fs::read_dir(outside.path()).unwrap().count() == 1,
        "nothing written through the link"
    );
    let repo = repo_with_plan("- a");
    std::os::unix::fs::symlink("/tmp/elsewhere", state(&repo, ".mutation.lock")).unwrap();
    let e = expect_error(
        &ulw(&repo, &["add-goal", "--title", "b", "--objective", "b"]),
        "ULW_LOOP_STATE_UNSAFE",
    );
    assert_eq!(e["details"]["finding"], "PATH_SYMLINK");
    let repo = repo_with_plan("- a");
    std::fs::remove_file(state(&repo, "ledger.jsonl")).unwrap();
    std::fs::create_dir(state(&repo, "ledger.jsonl")).unwrap();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_STATE_UNSAFE");
    assert_eq!(e["details"]["finding"], "NOT_REGULAR_FILE");
}

#[test]
fn plan_complete_freezes_mutations() {
    let repo = repo_with_plan("- a");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("complete"));
    });
    for args in [
        vec!["add-goal", "--title", "b", "--objective", "b"],
        vec![
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
        vec![
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "blocked",
            "--evidence",
            "x",
        ],
    ] {
        let e = expect_error(&ulw(&repo, &args), "ULW_LOOP_PLAN_COMPLETE");
        assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
        assert_eq!(e["details"]["command"], args[0]);
    }
    let v = start(&repo);
    assert_eq!(v["state"], "complete");
}

#[test]
fn evidence_file_codes() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let rec = |file: &str, status: Option<&str>, crit: &str| {
        let mut args = vec![
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            crit,
            "--evidence-file",
            file,
            "--accept-seeded",
            "ok",
        ];
        if let Some(s) = status {
            args.extend(["--status", s]);
        }
        ulw(&repo, &args)
    };
    let e = expect_error(
        &rec("missing.json", None, "C001"),
        "ULW_LOOP_INPUT_NOT_FOUND",
    );
    assert_eq!(e["details"]["flag"], "--evidence-file");
    repo.write("bad.json", "{\"evidence\":1}");
    let e = expect_error(
        &rec("bad.json", None, "C001"),
        "ULW_LOOP_EVIDENCE_FILE_INVALID",
    );
    assert_eq!(e["details"]["path"], "bad.json");
    assert_eq!(
        e["details"]["findings"][0]["code"],
        "EVIDENCE_SCHEMA_INVALID"
    );
    let other = payload(&repo, "other", "G002-b", &["C001"], "passed");
    let e = expect_error(&rec(&other, None, "C001"), "ULW_LOOP_EVIDENCE_MISMATCH");
    assert_eq!(e["details"]["field"], "goalId");
    let crit = payload(&repo, "crit", "G001-a", &["C002"], "passed");
    let e = expect_error(&rec(&crit, None, "C001"), "ULW_LOOP_EVIDENCE_MISMATCH");
    assert_eq!(e["details"]["field"], "criterionIds");
    let failed = payload(&repo, "failed", "G001-a", &["C001"], "failed");
    let e = expect_error(
        &rec(&failed, Some("pass"), "C001"),
        "ULW_LOOP_EVIDENCE_MISMATCH",
    );
    assert_eq!(e["details"]["field"], "verification.verdict");
    let ok = payload(&repo, "ok", "G001-a", &["C001"], "passed");
    std::fs::remove_file(repo.join("src/feature.rs")).unwrap();
    let e = expect_error(&rec(&ok, None, "C001"), "ULW_LOOP_EVIDENCE_REJECTED");
    assert_eq!(e["details"]["findings"][0]["code"], "FILE_MISSING");
}

#[cfg(unix)]
#[test]
fn evidence_unverifiable_when_a_deliverable_cannot_be_read() {
    use std::os::unix::fs::PermissionsExt;
    let repo = repo_with_plan("- a");
    start(&repo);
    let p = payload(&repo, "p", "G001-a", &["C001"], "passed");
    std::fs::set_permissions(repo.join("src"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let readable = std::fs::read_dir(repo.join("src")).is_ok();
    let r = ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--evidence-file",
            &p,
            "--accept-seeded",
            "ok",
        ],
    );
    std::fs::set_permissions(repo.join("src"), std::fs::Permissions::from_mode(0o755)).unwrap();
    if readable {
        // Privileged users read through mode 000, so nothing is unverifiable for them.
        assert_eq!(r.code, 0, "{}", r.stdout);
        return;
    }
    let e = expect_error(&r, "ULW_LOOP_EVIDENCE_UNVERIFIABLE");
    assert_eq!(e["details"]["findings"][0]["code"], "IO_ERROR");
}
