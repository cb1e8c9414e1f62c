//! `evidence-gate hook stop` (hooks.md §4): goal-loop resume, driven through
//! the real binary with plans written by the engine or by hand.

use serde_json::{Value, json};

use crate::goals_support::{clean_env, eg};
use crate::hooks_support::*;

const SID: &str = "sess-1";

fn stop(h: &HookRepo, payload: &Value) -> crate::common::Run {
    h.hook("stop", &["--host", "codex"], payload, &clean_env())
}

fn live_plan(h: &HookRepo) {
    h.write_plan(&format!("{ULW}/{SID}"), &live_plan_doc());
}

/// The plan [`live_plan`] writes: G001 in progress, G002 pending.
fn live_plan_doc() -> Value {
    plan(
        Some(SID),
        Some("G001"),
        vec![
            goal(
                "G001",
                "in_progress",
                &[("C001", "pending"), ("C002", "pass")],
            ),
            goal("G002", "pending", &[("C001", "pending")]),
        ],
    )
}

fn counter(h: &HookRepo, goal: &str) -> Option<Value> {
    h.read_side(&format!("{ULW}/{SID}/auto-resume-{goal}.json"))
}

fn stuck(h: &HookRepo, goal: &str) -> Option<Value> {
    h.read_side(&format!("{ULW}/{SID}/auto-resume-{goal}.stuck"))
}

#[test]
fn resumes_an_engine_plan_with_the_session_flag() {
    let h = HookRepo::new();
    let env = clean_env();
    let create = eg(
        &h.repo,
        "ulw-loop",
        &[
            "create-goals",
            "--session-id",
            "s1",
            "--brief",
            "- parse the config\n- add tests",
            "--json",
        ],
    );
    assert_eq!(create.code, 0, "{}{}", create.stdout, create.stderr);
    let start = eg(
        &h.repo,
        "ulw-loop",
        &["complete-goals", "--session-id", "s1", "--json"],
    );
    assert_eq!(start.code, 0, "{}", start.stdout);
    let plan: Value = h.read_json(&format!("{ULW}/s1/goals.json")).unwrap();
    let first = plan["goals"][0]["id"].as_str().unwrap().to_owned();
    let title = plan["goals"][0]["title"].as_str().unwrap().to_owned();
    let run = h.hook("stop", &["--host", "codex"], &h.codex_stop("s1/"), &env);
    let reason = block_reason(&run);
    assert!(
        reason.contains("this session's ulw-loop run still has unfinished goals"),
        "{reason}"
    );
    assert!(reason.contains(&format!("{first} — {title}")), "{reason}");
    assert!(
        reason.contains("`evidence-gate ulw-loop status --session-id s1 --json`"),
        "{reason}"
    );
    assert!(
        reason.contains("evidence-gate ulw-loop record-evidence --session-id s1"),
        "{reason}"
    );
    assert!(
        reason.contains("evidence-gate ulw-loop checkpoint --session-id s1"),
        "{reason}"
    );
    assert!(reason.contains("blocked"), "{reason}");
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(reason.len() <= 2048);
    let c = h
        .read_side(&format!("{ULW}/s1/auto-resume-{first}.json"))
        .unwrap();
    assert_eq!(c["count"], 1);
    assert!(c["progressDigest"].as_str().unwrap().len() == 64);
    assert!(
        !h.side_path(&format!("{ULW}/s1/.mutation.lock")).exists()
            && !h.join(&format!("{ULW}/s1/.mutation.lock")).exists(),
        "the state lock is released"
    );
    // The engine still accepts its state after the hook wrote side files.
    let status = eg(
        &h.repo,
        "ulw-loop",
        &["status", "--session-id", "s1", "--json"],
    );
    assert_eq!(status.code, 0, "{}", status.stdout);
}

#[test]
fn stays_silent_on_a_completed_plan() {
    let h = HookRepo::new();
    let mut p = plan(
        Some(SID),
        None,
        vec![goal("G001", "in_progress", &[("C001", "pending")])],
    );
    p["aggregateCompletion"] =
        json!({"status": "complete", "completedAt": "2026-11-30T11:00:00.000Z"});
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    let done = plan(
        Some(SID),
        None,
        vec![
            goal("G001", "complete", &[("C001", "pass")]),
            json!({"id": "G002", "title": "t", "objective": "o", "status": "pending",
                   "steeringStatus": "superseded", "supersededBy": ["G001"]}),
        ],
    );
    h.write_plan(&format!("{ULW}/{SID}"), &done);
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    assert!(
        h.files_in(&format!("{ULW}/{SID}")) == ["goals.json"],
        "nothing written"
    );
    assert!(h.diagnostics().is_empty());
}

#[test]
fn no_plan_subagents_and_a_running_continuation_allow() {
    let h = HookRepo::new();
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    live_plan(&h);
    let inside = fixture("codex/stop/synth-inside-subagent.json", h.path());
    let mut inside = inside;
    inside["session_id"] = json!(SID);
    assert_allow(&stop(&h, &inside));
    let mut active = h.codex_stop(SID);
    active["stop_hook_active"] = json!(true);
    assert_allow(&stop(&h, &active));
    assert!(counter(&h, "G001").is_none(), "nothing counted");
    assert!(h.diagnostics().is_empty());
}

/// A main-thread payload whose serializer writes the absent agent fields as
/// `null` is the main thread: it resumes, while a subagent's (string agent
/// id) is left alone.
#[test]
fn null_agent_fields_are_the_main_thread_and_resume() {
    let h = HookRepo::new();
    live_plan(&h);
    let mut main = h.codex_stop(SID);
    main["agent_id"] = Value::Null;
    main["agent_type"] = Value::Null;
    let reason = block_reason(&stop(&h, &main));
    assert!(reason.contains("G001"), "{reason}");
    assert_eq!(counter(&h, "G001").unwrap()["count"], 1);
    let mut child = h.codex_stop(SID);
    child["agent_id"] = json!("019a-child");
    child["agent_type"] = Value::Null;
    assert_allow(&stop(&h, &child));
    assert_eq!(
        counter(&h, "G001").unwrap()["count"],
        1,
        "a subagent stop counts nothing"
    );
}

