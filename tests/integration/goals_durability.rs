//! State and durability (goal-engine.md §2.5–§2.10): write order, crash
//! recovery, repair, the ledger index, archiving and read-only commands.

use crate::goals_support::*;
use serde_json::{Value, json};

fn ledger_bytes(repo: &Repo) -> Vec<u8> {
    std::fs::read(state(repo, "ledger.jsonl")).unwrap()
}

fn drop_last_records(repo: &Repo, n: usize) {
    let text = String::from_utf8(ledger_bytes(repo)).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let kept = lines[..lines.len() - n].join("\n") + "\n";
    std::fs::write(state(repo, "ledger.jsonl"), kept).unwrap();
}

fn check_clean(repo: &Repo) {
    let v = expect_ok(&ulw(repo, &["repair", "--check"]));
    let errors: Vec<&Value> = v["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert!(errors.is_empty(), "{v}");
    assert_eq!(v["consistency"], "ok", "{v}");
}

fn chain_of(repo: &Repo) -> Vec<u64> {
    ledger(repo)
        .iter()
        .filter_map(|e| e["seq"].as_u64())
        .collect()
}

#[test]
fn plan_written_but_ledger_not_is_recovered_by_the_next_mutation() {
    let repo = repo_with_plan("- a\n- b");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "c", "--objective", "c"],
    ));
    drop_last_records(&repo, 1);
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["consistency"], "recoverable");
    let v = expect_ok(&ulw(&repo, &["repair", "--check"]));
    assert!(
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "LEDGER_BEHIND_PLAN"),
        "{v}"
    );
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "d", "--objective", "d"],
    ));
    let l = ledger(&repo);
    let k: Vec<&str> = l.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert_eq!(
        k,
        [
            "plan_created",
            "ledger_repaired",
            "goal_added",
            "goal_added"
        ]
    );
    assert_eq!(l[1]["repair"]["reason"], "ledger_behind_plan");
    assert_eq!(l[1]["repair"]["recoveredCount"], 1);
    assert_eq!(l[2]["recovered"], true);
    assert_eq!(l[2]["goalId"], "G003-c");
    assert_eq!(l[2]["revision"], 2);
    assert_eq!(l[3]["revision"], 3);
    assert_eq!(chain_of(&repo), [1, 2, 3, 4]);
    check_clean(&repo);
}

#[test]
fn a_multi_entry_append_cut_short_is_completed() {
    let repo = repo_with_plan("- a\n- b\n- c");
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    let kinds: Vec<&str> = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["goal_completed", "goal_started"],
        "one revision, one append"
    );
    assert_eq!(
        v["ledgerEntries"][0]["revision"],
        v["ledgerEntries"][1]["revision"]
    );
    drop_last_records(&repo, 1);
    expect_ok(&ulw(&repo, &["repair"]));
    let l = ledger(&repo);
    let n = l.len();
    assert_eq!(l[n - 2]["kind"], "ledger_repaired");
    assert_eq!(l[n - 2]["repair"]["reason"], "append_cut_short");
    assert_eq!(l[n - 1]["kind"], "goal_started");
    assert_eq!(l[n - 1]["recovered"], true);
    check_clean(&repo);
    let again = expect_ok(&ulw(&repo, &["repair"]));
    assert_eq!(again["actions"], json!([]), "repair is idempotent");
}

#[test]
fn recovery_is_exact_when_the_repair_itself_was_cut_short() {
    let repo = repo_with_plan("- a\n- b\n- c");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &[]));
    drop_last_records(&repo, 2);
    expect_ok(&ulw(&repo, &["repair"]));
    // The repair's own append loses its last record: [ledger_repaired, goal_completed] landed.
    drop_last_records(&repo, 1);
    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["consistency"],
        "recoverable"
    );
    expect_ok(&ulw(&repo, &["repair"]));
    let l = ledger(&repo);
    let recovered: Vec<&str> = l
        .iter()
        .filter(|e| e["recovered"] == true)
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(recovered, ["goal_completed", "goal_started"]);
    let tail: Vec<&str> = l[l.len() - 4..]
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        tail,
        [
            "ledger_repaired",
            "goal_completed",
            "ledger_repaired",
            "goal_started"
        ]
    );
    assert_eq!(
        l.iter().filter(|e| e["kind"] == "goal_completed").count(),
        1,
        "nothing duplicated"
    );
    check_clean(&repo);
}

