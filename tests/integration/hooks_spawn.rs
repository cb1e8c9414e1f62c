//! `evidence-gate hook pre-tool-use-spawn` (hooks.md §6.3): the fan-out cap
//! under the state lock and the gate-artifact preflight.

use serde_json::{Value, json};

use crate::goals_support::clean_env;
use crate::hooks_support::*;

const SID: &str = "019a0000-0000-7000-8000-00000000a001";
const ATTEMPT: &str = ".omo/evidence/ulw/s1/G002/a1";

fn spawn_env(
    h: &HookRepo,
    host: &str,
    payload: &Value,
    env: &[(&str, &str)],
) -> crate::common::Run {
    let mut all = clean_env();
    all.extend_from_slice(env);
    h.hook("pre-tool-use-spawn", &["--host", host], payload, &all)
}

fn spawn(h: &HookRepo, payload: &Value) -> crate::common::Run {
    spawn_env(h, "codex", payload, &[])
}

fn counter(h: &HookRepo) -> Option<Value> {
    h.read_side(&format!("{ULW}/{SID}/spawn-count.json"))
}

/// A layout-v2 plan whose final candidate G002 has every criterion passed.
fn gate_ready_plan(h: &HookRepo, rules: &str) {
    let mut g2 = goal("G002", "in_progress", &[("C001", "pass"), ("C002", "pass")]);
    g2["attemptDir"] = json!(ATTEMPT);
    let mut p = plan(
        Some(SID),
        Some("G002"),
        vec![goal("G001", "complete", &[("C001", "pass")]), g2],
    );
    p["evidenceLayoutVersion"] = json!(2);
    p["gateRules"] = json!(rules);
    h.write_plan(&format!("{ULW}/{SID}"), &p);
}

fn worker_spawn(h: &HookRepo) -> Value {
    fixture("codex/pre-tool-use-spawn/synth-spawn-agent.json", h.path())
}

#[test]
fn spawns_are_counted_per_goal_attempt_and_the_61st_is_denied() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    for rel in [
        "codex/pre-tool-use-spawn/synth-spawn-agent.json",
        "codex/pre-tool-use-spawn/synth-collaborationspawn-agent.json",
        "codex/pre-tool-use-spawn/synth-dotted-spawn-agent.json",
    ] {
        assert_allow(&spawn(&h, &fixture(rel, h.path())));
    }
    assert_eq!(
        counter(&h).unwrap(),
        json!({"count": 3, "resetKey": "G002#a1"})
    );
    h.write_side(
        &format!("{ULW}/{SID}/spawn-count.json"),
        json!({"count": 59, "resetKey": "G002#a1"}).to_string(),
    );
    assert_allow(&spawn(&h, &worker_spawn(&h)));
    let reason = deny_reason(&spawn(&h, &worker_spawn(&h)));
    // The denial names the refused spawn, count+1 over the limit, as the
    // Node hook does (docs/differences.md#r-8).
    assert!(
        reason.contains("fan-out cap is reached (61/60)"),
        "{reason}"
    );
    assert!(reason.contains("OMO_SPAWN_FANOUT_LIMIT"), "{reason}");
    assert!(reason.contains("Consolidate"), "{reason}");
    assert_eq!(
        counter(&h).unwrap()["count"],
        60,
        "a denied spawn is not counted"
    );
    // A new goal attempt starts a fresh budget (the Node counter never reset).
    let mut p: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
    p["goals"][1]["attempt"] = json!(2);
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    assert_allow(&spawn(&h, &worker_spawn(&h)));
    assert_eq!(
        counter(&h).unwrap(),
        json!({"count": 1, "resetKey": "G002#a2"})
    );
    assert!(h.diagnostics().is_empty());
}

#[test]
fn regression_8_parallel_spawns_count_exactly_under_the_lock() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    // The test is about counting, not waiting: give 20 processes on a shared
    // machine time to queue for the lock.
    h.user_rules(r#"{"hooks": {"lock_wait_ms": 3500}}"#);
    let payload = worker_spawn(&h);
    let runs: Vec<crate::common::Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..20)
            .map(|_| {
                s.spawn(|| spawn_env(&h, "codex", &payload, &[("OMO_SPAWN_FANOUT_LIMIT", "10")]))
            })
            .collect();
        handles.into_iter().map(|j| j.join().unwrap()).collect()
    });
    let allowed = runs.iter().filter(|r| r.stdout.is_empty()).count();
    let denied: Vec<String> = runs
        .iter()
        .filter(|r| !r.stdout.is_empty())
        .map(deny_reason)
        .collect();
    assert_eq!(allowed, 10, "{denied:?}");
    assert_eq!(denied.len(), 10);
    assert!(denied.iter().all(|r| r.contains("(11/10)")), "{denied:?}");
    assert_eq!(counter(&h).unwrap()["count"], 10);
    assert!(
        h.diagnostics().is_empty(),
        "no lock timeouts: {:?}",
        h.diagnostics()
    );
}

