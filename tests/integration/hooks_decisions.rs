//! threat-model.md I12: a user decision counts only when the
//! `user-prompt-submit` witness saw it in a user prompt of the same session
//! before it was recorded; an all-waived run ends as waived, never complete.

use serde_json::{Value, json};

use crate::ci_support::{audit, findings};
use crate::goals_support::{clean_env, eg, steer_in};
use crate::hooks_support::*;

const SID: &str = "s1";

fn setup() -> HookRepo {
    let h = HookRepo::new();
    let run = eg(
        &h.repo,
        "ulw-loop",
        &[
            "create-goals",
            "--session-id",
            SID,
            "--brief",
            "- parse the config\n- add tests",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    h
}

fn ids(h: &HookRepo) -> Vec<String> {
    let plan: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
    plan["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["id"].as_str().unwrap().to_owned())
        .collect()
}

fn user_prompt(h: &HookRepo, text: &str) {
    let p = h.codex_event("UserPromptSubmit", SID, json!({"prompt": text}));
    let run = h.hook("user-prompt-submit", &["--host", "codex"], &p, &clean_env());
    assert_eq!(run.code, 0, "{}", run.stderr);
}

fn waive_all(h: &HookRepo, decision: &str) {
    for id in ids(h) {
        let run = steer_in(
            &h.repo,
            SID,
            "mark_blocked_superseded",
            &[
                "--goal-id",
                &id,
                "--user-decision",
                decision,
                "--evidence",
                "the goal is no longer needed",
                "--rationale",
                "waive it",
            ],
        );
        assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    }
}

fn stop(h: &HookRepo) -> crate::common::Run {
    h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_stop(SID),
        &clean_env(),
    )
}

fn codes(run: &crate::common::Run) -> Vec<(String, String)> {
    findings(run)
        .into_iter()
        .map(|(c, s, _, _)| (c, s))
        .collect()
}

#[test]
fn regression_i12_an_agent_cannot_waive_every_goal_by_itself() {
    let h = setup();
    // The user asked for work, never for a waiver.
    user_prompt(&h, "please parse the config and add tests");
    waive_all(&h, "the user agreed to drop both goals");
    // Before I12 the run counted as complete and the Stop hook let it stop.
    let reason = block_reason(&stop(&h));
    assert!(reason.contains("USER_DECISION_UNVERIFIED"), "{reason}");
    assert!(reason.contains("is not the user's"), "{reason}");
    assert!(
        h.diag_codes()
            .contains(&"USER_DECISION_UNVERIFIED".to_owned())
    );
    let ledger = h.ledger();
    assert!(
        !ledger.iter().any(|e| e["kind"] == "user_decision_verified"),
        "{ledger:?}"
    );
    // CI: a warning, an error with --strict.
    let run = audit(&h.repo, &[]);
    let c = codes(&run);
    assert!(
        c.contains(&("USER_DECISION_UNVERIFIED".into(), "warning".into())),
        "{c:?}"
    );
    assert!(
        !c.iter().any(|(x, _)| x == "USER_DECISION_VERIFIED"),
        "{c:?}"
    );
    let strict = audit(&h.repo, &["--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    assert!(
        codes(&strict).contains(&("USER_DECISION_UNVERIFIED".into(), "error".into())),
        "{:?}",
        codes(&strict)
    );
}

#[test]
fn regression_i12_a_prompt_after_the_decision_does_not_verify_it() {
    let h = setup();
    waive_all(&h, "drop both goals");
    user_prompt(&h, "drop both goals");
    let reason = block_reason(&stop(&h));
    assert!(reason.contains("USER_DECISION_UNVERIFIED"), "{reason}");
}

#[test]
fn regression_i12_a_prompt_of_another_session_does_not_verify_it() {
    let h = setup();
    let p = h.codex_event(
        "UserPromptSubmit",
        "other",
        json!({"prompt": "drop both goals"}),
    );
    let run = h.hook("user-prompt-submit", &["--host", "codex"], &p, &clean_env());
    assert_eq!(run.code, 0);
    waive_all(&h, "drop both goals");
    let reason = block_reason(&stop(&h));
    assert!(reason.contains("USER_DECISION_UNVERIFIED"), "{reason}");
}

#[test]
fn honest_i12_a_real_user_decision_ends_the_run_as_waived() {
    let h = setup();
    // The user's own words, whitespace aside, carry the decision.
    user_prompt(
        &h,
        "The vendor API is gone, so\ndrop   both goals: the parser is obsolete.",
    );
    waive_all(&h, "drop both goals: the parser is obsolete.");
    let witness = std::fs::read_dir(h.state_home.path().join("evidence-gate/v1"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("prompts/prompts.jsonl");
    let lines = read_jsonl(&witness);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["session"], SID);
    assert!(lines[0]["text"].as_str().unwrap().contains("vendor API"));
    // The Stop hook lets it stop and carries the verification to CI.
    assert_allow(&stop(&h));
    let verified: Vec<Value> = h
        .ledger()
        .into_iter()
        .filter(|e| e["kind"] == "user_decision_verified")
        .collect();
    assert_eq!(verified.len(), 2, "{verified:?}");
    assert_eq!(verified[0]["promptSha256"], lines[0]["sha256"]);
    assert!(
        verified[0]["decisionId"]
            .as_str()
            .unwrap()
            .starts_with("UD-")
    );
    // A second stop appends nothing more.
    assert_allow(&stop(&h));
    let again = h
        .ledger()
        .into_iter()
        .filter(|e| e["kind"] == "user_decision_verified")
        .count();
    assert_eq!(again, 2);
    // Never complete: no aggregate_completed, CI reports the run as waived.
    let goal_ledger =
        std::fs::read_to_string(h.join(&format!("{ULW}/{SID}/ledger.jsonl"))).unwrap();
    assert!(!goal_ledger.contains("aggregate_completed"));
    let run = audit(&h.repo, &["--strict"]);
    let c = codes(&run);
    assert!(c.contains(&("RUN_WAIVED".into(), "info".into())), "{c:?}");
    assert!(
        c.contains(&("USER_DECISION_VERIFIED".into(), "info".into())),
        "{c:?}"
    );
    assert!(
        !c.iter().any(|(x, _)| x == "USER_DECISION_UNVERIFIED"),
        "{c:?}"
    );
    assert_eq!(run.code, 0, "{}", run.stdout);
}

#[test]
fn honest_i12_a_prompt_sent_through_a_symlinked_cwd_from_another_directory_verifies() {
    // The host runs the prompt hook from another directory and names the
    // workspace through a symlink; the Stop hook runs in the workspace
    // itself. Both must file and find the prompt in the one per-user state
    // of the canonical workspace.
    let h = setup();
    let links = tempfile::tempdir().unwrap();
    let link = links.path().join("repo-link");
    std::os::unix::fs::symlink(h.path(), &link).unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut p = h.codex_event(
        "UserPromptSubmit",
        SID,
        json!({"prompt": "drop both goals: the parser is obsolete."}),
    );
    p["cwd"] = json!(link.to_str().unwrap());
    let mut cmd = h.command(
        &["hook", "user-prompt-submit", "--host", "codex"],
        &clean_env(),
        false,
    );
    cmd.current_dir(elsewhere.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(p.to_string().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let states: Vec<_> = std::fs::read_dir(h.state_home.path().join("evidence-gate/v1"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(
        states.len(),
        1,
        "one workspace, one per-user state: {states:?}"
    );
    waive_all(&h, "drop both goals: the parser is obsolete.");
    assert_allow(&stop(&h));
}

#[test]
fn honest_i12_a_user_may_quote_the_decision_id() {
    let h = setup();
    let decision = "skip the tests goal, covered upstream";
    let id = evidence_gate::internals::decision_id(decision);
    user_prompt(&h, &format!("ok, approved: {id}"));
    waive_all(&h, decision);
    assert_allow(&stop(&h));
}

#[test]
fn regression_i12_an_unusable_witness_fails_closed() {
    let h = setup();
    // A state home inside the workspace is where the agent could write it:
    // the prompt is not recorded (HOOK_STATE_IO) and nothing verifies.
    let inside = h.path().join(".state");
    let inside = inside.to_str().unwrap();
    let p = h.codex_event(
        "UserPromptSubmit",
        SID,
        json!({"prompt": "drop both goals"}),
    );
    let mut env = clean_env();
    env.push(("XDG_STATE_HOME", inside));
    let run = h.hook("user-prompt-submit", &["--host", "codex"], &p, &env);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // Its HOOK_STATE_IO diagnostic has no place out of the agent's reach
    // either, so it is not written into the workspace (threat-model.md §3);
    // the stop below tells the user.
    assert!(!h.join(".omo/evidence-gate/diagnostics.jsonl").exists());
    assert!(
        !h.path()
            .join(".state/evidence-gate/diagnostics.jsonl")
            .exists()
    );
    waive_all(&h, "drop both goals");
    let run = h.hook("stop", &["--host", "codex"], &h.codex_stop(SID), &env);
    let reason = block_reason(&run);
    assert!(reason.contains("USER_DECISION_UNVERIFIED"), "{reason}");
    assert!(reason.contains("XDG_STATE_HOME"), "{reason}");
}

/// Honest use of `unblock` (I12): a goal that needs the user's decision is
/// unblocked with the decision the user typed, and the Stop hook verifies it
/// against the prompt witness.
#[test]
fn honest_i12_a_real_user_decision_unblocks_a_goal() {
    let h = setup();
    let id = ids(&h)[0].clone();
    // Setup: the goal escalated to the user (hand edit, acknowledged).
    let rel = format!("{ULW}/{SID}/goals.json");
    let mut plan: Value = h.read_json(&rel).unwrap();
    let g = plan["goals"][0].as_object_mut().unwrap();
    g.insert("status".into(), json!("needs_user_decision"));
    g.insert("nonRetriable".into(), json!(true));
    g.insert(
        "blockerSignature".into(),
        json!("EXTERNAL_AUTHORIZATION_REQUIRED"),
    );
    h.write_plan(&format!("{ULW}/{SID}"), &plan);
    let run = eg(
        &h.repo,
        "ulw-loop",
        &[
            "repair",
            "--session-id",
            SID,
            "--accept-tampered",
            "--rationale",
            "test setup: hand-edited plan",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    user_prompt(&h, "I rotated the registry token; retry the parser goal.");
    let run = eg(
        &h.repo,
        "ulw-loop",
        &[
            "steer",
            "--session-id",
            SID,
            "--kind",
            "unblock",
            "--goal-id",
            &id,
            "--user-decision",
            "I rotated the registry token",
            "--evidence",
            "the user rotated the token",
            "--rationale",
            "retry after the user's fix",
            "--json",
        ],
    );
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let plan: Value = h.read_json(&rel).unwrap();
    assert_eq!(plan["goals"][0]["status"], "pending");
    // The goal is unfinished, so the Stop hook resumes; the decision it
    // carries is verified against the user's prompt.
    let _ = stop(&h);
    let verified: Vec<Value> = h
        .ledger()
        .into_iter()
        .filter(|e| e["kind"] == "user_decision_verified")
        .collect();
    assert_eq!(verified.len(), 1, "{verified:?}");
    assert!(
        !h.ledger()
            .iter()
            .any(|e| e["kind"] == "user_decision_unverified"),
        "{:?}",
        h.ledger()
    );
}

/// The engine's own diagnostic lines from a steering prompt (here the
/// rebuild of a deleted ledger index) go to the workspace's per-user
/// `hooks/diagnostics.jsonl`, where `doctor` reads them, also when the host
/// runs the hook from another directory; never to the base directory.
#[test]
fn honest_steering_from_another_directory_records_engine_lines_in_the_workspace_state() {
    let h = setup();
    std::fs::remove_file(h.join(&format!("{ULW}/{SID}/.ledger.idx"))).unwrap();
    let directive = json!({"kind": "annotate_ledger", "evidence": "the config parser is in review",
                           "rationale": "note for the reviewers"});
    let p = h.codex_event(
        "UserPromptSubmit",
        SID,
        json!({"prompt": format!("OMO_ULW_LOOP_STEER: {directive}")}),
    );
    let elsewhere = tempfile::tempdir().unwrap();
    let mut cmd = h.command(
        &["hook", "user-prompt-submit", "--host", "codex"],
        &clean_env(),
        false,
    );
    cmd.current_dir(elsewhere.path())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(p.to_string().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("accepted annotate_ledger"), "{stdout}");
    assert!(h.join(&format!("{ULW}/{SID}/.ledger.idx")).exists());
    assert!(
        h.diag_codes().contains(&"LEDGER_INDEX_REBUILT".to_owned()),
        "{:?}",
        h.diag_codes()
    );
    let base = h.state_home.path().join("evidence-gate/diagnostics.jsonl");
    let base = std::fs::read_to_string(&base).unwrap_or_default();
    assert!(!base.contains("LEDGER_INDEX_REBUILT"), "{base}");
}