#[test]
fn torn_tail_is_saved_truncated_and_audited() {
    let repo = repo_with_plan("- a");
    let mut bytes = ledger_bytes(&repo);
    let good = bytes.len();
    bytes.extend_from_slice(b"{\"at\":\"2026-01-01T00:00:00.000Z\",\"kind\":\"goal_add");
    std::fs::write(state(&repo, "ledger.jsonl"), &bytes).unwrap();
    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["consistency"],
        "recoverable"
    );
    let v = ulw(&repo, &["repair", "--check"]);
    assert_eq!(v.code, 1);
    assert_eq!(v.json()["findings"][0]["code"], "LEDGER_TORN_TAIL");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let l = ledger(&repo);
    assert_eq!(l[1]["kind"], "ledger_repaired");
    assert_eq!(l[1]["repair"]["reason"], "torn_tail");
    assert_eq!(l[1]["repair"]["tornBytes"], (bytes.len() - good) as u64);
    let saved = l[1]["repair"]["savedAs"].as_str().unwrap();
    assert_eq!(std::fs::read(repo.join(saved)).unwrap(), &bytes[good..]);
    check_clean(&repo);
}

#[test]
fn unterminated_final_object_gets_its_newline() {
    let repo = repo_with_plan("- a");
    let mut bytes = ledger_bytes(&repo);
    bytes.pop();
    std::fs::write(state(&repo, "ledger.jsonl"), &bytes).unwrap();
    let v = ulw(&repo, &["repair", "--check"]);
    assert_eq!(v.json()["findings"][0]["code"], "LEDGER_UNTERMINATED");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let k = kinds(&repo);
    assert_eq!(
        k,
        ["plan_created", "goal_added"],
        "no repair entry: nothing was lost"
    );
    check_clean(&repo);
}

#[test]
fn mismatch_is_refused_until_accept_plan() {
    // Unbound state (written before the plan binding): a revision edit is a
    // mismatch; on bound state it is PLAN_TAMPERED (goals_binding.rs).
    let repo = repo_with_plan("- a");
    unbind(&repo);
    let mut p = plan(&repo);
    p["revision"] = json!(5);
    write_plan_raw(&repo, &p);
    assert_eq!(
        expect_ok(&ulw(&repo, &["status"]))["ledger"]["consistency"],
        "mismatch"
    );
    let r = ulw(&repo, &["repair"]);
    assert_eq!(r.code, 1);
    assert_eq!(r.json()["consistency"], "mismatch");
    let r = ulw(&repo, &["repair", "--check"]);
    assert_eq!(r.code, 1);
    assert!(
        r.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "LEDGER_PLAN_MISMATCH")
    );
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
    let last = ledger(&repo).pop().unwrap();
    assert_eq!(last["repair"]["reason"], "plan_ledger_mismatch");
    assert_eq!(last["repair"]["planRevision"], 5);
    assert_eq!(last["repair"]["ledgerRevision"], 1);
    assert_eq!(last["repair"]["rationale"], "hand edit was intended");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    check_clean(&repo);
}

#[test]
fn edited_ledger_breaks_the_chain() {
    let repo = repo_with_plan("- a\n- b");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "c", "--objective", "c"],
    ));
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "d", "--objective", "d"],
    ));
    let text = String::from_utf8(ledger_bytes(&repo))
        .unwrap()
        .replace("\"message\":\"c\"", "\"message\":\"x\"");
    std::fs::write(state(&repo, "ledger.jsonl"), text).unwrap();
    let r = ulw(&repo, &["repair", "--check"]);
    assert_eq!(r.code, 1);
    let f = &r.json()["findings"][0];
    assert_eq!(f["code"], "LEDGER_CHAIN_BROKEN");
    assert_eq!(f["line"], 3);
}