#[test]
fn regression_8_a_worker_type_with_a_gate_review_message_is_preflighted() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    let by_message = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-message.json",
        h.path(),
    );
    let reason = deny_reason(&spawn(&h, &by_message));
    assert!(
        reason.contains("spawn the code review and manual QA first"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!(
            "{ATTEMPT}/code-review.md (or {ATTEMPT}/G002-code-review.md)"
        )),
        "{reason}"
    );
    assert!(reason.contains(&format!("{ATTEMPT}/manual-qa.md (or {ATTEMPT}/cli-transcript.txt, {ATTEMPT}/data-diff.txt, {ATTEMPT}/G002-manual-qa.md)")), "{reason}");
    assert!(counter(&h).is_none(), "denied spawns are not counted");
    let by_type = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-agent-type.json",
        h.path(),
    );
    deny_reason(&spawn(&h, &by_type));
    let mut plugin = by_type.clone();
    plugin["tool_input"]["agent_type"] = json!("omo:omo-senpi-gate-reviewer");
    deny_reason(&spawn(&h, &plugin));
    // The reports exist: the gate spawn proceeds and counts.
    h.write(
        &format!("{ATTEMPT}/code-review.md"),
        "APPROVE: reviewed the diff",
    );
    let reason = deny_reason(&spawn(&h, &by_message));
    assert!(
        !reason.contains("code-review.md"),
        "only the missing one is listed: {reason}"
    );
    h.write(
        &format!("{ATTEMPT}/cli-transcript.txt"),
        "$ cargo test\n12 passed\n",
    );
    assert_allow(&spawn(&h, &by_message));
    assert_eq!(counter(&h).unwrap()["count"], 1);
}

#[test]
fn preflight_names_follow_the_surface_and_the_layout() {
    // omo-senpi has no codeReview section.
    let h = HookRepo::new();
    gate_ready_plan(&h, "omo-senpi");
    let by_type = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-agent-type.json",
        h.path(),
    );
    let reason = deny_reason(&spawn(&h, &by_type));
    assert!(!reason.contains("code-review"), "{reason}");
    h.write(
        &format!("{ATTEMPT}/G002-manual-qa.md"),
        "legacy Node name, still accepted",
    );
    assert_allow(&spawn(&h, &by_type));
    // Layout v1: the evidence root; an empty file or a directory is no report.
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    let mut p: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
    p.as_object_mut().unwrap().remove("evidenceLayoutVersion");
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    h.write(".omo/evidence/code-review.md", "");
    h.repo.mkdir(".omo/evidence/manual-qa.md");
    let by_type = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-agent-type.json",
        h.path(),
    );
    let reason = deny_reason(&spawn(&h, &by_type));
    assert!(
        reason.contains(".omo/evidence/code-review.md (or .omo/evidence/G002-code-review.md)"),
        "{reason}"
    );
    assert!(reason.contains(".omo/evidence/manual-qa.md"), "{reason}");
    h.write(".omo/evidence/G002-code-review.md", "review");
    h.write(".omo/evidence/data-diff.txt", "diff");
    assert_allow(&spawn(&h, &by_type));
}

#[test]
fn preflight_waits_for_passed_criteria() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    let mut p: Value = h.read_json(&format!("{ULW}/{SID}/goals.json")).unwrap();
    p["goals"][1]["successCriteria"][1]["status"] = json!("pending");
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    let by_type = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-agent-type.json",
        h.path(),
    );
    assert_allow(&spawn(&h, &by_type));
    assert_eq!(counter(&h).unwrap()["count"], 1, "counted like any spawn");
}

#[test]
fn no_plan_or_another_tool_counts_nothing() {
    let h = HookRepo::new();
    assert_allow(&spawn(&h, &worker_spawn(&h)));
    assert!(h.files_in(ULW).is_empty());
    gate_ready_plan(&h, "lazycodex");
    let mut other = worker_spawn(&h);
    other["tool_name"] = json!("shell");
    assert_allow(&spawn(&h, &other));
    assert!(counter(&h).is_none());
}

