//! Workflow overlap (goal-engine.md §9): the per-session registry,
//! `create-goals` consulting it, `--allow-workflow-overlap`,
//! `--handoff-from`, and `workflow list|check|register|release`.

use crate::goals_support::*;
use serde_json::{Value, json};

const REGISTRY: &str = ".omo/evidence-gate/workflows.json";

fn registry(repo: &Repo, rel: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo.join(rel)).unwrap()).unwrap()
}

fn workflow(repo: &Repo, profile: &str, args: &[&str]) -> Run {
    let mut all = vec!["workflow"];
    all.extend_from_slice(args);
    all.push("--json");
    eg(repo, profile, &all)
}

fn create(repo: &Repo, profile: &str, extra: &[&str]) -> Run {
    let mut all = vec!["create-goals", "--brief", "- a"];
    all.extend_from_slice(extra);
    all.push("--json");
    eg(repo, profile, &all)
}

#[test]
fn create_goals_registers_the_persistence_owner() {
    let repo = Repo::new();
    let v = expect_ok(&create(&repo, "ulw-loop", &[]));
    let reg = &v["workflow"]["registered"];
    assert_eq!(reg["workflow"], "ulw-loop");
    assert_eq!(reg["role"], "persistence_owner");
    assert_eq!(reg["stateDir"], ".omo/ulw-loop");
    assert_eq!(reg["registeredBy"], "evidence-gate");
    assert_eq!(v["workflow"]["registry"], REGISTRY);
    assert_eq!(
        ledger(&repo)[0]["workflow"],
        v["workflow"],
        "plan_created records it"
    );
    let r = registry(&repo, REGISTRY);
    assert_eq!(r["version"], 1);
    assert_eq!(r["sessionId"], Value::Null);
    assert_eq!(r["active"][0], *reg);
    let v = expect_ok(&eg(
        &repo,
        "ulw-loop",
        &[
            "create-goals",
            "--brief",
            "- a",
            "--session-id",
            "s1",
            "--json",
        ],
    ));
    assert_eq!(
        v["workflow"]["registry"],
        ".omo/evidence-gate/workflows/s1.json"
    );
    let r = registry(&repo, ".omo/evidence-gate/workflows/s1.json");
    assert_eq!(r["sessionId"], "s1");
    assert_eq!(r["active"][0]["stateDir"], ".omo/ulw-loop/s1");
}

#[test]
fn a_second_persistence_owner_is_denied_unless_overridden() {
    let repo = Repo::new();
    expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["register", "--workflow", "ralph", "--note", "ralph loop"],
    ));
    let before = repo.snapshot();
    let e = expect_error(
        &create(&repo, "ulw-loop", &[]),
        "ULW_LOOP_WORKFLOW_OVERLAP_DENIED",
    );
    let d = &e["details"];
    assert_eq!(d["starting"], "ulw-loop");
    assert_eq!(d["active"][0]["workflow"], "ralph");
    assert!(d["active"][0]["registeredAt"].is_string());
    assert_eq!(d["rule"], "ralph + ulw-loop: deny");
    assert_eq!(d["override"], "--allow-workflow-overlap");
    assert!(!state(&repo, "goals.json").exists());
    assert!(!state(&repo, "ledger.jsonl").exists());
    assert_eq!(
        registry(&repo, REGISTRY),
        serde_json::from_slice::<Value>(&before.iter().find(|(p, _, _)| p == REGISTRY).unwrap().1)
            .unwrap(),
        "the registry is unchanged"
    );
    let v = expect_ok(&create(
        &repo,
        "ulw-loop",
        &["--allow-workflow-overlap", "ralph only reviews"],
    ));
    let o = &v["workflow"]["overlapOverride"];
    assert_eq!(o["rationale"], "ralph only reviews");
    assert_eq!(o["active"][0]["workflow"], "ralph");
    assert_eq!(ledger(&repo)[0]["workflow"]["overlapOverride"], *o);
    let r = registry(&repo, REGISTRY);
    assert_eq!(r["active"].as_array().unwrap().len(), 2);
    // ultragoal and ulw-loop are two owners as well.
    let e = expect_error(
        &create(&repo, "ultragoal", &[]),
        "ULW_LOOP_WORKFLOW_OVERLAP_DENIED",
    );
    assert_eq!(e["details"]["active"].as_array().unwrap().len(), 2);
}