#[test]
fn index_rebuild_writes_a_diagnostic_and_reads_stay_pure() {
    let repo = repo_with_plan("- a");
    std::fs::remove_file(state(&repo, ".ledger.idx")).unwrap();
    let before = repo.snapshot();
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["records"], 1);
    assert_eq!(repo.snapshot(), before, "status never rebuilds the index");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert!(state(&repo, ".ledger.idx").exists());
    // The line goes to the per-user state (threat-model.md §3), where doctor
    // reads it, never into the workspace the agent can edit.
    let diag = std::fs::read_to_string(user_diagnostics(&repo)).unwrap();
    assert!(diag.contains("LEDGER_INDEX_REBUILT"), "{diag}");
    assert!(!repo.join(".omo/evidence-gate/diagnostics.jsonl").exists());
    let doctor = repo.run_env("evidence-gate", &["doctor", "--json"], None, &clean_env());
    assert!(
        doctor.stdout.contains("LEDGER_INDEX_REBUILT"),
        "doctor counts the engine's lines: {}",
        doctor.stdout
    );
    let idx: Value =
        serde_json::from_slice(&std::fs::read(state(&repo, ".ledger.idx")).unwrap()).unwrap();
    assert_eq!(idx["records"], 2);
    assert_eq!(idx["ledgerBytes"], ledger_bytes(&repo).len() as u64);
}

#[test]
fn foreign_appends_are_absorbed_from_the_suffix() {
    let repo = repo_with_plan("- a");
    let mut bytes = ledger_bytes(&repo);
    bytes.extend_from_slice(b"{\"at\":\"2026-01-01T00:00:00.000Z\",\"kind\":\"steering_accepted\",\"idempotencyKey\":\"k1\",\"steering\":{\"invariant\":{\"accepted\":true},\"targetGoalIds\":[]},\"mutationKind\":\"annotate_ledger\"}\n");
    std::fs::write(state(&repo, "ledger.jsonl"), &bytes).unwrap();
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["records"], 2);
    assert_eq!(s["ledger"]["lastSeq"], 1);
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let keys = std::fs::read_to_string(state(&repo, ".ledger.keys")).unwrap();
    assert!(keys.contains("\"k:k1\""), "{keys}");
    assert!(
        !user_diagnostics(&repo).exists(),
        "a grown index is not a rebuild"
    );
    let r = ulw(&repo, &["repair", "--check"]);
    assert!(
        r.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "LEDGER_FOREIGN_RECORD")
    );
}

#[test]
fn rebuild_index_command() {
    let repo = repo_with_plan("- a");
    std::fs::write(state(&repo, ".ledger.idx"), "garbage").unwrap();
    let v = expect_ok(&ulw(&repo, &["repair", "--rebuild-index"]));
    assert_eq!(v["actions"][0]["kind"], "index_rebuilt");
    let idx: Value =
        serde_json::from_slice(&std::fs::read(state(&repo, ".ledger.idx")).unwrap()).unwrap();
    assert_eq!(idx["version"], 1);
}

