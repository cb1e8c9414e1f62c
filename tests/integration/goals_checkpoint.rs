//! The checkpoint pipeline end to end (goal-engine.md §3.4, §3.5, §7, §8):
//! gates, host-goal reconciliation, blockers, evidence files, auto-advance,
//! and the aggregate completion record of each profile.

use crate::goals_support::*;
use serde_json::{Value, json};

fn finish_final(repo: &Repo, id: &str, gate: &str) -> Run {
    let snap = complete(repo);
    ulw(
        repo,
        &[
            "checkpoint",
            "--goal-id",
            id,
            "--status",
            "complete",
            "--evidence",
            "all proven",
            "--codex-goal-json",
            &snap,
            "--quality-gate-json",
            gate,
        ],
    )
}

#[test]
fn run_final_checkpoint_writes_the_completion_record() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    assert_eq!(v["next"]["state"], "started");
    assert_eq!(v["next"]["goal"]["id"], "G002-b");
    pass_all(&repo, "G002-b");
    let gate = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let v = expect_ok(&finish_final(&repo, "G002-b", &gate));
    let rec = &v["aggregateCompletion"];
    assert_eq!(rec["status"], "complete");
    assert_eq!(rec["evidence"], "all proven");
    assert_eq!(rec["revision"], v["revision"]);
    let entry = &v["ledgerEntry"];
    assert_eq!(entry["kind"], "aggregate_completed");
    assert_eq!(rec["ledgerSeq"], entry["seq"]);
    assert_eq!(rec["qualityGateSha256"], entry["qualityGateSha256"]);
    assert_eq!(entry["gateScope"], "run");
    assert_eq!(entry["hostGoalReconciliation"], "ok");
    assert!(
        entry["qualityGate"]["codeReview"].is_object(),
        "normalised gate recorded"
    );
    let roles: Vec<&str> = entry["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["role"].as_str().unwrap())
        .collect();
    assert!(
        roles.contains(&"gate") && roles.contains(&"report") && roles.contains(&"gate-artifact"),
        "{roles:?}"
    );
    let paths: Vec<&str> = entry["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    let mut sorted = paths.clone();
    sorted.sort();
    assert_eq!(paths, sorted, "files sorted by path");
    let p = plan(&repo);
    assert_eq!(p["aggregateCompletion"], *rec);
    assert!(
        p.get("aggregate_completion").is_none(),
        "ulw-loop writes one key"
    );
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["summary"]["runComplete"], true);
    assert_eq!(start(&repo)["state"], "complete");
    expect_error(
        &ulw(&repo, &["add-goal", "--title", "x", "--objective", "x"]),
        "ULW_LOOP_PLAN_COMPLETE",
    );
    let check = expect_ok(&ulw(&repo, &["repair", "--check"]));
    assert_eq!(check["consistency"], "ok");
}

