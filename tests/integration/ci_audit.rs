//! Repository mode of `verify-evidence` (evidence.md §7) on goal-engine state
//! directories written to the spec: the audit's verdicts, and a negative test
//! asserting code and exit status for every repository-mode code.

use serde_json::{Value, json};

use crate::ci_support::*;
use crate::common::Repo;

fn complete_repo() -> (Repo, Run4) {
    let r = Repo::new();
    let run = Run4::new(&r, STATE);
    (r, run)
}

#[test]
fn an_untouched_repository_passes_and_lists_every_recorded_file() {
    let (r, _) = complete_repo();
    let out = audit(&r, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert_eq!(
        out.stderr, "",
        "no progress line when stderr is not a terminal"
    );
    let v = out.json();
    assert_eq!(v["verdict"], "pass");
    let plan = &v["reports"][0];
    assert_eq!(plan["subject"], STATE);
    assert_eq!(plan["kind"], "plan");
    let files: Vec<&str> = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, [TRANSCRIPT, REVIEW, DELIVERABLE]);
    let bytes: u64 = plan["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["size"].as_u64().unwrap())
        .sum();
    let text = r.run("verify-evidence", &[], None);
    assert_eq!(text.code, 0);
    // threat-model.md I9: the header names the policy the audit used.
    let (header, text_stdout) = text.stdout.split_once('\n').unwrap();
    assert!(
        header.starts_with("policy sha256:") && header.ends_with(" (embedded)"),
        "{header}"
    );
    assert_eq!(
        text_stdout,
        format!(
            "PASSED: audited 1 state directory, 0 gate ledgers and 0 payloads: 4 ledger records verified, 3 recorded files ({bytes} bytes) re-hashed, no failures\n"
        )
    );
    let ledger = r.run("verify-evidence", &["--ledger"], None);
    assert_eq!(
        ledger.stdout, text.stdout,
        "--ledger is repository mode too"
    );
}

#[test]
fn a_modified_deliverable_is_a_digest_mismatch() {
    let (r, run) = complete_repo();
    r.write(DELIVERABLE, "pub fn limit() -> u32 { 500 }\n");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    let (code, sev, path, detail) = &f[0];
    assert_eq!(
        (code.as_str(), sev.as_str()),
        ("LEDGER_DIGEST_MISMATCH", "error")
    );
    assert_eq!(path.as_deref(), Some(DELIVERABLE));
    assert_eq!(detail["ledger"], run.ledger());
    assert_eq!(detail["ledgerLine"], 3);
    assert_eq!(detail["kind"], "criterion_evidence_recorded");
    assert_eq!(detail["actual"]["size"], 30);
}

#[test]
fn a_deleted_deliverable_is_missing() {
    let (r, _) = complete_repo();
    std::fs::remove_file(r.join(DELIVERABLE)).unwrap();
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "LEDGER_FILE_MISSING");
    assert_eq!(f[0].2.as_deref(), Some(DELIVERABLE));
}

#[test]
fn one_changed_byte_in_a_middle_line_breaks_the_chain_at_the_next_line() {
    let (r, run) = complete_repo();
    let path = r.join(&run.ledger());
    let text = std::fs::read_to_string(&path).unwrap();
    // Line 2 is `goal_started`; change one byte of its goal id.
    let changed = text.replacen(
        "\"goalId\":\"G001\",\"attempt\"",
        "\"goalId\":\"G002\",\"attempt\"",
        1,
    );
    assert_eq!(changed.len(), text.len());
    assert_ne!(changed, text);
    std::fs::write(&path, changed).unwrap();
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    let (code, _, p, detail) = &f[0];
    assert_eq!(code, "LEDGER_CHAIN_BROKEN");
    assert_eq!(p.as_deref(), Some(run.ledger().as_str()));
    // The edited record itself still parses; the record after it no longer
    // links to it, and that is the first bad line.
    assert_eq!(detail["line"], 3);
    let gh = r.run("verify-evidence", &["--format", "github"], None);
    assert!(
        gh.stdout.starts_with(&format!(
            "::error file={},line=3,title=LEDGER_CHAIN_BROKEN::line 3 (seq 3)",
            run.ledger()
        )),
        "{}",
        gh.stdout
    );
}

