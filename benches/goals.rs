//! Goal-engine whole-process latency on the workload of goal-engine.md §11:
//! a plan of 1,000 goals × 3 criteria and a chained ledger of 100,000
//! realistic records (10,000 of them keyed steering entries), on tmpfs
//! (`/dev/shm` when present). Prints p50/p95 per command in milliseconds and
//! the ratio to spawning `true`.
//!
//! Run: `cargo bench --bench goals [-- --runs 30]`; `-- --prepare-only` keeps the
//! generated workload for profiling one command by hand.

#![allow(clippy::disallowed_methods)]

#[path = "shared/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

const GOALS: usize = 1000;
const RECORDS: u64 = 100_000;
const STEERING_EVERY: u64 = 10;
const STATE: &str = ".omo/ulw-loop";

fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_evidence-gate"))
}

fn base_dir() -> PathBuf {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    }
}

fn objective() -> String {
    format!(
        "Complete the durable ulw-loop plan in {STATE}/goals.json, including later accepted/appended stories, under the original brief constraints; use {STATE}/ledger.jsonl as the audit trail."
    )
}

/// The plan: goal 1 in progress, the rest pending, every criterion passed.
fn plan(last_entry: &Map<String, Value>) -> Value {
    let now = "2026-05-01T12:00:00.000Z";
    let goals: Vec<Value> = (0..GOALS)
        .map(|i| {
            let id = format!("G{:03}-implement-part-{i}-of-the-service", i + 1);
            let criteria: Vec<Value> = ["happy", "edge", "regression"]
                .iter()
                .enumerate()
                .map(|(j, model)| {
                    json!({
                        "id": format!("C00{}", j + 1),
                        "scenario": format!("{model} scenario for part {i}: request, response and persisted state agree"),
                        "userModel": model,
                        "expectedEvidence": format!("transcript of the {model} run for part {i} with exit status 0"),
                        "essential": j < 2,
                        "capturedEvidence": format!("cargo test part_{i}_{model}: ok @tree:abc{i:04}"),
                        "status": "pass",
                        "capturedAt": now,
                    })
                })
                .collect();
            json!({
                "id": id,
                "title": format!("Implement part {i} of the service"),
                "objective": format!("Implement part {i} of the service behind the public API, with tests and docs"),
                "status": if i == 0 { "in_progress" } else { "pending" },
                "successCriteria": criteria,
                "attempt": if i == 0 { 1 } else { 0 },
                "createdAt": now,
                "updatedAt": now,
            })
        })
        .collect();
    json!({
        "version": 1,
        "evidenceLayoutVersion": 2,
        "createdAt": now,
        "updatedAt": now,
        "briefPath": format!("{STATE}/brief.md"),
        "goalsPath": format!("{STATE}/goals.json"),
        "ledgerPath": format!("{STATE}/ledger.jsonl"),
        "codexGoalMode": "aggregate",
        "goals": goals,
        "codexObjective": objective(),
        "activeGoalId": "G001-implement-part-0-of-the-service",
        "revision": RECORDS,
        "profile": "ulw-loop",
        "sessionId": null,
        "gateRules": "lazycodex",
        "lastMutation": {"revision": RECORDS, "fromSeq": RECORDS, "entries": [last_entry]},
    })
}

fn entry(n: u64) -> Map<String, Value> {
    let goal = format!(
        "G{:03}-implement-part-{}-of-the-service",
        (n % GOALS as u64) + 1,
        n % GOALS as u64
    );
    let v = if n.is_multiple_of(STEERING_EVERY) {
        json!({
            "at": "2026-05-01T12:00:00.000Z", "kind": "steering_accepted",
            "evidence": format!("observed behaviour {n} in the staging run"),
            "message": "annotated for the reviewers",
            "steering": {
                "kind": "annotate_ledger", "source": "cli", "targetGoalIds": [goal],
                "evidence": format!("observed behaviour {n} in the staging run"), "rationale": "annotated for the reviewers",
                "invariant": {"accepted": true, "structuralInvariantAccepted": true, "evidenceBackedNecessity": true,
                              "noEasierCompletion": true, "rejectedReasons": [], "reasons": []},
                "idempotencyKey": format!("note-{n}"), "channel": "cli", "proposalDigest": format!("{:064x}", n),
            },
            "mutationKind": "annotate_ledger", "goalId": goal, "idempotencyKey": format!("note-{n}"),
            "channel": "cli", "proposalDigest": format!("{:064x}", n),
        })
    } else {
        json!({
            "at": "2026-05-01T12:00:00.000Z", "kind": "evidence_captured", "goalId": goal,
            "criterionId": "C001", "criterionStatus": "pass",
            "evidence": format!("cargo test part {n}: 14 passed, 0 failed; transcript saved @tree:abc{n:06}"),
            "capturedEvidence": format!("cargo test part {n}: 14 passed, 0 failed; transcript saved @tree:abc{n:06}"),
            "before": {"status": "pending"},
            "after": {"goalId": goal, "criterionId": "C001", "status": "pass", "capturedAt": "2026-05-01T12:00:00.000Z", "prevStatus": "pending"},
        })
    };
    let mut m = v.as_object().unwrap().clone();
    m.insert("revision".into(), json!(n));
    m
}