#[test]
fn a_context_compacted_sentence_does_not_silence_the_resume() {
    // Threat-model I5: only a compaction record the host writes itself
    // counts, and no host's record shape is pinned by a recorded capture
    // yet, so no transcript line stops the resume: not the synthetic
    // event line, not the agent's own words, not a tool's output.
    let h = HookRepo::new();
    live_plan(&h);
    let tail = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hosts/codex/transcripts/context-pressure-tail.jsonl"),
    )
    .unwrap();
    h.write("transcripts/pressure.jsonl", &tail);
    let fresh = || std::fs::remove_file(h.side_path(&format!("{ULW}/{SID}/auto-resume-G001.json")));
    let mut p = h.codex_stop(SID);
    p["transcript_path"] = json!(h.join("transcripts/pressure.jsonl"));
    block_reason(&stop(&h, &p));
    fresh().unwrap();
    h.write(
        "transcripts/said.jsonl",
        "{\"type\":\"response_item\",\"payload\":{\"type\":\"message\",\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Context compacted; I will stop here.\"}]}}\n\
         {\"type\":\"response_item\",\"payload\":{\"type\":\"function_call_output\",\"output\":\"context_length_exceeded\"}}\n",
    );
    p["transcript_path"] = json!(h.join("transcripts/said.jsonl"));
    block_reason(&stop(&h, &p));
    fresh().unwrap();
    // A marker 1 MB before the end is history, not pressure either.
    let mut big = tail.clone();
    let filler = b"{\"type\":\"message\",\"role\":\"assistant\",\"content\":\"working on it\"}\n";
    while big.len() < 1024 * 1024 {
        big.extend_from_slice(filler);
    }
    h.write("transcripts/old-pressure.jsonl", &big);
    p["transcript_path"] = json!(h.join("transcripts/old-pressure.jsonl"));
    block_reason(&stop(&h, &p));
    fresh().unwrap();
    // An unreadable or null transcript is no pressure.
    p["transcript_path"] = json!(h.join("transcripts/missing.jsonl"));
    block_reason(&stop(&h, &p));
    fresh().unwrap();
    let null = fixture("codex/stop/synth-null-transcript.json", h.path());
    let mut null = null;
    null["session_id"] = json!(SID);
    let reason = block_reason(&stop(&h, &null));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
}

#[test]
fn regression_5_annotate_only_activity_keeps_the_cap() {
    let h = HookRepo::new();
    live_plan(&h);
    let ledger = format!("{ULW}/{SID}/ledger.jsonl");
    let mut lines = String::new();
    for round in 1..=2 {
        let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
        assert!(reason.contains(&format!("resume {round} of 2")), "{reason}");
        // Annotation-only activity: the ledger grows (the Node hook reset its
        // budget on any growth), wording and evidence text change.
        lines.push_str(&format!(
            "{{\"kind\":\"steering_accepted\",\"note\":\"round {round}\"}}\n"
        ));
        h.write(&ledger, &lines);
        let mut p: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
        p["goals"][0]["title"] = json!(format!("Reworded {round}"));
        p["goals"][0]["successCriteria"][1]["capturedEvidence"] = json!(format!("note {round}"));
        p["updatedAt"] = json!(format!("2026-11-30T10:0{round}:00.000Z"));
        h.write_plan(&format!("{ULW}/{SID}"), &p);
    }
    let run = stop(&h, &h.codex_stop(SID));
    assert_eq!(run.code, 0);
    let v = run.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "only systemMessage: {v}");
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("auto-resume is paused for goal G001"), "{msg}");
    assert!(
        msg.contains("`evidence-gate ulw-loop status --session-id sess-1 --json`"),
        "{msg}"
    );
    let d = h.diagnostics();
    assert_eq!(d.len(), 1);
    assert_eq!(d[0]["code"], "STOP_STUCK");
    assert_eq!(d[0]["outcome"], "notify");
    assert_eq!(d[0]["profile"], "ulw-loop");
    let marker = stuck(&h, "G001").unwrap();
    assert_eq!(marker["count"], 2);
    // Later stops with the same state stay silent: once notified, never again.
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    assert_eq!(h.diagnostics().len(), 1);
}

#[test]
fn regression_5_stuck_marker_holds_until_a_criterion_changes() {
    let h = HookRepo::new();
    live_plan(&h);
    for _ in 0..2 {
        block_reason(&stop(&h, &h.codex_stop(SID)));
    }
    stop(&h, &h.codex_stop(SID));
    assert!(stuck(&h, "G001").is_some());
    let before = h.repo.snapshot();
    for _ in 0..3 {
        assert_allow(&stop(&h, &h.codex_stop(SID)));
    }
    assert_eq!(
        h.repo.snapshot(),
        before,
        "an honoured marker writes nothing (no lock file either)"
    );
    let mut p: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
    p["goals"][0]["successCriteria"][0]["status"] = json!("pass");
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(stuck(&h, "G001").is_none(), "progress removes the marker");
    assert_eq!(counter(&h, "G001").unwrap()["count"], 1);
}

