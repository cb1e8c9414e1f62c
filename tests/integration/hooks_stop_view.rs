//! The hooks' view of a plan (docs/state-formats.md#stop-view): each
//! engine mutation writes `.goals.summary` next to the plan and records its
//! digest (`summarySha256`) on the entries it appends; the Stop hook and the
//! spawn guard decide from a view the ledger vouches for without reading the
//! plan, and from the plan otherwise. Attacks on the view sit next to the honest runs that
//! must keep passing. Every process runs with HOME and the XDG directories
//! in temporary directories.

use std::path::PathBuf;

use serde_json::{Value, json};

use crate::ci_audit_engine::drive_run;
use crate::goals_support::*;
use crate::hooks_support::{HookRepo, ULW, block_reason, tampered_reason};

const SID: &str = "s1";

fn state(h: &HookRepo, name: &str) -> PathBuf {
    h.join(&format!("{ULW}/{SID}/{name}"))
}

fn ulw_ok(h: &HookRepo, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--session-id", SID, "--json"]);
    expect_ok(&eg(&h.repo, "ulw-loop", &all))
}

/// A two-goal run of session `s1` whose goal G001-a is in progress.
fn in_progress() -> HookRepo {
    let h = HookRepo::new();
    ulw_ok(&h, &["create-goals", "--brief", "- a\n- b"]);
    ulw_ok(&h, &["complete-goals"]);
    h
}

fn stop(h: &HookRepo) -> crate::common::Run {
    h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_stop(SID),
        &clean_env(),
    )
}

/// The view's two lines: the bound view and the plan file's identity.
fn view_lines(h: &HookRepo) -> (Vec<u8>, Vec<u8>) {
    let bytes = std::fs::read(state(h, ".goals.summary")).unwrap();
    let text = bytes.strip_suffix(b"\n").unwrap();
    let i = text.iter().position(|&b| b == b'\n').unwrap();
    (text[..i].to_vec(), text[i + 1..].to_vec())
}

fn write_view(h: &HookRepo, line: &[u8], hint: &[u8]) {
    let mut bytes = line.to_vec();
    bytes.push(b'\n');
    bytes.extend_from_slice(hint);
    bytes.push(b'\n');
    std::fs::write(state(h, ".goals.summary"), bytes).unwrap();
}

fn ledger_lines(h: &HookRepo) -> Vec<Vec<u8>> {
    std::fs::read(state(h, "ledger.jsonl"))
        .unwrap()
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// The plan file's identity as the view's second line names it.
fn hint_of_plan(h: &HookRepo) -> Vec<u8> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::symlink_metadata(state(h, "goals.json")).unwrap();
    let t = m
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    json!({"dev": m.dev(), "ino": m.ino(), "len": m.len(), "mtime": [t.as_secs(), t.subsec_nanos()]})
        .to_string()
        .into_bytes()
}

/// The goal a resume names (the reason's first goal id) and its count.
fn resume_of(reason: &str) -> (String, String) {
    let goal = ["G001-a", "G002-b"]
        .into_iter()
        .find(|g| reason.contains(g))
        .unwrap_or_else(|| panic!("no goal in {reason}"));
    (goal.to_owned(), reason.replace(goal, "<goal>"))
}

#[test]
fn honest_engine_mutations_write_a_view_their_entries_vouch_for() {
    let h = in_progress();
    let (line, hint) = view_lines(&h);
    let bound: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(bound["v"], 3);
    assert_eq!(bound["view"]["runComplete"], false);
    assert_eq!(bound["view"]["resume"]["id"], "G001-a");
    let spawn = &bound["view"]["spawn"];
    assert_eq!(spawn["active"]["id"], "G001-a", "{spawn}");
    assert_eq!(spawn["active"]["attempt"], 1, "{spawn}");
    assert_eq!(spawn["attemptSession"], SID, "{spawn}");
    assert_eq!(spawn["preflight"], Value::Null, "{spawn}");
    assert_eq!(hint, hint_of_plan(&h));
    // Every entry of the last mutation (complete-goals) records the view.
    let records = ledger_lines(&h);
    let last: Value = serde_json::from_slice(records.last().unwrap()).unwrap();
    assert_eq!(last["summarySha256"], sha256_hex(&line));
    assert_eq!(last["planSha256"], bound["planSha256"]);
    // The plan carries the same entries in its lastMutation.
    let plan: Value =
        serde_json::from_slice(&std::fs::read(state(&h, "goals.json")).unwrap()).unwrap();
    for e in plan["lastMutation"]["entries"].as_array().unwrap() {
        assert_eq!(e["summarySha256"], sha256_hex(&line));
    }
    // And the hook resumes the goal in progress.
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
}

