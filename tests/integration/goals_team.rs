//! The team boundary (goal-engine.md §10): a worker (marked by the
//! profile's `team/workerEnv`) may read state and produce evidence but is
//! refused every mutation before the lock; the leader checkpoints from the
//! workers' evidence files.

use crate::goals_support::*;
use serde_json::{Value, json};

fn as_worker(repo: &Repo, profile: &str, var: &'static str, args: &[&str]) -> Run {
    let mut all = vec![profile];
    all.extend_from_slice(args);
    all.push("--json");
    let mut env = clean_env();
    env.push((var, "worker"));
    repo.run_env("evidence-gate", &all, None, &env)
}

#[test]
fn workers_are_refused_every_mutation_before_the_lock() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let snap = active(&repo);
    let refused: Vec<Vec<&str>> = vec![
        vec!["create-goals", "--brief", "- x", "--force"],
        vec!["complete-goals"],
        vec![
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
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "e",
            "--rationale",
            "r",
        ],
        vec!["add-goal", "--title", "t", "--objective", "o"],
        vec![
            "record-review-blockers",
            "--goal-id",
            "G002-b",
            "--title",
            "t",
            "--objective",
            "o",
            "--evidence",
            "e",
            "--codex-goal-json",
            &snap,
        ],
        vec!["repair"],
        vec!["repair", "--rebuild-index"],
        vec!["workflow", "register", "--workflow", "ralph"],
        vec!["workflow", "release", "--workflow", "ulw-loop"],
    ];
    for args in refused {
        let before = repo.snapshot();
        let r = as_worker(&repo, "ulw-loop", "OMO_TEAM_ROLE", &args);
        let e = expect_error(&r, "ULW_LOOP_TEAM_WORKER_FORBIDDEN");
        let command = if args[0] == "workflow" {
            format!("workflow {}", args[1])
        } else {
            args[0].to_owned()
        };
        assert_eq!(
            e["details"],
            json!({"command": command, "marker": "env:OMO_TEAM_ROLE"}),
            "{args:?}"
        );
        assert_eq!(repo.snapshot(), before, "{args:?} wrote something");
    }
}

#[test]
fn workers_may_read() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let before = repo.snapshot();
    for args in [
        vec!["status"],
        vec!["criteria", "--goal-id", "G001-a"],
        vec!["checkpoint", "--print-template", "--goal-id", "G001-a"],
        vec!["repair", "--check"],
        vec!["workflow", "list"],
        vec!["workflow", "check", "--workflow", "team"],
    ] {
        let r = as_worker(&repo, "ulw-loop", "OMO_TEAM_ROLE", &args);
        expect_ok(&r);
    }
    let r = as_worker(&repo, "ulw-loop", "OMO_TEAM_ROLE", &["help"]);
    assert_eq!(r.code, 0);
    assert_eq!(repo.snapshot(), before);
}

#[test]
fn markers_come_from_the_profile() {
    let repo = Repo::new();
    let r = as_worker(
        &repo,
        "ultragoal",
        "OMAGY_TEAM_ROLE",
        &["create-goals", "--brief", "- a"],
    );
    let e = expect_error(&r, "ULW_LOOP_TEAM_WORKER_FORBIDDEN");
    assert_eq!(e["details"]["marker"], "env:OMAGY_TEAM_ROLE");
    let r = as_worker(
        &repo,
        "ulw-loop",
        "OMAGY_TEAM_ROLE",
        &["create-goals", "--brief", "- a"],
    );
    expect_ok(&r);
    let mut env = clean_env();
    env.push(("OMO_TEAM_ROLE", "leader"));
    let r = repo.run_env(
        "evidence-gate",
        &[
            "ulw-loop",
            "add-goal",
            "--title",
            "t",
            "--objective",
            "o",
            "--json",
        ],
        None,
        &env,
    );
    expect_ok(&r);
}

#[test]
fn the_leader_checkpoints_from_the_workers_evidence_files() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    // Two workers report; the leader records both.
    let a = payload(&repo, "worker-a", "G001-a", &["C001"], "passed");
    repo.write("src/other.rs", "fn other() {}\n");
    let b_payload = json!({
        "evidence": 1, "summary": "Edge cases covered.", "goalId": "G001-a", "criterionIds": ["C002"],
        "deliverables": [{"path": "src/other.rs"}],
        "verification": {"verdict": "passed", "by": "worker-b", "checks": []}
    });
    repo.write("evidence/worker-b.json", b_payload.to_string());
    let r = as_worker(
        &repo,
        "ulw-loop",
        "OMO_TEAM_ROLE",
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence-file",
            &a,
        ],
    );
    expect_error(&r, "ULW_LOOP_TEAM_WORKER_FORBIDDEN");
    let v = expect_ok(&checkpoint_complete(
        &repo,
        "G001-a",
        &[
            "--evidence-file",
            &a,
            "--evidence-file",
            "evidence/worker-b.json",
        ],
    ));
    let payloads = v["ledgerEntry"]["evidencePayloads"].as_array().unwrap();
    let paths: Vec<&str> = payloads
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["evidence/worker-a.json", "evidence/worker-b.json"]);
    let by: Vec<&str> = payloads.iter().map(|p| p["by"].as_str().unwrap()).collect();
    assert_eq!(by, ["qa-executor", "worker-b"]);
    let files: Vec<&Value> = v["ledgerEntry"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .collect();
    assert!(
        files
            .iter()
            .any(|f| f["path"] == "src/other.rs" && f["sha256"].as_str().unwrap().len() == 64)
    );
}