#[test]
fn an_unfilled_template_is_rejected() {
    let repo = repo_with_plan("- a");
    start(&repo);
    pass_all(&repo, "G001-a");
    let t = expect_ok(&ulw(
        &repo,
        &["checkpoint", "--print-template", "--goal-id", "G001-a"],
    ));
    assert_eq!(t["scope"]["kind"], "run");
    assert_eq!(t["hostGoalTemplate"]["goal"]["status"], "complete");
    assert_eq!(t["attemptDir"], ".omo/evidence/ulw/session/G001-a/a1");
    assert!(
        t["guidance"]
            .as_str()
            .unwrap()
            .contains(".omo/evidence/ulw/session/G001-a/a1")
    );
    repo.write("raw.json", t["qualityGateTemplate"].to_string());
    let e = expect_error(
        &finish_final(&repo, "G001-a", "raw.json"),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert!(
        e["details"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "GATE_FIELD_PLACEHOLDER")
    );
}

#[test]
fn print_template_is_read_only_and_warns_about_ignored_flags() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let before = repo.snapshot();
    let t = expect_ok(&ulw(
        &repo,
        &["checkpoint", "--print-template", "--status", "complete"],
    ));
    assert_eq!(repo.snapshot(), before);
    assert_eq!(t["scope"]["goalId"], "G001-a");
    assert_eq!(
        t["hostGoalTemplate"]["goal"]["status"], "active",
        "non-final aggregate story"
    );
    assert_eq!(t["warnings"][0]["code"], "ARGUMENT_IGNORED");
    expect_error(
        &ulw(
            &repo,
            &["checkpoint", "--print-template", "--goal-id", "G9"],
        ),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
}

#[test]
fn ultragoal_completes_without_a_host_snapshot_and_writes_both_keys() {
    let repo = Repo::new();
    let u = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        eg(&repo, "ultragoal", &all)
    };
    let v = expect_ok(&u(&["create-goals", "--brief", "- Rate limit"]));
    assert_eq!(v["plan"]["agy_goal_adapter"], "artifact");
    assert_eq!(v["plan"]["native_goal_parity"], false);
    assert_eq!(v["plan"]["gateRules"], "ultragoal");
    assert_eq!(v["plan"]["profile"], "ultragoal");
    assert_eq!(
        v["plan"]["goals"][0]["successCriteria"],
        json!([]),
        "ultragoal seeds no criteria"
    );
    let s = expect_ok(&u(&["status"]));
    assert_eq!(
        s["adapter"],
        json!({"agy_goal_adapter": "artifact", "native_goal_parity": false})
    );
    let text = eg(&repo, "ultragoal", &["status"]).stdout;
    assert!(
        text.contains("adapter: artifact (native goal parity: false)"),
        "{text}"
    );
    let started = expect_ok(&u(&["complete-goals"]));
    let instruction = started["instruction"]["text"].as_str().unwrap();
    assert!(instruction.contains("Ultragoal aggregate-goal handoff"));
    assert!(instruction.contains("source of truth"));
    assert!(
        !instruction.contains("update_goal"),
        "no native goal API is named"
    );
    let gate = filled_gate(&repo, "ultragoal", "G001-rate-limit", &[]);
    let v = expect_ok(&u(&[
        "checkpoint",
        "--goal-id",
        "G001-rate-limit",
        "--status",
        "complete",
        "--evidence",
        "done",
        "--quality-gate-json",
        &gate,
    ]));
    assert_eq!(v["ledgerEntry"]["hostGoalReconciliation"], "skipped");
    let p: Value =
        serde_json::from_slice(&std::fs::read(repo.join(".omagy/ultragoal/goals.json")).unwrap())
            .unwrap();
    assert_eq!(p["aggregate_completion"], p["aggregateCompletion"]);
    assert_eq!(p["aggregate_completion"]["status"], "complete");
    assert_eq!(p["aggregate_completion"]["codexGoal"], Value::Null);
}

#[test]
fn a_supplied_ultragoal_snapshot_fails_closed() {
    let repo = Repo::new();
    expect_ok(&eg(
        &repo,
        "ultragoal",
        &["create-goals", "--brief", "- a\n- b", "--json"],
    ));
    expect_ok(&eg(&repo, "ultragoal", &["complete-goals", "--json"]));
    let r = eg(
        &repo,
        "ultragoal",
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence",
            "x",
            "--host-goal-json",
            "{\"goal\":{\"objective\":\"other\",\"status\":\"active\"}}",
            "--json",
        ],
    );
    let e = expect_error(&r, "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Host goal objective mismatch"),
        "{e}"
    );
}

#[test]
fn gate_supplied_for_a_non_final_goal_is_validated() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let e = expect_error(
        &checkpoint_complete(&repo, "G001-a", &["--quality-gate-json", "{}"]),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert_eq!(e["details"]["code"], "GATE_SECTION_MISSING");
    let gate = filled_gate(&repo, "ulw-loop", "G001-a", &[]);
    let v = expect_ok(&checkpoint_complete(
        &repo,
        "G001-a",
        &["--quality-gate-json", &gate],
    ));
    assert_eq!(v["ledgerEntry"]["gateScope"], "goal");
}

