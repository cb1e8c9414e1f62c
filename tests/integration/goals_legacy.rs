//! A plan and ledger written by the Node tool (fixture built from the
//! shapes of R§1.3 and R§1.4) are read, continued, and stay readable by it:
//! unknown keys and key order survive, the chain starts after the legacy
//! prefix, and every record keeps the Node reader's shape.

use crate::common::copy_tree;
use crate::goals_support::*;
use serde_json::{Map, Value, json};

const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/plans/node-legacy");

fn legacy_repo() -> Repo {
    let repo = Repo::new();
    copy_tree(std::path::Path::new(FIXTURE), repo.path());
    repo
}

fn original() -> Value {
    serde_json::from_slice(&std::fs::read(format!("{FIXTURE}/.omo/ulw-loop/goals.json")).unwrap())
        .unwrap()
}

/// Every key of `old` is in `new`, in the same relative order, recursively
/// through objects and arrays of objects.
fn assert_preserved(old: &Value, new: &Value, at: &str) {
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let order: Vec<&String> = n.keys().filter(|k| o.contains_key(*k)).collect();
            let want: Vec<&String> = o.keys().collect();
            assert_eq!(order, want, "key order at {at}");
            for (k, v) in o {
                assert_preserved(v, &n[k], &format!("{at}/{k}"));
            }
        }
        (Value::Array(o), Value::Array(n)) if o.iter().all(Value::is_object) => {
            assert!(n.len() >= o.len(), "{at}");
            for (i, v) in o.iter().enumerate() {
                assert_preserved(v, &n[i], &format!("{at}/{i}"));
            }
        }
        _ => {}
    }
}

#[test]
fn status_reads_the_node_plan_without_writing() {
    let repo = legacy_repo();
    let before = repo.snapshot();
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(repo.snapshot(), before);
    assert_eq!(s["revision"], 0);
    assert_eq!(s["ledger"]["records"], 8);
    assert_eq!(s["ledger"]["lastSeq"], 0);
    assert_eq!(s["ledger"]["consistency"], "ok");
    assert_eq!(s["summary"]["superseded"], 1);
    assert_eq!(
        s["currentAttemptDir"],
        ".omo/evidence/ulw/session/G002-document-the-limits/a1"
    );
    assert!(
        s["plan"]["codexObjective"]
            .as_str()
            .unwrap()
            .starts_with("Complete the durable ulw-loop plan in .omo/ulw-loop/goals.json")
    );
    let check = ulw(&repo, &["repair", "--check"]);
    assert_eq!(check.code, 0);
    assert_eq!(check.json()["findings"][0]["code"], "LEDGER_NOT_CHAINED");
}

#[test]
fn the_node_plan_is_continued_and_keeps_unknown_fields_and_order() {
    let repo = legacy_repo();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G002-document-the-limits",
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "docs/limits.md rendered",
        ],
    ));
    assert_eq!(v["revision"], 1);
    let p = plan(&repo);
    assert_preserved(&original(), &p, "");
    assert_eq!(
        p["x-node-extension"],
        json!({"owner": "omo", "flags": [1, 2, 3]})
    );
    assert_eq!(
        p["goals"][0]["x-node-review"],
        json!({"reviewer": "alice", "round": 2})
    );
    assert_eq!(p["revision"], 1);
    assert!(
        p.get("profile").is_none(),
        "profile is written by create-goals only"
    );
    let keys: Vec<&String> = p.as_object().unwrap().keys().collect();
    let n = keys.len();
    assert_eq!(
        &keys[n - 3..],
        ["codexObjectiveAliases", "revision", "lastMutation"],
        "new keys are appended"
    );
    assert_eq!(
        p["codexObjectiveAliases"],
        json!([
            "Complete all ulw-loop stories listed in .omo/ulw-loop/goals.json. Use .omo/ulw-loop/ledger.jsonl as the durable audit trail."
        ])
    );
    let l = ledger(&repo);
    assert_eq!(l.len(), 10);
    assert_eq!(l[8]["kind"], "aggregate_objective_migrated");
    assert_eq!(l[9]["kind"], "evidence_captured");
    assert_eq!(l[8]["seq"], 1, "the chain starts after the legacy prefix");
    let text = std::fs::read_to_string(state(&repo, "ledger.jsonl")).unwrap();
    let legacy_last = text.lines().nth(7).unwrap();
    assert_eq!(l[8]["prev"], sha256(legacy_last.as_bytes()).as_str());
    // The Node tool's eight lines are reported as the chain's legacy prefix,
    // as information: nothing is wrong with the state.
    let check = expect_ok(&ulw(&repo, &["repair", "--check"]));
    let findings = check["findings"].as_array().unwrap();
    assert_eq!(findings.len(), 1, "{check}");
    assert_eq!(findings[0]["code"], "LEDGER_LEGACY_PREFIX", "{check}");
    assert_eq!(findings[0]["severity"], "info", "{check}");
    assert!(
        findings[0]["message"]
            .as_str()
            .unwrap()
            .contains("8 unchained"),
        "{check}"
    );
    let audit = repo.run("verify-evidence", &["--format", "json"], None);
    assert_eq!(audit.code, 0, "{}", audit.stdout);
    assert!(audit.codes().contains(&"LEDGER_LEGACY_PREFIX".to_owned()));
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::{Digest, Sha256};
    evidence_gate::internals::hex(&Sha256::digest(bytes))
}

