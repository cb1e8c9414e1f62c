//! Helpers for the repository-mode tests: goal-engine state directories
//! written to the spec (goal-engine.md §2.3, §2.5, §7.4) with the library's
//! own chain writer, and recorded-file digests taken from the tree.

#![allow(dead_code)]

use serde_json::{Map, Value, json};

use crate::common::{Repo, Run};
use evidence_gate::internals::{ChainedRecord, chain_records};

pub const STATE: &str = ".omo/ulw-loop";
pub const GATE_SHA: &str = "5d41402abc4b2a76b9719d911017c592aa9f8f1e41b1e0b0b4e1ddeb6c7a3d9a";

/// `{path, size, sha256, role}` of a file in the repository.
pub fn rec(repo: &Repo, path: &str, role: &str) -> Value {
    let bytes = std::fs::read(repo.join(path)).unwrap();
    json!({
        "path": path,
        "size": bytes.len(),
        "sha256": evidence_gate::internals::sha256_hex(&bytes),
        "role": role,
    })
}

/// A ledger entry of `kind` at plan `revision`.
pub fn entry(kind: &str, revision: u64, extra: Value) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert(
        "at".into(),
        json!(format!("2026-01-02T03:04:{:02}.000Z", revision % 60)),
    );
    m.insert("kind".into(), json!(kind));
    if let Value::Object(x) = extra {
        m.extend(x);
    }
    m.insert("revision".into(), json!(revision));
    m
}

/// The chained bytes of `entries` (a new ledger).
pub fn chain(entries: &[Map<String, Value>]) -> (Vec<u8>, Vec<ChainedRecord>) {
    chain_records(0, None, entries)
}

/// A completed single-goal run in `dir`: plan revision 4, four ledger entries,
/// recorded deliverable, transcript and gate artifact, and a completion
/// record backed by the final-gate entry at seq 4.
pub struct Run4 {
    pub dir: String,
    pub plan: Value,
    pub entries: Vec<Map<String, Value>>,
}

pub const DELIVERABLE: &str = "src/limiter.rs";
pub const TRANSCRIPT: &str = ".omo/evidence/ulw/s1/G001/a1/cli-transcript.txt";
pub const REVIEW: &str = ".omo/evidence/ulw/s1/G001/a1/code-review.md";

impl Run4 {
    pub fn new(repo: &Repo, dir: &str) -> Run4 {
        repo.write(DELIVERABLE, "pub fn limit() -> u32 { 5 }\n");
        repo.write(
            TRANSCRIPT,
            "$ cargo test limiter\ntest result: ok. 12 passed\n",
        );
        repo.write(REVIEW, "# Code review\nVERDICT: APPROVE\n");
        let entries = vec![
            entry("plan_created", 1, json!({"message": "plan created"})),
            entry("goal_started", 2, json!({"goalId": "G001", "attempt": 1})),
            entry(
                "criterion_evidence_recorded",
                3,
                json!({"goalId": "G001", "files": [rec(repo, DELIVERABLE, "deliverable"), rec(repo, TRANSCRIPT, "artifact")]}),
            ),
            entry(
                "aggregate_completed",
                4,
                json!({
                    "goalId": "G001",
                    "status": "complete",
                    "evidence": "limiter done",
                    "files": [rec(repo, REVIEW, "gate-artifact"), rec(repo, TRANSCRIPT, "gate-artifact")],
                    "qualityGateSha256": GATE_SHA,
                }),
            ),
        ];
        let mut last = entries[3].clone();
        last.shift_remove("seq");
        let plan = json!({
            "version": 1,
            "goals": [{"id": "G001", "title": "Limit logins", "objective": "cap login attempts", "status": "complete", "successCriteria": []}],
            "revision": 4,
            "aggregateCompletion": {
                "status": "complete", "completedAt": "2026-01-02T03:04:04.000Z", "evidence": "limiter done",
                "codexGoal": null, "revision": 4, "ledgerSeq": 4, "qualityGateSha256": GATE_SHA,
            },
            "lastMutation": {"revision": 4, "fromSeq": 4, "entries": [Value::Object(last)]},
        });
        let r = Run4 {
            dir: dir.to_owned(),
            plan,
            entries,
        };
        r.write(repo);
        r
    }

    /// Writes plan and ledger as the goal engine binds them (threat-model.md
    /// I7): the last entry and the plan's pending entries record the plan
    /// body's digest; the plan names the last record as its ledger head.
    pub fn write(&self, repo: &Repo) {
        let (plan, entries) = self.bound();
        write_plan_value(repo, &self.dir, &plan);
        repo.write(&format!("{}/ledger.jsonl", self.dir), chain(&entries).0);
    }

    /// Rewrites the plan (and the ledger it is bound to) from `self`.
    pub fn write_plan(&self, repo: &Repo) {
        self.write(repo);
    }