#[test]
fn completion_without_a_final_gate_entry_is_unbacked() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    // The completion is recorded, but seq 4 is an ordinary goal completion
    // without a quality gate.
    run.entries[3].insert("kind".into(), json!("goal_completed"));
    run.entries[3].shift_remove("qualityGateSha256");
    run.write(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "COMPLETION_UNBACKED");
    assert_eq!(f[0].2.as_deref(), Some(".omo/ulw-loop/goals.json"));
    assert_eq!(f[0].3["ledgerSeq"], 4);
}

#[test]
fn completion_variants_that_are_unbacked() {
    // (mutation of the plan, of the entries) → COMPLETION_UNBACKED.
    type Mutate = fn(&mut Value, &mut Vec<serde_json::Map<String, Value>>);
    let cases: &[(&str, Mutate)] = &[
        ("final entry without a gate", |_, e| {
            e[3].shift_remove("qualityGateSha256");
        }),
        ("gate digest differs from the record", |p, _| {
            p["aggregateCompletion"]["qualityGateSha256"] = json!("0".repeat(64));
        }),
        ("ledgerSeq names another entry", |p, _| {
            p["aggregateCompletion"]["ledgerSeq"] = json!(2);
        }),
        ("no ledgerSeq and no final entry", |p, e| {
            p["aggregateCompletion"]
                .as_object_mut()
                .unwrap()
                .shift_remove("ledgerSeq");
            e[3].insert("kind".into(), json!("goal_completed"));
        }),
        ("a goal still needs a user decision", |p, _| {
            p["goals"].as_array_mut().unwrap().push(json!({"id": "G002", "title": "t", "objective": "o", "status": "needs_user_decision"}));
        }),
        ("superseded by a goal that is not complete", |p, _| {
            let goals = p["goals"].as_array_mut().unwrap();
            goals.push(json!({"id": "G002", "title": "t", "objective": "o", "status": "needs_user_decision", "steeringStatus": "superseded", "supersededBy": ["G003"]}));
            goals.push(json!({"id": "G003", "title": "t", "objective": "o", "status": "pending"}));
        }),
    ];
    for (name, mutate) in cases {
        let r = Repo::new();
        let mut run = Run4::new(&r, STATE);
        mutate(&mut run.plan, &mut run.entries);
        run.write(&r);
        let out = audit(&r, &[]);
        assert_eq!(out.code, 1, "{name}: {}", out.stdout);
        let codes: Vec<String> = findings(&out).into_iter().map(|f| f.0).collect();
        assert_eq!(codes, ["COMPLETION_UNBACKED"], "{name}");
    }
    // Resolved user decisions do not block: waived, or superseded by a complete goal.
    for extra in [
        json!({"id": "G002", "title": "t", "objective": "o", "status": "needs_user_decision", "steeringStatus": "superseded", "supersededBy": [], "waiver": {"userDecision": "drop it", "at": "2026-01-01T00:00:00.000Z"}}),
        json!({"id": "G002", "title": "t", "objective": "o", "status": "needs_user_decision", "steeringStatus": "superseded", "supersededBy": ["G001"]}),
    ] {
        let r = Repo::new();
        let mut run = Run4::new(&r, STATE);
        run.plan["goals"].as_array_mut().unwrap().push(extra);
        run.write(&r);
        assert_eq!(audit(&r, &[]).code, 0);
    }
}

