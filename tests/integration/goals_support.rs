//! Helpers for the goal-engine topic modules: a temporary repository with a
//! plan, snapshots, payload files, and readers of the state files.

#![allow(dead_code)]

use std::path::PathBuf;

use serde_json::{Value, json};

pub use crate::common::{Repo, Run};

pub const STATE: &str = ".omo/ulw-loop";

/// Runs `evidence-gate <profile> <args…>`.
pub fn eg(repo: &Repo, profile: &str, args: &[&str]) -> Run {
    let mut all = vec![profile];
    all.extend_from_slice(args);
    repo.run_env("evidence-gate", &all, None, &clean_env())
}

/// Runs `evidence-gate ulw-loop <args…> --json` and parses stdout.
pub fn ulw(repo: &Repo, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.push("--json");
    eg(repo, "ulw-loop", &all)
}

/// `evidence-gate ulw-loop steer --session-id <sid> --kind <kind> <args…>
/// --json`.
pub fn steer_in(repo: &Repo, sid: &str, kind: &str, args: &[&str]) -> Run {
    let mut all = vec!["steer", "--session-id", sid, "--kind", kind];
    all.extend_from_slice(args);
    all.push("--json");
    eg(repo, "ulw-loop", &all)
}

/// The agent's hand edit of a plan: every goal and criterion flipped to
/// done and a completion record added.
pub fn flip_to_complete(p: &mut Value) {
    for g in p["goals"].as_array_mut().unwrap() {
        g["status"] = json!("complete");
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    }
    p["aggregateCompletion"] =
        json!({"status": "complete", "completedAt": "2026-11-30T11:00:00.000Z"});
}

/// The agent's crash written into a plan: the revision bumped and a
/// `lastMutation` holding one `aggregate_completed` entry, carrying the
/// (edited) body's digest, that the ledger lacks, under a made-up head.
pub fn forge_pending_completion(p: &mut Value) {
    let mut lm = p.as_object_mut().unwrap().remove("lastMutation").unwrap();
    let rev = p["revision"].as_u64().unwrap() + 1;
    p["revision"] = json!(rev);
    let digest = evidence_gate::internals::plan_body_sha256(p.as_object().unwrap());
    let seq = lm["ledgerHead"]["seq"].as_u64().unwrap();
    lm["revision"] = json!(rev);
    lm["fromSeq"] = json!(seq + 1);
    lm["entries"] = json!([{"at": "2026-11-30T11:00:00.000Z", "kind": "aggregate_completed",
                            "message": "all goals complete", "revision": rev, "planSha256": digest}]);
    lm["ledgerHead"] = json!({"seq": seq + 1, "sha256": "0".repeat(64)});
    p["lastMutation"] = lm;
}

/// Session variables are cleared so the host environment cannot scope tests.
pub fn clean_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("OMO_ULW_LOOP_SESSION_ID", ""),
        ("CODEX_SESSION_ID", ""),
        ("CLAUDE_CODE_SESSION_ID", ""),
        ("CODEX_THREAD_ID", ""),
        ("OMAGY_ULTRAGOAL_SESSION_ID", ""),
        ("OMAGY_SESSION_ID", ""),
        ("EVIDENCE_GATE_LOCK_TIMEOUT_MS", ""),
        // Never the real home's rules file (`Repo::run_env` sets its own).
        ("XDG_CONFIG_HOME", "/nonexistent/evidence-gate-test-config"),
    ]
}

/// Asserts an error envelope with `code` and exit status 1; returns the error object.
pub fn expect_error(run: &Run, code: &str) -> Value {
    assert_eq!(
        run.code, 1,
        "exit status for {code}: {}{}",
        run.stdout, run.stderr
    );
    let v = run.json();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert!(
        run.stderr.is_empty(),
        "stderr must stay empty with --json: {}",
        run.stderr
    );
    v["error"].clone()
}

/// Asserts success (exit 0, `ok: true`) and returns the JSON.
pub fn expect_ok(run: &Run) -> Value {
    assert_eq!(
        run.code, 0,
        "expected success: {}{}",
        run.stdout, run.stderr
    );
    let v = run.json();
    assert_eq!(v["ok"], true, "{v}");
    v
}

/// A repository with a two-goal ulw-loop plan (aggregate mode).
pub fn repo_with_plan(brief: &str) -> Repo {
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", brief]));
    repo
}

/// Lower-case hex SHA-256 of `bytes`, as the engine records digests.
pub fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

pub fn state(repo: &Repo, name: &str) -> PathBuf {
    repo.join(&format!("{STATE}/{name}"))
}

/// `goals.json`.
pub fn plan(repo: &Repo) -> Value {
    serde_json::from_slice(&std::fs::read(state(repo, "goals.json")).unwrap()).unwrap()
}