#[test]
fn sessions_do_not_overlap() {
    let repo = Repo::new();
    expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["register", "--workflow", "ralph", "--session-id", "s1"],
    ));
    expect_ok(&eg(
        &repo,
        "ulw-loop",
        &[
            "create-goals",
            "--brief",
            "- a",
            "--session-id",
            "s2",
            "--json",
        ],
    ));
}

#[test]
fn allowed_pairs_and_approved_handoffs() {
    let repo = Repo::new();
    expect_ok(&workflow(
        &repo,
        "ultragoal",
        &["register", "--workflow", "team"],
    ));
    expect_ok(&workflow(
        &repo,
        "ultragoal",
        &["register", "--workflow", "plan"],
    ));
    let v = expect_ok(&create(&repo, "ultragoal", &[]));
    assert_eq!(v["workflow"]["handoffFrom"], "plan");
    assert_eq!(v["workflow"]["registered"]["handoffFrom"], "plan");
    let r = registry(&repo, REGISTRY);
    let active: Vec<&str> = r["active"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["workflow"].as_str().unwrap())
        .collect();
    assert_eq!(
        active,
        ["team", "ultragoal"],
        "team is allowed beside ultragoal"
    );
    assert_eq!(r["history"][0]["workflow"], "plan");
    assert_eq!(r["history"][0]["releaseReason"], "handoff");
    assert!(r["history"][0]["releasedAt"].is_string());
}

#[test]
fn handoff_from_records_provenance_and_must_name_a_handoff() {
    let repo = Repo::new();
    let before = repo.snapshot();
    let e = expect_error(
        &create(&repo, "ultragoal", &["--handoff-from", "ralph"]),
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(e["details"]["flags"], json!(["--handoff-from"]));
    assert_eq!(repo.snapshot(), before, "nothing written");
    let v = expect_ok(&create(
        &repo,
        "ultragoal",
        &["--handoff-from", "deep-interview"],
    ));
    assert_eq!(
        v["workflow"]["handoffFrom"], "deep-interview",
        "never registered, still recorded"
    );
}

#[test]
fn stale_registrations_are_pruned() {
    let repo = Repo::new();
    expect_ok(&create(&repo, "ulw-loop", &[]));
    std::fs::remove_file(state(&repo, "goals.json")).unwrap();
    let v = expect_ok(&workflow(
        &repo,
        "ultragoal",
        &["check", "--workflow", "ultragoal"],
    ));
    assert_eq!(v["allowed"], true);
    assert_eq!(v["stale"][0]["workflow"], "ulw-loop");
    expect_ok(&create(&repo, "ultragoal", &[]));
    let r = registry(&repo, REGISTRY);
    assert_eq!(r["history"][0]["workflow"], "ulw-loop");
    assert_eq!(r["history"][0]["releaseReason"], "stale");
}

#[test]
fn force_archives_and_re_registers() {
    let repo = Repo::new();
    expect_ok(&create(&repo, "ulw-loop", &[]));
    expect_ok(&create(&repo, "ulw-loop", &["--force"]));
    let r = registry(&repo, REGISTRY);
    assert_eq!(r["active"].as_array().unwrap().len(), 1);
    assert_eq!(r["history"][0]["releaseReason"], "archived");
}

#[test]
fn the_run_final_checkpoint_releases_the_registration() {
    let repo = Repo::new();
    expect_ok(&create(&repo, "ulw-loop", &[]));
    start(&repo);
    pass_all(&repo, "G001-a");
    let gate = filled_gate(&repo, "ulw-loop", "G001-a", &[]);
    expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence",
            "done",
            "--codex-goal-json",
            &complete(&repo),
            "--quality-gate-json",
            &gate,
        ],
    ));
    let r = registry(&repo, REGISTRY);
    assert_eq!(r["active"], json!([]));
    assert_eq!(r["history"][0]["releaseReason"], "completed");
    // The session is free again.
    expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["check", "--workflow", "ralph"],
    ));
}