#[test]
fn snapshot_and_gate_failing_together_give_one_combined_error() {
    let repo = repo_with_plan("- a");
    start(&repo);
    pass_all(&repo, "G001-a");
    let snap = json!({"goal": {"objective": "other", "status": "complete"}}).to_string();
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
                "--quality-gate-json",
                "{}",
            ],
        ),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    let msg = e["message"].as_str().unwrap();
    assert!(msg.starts_with("Codex goal objective mismatch"), "{msg}");
    assert!(msg.contains('\n'));
    assert_eq!(e["details"]["hostGoal"]["actualObjective"], "other");
    assert_eq!(e["details"]["code"], "GATE_SECTION_MISSING");
}

#[test]
fn watch_code_quality_is_surfaced() {
    let repo = repo_with_plan("- a");
    start(&repo);
    pass_all(&repo, "G001-a");
    let path = filled_gate(&repo, "ulw-loop", "G001-a", &[]);
    let mut gate: Value =
        serde_json::from_slice(&std::fs::read(repo.join(&path)).unwrap()).unwrap();
    gate["codeReview"]["codeQualityStatus"] = json!("WATCH");
    gate["codeReview"]["evidence"] = json!("two TODOs remain in the limiter");
    repo.write(&path, gate.to_string());
    let v = expect_ok(&finish_final(&repo, "G001-a", &path));
    assert_eq!(
        v["ledgerEntry"]["evidence"],
        "all proven | codeQuality=WATCH: two TODOs remain in the limiter"
    );
    assert!(
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["code"] == "GATE_CODE_QUALITY_WATCH")
    );
    assert_eq!(
        v["ledgerEntry"]["warnings"],
        json!(["GATE_CODE_QUALITY_WATCH"])
    );
}

#[test]
fn per_story_mode_needs_a_complete_snapshot_of_the_goal_objective() {
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
    pass_all(&repo, "G001-a");
    let active = json!({"goal": {"objective": "a", "status": "active"}}).to_string();
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
                &active,
            ],
        ),
        "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("Codex goal is not complete")
    );
    let done = json!({"goal": {"objective": "a", "status": "complete"}}).to_string();
    let v = expect_ok(&ulw(
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
            &done,
        ],
    ));
    assert_eq!(v["next"]["instruction"]["json"], json!({"objective": "b"}));
}

#[test]
fn no_advance_leaves_the_next_goal_to_complete_goals() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    assert!(v.get("next").is_none());
    assert!(plan(&repo).get("activeGoalId").is_none());
    assert_eq!(goal(&repo, "G002-b")["status"], "pending");
}

#[test]
fn evidence_files_are_verified_and_their_digests_recorded() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let p = payload(&repo, "c1", "G001-a", &["C001"], "passed");
    let v = expect_ok(&ulw(
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
            "reviewed",
        ],
    ));
    assert_eq!(
        v["criterion"]["status"], "pass",
        "status from the payload verdict"
    );
    assert_eq!(
        v["criterion"]["capturedEvidence"],
        "Feature implemented and tested."
    );
    let entry = &v["ledgerEntry"];
    assert_eq!(entry["acceptedSeeded"], "reviewed");
    let files = entry["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    assert_eq!(files[0]["path"], "evidence/c1.json");
    assert_eq!(files[0]["role"], "payload");
    assert_eq!(files[1]["path"], "src/feature.rs");
    assert_eq!(files[1]["role"], "deliverable");
    assert_eq!(files[1]["size"], 16);
    assert_eq!(entry["evidencePayloads"][0]["by"], "qa-executor");
    let f = payload(&repo, "fail", "G001-a", &["C002"], "failed");
    std::fs::remove_file(repo.join("src/feature.rs")).unwrap();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C002",
            "--evidence-file",
            &f,
        ],
    ));
    assert_eq!(
        v["criterion"]["status"], "fail",
        "a failing report is accepted for a failure claim"
    );
}

#[test]
fn checkpoint_with_evidence_file_only() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let p = payload(&repo, "done", "G001-a", &[], "passed");
    let snap = active(&repo);
    let v = expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence-file",
            &p,
            "--codex-goal-json",
            &snap,
        ],
    ));
    assert_eq!(
        v["ledgerEntry"]["evidence"],
        "Feature implemented and tested."
    );
    assert_eq!(v["ledgerEntry"]["files"][0]["role"], "payload");
}

