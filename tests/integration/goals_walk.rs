//! The binding walk within a budget (threat-model I7; hooks.md §8.1 "≤ 1 MiB
//! read from files, whatever the ledger size"). Every binding check walks
//! back from the ledger's end to the head the plan names. Appends that leave
//! the plan unchanged (annotations, replays) pile up after that head, so the
//! engine names a newer head once they pass a distance; a hook reads at most
//! a fixed budget, and what it cannot read in it is never taken as proof.
//! Every process runs with HOME and the XDG directories in temporary
//! directories.

use serde_json::{Value, json};

use crate::common::Run;
use crate::goals_support::*;
use crate::hooks_support::{HookRepo, ULW, block_reason, tampered_reason};

const SID: &str = "walk";

fn goals() -> String {
    format!("{ULW}/{SID}/goals.json")
}

fn ledger_file(h: &HookRepo) -> std::path::PathBuf {
    h.join(&format!("{ULW}/{SID}/ledger.jsonl"))
}

/// Appends `bytes` to the ledger, as the agent can.
fn append_ledger(h: &HookRepo, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(ledger_file(h))
        .unwrap();
    std::io::Write::write_all(&mut f, bytes).unwrap();
}

fn ok(r: Run) -> Value {
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    r.json()
}

/// A two-goal run of session `SID` whose first goal is in progress.
fn started() -> HookRepo {
    let h = HookRepo::new();
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--session-id", SID, "--json"]);
        ok(eg(&h.repo, "ulw-loop", &all))
    };
    run(&["create-goals", "--brief", "- a\n- b"]);
    run(&["complete-goals"]);
    h
}

fn annotate(h: &HookRepo, evidence: &str) -> Value {
    ok(steer_in(
        &h.repo,
        SID,
        "annotate_ledger",
        &[
            "--evidence",
            evidence,
            "--rationale",
            "context for the reviewers",
        ],
    ))
}

/// The plan without `lastMutation` (what `planSha256` covers).
fn body(p: &Value) -> Value {
    let mut b = p.clone();
    b.as_object_mut().unwrap().remove("lastMutation");
    b
}

fn named_seq(p: &Value) -> u64 {
    p["lastMutation"]["ledgerHead"]["seq"].as_u64().unwrap()
}

/// Bytes of the ledger from the start of the record `seq` to the end.
fn bytes_from(h: &HookRepo, seq: u64) -> usize {
    let text = std::fs::read_to_string(ledger_file(h)).unwrap();
    let mut from = text.len();
    let mut at = text.len();
    for line in text.trim_end_matches('\n').rsplit('\n') {
        at -= line.len() + 1;
        let v: Value = serde_json::from_str(line).unwrap();
        if v["seq"].as_u64() == Some(seq) {
            from = at;
            break;
        }
    }
    text.len() - from
}

/// The Stop hook's decision and the bytes it read from files.
fn stop(h: &HookRepo) -> (Run, u64) {
    let report = h.join("io-report.jsonl");
    let _ = std::fs::remove_file(&report);
    let run = h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_stop(SID),
        &[("EVIDENCE_GATE_IO_REPORT", report.to_str().unwrap())],
    );
    let text = std::fs::read_to_string(&report).unwrap();
    let r: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    (run, r["file_bytes"].as_u64().unwrap())
}

fn status(h: &HookRepo) -> Run {
    eg(
        &h.repo,
        "ulw-loop",
        &["status", "--session-id", SID, "--json"],
    )
}

/// Honest: a long run of annotations moves the head the plan names (the
/// body and its digest unchanged), so the walk back to it stays short; the
/// run stays bound for `status`, `repair --check`, the CI audit and the Stop
/// hook, which still decides from its few-kilobyte view.
#[test]
fn honest_annotations_past_the_distance_name_a_newer_head() {
    let h = started();
    let first =
        serde_json::from_str::<Value>(&std::fs::read_to_string(h.join(&goals())).unwrap()).unwrap();
    let head0 = named_seq(&first);
    let note = "observed in the staging run: ".to_owned() + &"latency trace ".repeat(200);
    let mut moved = 0;
    let mut widest = 0;
    for i in 0..120 {
        annotate(&h, &format!("{i}: {note}"));
        let p: Value = h.read_json(&goals()).unwrap();
        assert_eq!(
            body(&p),
            body(&first),
            "annotation {i} left the body as it was"
        );
        widest = widest.max(bytes_from(&h, named_seq(&p)));
        if named_seq(&p) != head0 {
            moved += 1;
        }
    }
    assert!(moved > 0, "the named head never moved past seq {head0}");
    // 32 KiB of distance plus one annotation's records.
    assert!(widest < 64 * 1024, "walk of {widest} bytes");
    let s = ok(status(&h));
    assert_eq!(s["ledger"]["binding"]["state"], "bound", "{s}");
    let c = ok(eg(
        &h.repo,
        "ulw-loop",
        &["repair", "--check", "--session-id", SID, "--json"],
    ));
    assert_eq!(c["findings"], json!([]), "{c}");
    let audit = h
        .repo
        .run("verify-evidence", &["--format", "json", "--strict"], None);
    assert_eq!(audit.code, 0, "{}", audit.stdout);
    let (run, read) = stop(&h);
    let reason = block_reason(&run);
    assert!(!reason.contains("TAMPERED"), "{reason}");
    assert!(read < 64 * 1024, "the Stop hook read {read} bytes");
}