/// Entries appended without a plan write (an annotation) carry the digest
/// of the unchanged view, so the hook's walk ends at the newest record; the
/// hook still decides from the view (shown by a plan it could not read).
#[test]
fn honest_entries_appended_without_a_plan_write_vouch_for_the_same_view() {
    let h = in_progress();
    let (line, _) = view_lines(&h);
    let plan_before = std::fs::read(state(&h, "goals.json")).unwrap();
    for i in 0..3 {
        ulw_ok(
            &h,
            &[
                "steer",
                "--kind",
                "annotate_ledger",
                "--evidence",
                &format!("observation {i}"),
                "--rationale",
                "for the reviewers",
            ],
        );
    }
    assert_eq!(std::fs::read(state(&h, "goals.json")).unwrap(), plan_before);
    let records = ledger_lines(&h);
    let last: Value = serde_json::from_slice(records.last().unwrap()).unwrap();
    assert_eq!(last["summarySha256"], sha256_hex(&line), "{last}");
    blank_in_place(&h);
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
}

/// Overwrites the plan in place with `bytes` of its length, keeping its
/// size, inode and modification time (so the view's hint still matches).
fn write_in_place(h: &HookRepo, bytes: &[u8]) {
    use std::io::Write;
    let path = state(h, "goals.json");
    let m = std::fs::metadata(&path).unwrap();
    assert_eq!(m.len(), bytes.len() as u64);
    let mtime = m.modified().unwrap();
    let mut f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.write_all(bytes).unwrap();
    f.set_modified(mtime).unwrap();
}

/// Overwrites the plan with spaces in place ([`write_in_place`]).
fn blank_in_place(h: &HookRepo) {
    let len = std::fs::metadata(state(h, "goals.json")).unwrap().len();
    write_in_place(h, &vec![b' '; len as usize]);
}

/// [`drive_run`] of session `s1`'s scoped run.
fn drive_session_run(h: &HookRepo, after: &mut dyn FnMut(&str)) {
    let dir = format!("{ULW}/{SID}");
    drive_run(&h.repo, "ulw-loop", &dir, &["--session-id", SID], after);
}

/// The decision from the view equals the decision from the plan read in
/// full, at every step of a run: the reason is the same and the resume
/// counter goes on (the progress digests are equal), and a finished run
/// lets the stop through either way.
#[test]
fn honest_the_view_and_the_plan_decide_alike_at_every_step() {
    let h = HookRepo::new();
    let compare = |h: &HookRepo, step: &str| {
        let view = std::fs::read(state(h, ".goals.summary")).unwrap();
        let fast = stop(h);
        std::fs::remove_file(state(h, ".goals.summary")).unwrap();
        let slow = stop(h);
        std::fs::write(state(h, ".goals.summary"), view).unwrap();
        assert_eq!(fast.code, slow.code, "{step}");
        if fast.stdout.trim().is_empty() {
            assert!(slow.stdout.trim().is_empty(), "{step}: {}", slow.stdout);
            return String::new();
        }
        let (a, b) = (block_reason(&fast), block_reason(&slow));
        // The count moved from 1 to 2: both runs kept the same progress digest.
        assert!(a.contains('1') && b.contains('2'), "{step}: {a} / {b}");
        assert_eq!(
            a.replacen(" 1 ", " 2 ", 1).replacen("1/", "2/", 1),
            b,
            "{step}"
        );
        a
    };
    let mut steps = Vec::new();
    drive_session_run(&h, &mut |step| {
        let reason = compare(&h, step);
        if step == "G001-a complete" {
            assert_eq!(resume_of(&reason).0, "G002-b", "{reason}");
        }
        if step == "run complete" {
            assert_eq!(reason, "", "{step}");
            let (line, _) = view_lines(&h);
            let bound: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(bound["view"]["runComplete"], true, "{bound}");
        }
        steps.push(step.to_owned());
    });
    assert_eq!(steps.last().map(String::as_str), Some("run complete"));
}