#[test]
fn check_list_and_release() {
    let repo = Repo::new();
    expect_ok(&create(&repo, "ulw-loop", &[]));
    let before = repo.snapshot();
    let r = workflow(&repo, "ulw-loop", &["check", "--workflow", "ralph"]);
    assert_eq!(r.code, 1, "ralph could not start now");
    let v = r.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["allowed"], false);
    assert_eq!(v["error"]["code"], "ULW_LOOP_WORKFLOW_OVERLAP_DENIED");
    assert_eq!(v["denied"][0]["workflow"], "ulw-loop");
    let v = expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["check", "--workflow", "team"],
    ));
    assert_eq!(v["allowed"], true);
    let v = expect_ok(&workflow(&repo, "ulw-loop", &["list"]));
    assert_eq!(v["active"][0]["workflow"], "ulw-loop");
    let text = eg(&repo, "ulw-loop", &["workflow", "list"]).stdout;
    assert!(
        text.contains("- ulw-loop [persistence_owner] since "),
        "{text}"
    );
    assert_eq!(repo.snapshot(), before, "list and check never write");

    let v = expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &[
            "release",
            "--workflow",
            "ulw-loop",
            "--rationale",
            "moving to ralph",
        ],
    ));
    assert_eq!(v["released"][0]["releaseReason"], "released");
    assert_eq!(v["released"][0]["releaseRationale"], "moving to ralph");
    expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["register", "--workflow", "ralph"],
    ));
}

#[test]
fn workflow_argument_errors() {
    let repo = Repo::new();
    let e = expect_error(
        &workflow(&repo, "ulw-loop", &["check"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--workflow");
    let e = expect_error(
        &workflow(&repo, "ulw-loop", &["register", "--workflow", "my-tool"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--role");
    expect_error(
        &workflow(
            &repo,
            "ulw-loop",
            &["register", "--workflow", "my-tool", "--role", "boss"],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    let e = expect_error(
        &workflow(&repo, "ulw-loop", &["frobnicate"]),
        "ULW_LOOP_SUBCOMMAND_UNKNOWN",
    );
    assert_eq!(e["details"]["command"], "workflow frobnicate");
    expect_ok(&workflow(
        &repo,
        "ulw-loop",
        &["register", "--workflow", "my-tool", "--role", "planner"],
    ));
    repo.write(REGISTRY, "{broken");
    let e = expect_error(&workflow(&repo, "ulw-loop", &["list"]), "ULW_LOOP_IO_ERROR");
    assert_eq!(e["details"]["op"], "parse");
}

#[cfg(unix)]
#[test]
fn a_symlinked_registry_is_unsafe() {
    let repo = Repo::new();
    repo.write(
        "elsewhere.json",
        r#"{"version":1,"sessionId":null,"active":[],"history":[]}"#,
    );
    repo.mkdir(".omo/evidence-gate");
    repo.symlink(repo.join("elsewhere.json"), REGISTRY);
    expect_error(
        &workflow(&repo, "ulw-loop", &["list"]),
        "ULW_LOOP_STATE_UNSAFE",
    );
    expect_error(&create(&repo, "ulw-loop", &[]), "ULW_LOOP_STATE_UNSAFE");
    assert!(!state(&repo, "goals.json").exists());
}

/// A corrupt registry stops `create-goals` before anything is written, and
/// the error says what the file is and how to get past it.
#[test]
fn a_corrupt_registry_names_its_remedy() {
    for bad in ["{\"version\":1,", r#"{"version":"one"}"#] {
        let repo = Repo::new();
        repo.write(REGISTRY, bad);
        let r = create(&repo, "ulw-loop", &[]);
        assert_eq!(r.code, 1);
        let e = expect_error(&r, "ULW_LOOP_IO_ERROR");
        assert_eq!(e["details"]["op"], "parse", "{e}");
        let msg = e["message"].as_str().unwrap();
        assert!(msg.contains("move it aside"), "{msg}");
        assert!(!state(&repo, "goals.json").exists());
        assert_eq!(std::fs::read_to_string(repo.join(REGISTRY)).unwrap(), bad);
    }
}

#[test]
fn schemas() {
    let repo = Repo::new();
    for name in ["workflow-registry", "workflow-rules"] {
        let r = repo.run("evidence-gate", &["schema", name], None);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let v = r.json();
        assert!(v["properties"].is_object(), "{name}: {v}");
    }
}

#[test]
fn a_registry_failure_after_the_final_commit_is_only_a_warning() {
    let repo = Repo::new();
    expect_ok(&create(&repo, "ulw-loop", &[]));
    start(&repo);
    pass_all(&repo, "G001-a");
    let gate = filled_gate(&repo, "ulw-loop", "G001-a", &[]);
    repo.write(REGISTRY, "{not json");
    let v = expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence",
            "done",
            "--codex-goal-json",
            &complete(&repo),
            "--quality-gate-json",
            &gate,
        ],
    ));
    assert_eq!(v["ledgerEntry"]["kind"], "aggregate_completed");
    let codes: Vec<&str> = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"WORKFLOW_REGISTRY_STALE"), "{codes:?}");
}