/// The plan flipped to complete by hand, optionally stripped of the head
/// it names.
fn flip_to_complete(h: &HookRepo, strip_head: bool) {
    h.flip_plan_to_complete(&goals(), |p| {
        if strip_head {
            p.as_object_mut().unwrap().remove("lastMutation");
        }
    });
}

/// A JSON object of about `len` bytes the engine never wrote.
fn junk_line(len: usize) -> String {
    format!("{{\"kind\":\"note\",\"message\":\"{}\"}}", "x".repeat(len))
}

/// Attack: the agent flips the plan to complete and appends a line longer
/// than the hook's read budget, so the records that would show the edit lie
/// beyond it. The hook reads within its budget and blocks: what it could
/// not read is not proof. The commands without a budget still name the edit.
#[test]
fn attack_a_line_past_the_hook_budget_does_not_hide_an_edited_plan() {
    for (strip_head, terminated) in [(false, true), (false, false), (true, true)] {
        let h = started();
        flip_to_complete(&h, strip_head);
        let mut tail = junk_line(700 * 1024);
        if terminated {
            tail.push('\n');
        }
        append_ledger(&h, tail.as_bytes());
        let (run, read) = stop(&h);
        let reason = tampered_reason(&run);
        assert!(
            reason.contains("_TAMPERED"),
            "strip {strip_head}, terminated {terminated}: {reason}"
        );
        assert!(read < 1024 * 1024, "the Stop hook read {read} bytes");
        let s = status(&h);
        assert_eq!(s.code, 1, "{}", s.stdout);
        assert_eq!(s.json()["ledger"]["binding"]["state"], "tampered");
    }
}

/// Attack: the agent flips the plan, strips the head it names and appends
/// one small line the engine did not write, so the newest record is not
/// chained. The plan is still judged against the ledger's binding, never
/// taken for a legacy plan.
#[test]
fn attack_a_foreign_line_after_a_stripped_head_does_not_make_the_plan_legacy() {
    let h = started();
    flip_to_complete(&h, true);
    append_ledger(&h, (junk_line(16) + "\n").as_bytes());
    let (run, _) = stop(&h);
    let reason = tampered_reason(&run);
    assert!(reason.contains("_TAMPERED"), "{reason}");
}

const NODE_FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/plans/node-legacy");

/// The Node tool's state (no chained record, no binding), its ledger grown
/// past the hook's budget with the Node tool's own records.
fn node_state_past_the_budget() -> HookRepo {
    let h = HookRepo::new();
    for name in ["brief.md", "goals.json", "ledger.jsonl"] {
        let from = std::path::Path::new(NODE_FIXTURE)
            .join(".omo/ulw-loop")
            .join(name);
        h.write(&format!("{ULW}/{SID}/{name}"), std::fs::read(from).unwrap());
    }
    let mut more = String::new();
    let mut i = 0;
    while more.len() < 700 * 1024 {
        more.push_str(&format!(
            "{{\"at\":\"2026-03-02T11:00:00.000Z\",\"kind\":\"evidence_captured\",\"goalId\":\"G002-x\",\"message\":\"rerun {i}: 14 passed, log attached for the reviewers\"}}\n"
        ));
        i += 1;
    }
    append_ledger(&h, more.as_bytes());
    h
}

/// Honest: a Node tool's ledger longer than the hook's budget holds no
/// chained record, and none at its start: the plan is legacy, as before,
/// judged from the newest and the first record without a walk.
#[test]
fn honest_a_node_ledger_past_the_budget_stays_legacy() {
    let h = node_state_past_the_budget();
    let (run, read) = stop(&h);
    let reason = block_reason(&run);
    assert!(reason.contains("G002"), "the plan resumes: {reason}");
    assert!(!reason.contains("_TAMPERED"), "{reason}");
    // The binding check reads its newest and its first record, not the
    // walk's 512 KiB (the head observation reads its 256 KiB tail).
    assert!(read < 400 * 1024, "the Stop hook read {read} bytes");
}

/// Attack: a Node ledger the engine has since bound (its first record is
/// the Node tool's), stripped of its head and flipped to complete behind
/// 700 KiB of Node-looking lines. The ledger alone cannot tell it from a
/// legacy plan; the head this machine's hook observed before can.
#[test]
fn attack_a_bound_node_ledger_hidden_behind_node_lines_is_caught_by_the_observed_head() {
    let h = node_state_past_the_budget();
    ok(eg(
        &h.repo,
        "ulw-loop",
        &["complete-goals", "--session-id", SID, "--json"],
    ));
    // An honest stop observes the engine's head.
    let (run, _) = stop(&h);
    let reason = block_reason(&run);
    assert!(reason.contains("G002"), "the plan resumes: {reason}");
    flip_to_complete(&h, true);
    let node_line = "{\"at\":\"2026-03-02T11:00:00.000Z\",\"kind\":\"note\",\"message\":\"padding the tail past the budget\"}\n";
    let pad = node_line.repeat(700 * 1024 / node_line.len() + 1);
    append_ledger(&h, pad.as_bytes());
    let (run, read) = stop(&h);
    let reason = tampered_reason(&run);
    assert!(reason.contains("LEDGER_TAMPERED"), "{reason}");
    assert!(read < 1024 * 1024, "the Stop hook read {read} bytes");
}