fn prepare() -> (tempfile::TempDir, u64, u64) {
    let dir = tempfile::tempdir_in(base_dir()).unwrap();
    let state = dir.path().join(STATE);
    std::fs::create_dir_all(&state).unwrap();
    let mut ledger = Vec::new();
    let mut last_seq = 0;
    let mut last_hash: Option<String> = None;
    let mut last = Map::new();
    let mut n = 1;
    while n <= RECORDS {
        let batch: Vec<Map<String, Value>> = (n..(n + 1000).min(RECORDS + 1)).map(entry).collect();
        last = batch.last().unwrap().clone();
        let (bytes, recs) =
            evidence_gate::internals::chain_records(last_seq, last_hash.as_deref(), &batch);
        ledger.extend_from_slice(&bytes);
        last_seq = recs.last().unwrap().seq;
        last_hash = Some(recs.last().unwrap().hash.clone());
        n += 1000;
    }
    std::fs::write(state.join("ledger.jsonl"), &ledger).unwrap();
    let mut text = serde_json::to_string_pretty(&plan(&last)).unwrap();
    text.push('\n');
    std::fs::write(state.join("goals.json"), &text).unwrap();
    std::fs::write(state.join("brief.md"), "- the service\n").unwrap();
    (dir, ledger.len() as u64, text.len() as u64)
}

fn run(dir: &Path, args: &[String]) -> (Duration, i32) {
    let start = Instant::now();
    let status = Command::new(bin())
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .env_remove("CODEX_THREAD_ID")
        .env_remove("CODEX_SESSION_ID")
        .env_remove("OMO_ULW_LOOP_SESSION_ID")
        .status()
        .unwrap();
    (start.elapsed(), status.code().unwrap_or(-1))
}