#[test]
fn regression_5_a_superseded_goal_is_never_named() {
    let h = HookRepo::new();
    let mut superseded = goal("G001", "pending", &[]);
    superseded["steeringStatus"] = json!("superseded");
    superseded["supersededBy"] = json!(["G003"]);
    let mut blocked = goal("G002", "in_progress", &[]);
    blocked["steeringStatus"] = json!("blocked");
    h.write_plan(
        &format!("{ULW}/{SID}"),
        &plan(
            Some(SID),
            Some("G001"),
            vec![
                superseded,
                blocked,
                goal("G003", "pending", &[("C001", "pending")]),
            ],
        ),
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(
        reason.contains("Next goal: G003 — Title of G003"),
        "{reason}"
    );
    assert!(
        !reason.contains("G001") && !reason.contains("G002"),
        "{reason}"
    );
}

#[test]
fn regression_5_an_unscoped_plan_owned_by_the_session_resumes_and_a_foreign_one_does_not() {
    let h = HookRepo::new();
    let goals = || vec![goal("G001", "in_progress", &[("C001", "pending")])];
    h.write_plan(ULW, &plan(Some("sess-1"), Some("G001"), goals()));
    let reason = block_reason(&stop(&h, &h.codex_stop("sess-1")));
    assert!(
        reason.contains("`evidence-gate ulw-loop status --json`"),
        "unscoped: no --session-id: {reason}"
    );
    assert!(
        h.read_side(&format!("{ULW}/auto-resume-G001.json"))
            .is_some()
    );
    let h = HookRepo::new();
    h.write_plan(ULW, &plan(Some("someone-else"), Some("G001"), goals()));
    assert_allow(&stop(&h, &h.codex_stop("sess-1")));
    let h = HookRepo::new();
    h.write_plan(ULW, &plan(None, Some("G001"), goals()));
    assert_allow(&stop(&h, &h.codex_stop("sess-1")));
    h.user_rules(r#"{"stop": {"adopt_unowned_unscoped_plan": true}}"#);
    block_reason(&stop(&h, &h.codex_stop("sess-1")));
    assert!(h.diagnostics().is_empty(), "{:?}", h.diagnostics());
}

#[test]
fn node_format_side_files_count_as_no_budget_used() {
    let h = HookRepo::new();
    live_plan(&h);
    h.write_side(
        &format!("{ULW}/{SID}/auto-resume-G001.json"),
        r#"{"count":5,"ledgerLineCount":12}"#,
    );
    h.write_side(
        &format!("{ULW}/{SID}/auto-resume-G001.stuck"),
        "no ledger progress after 2 resumes\n",
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(
        stuck(&h, "G001").is_none(),
        "the Node marker has no digest: removed"
    );
}

#[test]
fn crafted_goal_ids_stay_inside_the_state_directory() {
    let h = HookRepo::new();
    h.write_plan(
        &format!("{ULW}/{SID}"),
        &plan(
            Some(SID),
            None,
            vec![goal("../../escape", "in_progress", &[])],
        ),
    );
    block_reason(&stop(&h, &h.codex_stop(SID)));
    let side = h.side_path(&format!("{ULW}/{SID}/x"));
    let files: Vec<String> = std::fs::read_dir(side.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n != "migrated.json")
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].starts_with("auto-resume-h") && files[0].ends_with(".json"));
    assert!(!h.join("escape").exists() && !h.join(".omo/escape.json").exists());
}

#[test]
fn the_latest_live_plan_wins_across_profiles() {
    let h = HookRepo::new();
    live_plan(&h);
    let mut ug = plan(Some(SID), Some("U1"), vec![goal("U1", "in_progress", &[])]);
    ug["profile"] = json!("ultragoal");
    ug["updatedAt"] = json!("2026-12-01T10:00:00.000Z");
    h.write_plan(&format!("{UG}/{SID}"), &ug);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("this session's ultragoal run"), "{reason}");
    assert!(
        reason.contains("`evidence-gate ultragoal status --session-id sess-1 --json`"),
        "{reason}"
    );
    assert!(
        !reason.contains("record-evidence"),
        "the ultragoal text has no criteria step"
    );
    let only = h.hook(
        "stop",
        &["--host", "codex", "--profile", "ulw-loop"],
        &h.codex_stop(SID),
        &clean_env(),
    );
    assert!(block_reason(&only).contains("ulw-loop run"));
    // A finished ultragoal plan does not hide the live ulw-loop one.
    ug["goals"][0]["status"] = json!("complete");
    h.write_plan(&format!("{UG}/{SID}"), &ug);
    assert!(block_reason(&stop(&h, &h.codex_stop(SID))).contains("ulw-loop run"));
}