/// I2: a plan that exists but cannot be read decides no spawn: garbage, a
/// FIFO or a directory in place of goals.json denies with
/// `HOOK_PLAN_UNREADABLE`, the file and the fix (never hanging on the FIFO),
/// and counts nothing.
#[test]
fn an_unreadable_plan_denies_the_spawn() {
    let file = format!("{ULW}/{SID}/goals.json");
    for kind in ["garbage", "fifo", "directory"] {
        let h = HookRepo::new();
        match kind {
            "garbage" => {
                h.write(&file, "{ not json");
            }
            "fifo" => {
                h.repo.mkdir(&format!("{ULW}/{SID}"));
                assert!(
                    std::process::Command::new("mkfifo")
                        .arg(h.join(&file))
                        .status()
                        .unwrap()
                        .success()
                );
            }
            _ => {
                h.repo.mkdir(&file);
            }
        }
        let started = std::time::Instant::now();
        let reason = deny_reason(&spawn(&h, &worker_spawn(&h)));
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
        assert!(reason.contains("repair --session-id"), "{reason}");
        let d = h.diagnostics();
        assert_eq!(d.len(), 1, "{kind}: {d:?}");
        assert_eq!(d[0]["code"], "HOOK_PLAN_UNREADABLE");
        assert_eq!(d[0]["outcome"], "deny");
        assert!(counter(&h).is_none(), "{kind}");
        // Restored: the spawn is allowed and counted.
        if kind == "directory" {
            std::fs::remove_dir(h.join(&file)).unwrap();
        } else {
            std::fs::remove_file(h.join(&file)).unwrap();
        }
        gate_ready_plan(&h, "lazycodex");
        assert_allow(&spawn(&h, &worker_spawn(&h)));
        assert_eq!(counter(&h).unwrap()["count"], 1, "{kind}");
    }
}

/// I2: the gate preflight of a plan whose attempt directory cannot be
/// resolved is not skipped: the gate-review spawn is denied with
/// `HOOK_PLAN_UNREADABLE`; a worker spawn of the same plan still counts.
#[test]
fn an_unresolvable_attempt_directory_denies_the_gate_review_spawn() {
    let h = HookRepo::new();
    let mut g2 = goal("G002", "in_progress", &[("C001", "pass"), ("C002", "pass")]);
    g2["attemptDir"] = json!("../outside/a1");
    let mut p = plan(
        Some(SID),
        Some("G002"),
        vec![goal("G001", "complete", &[("C001", "pass")]), g2],
    );
    p["evidenceLayoutVersion"] = json!(2);
    p["gateRules"] = json!("lazycodex");
    h.write_plan(&format!("{ULW}/{SID}"), &p);
    let by_message = fixture(
        "codex/pre-tool-use-spawn/synth-gate-by-message.json",
        h.path(),
    );
    let reason = deny_reason(&spawn(&h, &by_message));
    assert!(
        reason.starts_with("evidence-gate: HOOK_PLAN_UNREADABLE"),
        "{reason}"
    );
    assert!(
        reason.contains(&format!("{ULW}/{SID}/goals.json")),
        "{reason}"
    );
    assert!(reason.contains("goal G002"), "{reason}");
    let d = h.diagnostics();
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        (d[0]["code"].as_str(), d[0]["outcome"].as_str()),
        (Some("HOOK_PLAN_UNREADABLE"), Some("deny"))
    );
    assert!(counter(&h).is_none());
    assert_allow(&spawn(&h, &worker_spawn(&h)));
    assert_eq!(counter(&h).unwrap()["count"], 1);
}

#[test]
fn an_invalid_limit_variable_uses_the_rules_limit() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    h.write_side(
        &format!("{ULW}/{SID}/spawn-count.json"),
        json!({"count": 60, "resetKey": "G002#a1"}).to_string(),
    );
    for bad in ["abc", "0", "-3", "1.5"] {
        let run = spawn_env(
            &h,
            "codex",
            &worker_spawn(&h),
            &[("OMO_SPAWN_FANOUT_LIMIT", bad)],
        );
        assert!(deny_reason(&run).contains("(61/60)"), "{bad}");
    }
    let d = h.diagnostics();
    assert_eq!(d.len(), 4);
    assert!(
        d.iter()
            .all(|x| x["code"] == "HOOK_ENV_INVALID" && x["level"] == "warn")
    );
    let run = spawn_env(
        &h,
        "codex",
        &worker_spawn(&h),
        &[("OMO_SPAWN_FANOUT_LIMIT", "61")],
    );
    assert_allow(&run);
}