#[test]
fn force_archives_the_previous_run_and_chains_to_it() {
    let repo = repo_with_plan("- a");
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let v = expect_ok(&ulw(
        &repo,
        &["create-goals", "--brief", "- new", "--force"],
    ));
    let archive = v["archived"].as_str().unwrap().to_owned();
    assert!(archive.starts_with(".omo/ulw-loop/.archive/"));
    let old: Vec<Value> = std::fs::read_to_string(repo.join(&format!("{archive}/ledger.jsonl")))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(old.last().unwrap()["kind"], "plan_archived");
    assert_eq!(old.last().unwrap()["archive"], archive.as_str());
    assert!(repo.join(&format!("{archive}/goals.json")).exists());
    assert!(repo.join(&format!("{archive}/brief.md")).exists());
    let l = ledger(&repo);
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["kind"], "plan_created");
    assert_eq!(l[0]["prev"], "0".repeat(64));
    assert_eq!(l[0]["replaced"]["previousRevision"], 2);
    assert_eq!(l[0]["replaced"]["previousLastSeq"], 3);
    assert_eq!(l[0]["replaced"]["previousConsistency"], "ok");
    let archived_text =
        std::fs::read_to_string(repo.join(&format!("{archive}/ledger.jsonl"))).unwrap();
    let last_line = archived_text.lines().last().unwrap();
    let hash = sha256(last_line.as_bytes());
    // `previousHead` is `{seq, sha256}` of the archived ledger's last record
    // and `archive` is state-relative (threat-model.md §6, I8 reading).
    assert_eq!(
        l[0]["replaced"]["previousHead"],
        json!({"seq": 3, "sha256": hash})
    );
    assert_eq!(
        format!("{STATE}/{}", l[0]["replaced"]["archive"].as_str().unwrap()),
        archive
    );
    assert!(
        !state(&repo, ".force-switch.json").exists()
            && !state(&repo, ".force-switch.ledger.jsonl").exists(),
        "the switch is finished"
    );
    assert_eq!(plan(&repo)["revision"], 1);
    check_clean(&repo);
    std::fs::write(
        repo.join(&format!("{archive}/ledger.jsonl")),
        archived_text.replace("plan_archived", "plan_archivex"),
    )
    .unwrap();
    let r = ulw(&repo, &["repair", "--check"]);
    assert_eq!(r.code, 1);
    assert!(
        r.json()["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "LEDGER_ARCHIVE_MISMATCH")
    );
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    evidence_gate::internals::hex(&Sha256::digest(bytes))
}

#[test]
fn an_orphan_ledger_is_archived_not_truncated() {
    let repo = Repo::new();
    repo.write(
        &format!("{STATE}/ledger.jsonl"),
        "{\"at\":\"x\",\"kind\":\"plan_created\"}\n",
    );
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a"]));
    let archive = v["archived"].as_str().unwrap();
    let old = std::fs::read_to_string(repo.join(&format!("{archive}/ledger.jsonl"))).unwrap();
    assert!(old.starts_with("{\"at\":\"x\",\"kind\":\"plan_created\"}\n"));
    assert!(old.contains("plan_archived"));
}

#[test]
fn reads_never_write() {
    // A legacy objective is legacy (unbound) state.
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    unbind(&repo);
    let mut p = plan(&repo);
    p["codexObjective"] = json!(
        "Complete all ulw-loop stories listed in .omo/ulw-loop/goals.json. Use .omo/ulw-loop/ledger.jsonl as the durable audit trail."
    );
    write_plan_raw(&repo, &p);
    let before = repo.snapshot();
    for args in [
        vec!["status"],
        vec![
            "status",
            "--codex-goal-json",
            "{\"goal\":{\"objective\":\"x\",\"status\":\"active\"}}",
        ],
        vec!["criteria", "--goal-id", "G001-a"],
        vec!["help"],
        vec!["repair", "--check"],
    ] {
        let r = ulw(&repo, &args);
        assert!(r.code == 0 || args[0] == "repair", "{args:?}: {}", r.stdout);
        assert_eq!(repo.snapshot(), before, "{args:?} wrote something");
    }
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert!(
        s["plan"]["codexObjective"]
            .as_str()
            .unwrap()
            .starts_with("Complete the durable ulw-loop plan"),
        "migration is computed in memory"
    );
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "c", "--objective", "c"],
    ));
    let l = ledger(&repo);
    let n = l.len();
    assert_eq!(l[n - 2]["kind"], "aggregate_objective_migrated");
    assert_eq!(
        l[n - 2]["revision"],
        l[n - 1]["revision"],
        "persisted in the same revision"
    );
    assert!(
        plan(&repo)["codexObjectiveAliases"][0]
            .as_str()
            .unwrap()
            .starts_with("Complete all ulw-loop stories")
    );
}

#[test]
fn the_lock_file_does_not_outlive_a_mutation() {
    let repo = repo_with_plan("- a");
    assert!(!state(&repo, ".mutation.lock").exists());
    let names: Vec<String> = std::fs::read_dir(repo.join(STATE))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".tmp")), "{names:?}");
}