#[test]
fn a_boulder_claim_does_not_silence_the_resume() {
    // Threat-model I5: `.omo/boulder.json` and its plan are files the agent
    // can write. A claim no longer silences the resume; it is reported
    // (STOP_DEFER_UNVERIFIED) and the resume goes ahead.
    let h = HookRepo::new();
    live_plan(&h);
    h.write("plans/work.md", "# Work\n\n- [x] first step\n");
    h.write(
        ".omo/boulder.json",
        json!({"works": {"w1": {"status": "active", "session_ids": [format!("codex:{SID}")],
                                "active_plan": "plans/work.md"}}})
        .to_string(),
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert_eq!(h.diag_codes(), ["STOP_DEFER_UNVERIFIED"]);
    let d = &h.diagnostics()[0];
    assert_eq!(
        (d["level"].as_str(), d["detail"]["file"].as_str()),
        (Some("info"), Some(".omo/boulder.json"))
    );
    std::fs::remove_dir_all(h.join(&format!("{ULW}/{SID}"))).unwrap();
    // A fresh run: the resume counters live in the per-user state.
    std::fs::remove_dir_all(h.side_path(&format!("{ULW}/{SID}/x")).parent().unwrap()).ok();
    live_plan(&h);
    // Flat legacy shape (one work, no `works` key), plan relative to the
    // worktree: the same claim, reported the same way.
    let wt = h.join("wt");
    h.write("wt/plan.md", "- [ ] todo\n");
    h.write(
        ".omo/boulder.json",
        json!({"status": "paused", "session_ids": [format!("codex:{SID}")],
               "active_plan": "plan.md", "worktree_path": wt})
        .to_string(),
    );
    block_reason(&stop(&h, &h.codex_stop(SID)));
    assert_eq!(h.diag_codes(), ["STOP_DEFER_UNVERIFIED"; 2]);
    // The host's own continuation signal still ends the chain (step 2).
    let mut active = h.codex_stop(SID);
    active["stop_hook_active"] = json!(true);
    assert_allow(&stop(&h, &active));
    std::fs::remove_dir_all(h.join(&format!("{ULW}/{SID}"))).unwrap();
    // A fresh run: the resume counters live in the per-user state.
    std::fs::remove_dir_all(h.side_path(&format!("{ULW}/{SID}/x")).parent().unwrap()).ok();
    live_plan(&h);
    // Not this session, no checklist, a finished owner, or a broken file:
    // resume, and nothing claims the session.
    for boulder in [
        json!({"works": {"w1": {"status": "active", "session_ids": ["codex:other"], "active_plan": "plans/work.md"}}}).to_string(),
        json!({"works": {"w1": {"status": "done", "session_ids": [format!("codex:{SID}")], "active_plan": "plans/work.md"}}}).to_string(),
        json!({"works": {"w1": {"status": "active", "session_ids": [format!("codex:{SID}")], "active_plan": "README.md"}}}).to_string(),
        json!({"status": "done", "session_ids": [format!("codex:{SID}")], "active_plan": "plans/work.md"}).to_string(),
        // A map of works without the `works` key is one flat work with no
        // status: it claims nothing (docs/differences.md#r-8).
        json!({"w1": {"status": "active", "session_ids": [format!("codex:{SID}")], "active_plan": "plans/work.md"}}).to_string(),
        "{ broken".to_owned(),
    ] {
        h.write("README.md", "# no checklist\n");
        h.write(".omo/boulder.json", &boulder);
        block_reason(&stop(&h, &h.codex_stop(SID)));
        assert_eq!(h.diag_codes().len(), 2, "no claim: {boulder}");
        std::fs::remove_dir_all(h.join(&format!("{ULW}/{SID}"))).ok();
        // The resume counters live in the per-user state: a fresh run.
        std::fs::remove_dir_all(h.side_path(&format!("{ULW}/{SID}/x")).parent().unwrap()).ok();
        live_plan(&h);
    }
}

fn mkfifo(p: &std::path::Path) {
    assert!(
        std::process::Command::new("mkfifo")
            .arg(p)
            .status()
            .unwrap()
            .success()
    );
}

/// I2 (threat-model.md §4): a plan that exists but cannot be read is not
/// "nothing left". Garbage, a FIFO or a directory in place of goals.json
/// holds the stop with `HOOK_PLAN_UNREADABLE`, the file and the fix, and
/// tells the user to act; the agent cannot escape the resume by breaking it.
#[test]
fn an_unreadable_plan_holds_the_stop_until_the_user_acts() {
    let file = format!("{ULW}/{SID}/goals.json");
    for kind in ["garbage", "fifo", "directory", "symlink"] {
        let h = HookRepo::new();
        match kind {
            "symlink" => {
                // A symlink to a plan with nothing left is not that plan.
                h.write_plan("elsewhere", &plan(Some(SID), None, vec![]));
                h.repo.mkdir(&format!("{ULW}/{SID}"));
                std::os::unix::fs::symlink(h.join("elsewhere/goals.json"), h.join(&file)).unwrap();
            }
            "garbage" => {
                h.write(&file, "{ not json");
            }
            "fifo" => {
                h.repo.mkdir(&format!("{ULW}/{SID}"));
                mkfifo(&h.join(&file));
            }
            _ => {
                h.repo.mkdir(&file);
            }
        }
        let started = std::time::Instant::now();
        let (reason, message) = halt_reason(&stop(&h, &h.codex_stop(SID)));
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "{kind}: slow"
        );
        assert!(
            reason.starts_with("evidence-gate: HOOK_PLAN_UNREADABLE"),
            "{reason}"
        );
        assert!(reason.contains(&file), "{kind}: {reason}");
        assert!(reason.contains("git checkout --"), "{reason}");
        assert!(
            reason.contains("evidence-gate ulw-loop repair --session-id sess-1 --check"),
            "{reason}"
        );
        assert!(message.contains("the user must act"), "{message}");
        assert!(message.contains(&file), "{message}");
        let d = h.diagnostics();
        assert_eq!(d.len(), 1, "{kind}: {d:?}");
        assert_eq!(d[0]["code"], "HOOK_PLAN_UNREADABLE");
        assert_eq!(d[0]["outcome"], "block");
        assert_eq!(d[0]["event"], "stop");
        assert_eq!(d[0]["detail"]["file"], file.as_str());
        if kind == "garbage" {
            assert_eq!(d[0]["detail"]["error"], "ULW_LOOP_PLAN_CORRUPT");
        }
    }
}