#[test]
fn claude_task_spawns_count_and_reset_rules_apply() {
    let h = HookRepo::new();
    let sid = "3f1c0000-0000-4000-8000-00000000d004";
    h.write_plan(
        &format!("{ULW}/{sid}"),
        &plan(
            Some(sid),
            Some("G1"),
            vec![goal("G1", "in_progress", &[("C1", "pending")])],
        ),
    );
    let task = fixture(
        "claude-code/pre-tool-use-spawn/synth-task-spawn.json",
        h.path(),
    );
    assert_allow(&spawn_env(&h, "claude-code", &task, &[]));
    assert_eq!(
        h.read_side(&format!("{ULW}/{sid}/spawn-count.json"))
            .unwrap(),
        json!({"count": 1, "resetKey": "G1#a1"})
    );
    h.user_rules(r#"{"spawn": {"reset": "never", "fanout_limit": 1}}"#);
    assert_allow(&spawn_env(&h, "claude-code", &task, &[]));
    let reason = deny_reason(&spawn_env(&h, "claude-code", &task, &[]));
    assert!(reason.contains("(2/1)"), "{reason}");
}

/// The counter's lock is held past its wait: the spawn is denied, not
/// allowed uncounted (threat-model.md I2).
#[test]
fn a_busy_lock_denies_uncounted() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    h.user_rules(r#"{"hooks": {"lock_wait_ms": 30}}"#);
    let path = h.side_path(&format!("{ULW}/{SID}/.mutation.lock"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let lock = std::fs::File::create(&path).unwrap();
    lock.lock().unwrap();
    let reason = deny_reason(&spawn(&h, &worker_spawn(&h)));
    drop(lock);
    assert!(reason.contains("HOOK_LOCK_TIMEOUT"), "{reason}");
    assert_eq!(h.diag_codes(), ["HOOK_LOCK_TIMEOUT"]);
    assert!(counter(&h).is_none());
}

/// An unusable per-user counter denies with `HOOK_STATE_IO`.
#[test]
fn an_unusable_counter_denies_with_a_diagnostic() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    std::fs::create_dir_all(h.side_path(&format!("{ULW}/{SID}/spawn-count.json"))).unwrap();
    let reason = deny_reason(&spawn(&h, &worker_spawn(&h)));
    assert!(reason.contains("HOOK_STATE_IO"), "{reason}");
    assert_eq!(h.diag_codes(), ["HOOK_STATE_IO"]);
}

/// Attack: a FIFO lock, a directory counter or a reset counter
/// planted in the tree no longer switches the fan-out cap off.
#[test]
fn sabotaged_in_tree_state_does_not_switch_the_cap_off() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    let fifo = h.join(&format!("{ULW}/{SID}/.mutation.lock"));
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    h.write_side(
        &format!("{ULW}/{SID}/spawn-count.json"),
        json!({"count": 60, "resetKey": "G002#a1"}).to_string(),
    );
    h.write(
        &format!("{ULW}/{SID}/spawn-count.json"),
        json!({"count": 0, "resetKey": "G002#a1"}).to_string(),
    );
    let reason = deny_reason(&spawn(&h, &worker_spawn(&h)));
    assert!(reason.contains("fan-out cap is reached"), "{reason}");
}

/// Node parity (docs/differences.md#r-8): under `OMO_SPAWN_FANOUT_LIMIT=3` the three spawns
/// pass and the fourth is denied as `4/3`, the spawn it refuses; further
/// attempts keep naming the next spawn while the counter stays at the limit.
#[test]
fn the_cap_denial_names_the_refused_spawn_count_plus_one_over_the_limit() {
    let h = HookRepo::new();
    gate_ready_plan(&h, "lazycodex");
    let payload = worker_spawn(&h);
    let limit = [("OMO_SPAWN_FANOUT_LIMIT", "3")];
    for _ in 0..3 {
        assert_allow(&spawn_env(&h, "codex", &payload, &limit));
    }
    let reason = deny_reason(&spawn_env(&h, "codex", &payload, &limit));
    assert!(reason.contains("fan-out cap is reached (4/3)"), "{reason}");
    assert!(!reason.contains("(3/3)"), "{reason}");
    assert_eq!(counter(&h).unwrap()["count"], 3, "denials are not counted");
    let again = deny_reason(&spawn_env(&h, "codex", &payload, &limit));
    assert!(again.contains("(4/3)"), "{again}");
}