#[test]
fn an_empty_repository_is_nothing_to_verify_unless_allowed() {
    let r = Repo::new();
    r.write("src/lib.rs", "x");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["NOTHING_TO_VERIFY"]);
    let allowed = audit(&r, &["--allow-empty"]);
    assert_eq!(allowed.code, 0);
    let mut v = allowed.json();
    let policy = v.as_object_mut().unwrap().remove("policy").unwrap();
    assert!(policy["digest"].as_str().unwrap().starts_with("sha256:"));
    assert_eq!(v, json!({"verdict": "pass", "reports": []}));
    let text = r.run("verify-evidence", &["--allow-empty"], None);
    assert!(
        text.stdout
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("PASSED: nothing to audit"),
        "{}",
        text.stdout
    );
    // An empty state directory (no plan, no ledger) is not an audit target.
    r.mkdir(".omo/ulw-loop/s1");
    assert_eq!(audit(&r, &[]).codes(), ["NOTHING_TO_VERIFY"]);
    // A ledger without records checks nothing: it fails too.
    r.write(".omo/ulw-loop/ledger.jsonl", "");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["NOTHING_TO_VERIFY"]);
}

#[test]
fn sessions_and_both_profiles_are_discovered() {
    let r = Repo::new();
    Run4::new(&r, ".omo/ulw-loop");
    Run4::new(&r, ".omo/ulw-loop/s1");
    let mut ug = Run4::new(&r, ".omagy/ultragoal/019a-sess");
    let rec = ug.plan["aggregateCompletion"].clone();
    ug.plan["aggregate_completion"] = rec;
    ug.plan["profile"] = json!("ultragoal");
    ug.write_plan(&r);
    // Engine-private names are never sessions.
    r.write(".omo/ulw-loop/.archive/x/notes.txt", "x");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let subjects: Vec<String> = out.json()["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["subject"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        subjects,
        [
            ".omagy/ultragoal/019a-sess",
            ".omo/ulw-loop",
            ".omo/ulw-loop/s1"
        ]
    );
    // --plan-dir restricts the audit to the named directories.
    std::fs::write(r.join(".omo/ulw-loop/ledger.jsonl"), "{broken").unwrap();
    let one = audit(&r, &["--plan-dir", "./.omo/ulw-loop/s1/"]);
    assert_eq!(one.code, 0, "{}", one.stdout);
    assert_eq!(one.json()["reports"].as_array().unwrap().len(), 1);
    let named_empty = audit(&r, &["--plan-dir", ".omo/ulw-loop/nope"]);
    assert_eq!(named_empty.code, 1);
    assert_eq!(named_empty.codes(), ["NOTHING_TO_VERIFY"]);
    let outside = audit(&r, &["--plan-dir", "src"]);
    assert_eq!(outside.code, 2);
    assert!(
        outside
            .stderr
            .contains("lies under no profile's state directory"),
        "{}",
        outside.stderr
    );
}

#[test]
fn the_ultragoal_completion_keys_must_agree() {
    let r = Repo::new();
    let mut ug = Run4::new(&r, ".omagy/ultragoal");
    ug.plan["aggregate_completion"] = json!({"status": "complete"});
    ug.write_plan(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f[0].0, "PLAN_CORRUPT");
    assert_eq!(f[0].3["pointer"], "/aggregate_completion");
}

#[test]
fn a_later_recording_supersedes_an_earlier_one() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    r.write(DELIVERABLE, "pub fn limit() -> u32 { 7 }\n");
    let again = entry(
        "criterion_evidence_recorded",
        4,
        json!({"goalId": "G001", "files": [rec(&r, DELIVERABLE, "deliverable")]}),
    );
    // Insert before the final entry; revisions stay ordered by renumbering.
    run.entries.insert(3, again);
    for (i, e) in run.entries.iter_mut().enumerate() {
        e.insert("revision".into(), json!(i as u64 + 1));
    }
    let mut last = run.entries[4].clone();
    last.shift_remove("seq");
    run.plan["revision"] = json!(5);
    run.plan["aggregateCompletion"]["ledgerSeq"] = json!(5);
    run.plan["lastMutation"] = json!({"revision": 5, "fromSeq": 5, "entries": [last]});
    run.write(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // Restoring the earlier content does not match the latest recording.
    r.write(DELIVERABLE, "pub fn limit() -> u32 { 5 }\n");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(
        (f[0].0.as_str(), f[0].3["ledgerLine"].as_u64()),
        ("LEDGER_DIGEST_MISMATCH", Some(4))
    );
}