/// Writes `goals.json` by hand as a test setup and adopts it on the record:
/// since the plan is bound to its ledger (threat-model.md I7) the engine
/// refuses a plan edited outside it (`ULW_LOOP_PLAN_TAMPERED`) until
/// `repair --accept-tampered` records a `tamper_acknowledged` entry. A plan
/// the engine cannot read is left as written (its test expects that error).
pub fn write_plan(repo: &Repo, plan: &Value) {
    write_plan_raw(repo, plan);
    acknowledge(repo);
}

/// Writes `goals.json` by hand and nothing else: to the engine and the
/// audit that is tampering.
pub fn write_plan_raw(repo: &Repo, plan: &Value) {
    let mut text = serde_json::to_string_pretty(plan).unwrap();
    text.push('\n');
    std::fs::write(state(repo, "goals.json"), text).unwrap();
}

/// Turns an engine-written state into the state an evidence-gate without the
/// plan binding wrote (legal legacy state): `planSha256` leaves every ledger
/// entry (the chain is re-linked), `ledgerHead` and the pending entries'
/// digests leave the plan, and the index caches are dropped.
pub fn unbind(repo: &Repo) {
    use sha2::{Digest, Sha256};
    let text = std::fs::read_to_string(state(repo, "ledger.jsonl")).unwrap();
    let mut prev = "0".repeat(64);
    let mut out = String::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let mut v: serde_json::Map<String, Value> = serde_json::from_str(line).unwrap();
        v.remove("planSha256");
        let chained = v.contains_key("seq");
        if chained {
            let seq = v.remove("seq").unwrap();
            v.remove("prev");
            v.insert("seq".into(), seq);
            v.insert("prev".into(), json!(prev));
        }
        let line = serde_json::to_string(&v).unwrap();
        prev = evidence_gate::internals::hex(&Sha256::digest(line.as_bytes()));
        out.push_str(&line);
        out.push('\n');
    }
    std::fs::write(state(repo, "ledger.jsonl"), out).unwrap();
    let mut p = plan(repo);
    if let Some(lm) = p.get_mut("lastMutation").and_then(Value::as_object_mut) {
        lm.remove("ledgerHead");
        for e in lm
            .get_mut("entries")
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            e.as_object_mut().unwrap().remove("planSha256");
        }
    }
    write_plan_raw(repo, &p);
    for f in [".ledger.idx", ".ledger.keys"] {
        let _ = std::fs::remove_file(state(repo, f));
    }
}

/// `repair --accept-tampered` after a hand edit made as a test setup.
pub fn acknowledge(repo: &Repo) {
    let r = ulw(
        repo,
        &[
            "repair",
            "--accept-tampered",
            "--rationale",
            "test setup: hand-edited plan",
        ],
    );
    if r.code != 0 {
        let code = r.json()["error"]["code"].as_str().unwrap_or("").to_owned();
        assert!(
            matches!(
                code.as_str(),
                "ULW_LOOP_PLAN_CORRUPT" | "ULW_LOOP_PLAN_INVALID" | "ULW_LOOP_PLAN_MISSING"
            ),
            "acknowledging a hand-edited plan failed: {}{}",
            r.stdout,
            r.stderr
        );
    }
}