#[test]
fn what_we_write_stays_readable_by_the_node_reader() {
    let repo = legacy_repo();
    expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G002-document-the-limits",
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "x",
        ],
    ));
    expect_ok(&ulw(
        &repo,
        &[
            "add-goal",
            "--title",
            "Announce it",
            "--objective",
            "Announce it",
        ],
    ));
    let p = plan(&repo);
    // The Node reader's only checks (R§1.3.8): version 1 and a goals array.
    assert_eq!(p["version"], 1);
    assert!(p["goals"].is_array());
    for g in p["goals"].as_array().unwrap() {
        for key in ["id", "title", "objective", "status"] {
            assert!(g[key].is_string(), "{key} of {}", g["id"]);
        }
        assert!(g["successCriteria"].is_array());
        assert!(g["attempt"].is_u64());
    }
    let text = std::fs::read_to_string(state(&repo, "goals.json")).unwrap();
    assert!(
        text.starts_with("{\n  \"version\": 1,") && text.ends_with("}\n"),
        "two-space JSON plus one newline"
    );
    for (i, line) in std::fs::read_to_string(state(&repo, "ledger.jsonl"))
        .unwrap()
        .lines()
        .enumerate()
    {
        let e: Map<String, Value> =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("line {}: {e}", i + 1));
        assert!(
            e["at"].is_string() && e["kind"].is_string(),
            "line {}",
            i + 1
        );
    }
}

#[test]
fn legacy_seeded_placeholders_are_detected_by_marker() {
    let repo = legacy_repo();
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G002-document-the-limits",
                "--criterion-id",
                "C002",
                "--status",
                "pass",
                "--evidence",
                "x",
            ],
        ),
        "ULW_LOOP_CRITERION_SEEDED",
    );
    assert_eq!(e["details"]["criterionId"], "C002");
    let c = expect_ok(&ulw(
        &repo,
        &["criteria", "--goal-id", "G002-document-the-limits"],
    ));
    assert_eq!(c["criteria"].as_array().unwrap().len(), 2);
    let text = eg(
        &repo,
        "ulw-loop",
        &["criteria", "--goal-id", "G002-document-the-limits"],
    )
    .stdout;
    assert!(text.lines().nth(2).unwrap().ends_with("[seeded]"), "{text}");
    assert!(!text.lines().nth(1).unwrap().ends_with("[seeded]"));
}

#[test]
fn legacy_accepted_steering_keys_are_indexed_on_rebuild() {
    let repo = legacy_repo();
    expect_ok(&ulw(&repo, &["repair", "--rebuild-index"]));
    let keys = std::fs::read_to_string(state(&repo, ".ledger.keys")).unwrap();
    let line: Value = serde_json::from_str(keys.lines().next().unwrap()).unwrap();
    assert_eq!(line["k"], "k:split-g003");
    assert_eq!(line["d"], Value::Null);
    assert_eq!(line["m"], "split_subgoal");
    assert_eq!(line["t"], json!(["G003"]));
}