/// I2 with a plan a hook reads for its view only (no bound view: a Node
/// tool's plan): the hook decodes each criterion's id and status and skips
/// its scenario and evidence text, but a fault the agent hides there (a
/// repeated key deep inside the evidence, a number out of range, a bad
/// escape) still makes the plan unreadable, as the engine finds it. Honest
/// use: the same plan with long, nested evidence text resumes as usual.
#[test]
fn a_fault_in_skipped_criterion_text_holds_the_stop() {
    let file = format!("{ULW}/{SID}/goals.json");
    let honest = |h: &HookRepo| {
        let mut p = live_plan_doc();
        p["goals"][0]["successCriteria"][1]["capturedEvidence"] =
            json!({"log": ["line \u{e9}\n".repeat(200), {"exit": 0, "marker": "HIDE"}]});
        h.write_plan(&format!("{ULW}/{SID}"), &p);
    };
    let h = HookRepo::new();
    honest(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("Next goal: G001"), "{reason}");
    assert!(h.diag_codes().is_empty(), "{:?}", h.diag_codes());
    for fault in [
        r#""exit": 0, "exit": 1"#,
        r#""exit": 1e400"#,
        r#""exit": "\ud800""#,
    ] {
        let h = HookRepo::new();
        honest(&h);
        let text = std::fs::read_to_string(h.join(&file)).unwrap();
        let bad = text.replacen(r#""exit": 0"#, fault, 1);
        assert_ne!(bad, text);
        h.write(&file, bad);
        let (reason, _) = halt_reason(&stop(&h, &h.codex_stop(SID)));
        assert!(
            reason.starts_with("evidence-gate: HOOK_PLAN_UNREADABLE"),
            "{fault}: {reason}"
        );
        let d = h.diagnostics();
        assert_eq!(d[0]["detail"]["error"], "ULW_LOOP_PLAN_CORRUPT", "{fault}");
        // The engine refuses the same file.
        let run = eg(
            &h.repo,
            "ulw-loop",
            &["status", "--session-id", SID, "--json"],
        );
        assert!(
            run.stdout.contains("ULW_LOOP_PLAN_CORRUPT"),
            "{}",
            run.stdout
        );
    }
}

/// I2: a profile's state directory, or a directory above it, that the agent
/// replaced by a symlink (to the real plan, with work left) is not "no
/// plan": the stop is held with `HOOK_PLAN_UNREADABLE`. A hook passes over a
/// profile whose state directory is absent without reading that profile in
/// full; a symlink there is never taken for absent.
#[test]
fn a_symlinked_state_directory_holds_the_stop() {
    for link in [ULW, ".omo"] {
        let h = HookRepo::new();
        h.write_plan(
            &format!("real/ulw-loop/{SID}"),
            &plan(
                Some(SID),
                Some("G001"),
                vec![goal("G001", "in_progress", &[("C001", "pending")])],
            ),
        );
        // (Whatever the fixture made there goes first.)
        let _ = std::fs::remove_dir_all(h.join(link));
        if link == ULW {
            h.repo.mkdir(".omo");
            std::os::unix::fs::symlink(h.join("real/ulw-loop"), h.join(ULW)).unwrap();
        } else {
            std::os::unix::fs::symlink(h.join("real"), h.join(".omo")).unwrap();
        }
        let (reason, _) = halt_reason(&stop(&h, &h.codex_stop(SID)));
        assert!(
            reason.starts_with("evidence-gate: HOOK_PLAN_UNREADABLE"),
            "{link}: {reason}"
        );
        assert_eq!(h.diag_codes(), ["HOOK_PLAN_UNREADABLE"], "{link}");
    }
}

/// Honest use: the directories above another profile's state directory, or
/// above this one, without the state directory itself, are no plan; a live
/// plan beside them resumes as usual.
#[test]
fn a_state_directory_missing_below_its_parent_is_no_plan() {
    let h = HookRepo::new();
    h.repo.mkdir(".omo");
    h.repo.mkdir(".omagy");
    h.repo.mkdir(".omx");
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    live_plan(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(
        !h.diag_codes().iter().any(|c| c == "HOOK_PLAN_UNREADABLE"),
        "{:?}",
        h.diag_codes()
    );
}

/// The hold spends the usual resume budget (default 2) keyed on the file as
/// it is, then pauses with a notice, so a user is never wedged; a changed
/// file gets a fresh budget.
#[test]
fn an_unreadable_plan_pauses_after_the_resume_budget() {
    let h = HookRepo::new();
    let file = format!("{ULW}/{SID}/goals.json");
    h.write(&file, "{ not json");
    halt_reason(&stop(&h, &h.codex_stop(SID)));
    halt_reason(&stop(&h, &h.codex_stop(SID)));
    let run = stop(&h, &h.codex_stop(SID));
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = run.json();
    assert_eq!(v.as_object().unwrap().len(), 1, "only systemMessage: {v}");
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("HOOK_PLAN_UNREADABLE"), "{msg}");
    assert!(msg.contains("the user must act"), "{msg}");
    // Paused: the stuck marker holds while the file stays as it is.
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    assert_eq!(
        h.diag_codes(),
        ["HOOK_PLAN_UNREADABLE", "HOOK_PLAN_UNREADABLE", "STOP_STUCK",]
    );
    // New garbage is a new fault: held again.
    h.write(&file, "{ other garbage, longer");
    halt_reason(&stop(&h, &h.codex_stop(SID)));
    // Restored: the plan resumes as usual.
    live_plan(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
}

/// Honest use: without any plan the stop is allowed, and a valid plan
/// resumes normally (no `HOOK_PLAN_UNREADABLE`).
#[test]
fn no_plan_allows_and_a_valid_plan_resumes_without_the_hold() {
    let h = HookRepo::new();
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    // An empty state directory is no plan either.
    h.repo.mkdir(&format!("{ULW}/{SID}"));
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    assert!(h.diagnostics().is_empty());
    live_plan(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(h.diagnostics().is_empty());
}

#[test]
fn a_busy_state_lock_blocks_with_a_diagnostic() {
    let h = HookRepo::new();
    live_plan(&h);
    h.user_rules(r#"{"hooks": {"lock_wait_ms": 50}}"#);
    // The side-file lock lives in the per-user state; held by another
    // process past its wait, the stop is blocked, not allowed (I2).
    let path = h.side_path(&format!("{ULW}/{SID}/.mutation.lock"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(&path).unwrap();
    lock.lock().unwrap();
    let (reason, message) = halt_reason(&stop(&h, &h.codex_stop(SID)));
    drop(lock);
    assert!(reason.contains("HOOK_LOCK_TIMEOUT"), "{reason}");
    assert!(message.contains("the user must act"), "{message}");
    let d = h.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["code"], "HOOK_LOCK_TIMEOUT");
    assert_eq!(d[0]["outcome"], "block");
    assert!(
        counter(&h, "G001").is_none(),
        "no counted resume without the lock"
    );
}

/// Junk the agent plants where earlier versions kept the side files is
/// ignored: the resume still blocks and counts (threat-model.md §3).
#[test]
fn side_files_planted_in_the_tree_change_nothing() {
    let h = HookRepo::new();
    live_plan(&h);
    h.repo.mkdir(&format!("{ULW}/{SID}/auto-resume-G001.stuck"));
    h.repo.mkdir(&format!("{ULW}/{SID}/auto-resume-G001.json"));
    let fifo = h.join(&format!("{ULW}/{SID}/.mutation.lock"));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert_eq!(counter(&h, "G001").unwrap()["count"], 1);
}

/// An earlier version's in-tree resume counter is migrated once: for the
/// current progress digest its larger count is taken (one resume left), and
/// afterwards the tree is never read again.
#[test]
fn an_old_in_tree_resume_counter_is_migrated_once() {
    let h = HookRepo::new();
    live_plan(&h);
    // Learn the current digest, then forget the per-user state (as before an
    // upgrade) and plant the earlier version's counter at max - 1.
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    let digest = counter(&h, "G001").unwrap()["progressDigest"].clone();
    let side = h.side_path(&format!("{ULW}/{SID}/x"));
    std::fs::remove_dir_all(side.parent().unwrap()).unwrap();
    let old =
        json!({"count": 1, "progressDigest": digest, "updatedAt": "2026-11-30T10:00:00.000Z"});
    h.write(
        &format!("{ULW}/{SID}/auto-resume-G001.json"),
        old.to_string(),
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 2 of 2"), "{reason}");
    assert!(h.read_side(&format!("{ULW}/{SID}/migrated.json")).is_some());
    // Migrated once: resetting the in-tree copy changes nothing.
    let reset = json!({"count": 0, "progressDigest": digest});
    h.write(
        &format!("{ULW}/{SID}/auto-resume-G001.json"),
        reset.to_string(),
    );
    let run = stop(&h, &h.codex_stop(SID));
    let msg = run.json()["systemMessage"].as_str().unwrap().to_owned();
    assert!(msg.contains("auto-resume is paused for goal G001"), "{msg}");
}

/// A planted in-tree counter at (or over) the budget spends at most the
/// budget of the current progress minus one: the last resume still happens.
#[test]
fn a_planted_in_tree_counter_never_spends_the_last_resume() {
    let h = HookRepo::new();
    live_plan(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    let digest = counter(&h, "G001").unwrap()["progressDigest"].clone();
    let side = h.side_path(&format!("{ULW}/{SID}/x"));
    std::fs::remove_dir_all(side.parent().unwrap()).unwrap();
    let old = json!({"count": 99, "progressDigest": digest});
    h.write(
        &format!("{ULW}/{SID}/auto-resume-G001.json"),
        old.to_string(),
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 2 of 2"), "{reason}");
}

/// A stuck marker the agent writes where earlier versions kept it is never
/// migrated: it does not silence the resume (threat-model.md §3).
#[test]
fn an_in_tree_stuck_marker_does_not_silence_the_resume() {
    let h = HookRepo::new();
    live_plan(&h);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    let digest = counter(&h, "G001").unwrap()["progressDigest"].clone();
    let side = h.side_path(&format!("{ULW}/{SID}/x"));
    std::fs::remove_dir_all(side.parent().unwrap()).unwrap();
    let marker = json!({"reason": "stuck", "count": 2, "progressDigest": digest, "at": "2026-11-30T10:00:00.000Z"});
    h.write(
        &format!("{ULW}/{SID}/auto-resume-G001.stuck"),
        marker.to_string(),
    );
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("resume 1 of 2"), "{reason}");
    assert!(stuck(&h, "G001").is_none());
}

/// Unusable side files in the per-user state block the stop with
/// `HOOK_STATE_IO` and tell the user to act (I2), instead of allowing.
#[test]
fn unusable_side_files_block_with_a_diagnostic() {
    let h = HookRepo::new();
    live_plan(&h);
    let stuck = h.side_path(&format!("{ULW}/{SID}/auto-resume-G001.stuck"));
    std::fs::create_dir_all(&stuck).unwrap();
    let (reason, message) = halt_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(reason.contains("HOOK_STATE_IO"), "{reason}");
    assert!(message.contains("evidence-gate doctor --fix"), "{message}");
    std::fs::remove_dir(&stuck).unwrap();
    std::fs::create_dir_all(h.side_path(&format!("{ULW}/{SID}/auto-resume-G001.json"))).unwrap();
    halt_reason(&stop(&h, &h.codex_stop(SID)));
    assert_eq!(h.diag_codes(), ["HOOK_STATE_IO", "HOOK_STATE_IO"]);
}

#[test]
fn notify_when_stuck_can_be_switched_off() {
    let h = HookRepo::new();
    live_plan(&h);
    h.user_rules(r#"{"stop": {"notify_when_stuck": false, "max_resumes_without_progress": 1}}"#);
    assert!(block_reason(&stop(&h, &h.codex_stop(SID))).contains("resume 1 of 1"));
    assert_allow(&stop(&h, &h.codex_stop(SID)));
    let d = h.diagnostics();
    assert_eq!(d.len(), 1);
    assert_eq!(
        (d[0]["code"].as_str(), d[0]["outcome"].as_str()),
        (Some("STOP_STUCK"), Some("allow"))
    );
}

#[test]
fn every_host_gets_its_own_block_shape() {
    let h = HookRepo::new();
    let run_fixture = |rel: &str, sid: &str, host: &str| {
        let mut p = fixture(rel, h.path());
        let key = if p.get("conversationId").is_some() {
            "conversationId"
        } else {
            "session_id"
        };
        p[key] = json!(sid);
        h.hook("stop", &["--host", host], &p, &clean_env())
    };
    for (i, (rel, host)) in [
        ("codex/stop/synth-main.json", "codex"),
        ("claude-code/stop/synth-main.json", "claude-code"),
        ("agy/stop/synth-stop.json", "agy"),
        ("agy/stop/synth-post-invocation.json", "agy"),
    ]
    .into_iter()
    .enumerate()
    {
        let sid = format!("host-{i}");
        h.write_plan(
            &format!("{ULW}/{sid}"),
            &plan(Some(&sid), None, vec![goal("G1", "pending", &[])]),
        );
        let run = run_fixture(rel, &sid, host);
        // Claude Code blocks with exit 2 and the reason on stderr; the
        // others with exit 0 and JSON on stdout.
        let reason = if host == "claude-code" {
            claude_block_reason(&run)
        } else {
            assert_eq!(run.code, 0, "{rel}: {}", run.stderr);
            block_reason(&run)
        };
        assert!(reason.contains("G1 — Title of G1"), "{rel}: {reason}");
    }
    h.write_plan(
        &format!("{ULW}/gem"),
        &plan(Some("gem"), None, vec![goal("G1", "pending", &[])]),
    );
    let run = run_fixture("gemini/stop/synth-after-agent.json", "gem", "gemini");
    let v = run.json();
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["decision", "reason"]);
    assert_eq!(v["decision"], "deny", "AfterAgent blocks with deny");
    // Host auto-detection from the payloads alone.
    let mut p = fixture("agy/stop/synth-stop.json", h.path());
    p["conversationId"] = json!("host-2");
    let auto = h.hook("stop", &[], &p, &clean_env());
    assert_eq!(auto.json()["decision"], "block");
}

/// The Stop hook under `rules` blocks with the embedded text and reports
/// `HOOK_RULES_INVALID` naming `problem`.
fn falls_back_to_the_embedded_rules(rules: &str, problem: &str) {
    let h = HookRepo::new();
    live_plan(&h);
    h.user_rules(rules);
    let reason = block_reason(&stop(&h, &h.codex_stop(SID)));
    assert!(
        reason.contains("still has unfinished goals"),
        "embedded text: {reason}"
    );
    let d = h.diagnostics();
    assert_eq!(d[0]["code"], "HOOK_RULES_INVALID", "{d:?}");
    assert!(
        d[0]["detail"]["problem"]
            .as_str()
            .unwrap()
            .contains(problem),
        "{d:?}"
    );
}

#[test]
fn an_invalid_goal_loop_override_falls_back_to_the_embedded_rules() {
    falls_back_to_the_embedded_rules(
        r#"{"directives": {"stop-resume": "resume {{NOPE}}"}}"#,
        "NOPE",
    );
}

/// An override is checked whatever the event: a value only the subagent
/// policy uses, when invalid, also sends the goal-loop Stop hook to the
/// embedded rules with `HOOK_RULES_INVALID`.
#[test]
fn an_override_invalid_for_the_subagent_policy_also_falls_back_on_stop() {
    falls_back_to_the_embedded_rules(
        r#"{"subagent_stop": {"verify_budget_ms": 10000}, "directives": {"stop-resume": "resume {{GOAL_ID}} now"}}"#,
        "/subagent_stop/verify_budget_ms",
    );
}

#[test]
fn reads_only_the_tails_and_never_the_ledger() {
    let h = HookRepo::new();
    live_plan(&h);
    let mut ledger = String::new();
    while ledger.len() < 4 * 1024 * 1024 {
        ledger.push_str("{\"kind\":\"evidence_captured\",\"at\":\"2026-11-30T10:00:00.000Z\",\"message\":\"criterion recorded with a realistic amount of text\"}\n");
    }
    h.write(&format!("{ULW}/{SID}/ledger.jsonl"), &ledger);
    let mut transcript = String::new();
    while transcript.len() < 4 * 1024 * 1024 {
        transcript.push_str("{\"type\":\"response_item\",\"payload\":{\"text\":\"step\"}}\n");
    }
    h.write("transcripts/main.jsonl", &transcript);
    let mut p = h.codex_stop(SID);
    p["transcript_path"] = json!(h.join("transcripts/main.jsonl"));
    let report = h.join("io-report.jsonl");
    let run = h.hook(
        "stop",
        &["--host", "codex"],
        &p,
        &[("EVIDENCE_GATE_IO_REPORT", report.to_str().unwrap())],
    );
    block_reason(&run);
    let r = crate::hooks_support::last_io_report(&report);
    // The transcript is read only for a host whose compaction record shape
    // is pinned (threat-model I5), and then only its 64 KiB tail.
    let tail = json!([{"kind": "transcript", "path": h.join("transcripts/main.jsonl").to_str().unwrap(), "bytes": 65536}]);
    let want = if evidence_gate::hooks::host_records::escape_enabled(
        evidence_gate::hooks::host::Host::Codex,
    ) {
        tail
    } else {
        json!([])
    };
    assert_eq!(r["reads"], want);
    if let Some(bytes) = r["file_bytes"].as_u64() {
        assert!(bytes < 1024 * 1024, "{bytes} bytes read from files");
    }
}

/// Claude Code's shell carries `CLAUDE_CODE_SESSION_ID`; a plan
/// the agent creates from it is scoped to that session, and the recorded
/// Claude Stop payload of the same session resumes it.
#[test]
fn a_plan_created_in_claudes_shell_is_resumed_by_claudes_stop() {
    let h = HookRepo::new();
    let p = fixture(
        "claude-code/stop/recorded-claude-code-2.1.332-block-unfinished-plan.json",
        h.path(),
    );
    let sid = p["session_id"].as_str().unwrap().to_owned();
    let mut env = clean_env();
    env.retain(|(k, _)| *k != "CLAUDE_CODE_SESSION_ID");
    env.push(("CLAUDE_CODE_SESSION_ID", &sid));
    let create = h.repo.run_env(
        "evidence-gate",
        &[
            "ulw-loop",
            "create-goals",
            "--brief",
            "Ship the widget",
            "--json",
        ],
        None,
        &env,
    );
    assert_eq!(create.code, 0, "{}{}", create.stdout, create.stderr);
    assert!(h.path().join(format!("{ULW}/{sid}/goals.json")).is_file());
    let run = h.hook("stop", &["--host", "claude-code"], &p, &clean_env());
    let reason = block_reason(&run);
    assert!(
        reason.contains(&format!(
            "`evidence-gate ulw-loop status --session-id {sid} --json`"
        )),
        "{reason}"
    );
    // Another session's Stop does not pick it up.
    let mut other = p.clone();
    other["session_id"] = serde_json::json!("another-session");
    assert_allow(&h.hook("stop", &["--host", "claude-code"], &other, &clean_env()));
}

/// Writes the session's goal ledger as `n` chained notes; returns its path
/// and bytes.
fn write_notes(h: &HookRepo, n: usize) -> (String, Vec<u8>) {
    let e: serde_json::Map<String, Value> =
        serde_json::from_value(json!({"kind": "note", "at": "2026-01-01T00:00:00.000Z"})).unwrap();
    let (ledger, _) = evidence_gate::internals::chain_records(0, None, &vec![e; n]);
    let path = format!("{ULW}/{SID}/ledger.jsonl");
    h.write(&path, &ledger);
    (path, ledger)
}

/// Ledger heads observed (threat-model.md §3): the Stop hook records the
/// goal ledger's head in the per-user state; a ledger cut back afterwards is
/// `LEDGER_REWOUND` for local `verify-evidence`, silently skipped on a
/// machine without the witness (CI).
#[test]
fn a_rewound_goal_ledger_is_reported_by_local_verify_evidence() {
    let h = HookRepo::new();
    live_plan(&h);
    let (path, ledger) = write_notes(&h, 3);
    block_reason(&stop(&h, &h.codex_stop(SID)));
    let home = h.state_home.path().to_str().unwrap().to_owned();
    let verify = |env: &[(&str, &str)]| {
        let mut all = vec![("XDG_STATE_HOME", home.as_str()), ("HOME", home.as_str())];
        all.extend_from_slice(env);
        h.repo
            .run_env("verify-evidence", &["--format", "json"], None, &all)
    };
    // Honest: the ledger still reaches the head the hook saw.
    let run = verify(&[]);
    assert!(!run.stdout.contains("LEDGER_REWOUND"), "{}", run.stdout);
    // The agent cuts the last record.
    let text = String::from_utf8(ledger.clone()).unwrap();
    let cut: String = text.lines().take(2).map(|l| format!("{l}\n")).collect();
    h.write(&path, &cut);
    let run = verify(&[]);
    assert!(
        run.stdout.contains("LEDGER_REWOUND"),
        "{}{}",
        run.stdout,
        run.stderr
    );
    assert_eq!(run.code, 1, "{}", run.stdout);
    // A machine without the witness (CI) skips the check silently.
    let ci = tempfile::tempdir().unwrap();
    let home = ci.path().to_str().unwrap();
    let run = verify(&[("XDG_STATE_HOME", home), ("HOME", home)]);
    assert!(!run.stdout.contains("LEDGER_REWOUND"), "{}", run.stdout);
}

/// The head the Stop hook saw is written once: a second stop on the same
/// ledger leaves the per-user heads file as it is (no synced replace per
/// stop), a ledger that grew replaces it with the new head.
#[test]
fn an_unchanged_goal_ledger_head_is_not_rewritten_on_every_stop() {
    use std::os::unix::fs::MetadataExt;
    let h = HookRepo::new();
    live_plan(&h);
    write_notes(&h, 3);
    let heads = |h: &HookRepo| -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        let mut todo = vec![h.state_home.path().to_path_buf()];
        while let Some(d) = todo.pop() {
            for entry in std::fs::read_dir(&d).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    todo.push(p);
                } else if p.parent().and_then(|p| p.file_name()) == Some("heads".as_ref()) {
                    out.push(p);
                }
            }
        }
        out
    };
    block_reason(&stop(&h, &h.codex_stop(SID)));
    let files = heads(&h);
    assert_eq!(files.len(), 1, "{files:?}");
    let first = std::fs::metadata(&files[0]).unwrap();
    let seen: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(seen["seq"], 3, "{seen}");
    // The same head again: the file is the one written first.
    block_reason(&stop(&h, &h.codex_stop(SID)));
    let again = std::fs::metadata(&files[0]).unwrap();
    assert_eq!(
        (again.ino(), again.mtime_nsec()),
        (first.ino(), first.mtime_nsec())
    );
    // The ledger grows: the new head replaces the old one.
    write_notes(&h, 5);
    // (The third stop without progress pauses instead of blocking.)
    let run = stop(&h, &h.codex_stop(SID));
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let seen: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(seen["seq"], 5, "{seen}");
    assert_ne!(std::fs::metadata(&files[0]).unwrap().ino(), first.ino());
}

/// `STOP_STUCK` on the Stop payloads the real hosts sent in the third turn
/// of the e2e `*_stop_stuck` scenarios (Codex 0.171.0, Claude Code 2.1.332,
/// Gemini 0.61.0): two blocks in each host's block shape while the plan
/// makes no progress, then one plain `systemMessage` with exit 0 (never a
/// block: the host ends the turn), then silence while the marker holds.
#[test]
fn recorded_stop_payloads_pause_with_stop_stuck_on_each_host() {
    for (host, rel) in [
        (
            "codex",
            "codex/stop/recorded-codex-0.171.0-notify-stuck.json",
        ),
        (
            "claude-code",
            "claude-code/stop/recorded-claude-code-2.1.332-notify-stuck.json",
        ),
        (
            "gemini",
            "gemini/stop/recorded-gemini-0.61.0-notify-stuck.json",
        ),
    ] {
        let h = HookRepo::new();
        let p = fixture(rel, h.path());
        assert_eq!(p["stop_hook_active"], false, "{host}");
        let sid = p["session_id"].as_str().unwrap().to_owned();
        let create = h.repo.run_env(
            "evidence-gate",
            &[
                "ulw-loop",
                "create-goals",
                "--brief",
                "Ship the e2e widget",
                "--session-id",
                &sid,
                "--json",
            ],
            None,
            &clean_env(),
        );
        assert_eq!(create.code, 0, "{host}: {}{}", create.stdout, create.stderr);
        let args = ["--host", host, "--profile", "auto"];
        for n in 1..=2 {
            let run = h.hook("stop", &args, &p, &clean_env());
            assert!(
                run.code == 2 || !run.stdout.is_empty(),
                "{host} stop {n}: allowed; stderr: {}; diagnostics: {:?}",
                run.stderr,
                h.diagnostics()
            );
            let want = format!("automatic resume {n} of 2 without recorded progress");
            match host {
                "claude-code" => assert!(claude_block_reason(&run).contains(&want), "{host}"),
                "gemini" => {
                    assert_eq!(run.code, 0, "{}", run.stderr);
                    let v = run.json();
                    assert_eq!(v["decision"], "deny", "{host}: {}", run.stdout);
                    assert!(v["reason"].as_str().unwrap().contains(&want), "{host}");
                }
                _ => assert!(block_reason(&run).contains(&want), "{host}"),
            }
        }
        let run = h.hook("stop", &args, &p, &clean_env());
        assert_eq!(run.code, 0, "{host}: {}", run.stderr);
        let v = run.json();
        let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["systemMessage"], "{host}: {}", run.stdout);
        let msg = v["systemMessage"].as_str().unwrap();
        assert!(
            msg.starts_with(
                "evidence-gate: auto-resume is paused for goal G001-ship-the-e2e-widget"
            ) && msg.contains(&format!(
                "`evidence-gate ulw-loop status --session-id {sid} --json`"
            )),
            "{host}: {msg}"
        );
        assert_allow(&h.hook("stop", &args, &p, &clean_env()));
    }
}