/// Every ledger record.
pub fn ledger(repo: &Repo) -> Vec<Value> {
    let text = std::fs::read_to_string(state(repo, "ledger.jsonl")).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn kinds(repo: &Repo) -> Vec<String> {
    ledger(repo)
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The aggregate objective of the plan.
pub fn objective(repo: &Repo) -> String {
    plan(repo)["codexObjective"].as_str().unwrap().to_owned()
}

/// An active host snapshot of the aggregate objective.
pub fn active(repo: &Repo) -> String {
    json!({"goal": {"objective": objective(repo), "status": "active"}}).to_string()
}

/// A complete host snapshot of the aggregate objective.
pub fn complete(repo: &Repo) -> String {
    json!({"goal": {"objective": objective(repo), "status": "complete"}}).to_string()
}

/// Goal ids in plan order.
pub fn goal_ids(repo: &Repo) -> Vec<String> {
    plan(repo)["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap().to_owned())
        .collect()
}

pub fn goal(repo: &Repo, id: &str) -> Value {
    plan(repo)["goals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .cloned()
        .unwrap()
}

/// Starts the next goal.
pub fn start(repo: &Repo) -> Value {
    expect_ok(&ulw(repo, &["complete-goals"]))
}

/// Records `pass` for every criterion of a goal (accepting seeded placeholders).
pub fn pass_all(repo: &Repo, id: &str) {
    let g = goal(repo, id);
    for c in g["successCriteria"].as_array().unwrap() {
        let cid = c["id"].as_str().unwrap();
        expect_ok(&ulw(
            repo,
            &[
                "record-evidence",
                "--goal-id",
                id,
                "--criterion-id",
                cid,
                "--status",
                "pass",
                "--evidence",
                "proof",
                "--accept-seeded",
                "test fixture",
            ],
        ));
    }
}

/// Checkpoints a non-final goal complete with an active snapshot.
pub fn checkpoint_complete(repo: &Repo, id: &str, extra: &[&str]) -> Run {
    let snap = active(repo);
    let mut args = vec![
        "checkpoint",
        "--goal-id",
        id,
        "--status",
        "complete",
        "--evidence",
        "done",
        "--codex-goal-json",
        &snap,
    ];
    args.extend_from_slice(extra);
    ulw(repo, &args)
}

/// Edits one goal of the plan on disk.
pub fn edit_goal(repo: &Repo, id: &str, f: impl FnOnce(&mut serde_json::Map<String, Value>)) {
    let mut p = plan(repo);
    let g = p["goals"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|g| g["id"] == id)
        .unwrap();
    f(g.as_object_mut().unwrap());
    write_plan(repo, &p);
}

/// A valid evidence payload for a goal/criterion with one deliverable.
pub fn payload(repo: &Repo, name: &str, goal: &str, criteria: &[&str], verdict: &str) -> String {
    repo.write("src/feature.rs", "fn feature() {}\n");
    let v = json!({
        "evidence": 1,
        "summary": "Feature implemented and tested.",
        "goalId": goal,
        "criterionIds": criteria,
        "deliverables": [{"path": "src/feature.rs"}],
        "verification": {"verdict": verdict, "by": "qa-executor", "checks": []}
    });
    let path = format!("evidence/{name}.json");
    repo.write(&path, v.to_string());
    path
}

/// Fills the `checkpoint --print-template` gate of a goal with real text and
/// real files and writes it to `gates/<goal>.json`; returns that path.
pub fn filled_gate(repo: &Repo, profile: &str, goal_id: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "checkpoint",
        "--print-template",
        "--goal-id",
        goal_id,
        "--json",
    ];
    args.extend_from_slice(extra);
    let t = expect_ok(&eg(repo, profile, &args));
    let mut gate = t["qualityGateTemplate"].clone();
    fill(repo, &mut gate, "");
    let path = format!("gates/{goal_id}.json");
    repo.write(&path, serde_json::to_string_pretty(&gate).unwrap());
    path
}

fn fill(repo: &Repo, v: &mut Value, key: &str) {
    match v {
        Value::Object(m) => {
            for (k, child) in m.iter_mut() {
                fill(repo, child, k);
            }
        }
        Value::Array(a) => {
            for child in a {
                fill(repo, child, key);
            }
        }
        Value::String(s) => {
            if s.contains("<replace:") {
                *s = if key == "status" {
                    "passed".to_owned()
                } else {
                    format!("Observed result recorded for {key} during the run")
                };
            }
            if (key == "path" || key == "reportPath") && !repo.join(s).exists() {
                repo.write(s, format!("report for {s}\nVERDICT: APPROVE\n"));
            }
        }
        _ => {}
    }
}

/// Steering evidence and rationale flags.
pub const WHY: [&str; 4] = [
    "--evidence",
    "observed in the staging run",
    "--rationale",
    "the plan must follow the observation",
];

/// Runs `ulw-loop steer <args…> <WHY…> --json`.
pub fn steer(repo: &Repo, args: &[&str]) -> Run {
    let mut all = vec!["steer"];
    all.extend_from_slice(args);
    all.extend_from_slice(&WHY);
    ulw(repo, &all)
}

/// Asserts a rejected steer: exit 1, `ok: false`, `accepted: false`, the
/// error code, and that `reason` is among `rejectedReasons`.
pub fn expect_rejected(run: &Run, code: &str, reason: &str) -> Value {
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let v = run.json();
    assert_eq!(v["ok"], false, "{v}");
    assert_eq!(v["accepted"], false, "{v}");
    assert_eq!(v["error"]["code"], code, "{v}");
    let reasons: Vec<&str> = v["rejectedReasons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    assert!(reasons.contains(&reason), "{reason:?} not in {reasons:?}");
    v
}

/// The bytes of `goals.json`.
pub fn plan_bytes(repo: &Repo) -> Vec<u8> {
    std::fs::read(state(repo, "goals.json")).unwrap()
}

/// A repository whose plan was created from `brief` with the validation
/// batches `batches` (`create-goals --validation-batch-json`).
pub fn with_batch(brief: &str, batches: Value) -> Repo {
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &[
            "create-goals",
            "--brief",
            brief,
            "--validation-batch-json",
            &batches.to_string(),
        ],
    ));
    repo
}

/// The usual batch: G001-a and G002-b, closed by G002-b.
pub fn vb1() -> Value {
    serde_json::json!([{"batchId": "VB1", "memberIds": ["G001-a", "G002-b"], "finalGoalId": "G002-b"}])
}