#[test]
fn large_host_snapshots_are_stored_as_digests() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    let snap = json!({"goal": {"objective": objective(&repo), "status": "active"}, "pad": "x".repeat(20_000)}).to_string();
    let v = expect_ok(&ulw(
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
    ));
    let cg = &v["ledgerEntry"]["codexGoal"];
    assert_eq!(cg["omitted"], true);
    assert!(cg["size"].as_u64().unwrap() > 20_000);
    assert_eq!(cg["sha256"].as_str().unwrap().len(), 64);
}

fn block(repo: &Repo, id: &str, evidence: &str) -> Value {
    expect_ok(&ulw(
        repo,
        &[
            "checkpoint",
            "--goal-id",
            id,
            "--status",
            "blocked",
            "--evidence",
            evidence,
        ],
    ))
}

#[test]
fn blocked_on_user_after_escalation_and_its_handoff() {
    let repo = repo_with_plan("- a\n- b");
    let v = block(
        &repo,
        "G001-a",
        "ghcr.io pull: 401 unauthorized, token missing",
    );
    assert_eq!(
        v["ledgerEntry"]["blockerSignature"],
        "GHCR_PULL_ACCESS:HTTP_401_ANONYMOUS:GHCR_VISIBILITY_OR_CREDENTIAL_REQUIRED"
    );
    assert_eq!(v["ledgerEntry"]["blockerGoalCount"], 1);
    set_pending(&repo, "G001-a");
    block(
        &repo,
        "G001-a",
        "ghcr.io pull: 401 unauthorized, token missing",
    );
    set_pending(&repo, "G001-a");
    let v = block(
        &repo,
        "G001-a",
        "ghcr.io pull: 401 unauthorized, token missing",
    );
    assert_eq!(v["goal"]["status"], "needs_user_decision");
    assert_eq!(v["ledgerEntry"]["kind"], "goal_needs_user_decision");
    assert_eq!(v["ledgerEntry"]["blockerOccurrenceCount"], 3);
    assert_eq!(v["goal"]["nonRetriable"], true);
    block(&repo, "G002-b", "tests are red");
    let r = expect_ok(&ulw(&repo, &["complete-goals", "--retry-failed"]));
    assert_eq!(r["state"], "blocked_on_user");
    assert_eq!(r["blocked"], true);
    let h = r["handoff"].as_str().unwrap();
    assert!(
        h.starts_with("ulw-loop: blocked on repeated external authorization"),
        "{h}"
    );
    assert!(h.contains("Goal: G001-a - a"));
    assert!(h.contains("Resolve external authorization: GHCR_PULL_ACCESS"));
}

fn set_pending(repo: &Repo, id: &str) {
    edit_goal(repo, id, |g| {
        g.insert("status".into(), json!("pending"));
    });
}

#[test]
fn stalled_is_not_reported_as_all_complete() {
    let repo = repo_with_plan("- a\n- b");
    expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "failed",
            "--evidence",
            "tests red",
        ],
    ));
    edit_goal(&repo, "G002-b", |g| {
        g.insert("status".into(), json!("complete"));
    });
    let r = expect_ok(&ulw(&repo, &["complete-goals"]));
    assert_eq!(r["state"], "stalled");
    assert_eq!(r["runComplete"], false);
    assert_eq!(r["stalledGoalIds"], json!(["G001-a"]));
    let text = eg(&repo, "ulw-loop", &["complete-goals"]).stdout;
    assert!(
        text.starts_with("ulw-loop: no schedulable goals; stalled: G001-a"),
        "{text}"
    );
    assert!(!text.contains("all goals complete"));
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert!(
        s["nextActions"][0]["command"]
            .as_str()
            .unwrap()
            .contains("complete-goals --retry-failed")
    );
}

