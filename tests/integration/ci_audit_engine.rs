//! Repository mode on repositories produced by the real goal engine
//! (`evidence-gate ulw-loop …` / `ultragoal …`): an untouched run passes, and
//! each kind of after-the-fact change is caught with its code and exit status.

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::ci_support::findings;
use crate::goals_support::*;

/// A finished two-goal ulw-loop run: G001-a's first criterion is proven by
/// an evidence payload with a deliverable, G002-b completes the run through
/// the final checkpoint with a filled quality gate.
pub(crate) fn finished_run(profile: &str, state: &str) -> Repo {
    let repo = Repo::new();
    drive_run(&repo, profile, state, &[], &mut |_| {});
    repo
}

/// The steps of [`finished_run`] in `repo`, each command given `scope`
/// (e.g. `--session-id s1`, with `state` the session's directory); `after`
/// runs after each step with its name.
pub(crate) fn drive_run(
    repo: &Repo,
    profile: &str,
    state: &str,
    scope: &[&str],
    after: &mut dyn FnMut(&str),
) {
    let mut run = |args: &[&str], step: &str| {
        let mut all = args.to_vec();
        all.extend_from_slice(scope);
        all.push("--json");
        expect_ok(&eg(repo, profile, &all));
        after(step);
    };
    run(&["create-goals", "--brief", "- a\n- b"], "created");
    run(&["complete-goals"], "started");
    let evidence = payload(repo, "g1", "G001-a", &["C001"], "passed");
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
        run(&a, &format!("G001-a {c}"));
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
    run(
        &[
            "checkpoint",
            "--goal-id",
            "G001-a",
            "--status",
            "complete",
            "--evidence",
            "done",
            flag,
            &active,
        ],
        "G001-a complete",
    );
    for c in criteria("G002-b") {
        run(
            &[
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
            ],
            &format!("G002-b {c}"),
        );
    }
    let gate = filled_gate(repo, profile, "G002-b", scope);
    let done = snapshot("complete");
    run(
        &[
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
        ],
        "run complete",
    );
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

/// Nothing follows the last record, so an in-place edit of it leaves the
/// chain intact; the engine's index of that record catches it.
#[test]
fn the_last_ledger_record_edited_in_place_is_an_index_mismatch() {
    let repo = finished_run("ulw-loop", STATE);
    let path = state(&repo, "ledger.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    let last_start = text.trim_end_matches('\n').rfind('\n').map_or(0, |i| i + 1);
    let at = last_start + text[last_start..].find("\"kind\":\"").unwrap() + 8;
    let mut bytes = text.into_bytes();
    bytes[at] = if bytes[at] == b'x' { b'y' } else { b'x' };
    std::fs::write(&path, &bytes).unwrap();
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.codes().contains(&"LEDGER_INDEX_MISMATCH".to_owned()),
        "{:?}",
        out.codes()
    );
    assert!(!out.codes().contains(&"LEDGER_CHAIN_BROKEN".to_owned()));
    // The plan names that record as its head (I7): the edit is tampering
    // even without the index, and rebuilding the index does not adopt it.
    assert!(out.codes().contains(&"LEDGER_TAMPERED".to_owned()));
    expect_error(
        &ulw(&repo, &["repair", "--rebuild-index"]),
        "ULW_LOOP_LEDGER_TAMPERED",
    );
    // After review, the ledger is accepted as it is, on the record.
    expect_ok(&ulw(
        &repo,
        &["repair", "--accept-tampered", "--rationale", "reviewed"],
    ));
    let out = audit(&repo, &[]);
    let mut codes = out.codes();
    codes.sort();
    // The edit renamed the completing entry's kind: the completion stays unbacked.
    assert_eq!(
        codes,
        ["COMPLETION_UNBACKED", "TAMPER_ACKNOWLEDGED"],
        "{}",
        out.stdout
    );
}

#[test]
fn a_completion_recorded_without_a_final_gate_entry_is_unbacked() {
    // A run in progress whose plan is edited to claim completion: since I7
    // that is also PLAN_TAMPERED (and still unbacked once acknowledged).
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let mut p = plan(&repo);
    p["aggregateCompletion"] = json!({"status": "complete", "completedAt": "2026-01-01T00:00:00.000Z", "evidence": "done", "codexGoal": null});
    write_plan_raw(&repo, &p);
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    let mut codes = out.codes();
    codes.sort();
    assert_eq!(codes, ["COMPLETION_UNBACKED", "PLAN_TAMPERED"]);
    acknowledge(&repo);
    let out = audit(&repo, &[]);
    assert_eq!(out.code, 1);
    let mut codes = out.codes();
    codes.sort();
    assert_eq!(codes, ["COMPLETION_UNBACKED", "TAMPER_ACKNOWLEDGED"]);
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

/// Kills `record-evidence --evidence-file` mutations at spread-out moments:
/// afterwards `verify-evidence --ledger` reports either nothing or only the
/// documented recoveries, and after `repair` the audit passes.
fn crash_drill(runs: usize, seed: u64, must_kill: bool) {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let evidence = payload(&repo, "g1", "G001-a", &["C001"], "passed");
    let mut x = seed;
    let mut killed = 0;
    let mut recoveries = 0;
    // Kill times are random below `window`; where a kill must land, a run
    // that ended first shortens the window until one does, and the drill goes
    // on (up to six times as many runs) so a fast machine still proves it.
    let mut window = 30_000u64;
    let mut run = 0;
    while run < runs || (must_kill && killed == 0 && run < runs * 6) {
        run += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let note = format!("proof {run}");
        let mut cmd = Command::new(crate::common::bin("evidence-gate"));
        crate::common::isolate_home(&mut cmd);
        cmd.args([
            "ulw-loop",
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            &note,
            "--evidence-file",
            &evidence,
            "--accept-seeded",
            "drill",
            "--json",
        ])
        .current_dir(repo.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
        for (k, v) in clean_env() {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(Duration::from_micros(x % window));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        } else if killed == 0 {
            window = (window * 3 / 4).max(1);
        }
        let _ = child.kill();
        let _ = child.wait();
        let out = audit(&repo, &["--ledger"]);
        assert!(out.code == 0 || out.code == 1, "run {run}: {}", out.stdout);
        recoveries += usize::from(out.code != 0 || !findings(&out).is_empty());
        for (code, _, _, _) in findings(&out) {
            assert!(
                [
                    "LEDGER_TORN_TAIL",
                    "LEDGER_UNTERMINATED",
                    "LEDGER_BEHIND_PLAN"
                ]
                .contains(&code.as_str()),
                "run {run}: {code} is no documented recovery: {}",
                out.stdout
            );
        }
        expect_ok(&ulw(&repo, &["repair"]));
        let after = audit(&repo, &["--ledger"]);
        assert_eq!(after.code, 0, "run {run}: after repair: {}", after.stdout);
        assert_eq!(findings(&after), [], "run {run}");
    }
    assert!(
        killed > 0 || !must_kill,
        "no run was killed mid-command; the drill proved nothing"
    );
    eprintln!(
        "crash drill: {killed} of {run} runs killed mid-command, {recoveries} left a recovery to report"
    );
}

#[cfg(unix)]
#[test]
fn killed_mutations_leave_only_documented_recoveries() {
    crash_drill(6, 0x9e37_79b9_7f4a_7c15, false);
}

#[cfg(unix)]
#[test]
#[ignore = "long drill, run by .ci/run"]
fn ci_audit_crash_drill_100_runs() {
    crash_drill(100, 0x2545_f491_4f6c_dd1d, true);
}