#[test]
fn the_superseded_goal_is_skipped_and_its_replacement_scheduled() {
    let repo = legacy_repo();
    let snap = active(&repo);
    edit_goal(&repo, "G002-document-the-limits", |g| {
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    });
    let v = expect_ok(&ulw(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G002-document-the-limits",
            "--status",
            "complete",
            "--evidence",
            "done",
            "--codex-goal-json",
            &snap,
        ],
    ));
    assert_eq!(v["next"]["goal"]["id"], "G004");
    assert_eq!(
        v["next"]["goal"]["attemptDir"],
        ".omo/evidence/ulw/session/G004/a1"
    );
    assert_eq!(v["next"]["goal"]["supersedes"], json!(["G003"]));
}

#[test]
fn a_node_written_lock_file_is_not_honoured() {
    // threat-model.md I3: a Node tool's exclusive-create lock file holds no
    // OS lock, and a file is something the gated agent can forge, so its
    // existence never means "held" (README, "Differences from the Node tools").
    let repo = legacy_repo();
    std::fs::write(
        state(&repo, ".mutation.lock"),
        r#"{"pid":31337,"createdAt":"2026-03-02T10:42:10.250Z"}"#,
    )
    .unwrap();
    expect_ok(&ulw(&repo, &["complete-goals", "--lock-timeout-ms", "100"]));
    assert!(!state(&repo, ".mutation.lock").exists());
}

/// The head a fold of every record in turn gives a ledger's complete lines:
/// `(records, lastSeq, sha256 of the last record)`.
fn folded_head(bytes: &[u8]) -> (u64, u64, Option<String>) {
    let complete = &bytes[..bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)];
    let (mut records, mut last_seq, mut head) = (0, 0, None);
    for line in complete.split(|b| *b == b'\n') {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        records += 1;
        head = Some(sha256(line));
        if let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(line) {
            let seq = m.get("seq").and_then(Value::as_u64).filter(|s| *s >= 1);
            let prev_ok = m.get("prev").and_then(Value::as_str).is_some_and(|p| {
                p.len() == 64 && p.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            });
            if let (Some(seq), true) = (seq, prev_ok) {
                last_seq = seq;
            }
        }
    }
    (records, last_seq, head)
}

/// A read-only command on a ledger without an index (a fresh clone, a Node
/// tool's state) counts its records without decoding them and reads the
/// chain's part of its head back from the end: what it reports is what
/// folding every record gives, whatever follows the chain (a Node tool's
/// records, blank lines, a record whose `seq` is spelled with an escape or
/// appears only in a value, a line that is not JSON, a torn tail), on the
/// first call, from the per-user cache on the next, and after an append.
/// Nothing is written to the repository.
#[test]
fn status_reads_the_head_of_a_ledger_without_an_index() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let ledger = state(&repo, "ledger.jsonl");
    let prev = "e".repeat(64);
    let tails: Vec<String> = vec![
        String::new(),
        r#"{"at":"2026-05-01T12:00:00.000Z","kind":"evidence_captured","note":"seq 41 of the run"}"#.into(),
        "   ".into(),
        String::new(),
        format!(r#"{{"\u0073eq":77,"prev":"{prev}","revision":5,"kind":"note"}}"#),
        format!(r#"{{"seq":76,"p\u0072ev":"{prev}","kind":"note"}}"#),
        "not json".into(),
        format!(r#"{{"seq":78,"prev":"short"}}"#),
        format!(r#"{{"kind":"note","s\u0065q":79,"prev":"{prev}"}}"#),
        "[1,2]".into(),
    ];
    let mut bytes = std::fs::read(&ledger).unwrap();
    for (i, tail) in tails.iter().enumerate() {
        if i > 0 {
            bytes.extend_from_slice(tail.as_bytes());
            bytes.push(b'\n');
        }
        for torn in [&b""[..], b"{\"seq\":80,"] {
            let mut file = bytes.clone();
            file.extend_from_slice(torn);
            std::fs::write(&ledger, &file).unwrap();
            let _ = std::fs::remove_file(state(&repo, ".ledger.idx"));
            let (records, last_seq, head) = folded_head(&file);
            let before = repo.snapshot();
            // The first call scans; the second reads the per-user cache.
            for call in ["scan", "cache"] {
                let s = ulw(&repo, &["status"]).json();
                let l = &s["ledger"];
                let at = format!("tail {i}, torn {}, {call}: {l}", !torn.is_empty());
                assert_eq!(l["records"], records, "{at}");
                assert_eq!(l["lastSeq"], last_seq, "{at}");
                assert_eq!(l["head"], json!(head), "{at}");
            }
            assert!(repo.snapshot() == before, "status wrote to the repository");
        }
    }
}