#[test]
fn a_symlinked_state_directory_is_refused_and_never_followed() {
    let r = Repo::new();
    Run4::new(&r, "elsewhere/ulw-loop");
    r.mkdir(".omo");
    r.symlink(r.join("elsewhere/ulw-loop"), ".omo/ulw-loop");
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let f = findings(&out);
    assert_eq!(f.len(), 1, "{f:?}");
    assert_eq!(f[0].0, "PATH_SYMLINK");
    assert_eq!(f[0].2.as_deref(), Some(".omo/ulw-loop"));
}

#[test]
fn repository_mode_writes_nothing() {
    let (r, _) = complete_repo();
    let before = r.snapshot();
    for args in [vec![], vec!["--format", "sarif"], vec!["--strict"]] {
        r.run("verify-evidence", &args, None);
    }
    assert_eq!(before, r.snapshot());
}

#[test]
fn payloads_with_ledger_are_verified_alongside_the_audit() {
    let (r, _) = complete_repo();
    r.write(
        "p.json",
        serde_json::to_vec(&crate::evidence_cli::payload(
            json!([{"path": "missing.rs"}]),
        ))
        .unwrap(),
    );
    let out = audit(&r, &["p.json", "--ledger"]);
    assert_eq!(out.code, 1);
    let v = out.json();
    let kinds: Vec<&str> = v["reports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["payload", "plan"]);
    assert_eq!(out.codes(), ["FILE_MISSING"]);
    // Without --ledger, payload mode only.
    let only = audit(&r, &["p.json"]);
    assert_eq!(only.json()["reports"].as_array().unwrap().len(), 1);
}

/// The final checkpoint's plan write landed, its ledger append did not: the
/// completion is only in `lastMutation` until recovery appends it.
#[test]
fn a_completion_waiting_for_crash_recovery_is_unbacked_until_repaired() {
    let r = Repo::new();
    let mut run = Run4::new(&r, STATE);
    let last = run.entries.pop().unwrap();
    run.write(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    let mut codes: Vec<(String, String)> = findings(&out).into_iter().map(|f| (f.0, f.1)).collect();
    codes.sort();
    assert_eq!(
        codes,
        [
            ("COMPLETION_UNBACKED".to_owned(), "error".to_owned()),
            ("LEDGER_BEHIND_PLAN".to_owned(), "warning".to_owned())
        ]
    );
    assert!(
        out.stdout
            .contains("exists only in the plan's lastMutation"),
        "{}",
        out.stdout
    );
    // Recovery appends `ledger_repaired` and the entry with a fresh seq
    // (goal-engine.md §2.8): the record's ledgerSeq (4) now names the repair
    // entry, and the recovered final entry backs the completion.
    let mut repaired = entry(
        "ledger_repaired",
        4,
        json!({"repair": {"reason": "ledger_behind_plan", "recoveredCount": 1}}),
    );
    repaired.insert("at".into(), json!("2026-01-02T03:05:00.000Z"));
    let mut recovered = last.clone();
    recovered.insert("recovered".into(), json!(true));
    run.entries.push(repaired);
    run.entries.push(recovered.clone());
    run.write(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    // A recovered final entry of another revision does not back it.
    recovered.insert("revision".into(), json!(4));
    run.plan["aggregateCompletion"]["revision"] = json!(3);
    run.entries.pop();
    run.entries.push(recovered);
    run.write(&r);
    let out = audit(&r, &[]);
    assert_eq!(out.code, 1);
    assert_eq!(out.codes(), ["COMPLETION_UNBACKED"]);
}
