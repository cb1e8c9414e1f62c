//! Goal-engine command line: invocation forms, help, the JSON envelope,
//! exit codes, argument rules and session scoping (goal-engine.md §1.2, §2.1, §4.1).

use crate::goals_support::*;
use serde_json::Value;

#[test]
fn help_lists_every_subcommand_and_new_flags() {
    let repo = Repo::new();
    for args in [vec!["help"], vec!["--help"], vec!["-h"], vec![]] {
        let r = eg(&repo, "ulw-loop", &args);
        assert_eq!(r.code, 0, "{args:?}");
        for word in [
            "evidence-gate ulw-loop",
            "create-goals",
            "status",
            "complete-goals",
            "criteria",
            "record-evidence",
            "checkpoint",
            "add-goal",
            "repair",
            "--no-advance",
            "--validation-batch-json",
            "--evidence-file",
            "--start-pending",
            "--accept-task-scoped-snapshot",
            "--session-id",
            "--lock-timeout-ms",
        ] {
            assert!(r.stdout.contains(word), "help lacks {word}:\n{}", r.stdout);
        }
    }
    let r = eg(&repo, "ultragoal", &["help"]);
    assert!(r.stdout.contains("evidence-gate ultragoal"), "{}", r.stdout);
    assert!(r.stdout.contains("--host-goal-json"));
    assert!(repo.snapshot().is_empty(), "help writes nothing");
}