/// A gate-review spawn of session `s1`, the fan-out cap out of reach.
fn gate_spawn(h: &HookRepo) -> crate::common::Run {
    let mut env = clean_env();
    env.push(("OMO_SPAWN_FANOUT_LIMIT", "1000000"));
    let payload = h.codex_event(
        "PreToolUse",
        SID,
        json!({"tool_name": "spawn_agent", "tool_use_id": "c1",
               "tool_input": {"agent_type": "lazycodex-gate-reviewer", "message": "final gate review"}}),
    );
    h.hook("pre-tool-use-spawn", &["--host", "codex"], &payload, &env)
}

fn spawn_counter(h: &HookRepo) -> Value {
    h.read_side(&format!("{ULW}/{SID}/spawn-count.json"))
        .unwrap_or(Value::Null)
}

const PREFLIGHT: &str = "spawn the code review and manual QA first";

/// The spawn guard decides from the view as from the plan read in full, at
/// every step of a run: the same answer (allowed, or the same preflight
/// denial naming the same missing reports), and an allowed spawn counted
/// under the same reset key.
#[test]
fn honest_the_spawn_guard_decides_from_the_view_as_from_the_plan_at_every_step() {
    let h = HookRepo::new();
    let mut denied_at = Vec::new();
    let mut compare = |step: &str| {
        let view = std::fs::read(state(&h, ".goals.summary")).unwrap();
        let fast = gate_spawn(&h);
        let after_fast = spawn_counter(&h);
        std::fs::remove_file(state(&h, ".goals.summary")).unwrap();
        let slow = gate_spawn(&h);
        let after_slow = spawn_counter(&h);
        std::fs::write(state(&h, ".goals.summary"), view).unwrap();
        assert_eq!(fast.code, slow.code, "{step}");
        assert_eq!(fast.stdout, slow.stdout, "{step}");
        assert_eq!(after_fast["resetKey"], after_slow["resetKey"], "{step}");
        if fast.stdout.contains(PREFLIGHT) {
            denied_at.push(step.to_owned());
            assert_eq!(
                after_fast, after_slow,
                "{step}: a denied spawn counts nothing"
            );
        } else {
            assert!(fast.stdout.trim().is_empty(), "{step}: {}", fast.stdout);
            let n = |v: &Value| v["count"].as_u64().unwrap();
            assert_eq!(n(&after_slow), n(&after_fast) + 1, "{step}");
        }
        if step == "started" {
            assert_eq!(after_fast["resetKey"], "G001-a#a1", "{step}");
        }
    };
    drive_session_run(&h, &mut |step| compare(step));
    // The preflight applied once G002-b's criteria all passed, until the
    // gate completed the run.
    assert_eq!(denied_at.len(), 1, "{denied_at:?}");
    assert!(denied_at[0].starts_with("G002-b "), "{denied_at:?}");
}

/// Drives session `s1`'s run and calls `attack` once, at the first step
/// where a gate-review spawn is denied by the preflight (with that step and
/// the denial); fails when no step is.
fn at_the_preflight(h: &HookRepo, attack: &mut dyn FnMut(&str, &crate::common::Run)) {
    let mut attacked = false;
    drive_session_run(h, &mut |step| {
        if attacked {
            return;
        }
        let before = gate_spawn(h);
        if before.stdout.contains(PREFLIGHT) {
            attacked = true;
            attack(step, &before);
        }
    });
    assert!(attacked, "no step preflighted a gate review");
}

