//! Repository mode on repositories produced by the real goal engine
//! (`evidence-gate ulw-loop …` / `ultragoal …`): an untouched run passes, and
//! each kind of after-the-fact change is caught with its code and exit status.

use serde_json::json;

use crate::ci_support::findings;
use crate::goals_support::*;

/// A finished two-goal ulw-loop run: G001-a's first criterion is proven by
/// an evidence payload with a deliverable, G002-b completes the run through
/// the final checkpoint with a filled quality gate.
fn finished_run(profile: &str, state: &str) -> Repo {
    let repo = Repo::new();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.push("--json");
        expect_ok(&eg(&repo, profile, &all))
    };
    run(&["create-goals", "--brief", "- a\n- b"]);
    run(&["complete-goals"]);
    let evidence = payload(&repo, "g1", "G001-a", &["C001"], "passed");
    let plan = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(repo.join(&format!("{state}/goals.json"))).unwrap())
            .unwrap()
    };
    let criteria = |id: &str| -> Vec<String> {
        plan()["goals"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["id"] == id)
            .unwrap()["successCriteria"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_owned())
            .collect()
    };
    for (n, c) in criteria("G001-a").iter().enumerate() {
        let mut a = vec![
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            c,
            "--status",
            "pass",
            "--evidence",
            "proof",
            "--accept-seeded",
            "fixture",
        ];
        if n == 0 {
            a.extend(["--evidence-file", evidence.as_str()]);
        }
        run(&a);
    }
    let objective = plan()["codexObjective"].as_str().map(str::to_owned);
    let snapshot = |status: &str| {
        json!({"goal": {"objective": objective.clone().unwrap_or_default(), "status": status}})
            .to_string()
    };
    let flag = if profile == "ultragoal" {
        "--host-goal-json"
    } else {
        "--codex-goal-json"
    };
    let active = snapshot("active");
    run(&[
        "checkpoint",
        "--goal-id",
        "G001-a",
        "--status",
        "complete",
        "--evidence",
        "done",
        flag,
        &active,
    ]);
    for c in criteria("G002-b") {
        run(&[
            "record-evidence",
            "--goal-id",
            "G002-b",
            "--criterion-id",
            &c,
            "--status",
            "pass",
            "--evidence",
            "proof",
            "--accept-seeded",
            "fixture",
        ]);
    }
    let gate = filled_gate(&repo, profile, "G002-b", &[]);
    let done = snapshot("complete");
    run(&[
        "checkpoint",
        "--goal-id",
        "G002-b",
        "--status",
        "complete",
        "--evidence",
        "all proven",
        flag,
        &done,
        "--quality-gate-json",
        &gate,
    ]);
    repo
}

fn audit(repo: &Repo, extra: &[&str]) -> Run {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    repo.run("verify-evidence", &args, None)
}

#[test]
fn an_untouched_engine_run_passes() {
    for (profile, state) in [
        ("ulw-loop", ".omo/ulw-loop"),
        ("ultragoal", ".omagy/ultragoal"),
    ] {
        let repo = finished_run(profile, state);
        let out = audit(&repo, &[]);
        assert_eq!(out.code, 0, "{profile}: {}", out.stdout);
        let v = out.json();
        assert_eq!(v["reports"][0]["subject"], state);
        assert!(!v["reports"][0]["files"].as_array().unwrap().is_empty());
    }
}

#[test]
fn a_modified_recorded_deliverable_is_a_digest_mismatch() {
    let repo = finished_run("ulw-loop", STATE);
    repo.write("src/feature.rs", "fn feature() { changed() }\n");
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(
        (f[0].0.as_str(), f[0].2.as_deref()),
        ("LEDGER_DIGEST_MISMATCH", Some("src/feature.rs"))
    );
    assert_eq!(f[0].3["role"], "deliverable");
}

#[test]
fn a_deleted_recorded_deliverable_is_missing() {
    let repo = finished_run("ulw-loop", STATE);
    std::fs::remove_file(repo.join("src/feature.rs")).unwrap();
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["LEDGER_FILE_MISSING"]);
}

#[test]
fn one_changed_byte_in_a_middle_ledger_line_is_a_broken_chain_with_its_line() {
    let repo = finished_run("ulw-loop", STATE);
    let path = state(&repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let middle = lines.len() / 2;
    let at = lines[..middle].iter().map(|l| l.len() + 1).sum::<usize>()
        + lines[middle].find("\"kind\"").unwrap()
        + 2;
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&path, bytes).unwrap();
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    let broken: Vec<_> = f.iter().filter(|x| x.0 == "LEDGER_CHAIN_BROKEN").collect();
    assert_eq!(broken.len(), 1, "{f:?}");
    // The edited record is line `middle + 1`; the next line no longer links to it.
    assert_eq!(broken[0].3["line"], middle as u64 + 2);
}

#[test]
fn a_completion_recorded_without_a_final_gate_entry_is_unbacked() {
    // A run in progress whose plan is edited to claim completion.
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let mut p = plan(&repo);
    p["aggregateCompletion"] = json!({"status": "complete", "completedAt": "2026-01-01T00:00:00.000Z", "evidence": "done", "codexGoal": null});
    write_plan(&repo, &p);
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["COMPLETION_UNBACKED"]);
}

#[test]
fn an_empty_repository_fails_unless_allowed() {
    let repo = Repo::new();
    assert_eq!(audit(&repo, &[]).code, 1);
    assert_eq!(audit(&repo, &["--allow-empty"]).code, 0);
}

#[test]
fn the_audit_agrees_with_repair_check_and_a_repaired_crash_passes() {
    let repo = finished_run("ulw-loop", STATE);
    // Drop the final entry: the plan's lastMutation still carries it.
    let path = state(&repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.pop();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let _ = std::fs::remove_file(state(&repo, ".ledger.idx"));
    let check = ulw(&repo, &["repair", "--check"]);
    let check = check.json();
    assert_eq!(check["consistency"], "recoverable");
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    let mut codes = out.codes();
    codes.sort();
    assert_eq!(codes, ["COMPLETION_UNBACKED", "LEDGER_BEHIND_PLAN"]);
    expect_ok(&ulw(&repo, &["repair"]));
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}