#[test]
fn status_next_actions_guide_the_active_goal() {
    let repo = repo_with_plan("- a\n- b");
    assert!(
        expect_ok(&ulw(&repo, &["status"]))["nextActions"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with("complete-goals")
    );
    start(&repo);
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(
        s["currentAttemptDir"],
        ".omo/evidence/ulw/session/G001-a/a1"
    );
    let first = s["nextActions"][0]["command"].as_str().unwrap();
    assert!(
        first.contains("record-evidence --goal-id G001-a --criterion-id C001"),
        "{first}"
    );
    // The seeded criterion's suggestion is runnable as printed (without
    // `--accept-seeded` it would be ULW_LOOP_CRITERION_SEEDED).
    assert!(first.ends_with("--accept-seeded \"...\""), "{first}");
    let words: Vec<String> = first
        .trim_start_matches("evidence-gate ulw-loop ")
        .split(' ')
        .map(|w| w.trim_matches('"').to_owned())
        .collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let r = expect_ok(&ulw(&repo, &words));
    assert_eq!(r["criterion"]["status"], "pass", "{r}");
    let snap = active(&repo);
    let s = expect_ok(&ulw(&repo, &["status", "--codex-goal-json", &snap]));
    assert_eq!(s["hostGoal"]["ok"], true);
    assert_eq!(s["hostGoal"]["goalId"], "G001-a");
}

fn batch_plan() -> Repo {
    let repo = with_batch("- a\n- b\n- c", vb1());
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    repo
}

#[test]
fn batch_final_checkpoint_closes_the_batch() {
    let repo = batch_plan();
    pass_all(&repo, "G002-b");
    let gate = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let t = expect_ok(&ulw(
        &repo,
        &["checkpoint", "--print-template", "--goal-id", "G002-b"],
    ));
    assert_eq!(
        t["scope"],
        json!({"kind": "batch", "goalId": "G002-b", "batchId": "VB1"})
    );
    let v = expect_ok(&checkpoint_complete(
        &repo,
        "G002-b",
        &["--quality-gate-json", &gate],
    ));
    let kinds: Vec<&str> = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["goal_completed", "batch_closed", "goal_started"]);
    assert_eq!(v["ledgerEntries"][1]["message"], "VB1");
    assert_eq!(v["ledgerEntry"]["gateScope"], "batch:VB1");
    let b = &plan(&repo)["validationBatches"][0];
    assert_eq!(b["closedByGoalId"], "G002-b");
    assert!(b["closedAt"].is_string());
}

#[test]
fn batch_criteria_must_all_pass() {
    let repo = batch_plan();
    edit_goal(&repo, "G002-b", |g| {
        g["successCriteria"][0]["status"] = json!("pass");
        g["successCriteria"][1]["status"] = json!("pass");
    });
    let path = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    // The gate claims full coverage; the plan still has C003 pending.
    let mut gate: Value =
        serde_json::from_slice(&std::fs::read(repo.join(&path)).unwrap()).unwrap();
    gate["criteriaCoverage"]["passCount"] = gate["criteriaCoverage"]["totalCriteria"].clone();
    repo.write(&path, gate.to_string());
    let e = expect_error(
        &checkpoint_complete(&repo, "G002-b", &["--quality-gate-json", &path]),
        "ULW_LOOP_VALIDATION_BATCH_CRITERIA_PENDING",
    );
    assert_eq!(
        e["details"],
        json!({"batchId": "VB1", "pending": ["G002-b:C003"]})
    );
}

#[test]
fn batch_gate_counts_must_match_the_members() {
    let repo = batch_plan();
    pass_all(&repo, "G002-b");
    let path = filled_gate(&repo, "ulw-loop", "G002-b", &[]);
    let mut gate: Value =
        serde_json::from_slice(&std::fs::read(repo.join(&path)).unwrap()).unwrap();
    gate["criteriaCoverage"]["totalCriteria"] = json!(9);
    gate["criteriaCoverage"]["passCount"] = json!(9);
    repo.write(&path, gate.to_string());
    let e = expect_error(
        &checkpoint_complete(&repo, "G002-b", &["--quality-gate-json", &path]),
        "ULW_LOOP_VALIDATION_BATCH_GATE_MISMATCH",
    );
    assert_eq!(
        e["details"]["expected"],
        json!({"totalCriteria": 6, "passCount": 6})
    );
    assert_eq!(e["details"]["actual"]["totalCriteria"], 9);
    assert_eq!(e["details"]["scope"], "batch:VB1");
}