#[test]
fn unknown_subcommand_prints_help_or_json_error() {
    let repo = Repo::new();
    let r = eg(&repo, "ulw-loop", &["frobnicate"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.contains("Usage:"));
    let e = expect_error(&ulw(&repo, &["frobnicate"]), "ULW_LOOP_SUBCOMMAND_UNKNOWN");
    assert_eq!(e["details"]["command"], "frobnicate");
}

#[cfg(unix)]
#[test]
fn multi_call_names_dispatch_to_their_profile() {
    let repo = Repo::new();
    let bin = crate::common::bin("evidence-gate");
    for name in ["omo-ulw-loop", "ulw", "omo", "omagy-ultragoal", "omagy"] {
        std::os::unix::fs::symlink(&bin, repo.join(name)).unwrap();
    }
    let run = |name: &str, args: &[&str]| {
        let mut cmd = std::process::Command::new(repo.join(name));
        crate::common::isolate_home(&mut cmd);
        cmd.args(args).current_dir(repo.path());
        for (k, v) in clean_env() {
            cmd.env(k, v);
        }
        let out = cmd.output().unwrap();
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let r = run(
        "omo-ulw-loop",
        &["create-goals", "--brief", "- a", "--json"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(repo.join(".omo/ulw-loop/goals.json").exists());
    let r = run("ulw", &["status", "--json"]);
    assert_eq!(r.json()["profile"], "ulw-loop");
    let r = run("omo", &["ulw-loop", "status", "--json"]);
    assert_eq!(r.json()["profile"], "ulw-loop");
    let r = run("omo", &["status", "--json"]);
    assert_eq!(r.json()["profile"], "ulw-loop");
    // ulw-loop and ultragoal are two persistence owners (goal-engine.md §9):
    // the second run in the same session needs the overlap override.
    let r = run(
        "omagy-ultragoal",
        &[
            "create-goals",
            "--brief",
            "- b",
            "--allow-workflow-overlap",
            "multi-call routing test",
            "--json",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(repo.join(".omagy/ultragoal/goals.json").exists());
    let r = run("omagy", &["ultragoal", "status", "--json"]);
    assert_eq!(r.json()["profile"], "ultragoal");
    // The parent command's own top level (R§3.1): alone it prints the help
    // and succeeds; an unknown word is named on stderr with exit 1.
    let r = run("omo", &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("Usage: omo"), "{}", r.stdout);
    let r = run("omo", &["frobnicate"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.starts_with("[omo] unknown command: frobnicate\n"),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("Usage: omo"));
    let r = run("omagy", &["frobnicate"]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.starts_with("[omagy] unknown command: frobnicate"));
    // The product's own commands still work under the parent name.
    let r = run("omo", &["schema", "evidence"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

#[test]
fn text_errors_go_to_stderr_with_the_display_name() {
    let repo = Repo::new();
    let r = eg(&repo, "ulw-loop", &["status"]);
    assert_eq!(r.code, 1);
    assert!(r.stdout.is_empty());
    assert!(
        r.stderr.starts_with("[ulw-loop] No ulw-loop plan found"),
        "{}",
        r.stderr
    );
    let r = eg(&repo, "ultragoal", &["status"]);
    assert!(
        r.stderr.starts_with("[ultragoal] No ultragoal plan found"),
        "{}",
        r.stderr
    );
}

#[test]
fn json_error_envelope_carries_code_message_details() {
    let repo = Repo::new();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_MISSING");
    assert_eq!(e["details"]["goalsPath"], ".omo/ulw-loop/goals.json");
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .contains("evidence-gate ulw-loop create-goals")
    );
}

#[test]
fn session_id_blank_is_required_and_dot_dot_is_invalid() {
    let repo = Repo::new();
    let e = expect_error(
        &ulw(&repo, &["status", "--session-id", " "]),
        "ULW_LOOP_SESSION_ID_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--session-id");
    expect_error(
        &ulw(&repo, &["help", "--session-id"]),
        "ULW_LOOP_SESSION_ID_REQUIRED",
    );
    let e = expect_error(
        &ulw(&repo, &["status", "--session-id", ".."]),
        "ULW_LOOP_SESSION_ID_INVALID",
    );
    assert_eq!(e["details"]["value"], "..");
    expect_error(
        &ulw(&repo, &["status", "--session-id=///"]),
        "ULW_LOOP_SESSION_ID_INVALID",
    );
}

#[test]
fn sessions_scope_state_and_env_is_a_fallback() {
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &["create-goals", "--brief", "- a", "--session-id", "../s1/"],
    ));
    assert!(repo.join(".omo/ulw-loop/s1/goals.json").exists());
    let p: Value =
        serde_json::from_slice(&std::fs::read(repo.join(".omo/ulw-loop/s1/goals.json")).unwrap())
            .unwrap();
    assert_eq!(p["sessionId"], "s1");
    let mut env = clean_env();
    env.retain(|(k, _)| *k != "CODEX_THREAD_ID");
    env.push(("CODEX_THREAD_ID", "s1"));
    let r = repo.run_env(
        "evidence-gate",
        &["ulw-loop", "status", "--json"],
        None,
        &env,
    );
    assert_eq!(r.code, 0, "{}", r.stdout);
    expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_MISSING");
}

#[test]
fn repeated_flag_with_different_values_conflicts() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(
            &repo,
            &["criteria", "--goal-id", "G001-a", "--goal-id", "G002"],
        ),
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(e["details"]["flags"][0], "--goal-id");
    expect_ok(&ulw(
        &repo,
        &["criteria", "--goal-id", "G001-a", "--goal-id=G001-a"],
    ));
}

#[test]
fn host_flag_and_alias_with_different_values_conflict() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    let e = expect_error(
        &ulw(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "blocked",
                "--evidence",
                "x",
                "--codex-goal-json",
                "{}",
                "--host-goal-json",
                "{\"a\":1}",
            ],
        ),
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(e["details"]["flags"][0], "--codex-goal-json");
}

#[test]
fn values_starting_with_dashes_need_the_equals_form() {
    let repo = repo_with_plan("- a");
    expect_error(
        &ulw(&repo, &["criteria", "--goal-id", "--x"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    expect_error(
        &ulw(&repo, &["criteria", "--goal-id=--x"]),
        "ULW_LOOP_GOAL_NOT_FOUND",
    );
}

#[test]
fn positional_brief_keeps_subcommand_words_and_double_dash_ends_flags() {
    let repo = Repo::new();
    let v = expect_ok(&eg(
        &repo,
        "ulw-loop",
        &[
            "create-goals",
            "--json",
            "status",
            "report",
            "--",
            "--json-like",
            "text",
        ],
    ));
    assert_eq!(
        v["plan"]["goals"][0]["objective"],
        "status report --json-like text"
    );
}

#[test]
fn unknown_flags_are_reported_as_warnings() {
    let repo = repo_with_plan("- a");
    let v = expect_ok(&ulw(&repo, &["status", "--frobnicate"]));
    let w = v["warnings"].as_array().unwrap();
    assert_eq!(w[0]["code"], "ARGUMENT_UNKNOWN");
    assert!(w[0]["message"].as_str().unwrap().contains("--frobnicate"));
}

#[test]
fn every_mutation_reports_revision_and_ledger_head() {
    let repo = Repo::new();
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a"]));
    assert_eq!(v["revision"], 1);
    assert_eq!(v["ledger"]["lastSeq"], 1);
    let head = v["ledger"]["head"].as_str().unwrap().to_owned();
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["ledger"]["head"], head.as_str());
    assert_eq!(s["ledger"]["consistency"], "ok");
    assert_eq!(s["ledger"]["mutationInProgress"], false);
    let v = expect_ok(&ulw(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert_eq!(v["revision"], 2);
    assert_eq!(v["ledger"]["lastSeq"], 2);
}

#[test]
fn schemas_print_for_every_goal_document() {
    let repo = Repo::new();
    for name in [
        "plan",
        "ledger-entry",
        "ledger-index",
        "profile",
        "blocker-rules",
    ] {
        let r = repo.run("evidence-gate", &["schema", name], None);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
        let v = r.json();
        assert!(v.is_object(), "{name}");
    }
}

#[test]
fn rules_file_that_fails_validation_is_rules_invalid() {
    let repo = Repo::new();
    repo.user_rules(r#"{"profiles":{"ulw-loop":{"stateDir":"../escape"}}}"#);
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_RULES_INVALID");
    assert_eq!(e["details"]["pointer"], "/profiles/ulw-loop/stateDir");
    repo.write("extra.json", r#"{"blockers":{"authWords":[]}}"#);
    std::fs::remove_file(repo.config.path().join("evidence-gate/rules.json")).unwrap();
    let e = expect_error(
        &ulw(&repo, &["status", "--rules", "extra.json"]),
        "ULW_LOOP_RULES_INVALID",
    );
    assert_eq!(e["details"]["pointer"], "/blockers/authWords");
    assert!(!repo.join(".omo").exists());
}

#[test]
fn profile_overrides_change_behaviour_without_code() {
    let repo = Repo::new();
    repo.user_rules(
        r#"{"profiles":{"ulw-loop":{"stateDir":".work/loop","criteria":{"seed":false,"requireNonEmpty":true,"seededMarkers":[]}}}}"#,
    );
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- a"]));
    assert_eq!(v["plan"]["goalsPath"], ".work/loop/goals.json");
    assert_eq!(
        v["plan"]["goals"][0]["successCriteria"],
        serde_json::json!([])
    );
}

#[test]
fn invalid_lock_timeout_is_reported() {
    let repo = repo_with_plan("- a");
    let e = expect_error(
        &ulw(&repo, &["status", "--lock-timeout-ms", "soon"]),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--lock-timeout-ms");
}

/// A plan above the size whose answer is freed off the answering thread:
/// the answer is whole (every goal, the trailing newline) and the exit code
/// is the command's, in JSON and in text mode.
#[test]
fn a_large_plans_answer_is_printed_whole_before_it_is_freed() {
    let repo = Repo::new();
    let brief: String = (1..=150).map(|i| format!("- part {i}\n")).collect();
    let created = ulw(&repo, &["create-goals", "--brief", &brief]);
    let v = expect_ok(&created);
    assert_eq!(v["plan"]["goals"].as_array().unwrap().len(), 150);
    for _ in 0..3 {
        let status = ulw(&repo, &["status"]);
        assert!(status.stdout.ends_with("}\n"), "{}", status.stdout);
        let v = expect_ok(&status);
        assert_eq!(v["plan"]["goals"].as_array().unwrap().len(), 150);
    }
    let text = eg(&repo, "ulw-loop", &["status"]);
    assert_eq!(text.code, 0, "{}", text.stderr);
    assert!(text.stdout.contains("150"), "{}", text.stdout);
}