/// An edit of the plan that keeps its identity (size, inode, modification
/// time) cannot switch the preflight off: the spawn guard decides by the
/// bound view, which still has the final goal's criteria passed. An
/// ordinary hand edit changes the identity: the plan is read and the spawn
/// is denied on it.
#[test]
fn attack_a_plan_edited_with_its_identity_restored_keeps_the_spawn_preflight() {
    let h = HookRepo::new();
    at_the_preflight(&h, &mut |step, before| {
        let path = state(&h, "goals.json");
        let plan = std::fs::read(&path).unwrap();
        blank_in_place(&h);
        let after = gate_spawn(&h);
        assert_eq!(after.stdout, before.stdout, "{step}");
        // Put the plan back as it was, identity included, for the rest of
        // the run.
        write_in_place(&h, &plan);
        // A hand edit that changes the identity is read and refused.
        let edited = String::from_utf8(plan.clone())
            .unwrap()
            .replace(r#""status": "pass""#, r#""status": "fail""#);
        std::fs::write(&path, &edited).unwrap();
        let reason = gate_spawn(&h).stdout;
        assert!(reason.contains("PLAN_TAMPERED"), "{step}: {reason}");
        std::fs::write(&path, &plan).unwrap();
    });
}

/// A view rewritten to drop the gate preflight (its hint kept) is not one
/// the ledger vouches for: the spawn guard reads the plan, whose final goal
/// has every criterion passed, and still requires the reports.
#[test]
fn attack_a_forged_view_dropping_the_spawn_preflight_is_not_trusted() {
    let h = HookRepo::new();
    at_the_preflight(&h, &mut |step, before| {
        let (line, hint) = view_lines(&h);
        let mut bound: Value = serde_json::from_slice(&line).unwrap();
        assert!(bound["view"]["spawn"]["preflight"].is_object(), "{bound}");
        bound["view"]["spawn"]["preflight"] = Value::Null;
        write_view(&h, bound.to_string().as_bytes(), &hint);
        let after = gate_spawn(&h);
        assert_eq!(after.stdout, before.stdout, "{step}");
        // Put the engine's view back for the rest of the run.
        write_view(&h, &line, &hint);
    });
}

/// A view rewritten to claim the run complete (its hint kept) is not one
/// the ledger vouches for: the hook reads the plan and resumes.
#[test]
fn attack_a_forged_view_claiming_completion_is_not_trusted() {
    let h = in_progress();
    let (line, hint) = view_lines(&h);
    let mut bound: Value = serde_json::from_slice(&line).unwrap();
    bound["view"]["runComplete"] = json!(true);
    bound["view"]["resume"] = Value::Null;
    write_view(&h, bound.to_string().as_bytes(), &hint);
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
    // Honest: the engine's own view resumes the same goal.
    write_view(&h, &line, &hint);
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
}

/// A view from an earlier mutation, replayed with the current plan's
/// identity, is not vouched for by the newest records: the hook decides
/// from the plan (which resumes G002-b, where the old view names G001-a).
#[test]
fn attack_a_view_replayed_from_an_earlier_mutation_is_not_trusted() {
    let h = HookRepo::new();
    ulw_ok(&h, &["create-goals", "--brief", "- a\n- b"]);
    let (old, _) = view_lines(&h);
    assert_eq!(resume_of(&block_reason(&stop(&h))).0, "G001-a");
    ulw_ok(
        &h,
        &[
            "steer",
            "--kind",
            "reorder_pending",
            "--order",
            r#"["G002-b","G001-a"]"#,
            "--evidence",
            "b unblocks a",
            "--rationale",
            "do b first",
        ],
    );
    let fresh = block_reason(&stop(&h));
    write_view(&h, &old, &hint_of_plan(&h));
    let replayed = block_reason(&stop(&h));
    assert_eq!(resume_of(&fresh).0, "G002-b", "{fresh}");
    assert_eq!(resume_of(&replayed).0, "G002-b", "{replayed}");
}

/// An edit of the plan that keeps its size, inode and modification time
/// leaves the view's hint matching: the hook decides by the bound view (it
/// never reads the plan, so the garbage cannot make the run look finished)
/// and the next engine command reports the plan.
#[test]
fn attack_a_plan_edited_with_its_identity_restored_decides_by_the_bound_view() {
    let h = in_progress();
    let before = block_reason(&stop(&h));
    let path = state(&h, "goals.json");
    blank_in_place(&h);
    let after = stop(&h);
    let reason = block_reason(&after);
    assert_eq!(resume_of(&reason).0, resume_of(&before).0, "{reason}");
    let status = eg(
        &h.repo,
        "ulw-loop",
        &["status", "--session-id", SID, "--json"],
    );
    assert_ne!(status.code, 0, "{}", status.stdout);
    // An ordinary hand edit changes the identity: the hook reads the plan
    // and reports it.
    std::fs::write(&path, b"{}\n").unwrap();
    let reason = stop(&h).stdout;
    assert!(
        reason.contains("HOOK_PLAN_UNREADABLE") || reason.contains("TAMPERED"),
        "{reason}"
    );
}

/// A record appended by hand after the engine's (another body's digest)
/// breaks the walk back to the view: the hook reads the plan and reports
/// the ledger it does not vouch for.
#[test]
fn attack_a_hand_appended_record_sends_the_hook_to_the_plan() {
    let h = in_progress();
    let records = ledger_lines(&h);
    let last: Value = serde_json::from_slice(records.last().unwrap()).unwrap();
    let mut forged = last.clone();
    forged["seq"] = json!(last["seq"].as_u64().unwrap() + 1);
    forged["prev"] = json!(sha256_hex(records.last().unwrap()));
    forged["planSha256"] = json!("0".repeat(64));
    forged.as_object_mut().unwrap().remove("summarySha256");
    let mut bytes = std::fs::read(state(&h, "ledger.jsonl")).unwrap();
    bytes.extend_from_slice(forged.to_string().as_bytes());
    bytes.push(b'\n');
    std::fs::write(state(&h, "ledger.jsonl"), bytes).unwrap();
    let reason = tampered_reason(&stop(&h));
    assert!(reason.contains("TAMPERED"), "{reason}");
}

/// A view that is a FIFO or a symlink is passed over without blocking on
/// it: the hook reads the plan and resumes.
#[test]
fn a_view_that_is_a_fifo_or_a_symlink_is_passed_over() {
    let h = in_progress();
    let (line, hint) = view_lines(&h);
    let view = state(&h, ".goals.summary");
    // A symlink to a forged copy outside the state directory.
    let mut bound: Value = serde_json::from_slice(&line).unwrap();
    bound["view"]["runComplete"] = json!(true);
    let outside = h.join("forged.summary");
    std::fs::write(
        &outside,
        format!("{bound}\n{}\n", String::from_utf8(hint).unwrap()),
    )
    .unwrap();
    std::fs::remove_file(&view).unwrap();
    std::os::unix::fs::symlink(&outside, &view).unwrap();
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
    std::fs::remove_file(&view).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&view)
        .status()
        .unwrap();
    assert!(made.success());
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
}

/// A directory planted where the view goes does not fail the engine's
/// mutations (the view is best effort) and leaves no temporary file; the
/// hook, finding no view it can read, decides from the plan.
#[test]
fn a_directory_planted_at_the_view_fails_nothing() {
    let h = in_progress();
    let view = state(&h, ".goals.summary");
    std::fs::remove_file(&view).unwrap();
    std::fs::create_dir(&view).unwrap();
    let before = std::fs::read(state(&h, "goals.json")).unwrap();
    ulw_ok(
        &h,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--status",
            "fail",
            "--evidence",
            "2 of 14 failed",
        ],
    );
    assert_ne!(std::fs::read(state(&h, "goals.json")).unwrap(), before);
    assert!(view.is_dir());
    let leftovers: Vec<String> = std::fs::read_dir(state(&h, ""))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let reason = block_reason(&stop(&h));
    assert_eq!(resume_of(&reason).0, "G001-a", "{reason}");
}