    /// The plan and entries with the binding filled in.
    pub fn bound(&self) -> (Value, Vec<Map<String, Value>>) {
        let mut plan = self.plan.clone();
        let d = evidence_gate::internals::plan_body_sha256(plan.as_object().unwrap());
        let mut entries = self.entries.clone();
        if let Some(last) = entries.last_mut() {
            last.insert("planSha256".into(), json!(d));
        }
        if let Some(lm) = plan.get_mut("lastMutation").and_then(Value::as_object_mut) {
            for e in lm
                .get_mut("entries")
                .and_then(Value::as_array_mut)
                .into_iter()
                .flatten()
            {
                e["planSha256"] = json!(d);
            }
            // The head the engine names: the ledger with the entries of
            // `lastMutation` it does not end with yet appended.
            let pending = pending_entries(&entries, lm);
            let mut all = entries.clone();
            all.extend(pending);
            if let Some(r) = chain(&all).1.last() {
                lm.insert("ledgerHead".into(), json!({"seq": r.seq, "sha256": r.hash}));
            }
        }
        (plan, entries)
    }

    /// Writes the plan as `self` holds it, without binding (a hand edit).
    pub fn write_plan_unbound(&self, repo: &Repo) {
        write_plan_value(repo, &self.dir, &self.plan);
    }

    pub fn ledger(&self) -> String {
        format!("{}/ledger.jsonl", self.dir)
    }
}

/// The entries of `lm` the ledger `entries` lacks, counted as the engine's
/// recovery check counts them: ledger records from `fromSeq` on with the
/// mutation's revision, not counting its own `ledger_repaired` markers.
fn pending_entries(
    entries: &[Map<String, Value>],
    lm: &Map<String, Value>,
) -> Vec<Map<String, Value>> {
    let lm_entries: Vec<Map<String, Value>> = lm
        .get("entries")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_object).cloned().collect())
        .unwrap_or_default();
    let rev = lm.get("revision").and_then(Value::as_u64);
    let from = lm.get("fromSeq").and_then(Value::as_u64).unwrap_or(0);
    let landed = entries
        .iter()
        .enumerate()
        .filter(|(i, e)| {
            *i as u64 + 1 >= from
                && e.get("revision").and_then(Value::as_u64) == rev
                && e.get("repair")
                    .and_then(|r| r.get("recoveredCount"))
                    .is_none()
        })
        .count();
    lm_entries[landed.min(lm_entries.len())..].to_vec()
}

fn write_plan_value(repo: &Repo, dir: &str, plan: &Value) {
    let mut text = serde_json::to_string_pretty(plan).unwrap();
    text.push('\n');
    repo.write(&format!("{dir}/goals.json"), text);
}

/// Runs repository mode with `--format json` and extra args.
pub fn audit(repo: &Repo, extra: &[&str]) -> Run {
    let mut args = vec!["--format", "json"];
    args.extend_from_slice(extra);
    repo.run("verify-evidence", &args, None)
}

/// Every finding of a JSON run as `(code, severity, path, detail)`.
pub fn findings(run: &Run) -> Vec<(String, String, Option<String>, Value)> {
    let v = run.json();
    let mut out = Vec::new();
    for r in v["reports"].as_array().expect("reports") {
        for f in r["findings"].as_array().unwrap() {
            out.push((
                f["code"].as_str().unwrap().to_owned(),
                f["severity"].as_str().unwrap().to_owned(),
                f["path"].as_str().map(str::to_owned),
                f.get("detail").cloned().unwrap_or(Value::Null),
            ));
        }
    }
    out
}

/// A repository whose audit finds a chain break (with a line), a digest
/// mismatch (a recorded file), a gate-ledger waiver (warning) and a failing
/// payload under the evidence root.
pub fn audited_repo() -> Repo {
    let r = Repo::new();
    let run = Run4::new(&r, STATE);
    let ledger = r.join(&run.ledger());
    let text = std::fs::read_to_string(&ledger).unwrap();
    std::fs::write(&ledger, text.replacen("plan created", "plan crEated", 1)).unwrap();
    r.write(DELIVERABLE, "edited, odd: name\n");
    let waiver = evidence_gate::internals::chain_records(
        0,
        None,
        &[serde_json::from_value(json!({"kind": "receipt_waived", "ts": "2026-01-02T03:04:05.000Z", "agent_type": "lazycodex-worker-high", "reason": "context_pressure"})).unwrap()],
    )
    .0;
    r.write(".omo/evidence-gate/ledger.jsonl", waiver);
    r.write(
        ".omo/evidence/G001/bad.evidence.json",
        serde_json::to_vec(&crate::evidence_cli::payload(
            json!([{"path": "src/none & <x>.rs"}]),
        ))
        .unwrap(),
    );
    r
}