fn p(sorted: &[Duration], q: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

fn report(name: &str, mut v: Vec<Duration>, floor: f64, target: f64) {
    v.sort();
    let p50 = p(&v, 0.5);
    println!(
        "{name:<44} p50 {p50:>8.2} ms  p95 {:>8.2} ms  max {:>8.2} ms  floor_ratio {:>6.1}  target < {target} ms {}",
        p(&v, 0.95),
        p(&v, 1.0),
        p50 / floor,
        if p50 < target { "ok" } else { "MISSED" }
    );
}

fn series(dir: &Path, runs: usize, args: &dyn Fn(usize) -> Vec<String>) -> Vec<Duration> {
    (0..runs)
        .map(|i| {
            let a = args(i);
            let (d, code) = run(dir, &a);
            assert_eq!(code, 0, "{a:?} failed");
            d
        })
        .collect()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

fn main() {
    let runs = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(30);
    let t = Instant::now();
    let (repo, ledger_bytes, plan_bytes) = prepare();
    if std::env::args().any(|a| a == "--prepare-only") {
        // For profiling a single command by hand: keep the workload and exit.
        println!("workload kept in {}", repo.keep().display());
        return;
    }
    let dir = repo.path();
    println!(
        "workload: {GOALS} goals, {} criteria, goals.json {:.1} MB, ledger {RECORDS} records / {:.1} MB ({} keyed steering), tmpfs {} (generated in {:.1} s)",
        GOALS * 3,
        plan_bytes as f64 / 1e6,
        ledger_bytes as f64 / 1e6,
        RECORDS / STEERING_EVERY,
        dir.starts_with("/dev/shm"),
        t.elapsed().as_secs_f64()
    );
    let floor = {
        let mut v: Vec<Duration> = (0..runs)
            .map(|_| {
                let t = Instant::now();
                Command::new("true").status().unwrap();
                t.elapsed()
            })
            .collect();
        v.sort();
        p(&v, 0.5)
    };
    println!("floor: `true` p50 {floor:.2} ms");

    let one = |args: &[&str]| {
        let (d, code) = run(dir, &s(args));
        assert_eq!(code, 0, "{args:?}");
        d.as_secs_f64() * 1000.0
    };
    println!(
        "{:<44} {:>8.2} ms  (target < 2000 ms)",
        "index rebuild (repair --rebuild-index)",
        one(&["ulw-loop", "repair", "--rebuild-index", "--json"])
    );
    println!(
        "{:<44} {:>8.2} ms  (target < 2000 ms)",
        "repair --check (full chain verification)",
        one(&["ulw-loop", "repair", "--check", "--json"])
    );

    let warm = 3;
    let status = s(&["ulw-loop", "status", "--json"]);
    series(dir, warm, &|_| status.clone());
    report(
        "status --json",
        series(dir, runs, &|_| status.clone()),
        floor,
        50.0,
    );
    let crit = s(&[
        "ulw-loop",
        "criteria",
        "--goal-id",
        "G500-implement-part-499-of-the-service",
        "--json",
    ]);
    report(
        "criteria --goal-id",
        series(dir, runs, &|_| crit.clone()),
        floor,
        50.0,
    );
    let resume = s(&["ulw-loop", "complete-goals", "--json"]);
    report(
        "complete-goals (resume)",
        series(dir, runs, &|_| resume.clone()),
        floor,
        50.0,
    );
    let record = |i: usize| {
        s(&[
            "ulw-loop",
            "record-evidence",
            "--goal-id",
            "G001-implement-part-0-of-the-service",
            "--criterion-id",
            ["C001", "C002", "C003"][i % 3],
            "--status",
            "pass",
            "--evidence",
            &format!("rerun {i}: 14 passed"),
            "--json",
        ])
    };
    series(dir, warm, &record);
    report("record-evidence", series(dir, runs, &record), floor, 50.0);
    // Steering (goal-engine.md §11): a new idempotency key, its replay
    // (a dedupe hit in `.ledger.keys`), and a batch of 10 proposals.
    let note = |key: String| cli::annotate("G700-implement-part-699-of-the-service", &key);
    series(dir, warm, &|i| note(format!("bench-warm-{i}")));
    report(
        "steer annotate_ledger (new key)",
        series(dir, runs, &|i| note(format!("bench-new-{i}"))),
        floor,
        50.0,
    );
    report(
        "steer annotate_ledger (replay, dedupe hit)",
        series(dir, runs, &|_| note("bench-new-0".to_owned())),
        floor,
        50.0,
    );
    let batch = |i: usize| {
        let items: Vec<Value> = (0..10)
            .map(|j| {
                let n = 600 + (i * 10 + j) % 300;
                if j % 2 == 0 {
                    json!({
                        "kind": "revise_pending_wording",
                        "goalId": format!("G{:03}-implement-part-{}-of-the-service", n + 1, n),
                        "revisedTitle": format!("Implement part {n} of the service (run {i})"),
                        "evidence": "the API changed", "rationale": "keep the titles accurate",
                    })
                } else {
                    json!({
                        "kind": "annotate_ledger", "idempotencyKey": format!("batch-{i}-{j}"),
                        "evidence": format!("observation {j}"), "rationale": "for the reviewers",
                    })
                }
            })
            .collect();
        s(&[
            "ulw-loop",
            "steer",
            "--proposals-json",
            &Value::Array(items).to_string(),
            "--json",
        ])
    };
    let all = series(dir, runs + warm, &batch);
    report(
        "steer --proposals-json (10 items)",
        all[warm..].to_vec(),
        floor,
        50.0,
    );
    let snapshot = json!({"goal": {"objective": objective(), "status": "active"}}).to_string();
    let checkpoint = |i: usize| {
        let id = format!("G{:03}-implement-part-{i}-of-the-service", i + 1);
        s(&[
            "ulw-loop",
            "checkpoint",
            "--goal-id",
            &id,
            "--status",
            "complete",
            "--evidence",
            "part done, tests green",
            "--codex-goal-json",
            &snapshot,
            "--json",
        ])
    };
    let all = series(dir, runs + warm, &checkpoint);
    report(
        "checkpoint --status complete (+ auto-advance)",
        all[warm..].to_vec(),
        floor,
        50.0,
    );
    let check = s(&["ulw-loop", "repair", "--check", "--json"]);
    let (_, code) = run(dir, &check);
    assert_eq!(
        code, 0,
        "the chain verifies after the benchmark's mutations"
    );
}