#[test]
fn a_leftover_lock_file_is_reused_without_an_audit_entry() {
    // threat-model.md I3: a lock file left behind (a crashed holder, a Node
    // tool, the agent) is not a lock; the OS lock decides, so nothing was
    // "broken" and nothing is recorded (the previous `lock_broken` entry is
    // gone with the Node-lock takeover).
    let repo = repo_with_plan("- a");
    std::fs::write(
        state(&repo, ".mutation.lock"),
        r#"{"pid":4242,"createdAt":"then"}"#,
    )
    .unwrap();
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert_eq!(kinds(&repo), ["plan_created", "goal_added"]);
    assert!(!state(&repo, ".mutation.lock").exists());
}

#[test]
fn stale_temp_files_are_removed_by_the_next_mutation() {
    let repo = repo_with_plan("- a");
    let old = state(&repo, ".goals.json.1.1000.0.tmp");
    let young_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let young = state(&repo, &format!(".goals.json.1.{young_ms}.0.tmp"));
    std::fs::write(&old, "x").unwrap();
    std::fs::write(&young, "x").unwrap();
    expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert!(!old.exists());
    assert!(young.exists());
}

#[test]
fn plan_serialisation_is_two_space_json_with_one_newline() {
    let repo = repo_with_plan("- a");
    let text = std::fs::read_to_string(state(&repo, "goals.json")).unwrap();
    assert!(text.starts_with("{\n  \"version\": 1,\n  \"evidenceLayoutVersion\": 2,"));
    assert!(text.ends_with("}\n") && !text.ends_with("}\n\n"));
    let l = String::from_utf8(ledger_bytes(&repo)).unwrap();
    assert!(!l.contains("\r") && !l.contains("\n\n"));
    assert!(
        l.trim_end()
            .ends_with(&format!("\"seq\":1,\"prev\":\"{}\"}}", "0".repeat(64)))
    );
}

/// The workspace's per-user diagnostics file (the tests' shared state home).
fn user_diagnostics(repo: &Repo) -> std::path::PathBuf {
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    crate::common::temp_home()
        .join("state/evidence-gate/v1")
        .join(evidence_gate::internals::workspace_id(&canonical))
        .join("hooks/diagnostics.jsonl")
}

/// `Engine::before_next_write` (the prompt hook's witness sync) runs once,
/// before the command writes the plan or appends to the ledger, and not
/// again for the next command.
#[test]
fn work_before_the_next_write_runs_before_plan_and_ledger_change() {
    use evidence_gate::goals::ops::checkpoint::{self, CheckpointRequest, CheckpointStatus};
    use evidence_gate::goals::{Engine, EngineOptions};
    use std::sync::{Arc, Mutex};

    let repo = repo_with_plan("- a\n- b");
    let rules = evidence_gate::rules::RuleSet::embedded().unwrap();
    let root =
        cap_std::fs::Dir::open_ambient_dir(repo.path(), cap_std::ambient_authority()).unwrap();
    let mut engine = Engine::new(root, &rules, EngineOptions::new("ulw-loop")).unwrap();
    // (plan bytes, ledger bytes) each time the work ran.
    type Seen = Vec<(Vec<u8>, Vec<u8>)>;
    let seen: Arc<Mutex<Seen>> = Arc::default();
    let (s, goals, ledger) = (
        seen.clone(),
        state(&repo, "goals.json"),
        state(&repo, "ledger.jsonl"),
    );
    engine.before_next_write(move || {
        s.lock().unwrap().push((
            std::fs::read(&goals).unwrap(),
            std::fs::read(&ledger).unwrap(),
        ));
    });
    let before = (
        std::fs::read(state(&repo, "goals.json")).unwrap(),
        ledger_bytes(&repo),
    );
    let request = |goal: &str, evidence: &str| {
        CheckpointRequest::new(goal, CheckpointStatus::Blocked, evidence)
    };
    checkpoint::run(
        &engine,
        request("G001-a", "waiting for the product decision"),
    )
    .unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![before],
        "ran once, before any write"
    );
    assert_ne!(
        ledger_bytes(&repo),
        seen.lock().unwrap()[0].1,
        "then the command wrote"
    );
    checkpoint::run(&engine, request("G002-b", "waiting as well")).unwrap();
    assert_eq!(seen.lock().unwrap().len(), 1, "not again");
}
