//! The `omx` profile: `evidence-gate omx ultragoal …` as a drop-in for
//! `omx ultragoal` (oh-my-codex 0.21.6), tested on state in OMX's own
//! format (`fixtures/omx/`, recorded from real runs) and on mixed runs
//! where one tool writes and the other continues.

use serde_json::{Value, json};

use crate::ci_support::{audit, findings};
use crate::goals_support::{Repo, Run, expect_error, expect_ok};
use crate::hooks_support::{
    HookRepo, assert_allow, block_reason, context_text, deny_reason, fixture as host_fixture,
};

const STATE: &str = ".omx/ultragoal";
const SECOND: &str = "G002-add-tests-for-the-parser";

fn fixture(name: &str) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/omx")
        .join(name)
}

/// A repository holding the OMX-written state `name` under `.omx/ultragoal`
/// and the recorded snapshots and gates at its root.
fn omx_repo(name: &str) -> Repo {
    let repo = Repo::new();
    fill(&repo, name);
    repo
}

fn fill(repo: &Repo, name: &str) {
    for f in ["brief.md", "goals.json", "ledger.jsonl"] {
        repo.write(
            &format!("{STATE}/{f}"),
            std::fs::read(fixture(name).join(f)).unwrap(),
        );
    }
    for f in [
        "codex-goal-active.json",
        "codex-goal-complete.json",
        "gate-strict.json",
        "gate-no-independent-review.json",
    ] {
        repo.write(f, std::fs::read(fixture(f)).unwrap());
    }
}

/// The environment of every run: no session or worker marker from the host.
fn env_with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = crate::goals_support::clean_env();
    env.extend([
        ("OMX_SESSION_ID", ""),
        ("OMX_TEAM_WORKER", ""),
        ("OMX_TEAM_INTERNAL_WORKER", ""),
    ]);
    env.extend_from_slice(extra);
    env
}

/// `evidence-gate omx ultragoal <args…> --json`.
fn omx(repo: &Repo, args: &[&str]) -> Run {
    omx_env(repo, args, &[])
}

fn omx_env(repo: &Repo, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["omx", "ultragoal"];
    all.extend_from_slice(args);
    all.push("--json");
    repo.run_env("evidence-gate", &all, None, &env_with(env))
}

fn ledger(repo: &Repo) -> Vec<Value> {
    std::fs::read_to_string(repo.join(&format!("{STATE}/ledger.jsonl")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `event` of every line, as an OMX reader sees the ledger.
fn events(repo: &Repo) -> Vec<String> {
    ledger(repo)
        .iter()
        .map(|e| {
            e["event"]
                .as_str()
                .expect("every line has `event`")
                .to_owned()
        })
        .collect()
}

fn plan(repo: &Repo) -> Value {
    serde_json::from_slice(&std::fs::read(repo.join(&format!("{STATE}/goals.json"))).unwrap())
        .unwrap()
}

fn goal<'p>(plan: &'p Value, id: &str) -> &'p Value {
    plan["goals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["id"] == id)
        .unwrap()
}

/// `checkpoint --goal-id <the second story> --status complete` with `flags`.
fn complete_second(repo: &Repo, flags: &[&str]) -> Run {
    let mut args = vec!["checkpoint", "--goal-id", SECOND, "--status", "complete"];
    args.extend_from_slice(flags);
    omx(repo, &args)
}

fn final_checkpoint(repo: &Repo, gate: &str, strict: bool) -> Run {
    let mut flags = vec![
        "--evidence",
        "tests added",
        "--codex-goal-json",
        "codex-goal-complete.json",
        "--quality-gate-json",
        gate,
    ];
    if strict {
        flags.push("--strict");
    }
    complete_second(repo, &flags)
}

#[test]
fn omx_ultragoal_and_profile_flag_read_omx_written_state() {
    let repo = omx_repo("midrun");
    let a = expect_ok(&omx(&repo, &["status"]));
    assert_eq!(a["profile"], "omx");
    // OMX's summary keys sit next to ours.
    let s = &a["summary"];
    assert_eq!(
        (&s["total"], &s["complete"], &s["pending"], &s["inProgress"]),
        (&json!(2), &json!(1), &json!(1), &json!(0)),
        "{s}"
    );
    assert_eq!(s["aggregateComplete"], false);
    assert_eq!(s["artifactComplete"], false);
    // Without a snapshot OMX prints `reconciliation: null`.
    assert!(a.get("reconciliation").is_some_and(Value::is_null), "{a}");
    assert_eq!(s["needsUserDecision"], 0);
    let b = repo.run_env(
        "evidence-gate",
        &["ultragoal", "--profile", "omx", "status", "--json"],
        None,
        &env_with(&[]),
    );
    assert_eq!(expect_ok(&b)["summary"], a["summary"]);
    let c = repo.run_env(
        "evidence-gate",
        &["ultragoal", "--profile=omx", "status", "--json"],
        None,
        &env_with(&[]),
    );
    assert_eq!(expect_ok(&c)["profile"], "omx");
    // The ultragoal profile itself keeps its own state directory.
    let d = repo.run_env(
        "evidence-gate",
        &["ultragoal", "status", "--json"],
        None,
        &env_with(&[]),
    );
    expect_error(&d, "ULW_LOOP_PLAN_MISSING");
}

#[test]
fn omx_aliases_start_resume_and_write_omx_vocabulary() {
    let repo = omx_repo("midrun");
    let before = ledger(&repo).len();
    let started = expect_ok(&omx(&repo, &["next"]));
    assert_eq!(started["goal"]["id"], SECOND);
    assert_eq!(started["resumed"], false);
    // `instruction` is the handoff text, as OMX prints it.
    assert!(started["instruction"].as_str().unwrap().contains(SECOND));
    assert!(started["instructionPayload"]["objective"].is_string());
    for alias in ["start-next", "complete", "complete-goals"] {
        let r = expect_ok(&omx(&repo, &[alias]));
        assert_eq!(r["resumed"], true, "{alias}: {r}");
        assert_eq!(r["goal"]["id"], SECOND);
    }
    let ev = events(&repo);
    assert_eq!(
        &ev[before..],
        [
            "goal_started",
            "goal_resumed",
            "goal_resumed",
            "goal_resumed"
        ]
    );
    // Every line we write carries OMX's `ts`/`event` and our chain fields.
    for e in &ledger(&repo)[before..] {
        assert_eq!(e["ts"], e["at"], "{e}");
        assert_eq!(e["event"], e["kind"], "{e}");
        assert!(e["seq"].is_u64() && e["prev"].is_string(), "{e}");
    }
    // Resuming writes no plan.
    assert_eq!(plan(&repo)["revision"], 1);
}

#[test]
fn create_alias_makes_an_omx_readable_plan() {
    let repo = Repo::new();
    let r = expect_ok(&omx(
        &repo,
        &["create", "--brief", "- Build the parser\n- Add tests"],
    ));
    assert_eq!(r["summary"]["total"], 2);
    let p = plan(&repo);
    assert_eq!(p["version"], 1);
    assert_eq!(p["codexGoalMode"], "aggregate");
    assert_eq!(
        p["codexObjective"],
        "Complete the durable ultragoal plan in .omx/ultragoal/goals.json, including later accepted/appended stories, under the original brief constraints; use .omx/ultragoal/ledger.jsonl as the audit trail."
    );
    assert_eq!(events(&repo), ["plan_created"]);
    let added = expect_ok(&omx(
        &repo,
        &[
            "add-goal",
            "--title",
            "Docs",
            "--objective",
            "Document the parser",
        ],
    ));
    assert_eq!(added["addedGoal"]["title"], "Docs");
    assert_eq!(added["summary"]["total"], 3);
    let steered = expect_ok(&omx(
        &repo,
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "seen",
            "--rationale",
            "note",
        ],
    ));
    assert_eq!(steered["summary"], steered["planSummary"]);
    assert_eq!(steered["summary"]["pending"], 3);
    // A second create refuses to overwrite, as OMX does.
    expect_error(
        &omx(&repo, &["create", "--brief", "- other"]),
        "ULW_LOOP_PLAN_EXISTS",
    );
}

#[test]
fn we_write_omx_reads_every_field_it_wrote() {
    let repo = omx_repo("midrun");
    let theirs = plan(&repo);
    expect_ok(&omx(&repo, &["next"]));
    let ours = plan(&repo);
    // Additive only: every plan key OMX wrote is still there with its type.
    for (k, v) in theirs.as_object().unwrap() {
        let mine = &ours[k];
        assert_eq!(
            std::mem::discriminant(v),
            std::mem::discriminant(mine),
            "plan key {k}"
        );
    }
    for g in theirs["goals"].as_array().unwrap() {
        let id = g["id"].as_str().unwrap();
        for (k, v) in g.as_object().unwrap() {
            let mine = &goal(&ours, id)[k];
            assert_eq!(
                std::mem::discriminant(v),
                std::mem::discriminant(mine),
                "goal {id} key {k}"
            );
        }
    }
    assert_eq!(ours["activeGoalId"], SECOND);
    assert_eq!(goal(&ours, SECOND)["status"], "in_progress");
    assert_eq!(goal(&ours, SECOND)["attempt"], 1);
}

#[test]
fn blocked_is_a_non_terminal_note() {
    let repo = omx_repo("midrun");
    // Only an in-progress goal takes a blocker.
    let e = expect_error(
        &omx(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                SECOND,
                "--status",
                "blocked",
                "--evidence",
                "waiting for CI",
            ],
        ),
        "ULW_LOOP_TRANSITION_INVALID",
    );
    assert_eq!(e["details"]["allowedFrom"], json!(["in_progress"]), "{e}");
    expect_ok(&omx(&repo, &["next"]));
    let r = expect_ok(&omx(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            SECOND,
            "--status",
            "blocked",
            "--evidence",
            "waiting for CI",
        ],
    ));
    assert_eq!(r["goal"]["status"], "in_progress");
    let p = plan(&repo);
    assert_eq!(p["activeGoalId"], SECOND);
    assert_eq!(goal(&p, SECOND)["status"], "in_progress");
    let last = ledger(&repo).pop().unwrap();
    assert_eq!(
        (&last["event"], &last["status"]),
        (&json!("goal_blocked"), &json!("in_progress"))
    );
    // The goal is still the one to work on.
    assert_eq!(expect_ok(&omx(&repo, &["next"]))["resumed"], true);
}

#[test]
fn strict_final_gate_requires_independent_review_and_invariants() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    // Attack: a self-approved review under --strict.
    let e = expect_error(
        &final_checkpoint(&repo, "gate-no-independent-review.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    let text = e.to_string();
    assert!(text.contains("codeReview.independentReview"), "{text}");
    assert!(text.contains("architectureInvariantGate"), "{text}");
    // Attack: the code-reviewer role is the author's own lane.
    let mut forged: Value =
        serde_json::from_slice(&std::fs::read(repo.join("gate-strict.json")).unwrap()).unwrap();
    forged["codeReview"]["independentReview"]["codeReviewer"]["agentRole"] = json!("executor");
    repo.write("forged.json", serde_json::to_vec(&forged).unwrap());
    let e = expect_error(
        &final_checkpoint(&repo, "forged.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert!(e.to_string().contains("agentRole"), "{e}");
    // Attack: an unproved invariant.
    let mut unproved = forged.clone();
    unproved["codeReview"]["independentReview"]["codeReviewer"]["agentRole"] =
        json!("code-reviewer");
    unproved["architectureInvariantGate"]["invariants"][0]["status"] = json!("unproved");
    repo.write("unproved.json", serde_json::to_vec(&unproved).unwrap());
    expect_error(
        &final_checkpoint(&repo, "unproved.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert_eq!(
        plan(&repo)["revision"],
        1,
        "no rejected gate writes the plan"
    );
    // Honest use: the gate OMX's --strict accepts passes ours.
    let ok = expect_ok(&final_checkpoint(&repo, "gate-strict.json", true));
    assert_eq!(ok["summary"]["aggregateComplete"], true);
    assert_eq!(ok["summary"]["artifactComplete"], true);
    let p = plan(&repo);
    assert_eq!(p["aggregateCompletion"]["status"], "complete");
    let ev = events(&repo);
    assert_eq!(
        &ev[ev.len() - 2..],
        ["goal_completed", "aggregate_completed"]
    );
    // The audit accepts the run: OMX's lines are the legacy prefix.
    let a = audit(&repo, &[]);
    assert_eq!(a.code, 0, "{}{}", a.stdout, a.stderr);
    assert!(
        findings(&a).iter().any(|f| f.0 == "LEDGER_LEGACY_PREFIX"),
        "{}",
        a.stdout
    );
}

#[test]
fn print_template_strict_shows_the_strict_sections() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    let plain = expect_ok(&omx(
        &repo,
        &["checkpoint", "--print-template", "--goal-id", SECOND],
    ));
    assert_eq!(plain["rules"], "ultragoal");
    assert!(plain["qualityGateTemplate"]["architectureInvariantGate"].is_null());
    let strict = expect_ok(&omx(
        &repo,
        &[
            "checkpoint",
            "--print-template",
            "--goal-id",
            SECOND,
            "--strict",
        ],
    ));
    assert_eq!(strict["rules"], "omx-strict");
    let t = &strict["qualityGateTemplate"];
    assert_eq!(t["aiSlopCleaner"]["status"], "<replace:passed>");
    let ir = &t["codeReview"]["independentReview"];
    assert_eq!(ir["codeReviewer"]["agentRole"], "code-reviewer");
    assert_eq!(ir["architect"]["agentRole"], "architect");
    assert_eq!(
        t["architectureInvariantGate"]["invariants"][0]["status"],
        "proved"
    );
    // The unfilled template is rejected: every placeholder is a finding.
    repo.write("template.json", serde_json::to_vec(t).unwrap());
    expect_error(
        &final_checkpoint(&repo, "template.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
}

#[test]
fn without_strict_the_ultragoal_gate_still_applies() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    // OMX completes without a gate unless --strict; we never do.
    let no_gate = complete_second(
        &repo,
        &[
            "--evidence",
            "tests added",
            "--codex-goal-json",
            "codex-goal-complete.json",
        ],
    );
    expect_error(&no_gate, "ULW_LOOP_QUALITY_GATE_INVALID");
    // The plain gate (no independent review) passes the ordinary rules.
    expect_ok(&final_checkpoint(
        &repo,
        "gate-no-independent-review.json",
        false,
    ));
}

#[test]
fn codex_goal_snapshot_is_required_to_complete() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    let r = complete_second(
        &repo,
        &[
            "--evidence",
            "done",
            "--quality-gate-json",
            "gate-strict.json",
        ],
    );
    let e = expect_error(&r, "ULW_LOOP_ARGUMENT_MISSING");
    assert_eq!(e["details"]["flag"], "--codex-goal-json");
}

#[test]
fn omx_team_worker_markers_refuse_mutations() {
    let repo = omx_repo("midrun");
    for var in ["OMX_TEAM_WORKER", "OMX_TEAM_INTERNAL_WORKER"] {
        for sub in ["next", "start-next", "create"] {
            let r = omx_env(&repo, &[sub, "--brief", "- x"], &[(var, "team-a/worker-2")]);
            let e = expect_error(&r, "ULW_LOOP_TEAM_WORKER_FORBIDDEN");
            assert_eq!(e["details"]["marker"], format!("env:{var}"), "{e}");
        }
        // Read-only commands stay open to workers.
        expect_ok(&omx_env(&repo, &["status"], &[(var, "team-a/worker-2")]));
    }
    // Honest use: a blank marker is no worker.
    expect_ok(&omx_env(&repo, &["next"], &[("OMX_TEAM_WORKER", "  ")]));
}

#[test]
fn omx_session_id_authority() {
    let repo = omx_repo("midrun");
    repo.write(
        ".omx/state/session.json",
        r#"{"session_id":"sess-1","cwd":"/x"}"#,
    );
    // Attack: another session mutates the run.
    let e = expect_error(
        &omx_env(&repo, &["next"], &[("OMX_SESSION_ID", "sess-2")]),
        "ULW_LOOP_SESSION_AUTHORITY",
    );
    assert_eq!(e["details"]["env"], "OMX_SESSION_ID");
    assert_eq!(e["details"]["pointer"], ".omx/state/session.json");
    assert_eq!(plan(&repo)["goals"][1]["status"], "pending");
    // Read-only commands need no authority.
    expect_ok(&omx_env(
        &repo,
        &["status"],
        &[("OMX_SESSION_ID", "sess-2")],
    ));
    // Honest use: the bound session, or no variable, mutates.
    expect_ok(&omx_env(&repo, &["next"], &[("OMX_SESSION_ID", "sess-1")]));
    expect_ok(&omx_env(&repo, &["next"], &[]));
    // An unusable pointer refuses every mutation.
    repo.write(".omx/state/session.json", "{not json");
    expect_error(
        &omx_env(&repo, &["next"], &[]),
        "ULW_LOOP_SESSION_AUTHORITY",
    );
    repo.write(".omx/state/session.json", r#"{"session_id":"  "}"#);
    expect_error(
        &omx_env(&repo, &["next"], &[]),
        "ULW_LOOP_SESSION_AUTHORITY",
    );
    // Without a pointer, a set variable refuses only a new run.
    let fresh = Repo::new();
    let e = expect_error(
        &omx_env(
            &fresh,
            &["create-goals", "--brief", "- a"],
            &[("OMX_SESSION_ID", "sess-1")],
        ),
        "ULW_LOOP_SESSION_AUTHORITY",
    );
    assert!(e["message"].as_str().unwrap().contains("not bound"), "{e}");
    assert!(!fresh.join(STATE).exists());
    let pointerless = omx_repo("midrun");
    expect_ok(&omx_env(
        &pointerless,
        &["next"],
        &[("OMX_SESSION_ID", "sess-1")],
    ));
}

#[test]
fn review_blockers_record_final_review_failed_first() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    let before = ledger(&repo).len();
    let r = expect_ok(&omx(
        &repo,
        &[
            "record-review-blockers",
            "--goal-id",
            SECOND,
            "--title",
            "Fix review findings",
            "--objective",
            "Address the reviewer's two findings",
            "--evidence",
            "REQUEST CHANGES: parser leaks a handle",
            "--codex-goal-json",
            "codex-goal-active.json",
        ],
    ));
    assert_eq!(r["addedGoal"], r["goal"], "OMX's key for the new goal");
    assert_eq!(r["blockedGoal"]["id"], SECOND);
    let ev = events(&repo);
    assert_eq!(ev[before], "final_review_failed", "{ev:?}");
    assert!(ev[before..].contains(&"goal_review_blocked".to_owned()));
    assert!(ev[before..].contains(&"goal_added".to_owned()));
    assert_eq!(goal(&plan(&repo), SECOND)["status"], "review_blocked");
}

/// OMX's reader counts repeated authorization blockers by
/// `{goalId, event ∈ goal_failed|goal_needs_user_decision, blockerSignature}`.
fn omx_blocker_count(repo: &Repo, goal_id: &str, signature: &str) -> usize {
    ledger(repo)
        .iter()
        .filter(|e| {
            e["goalId"] == goal_id
                && (e["event"] == "goal_failed" || e["event"] == "goal_needs_user_decision")
                && e["blockerSignature"] == signature
        })
        .count()
}

#[test]
fn blocker_counting_spans_both_tools() {
    let repo = omx_repo("midrun");
    let evidence = "GHCR pull failed: 401 unauthorized, read:packages token missing";
    let mut signature = String::new();
    for n in 1..=2 {
        expect_ok(&omx(&repo, &["next", "--retry-failed"]));
        let r = expect_ok(&omx(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                SECOND,
                "--status",
                "failed",
                "--evidence",
                evidence,
            ],
        ));
        signature = r["goal"]["blockerSignature"].as_str().unwrap().to_owned();
        assert_eq!(omx_blocker_count(&repo, SECOND, &signature), n);
    }
    assert_eq!(
        signature,
        "GHCR_PULL_ACCESS:HTTP_401_ANONYMOUS+HTTP_403_NO_READ_PACKAGES:GHCR_VISIBILITY_OR_CREDENTIAL_REQUIRED"
    );
    // The recorded mixed run: OMX wrote the third failure after our two and
    // escalated on the count of all three.
    let mixed = omx_repo("mixed-blockers");
    assert_eq!(omx_blocker_count(&mixed, SECOND, &signature), 3);
    assert_eq!(goal(&plan(&mixed), SECOND)["status"], "needs_user_decision");
}

#[test]
fn omx_writes_after_our_chain_are_caught_and_adoptable() {
    let repo = omx_repo("mixed-blockers");
    // OMX rewrote goals.json and appended unchained lines after our chain:
    // the plan no longer matches its ledger.
    let s = omx(&repo, &["status"]);
    assert_eq!(s.code, 1, "{}", s.stdout);
    assert_eq!(
        s.json()["ledger"]["binding"]["codes"],
        json!(["PLAN_TAMPERED"])
    );
    expect_error(&omx(&repo, &["next"]), "ULW_LOOP_PLAN_TAMPERED");
    let codes: Vec<String> = findings(&audit(&repo, &[]))
        .into_iter()
        .map(|f| f.0)
        .collect();
    assert!(codes.contains(&"PLAN_TAMPERED".to_owned()), "{codes:?}");
    assert!(
        codes.contains(&"LEDGER_FOREIGN_RECORD".to_owned()),
        "{codes:?}"
    );
    // Adopting OMX's plan on the record continues the run.
    expect_ok(&omx(
        &repo,
        &[
            "repair",
            "--accept-tampered",
            "--rationale",
            "omx ultragoal recorded the third failure",
        ],
    ));
    let s = expect_ok(&omx(&repo, &["status"]));
    assert_eq!(s["summary"]["needsUserDecision"], 1);
    let done = expect_ok(&omx(&repo, &["next", "--retry-failed"]));
    assert_eq!(done["state"], "blocked_on_user", "{done}");
}

#[test]
fn audit_reads_wholly_omx_written_runs_as_legacy() {
    let repo = omx_repo("complete");
    let strict = audit(&repo, &[]);
    assert_eq!(strict.code, 1, "{}", strict.stdout);
    let codes: Vec<String> = findings(&strict).into_iter().map(|f| f.0).collect();
    assert!(
        codes.contains(&"COMPLETION_UNBACKED".to_owned()),
        "{codes:?}"
    );
    let legacy = audit(&repo, &["--allow-legacy"]);
    assert_eq!(legacy.code, 0, "{}{}", legacy.stdout, legacy.stderr);
    // Our status reads the completed OMX run as complete.
    let s = expect_ok(&omx(&repo, &["status"]));
    assert_eq!(s["summary"]["aggregateComplete"], true);
    assert_eq!(s["summary"]["artifactComplete"], true);
}

#[test]
fn help_lists_the_omx_aliases_and_strict() {
    let repo = Repo::new();
    let r = repo.run_env(
        "evidence-gate",
        &["omx", "ultragoal", "help"],
        None,
        &env_with(&[]),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    for word in [
        "start-next",
        "--strict",
        "--codex-goal-json",
        ".omx/ultragoal",
    ] {
        assert!(r.stdout.contains(word), "{word}: {}", r.stdout);
    }
}

#[test]
fn omx_steer_marker_worker_marker_and_stop_resume_in_the_hooks() {
    let h = HookRepo::new();
    // A loaded machine must not turn the hooks' watchdog into an allow.
    h.user_rules(r#"{"hooks": {"deadline_ms": 60000}}"#);
    fill(&h.repo, "midrun");
    let env = env_with(&[]);
    // A run only OMX has written stays OMX's: our Stop hook leaves it alone.
    assert_allow(&h.hook("stop", &["--host", "codex"], &h.codex_stop("s1"), &env));
    expect_ok(&omx(&h.repo, &["next"]));
    let directive = r#"OMX_ULTRAGOAL_STEER: {"kind":"annotate_ledger","evidence":"user asked","rationale":"record"}"#;
    let p = h.codex_event("UserPromptSubmit", "s1", json!({ "prompt": directive }));
    // A team worker's prompt never steers the leader's plan.
    let worker = env_with(&[("OMX_TEAM_INTERNAL_WORKER", "team-a/worker-1")]);
    let before = ledger(&h.repo).len();
    let text = context_text(&h.hook("user-prompt-submit", &["--host", "codex"], &p, &worker));
    assert!(
        text.contains("ignored") && text.contains("OMX_TEAM_INTERNAL_WORKER"),
        "{text}"
    );
    assert_eq!(ledger(&h.repo).len(), before);
    // The leader's marker applies to the unscoped OMX run.
    let text = context_text(&h.hook("user-prompt-submit", &["--host", "codex"], &p, &env));
    assert_eq!(
        text,
        "evidence-gate steering: accepted annotate_ledger (source user_prompt_submit)"
    );
    let last = ledger(&h.repo).pop().unwrap();
    assert_eq!(
        (&last["event"], &last["kind"]),
        (&json!("steering_accepted"), &json!("steering_accepted"))
    );
    // The Stop hook resumes the unfinished run with our commands.
    let reason = block_reason(&h.hook("stop", &["--host", "codex"], &h.codex_stop("s1"), &env));
    assert!(reason.contains(SECOND), "{reason}");
    assert!(
        reason.contains("evidence-gate omx ultragoal status --json"),
        "{reason}"
    );
}

#[test]
fn the_tool_guard_denies_a_workers_omx_mutations_and_passes_reads() {
    let h = HookRepo::new();
    let worker = host_fixture(
        "codex/pre-tool-use/synth-worker-shell-checkpoint.json",
        h.path(),
    );
    let guard = |command: &str, env: &[(&str, &str)]| {
        let mut p = worker.clone();
        p["tool_input"] = json!({ "command": command });
        h.hook("pre-tool-use", &["--host", "codex"], &p, &env_with(env))
    };
    for command in [
        "omx ultragoal checkpoint --goal-id G002 --status complete --evidence x",
        "omx ultragoal next",
        "omx ultragoal start-next",
        "evidence-gate omx ultragoal create --brief x",
        "evidence-gate ultragoal --profile omx complete",
        "cd sub && evidence-gate omx ultragoal steer --kind annotate_ledger",
    ] {
        let reason = deny_reason(&guard(command, &[]));
        assert!(reason.contains("changes goal state"), "{command}: {reason}");
    }
    for command in [
        "omx ultragoal status --json",
        "evidence-gate omx ultragoal status",
        "omx ultragoal checkpoint --print-template --goal-id G002",
    ] {
        assert_allow(&guard(command, &[]));
    }
    // On a host payload without agent fields, OMX's worker variables mark
    // the worker; the leader passes.
    let mut leader = worker.clone();
    leader.as_object_mut().unwrap().remove("agent_type");
    leader.as_object_mut().unwrap().remove("agent_id");
    leader["tool_input"] = json!({ "command": "omx ultragoal next" });
    assert_allow(&h.hook(
        "pre-tool-use",
        &["--host", "codex"],
        &leader,
        &env_with(&[]),
    ));
    let run = h.hook(
        "pre-tool-use",
        &["--host", "codex"],
        &leader,
        &env_with(&[("OMX_TEAM_WORKER", "team-a/worker-3")]),
    );
    assert!(deny_reason(&run).contains("env:OMX_TEAM_WORKER"));
}

// ---- A project nested in a git repository (`apps/web` below the worktree root).

const WEB: &str = "apps/web";

fn recorded(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name)).unwrap()).unwrap()
}

/// A repository whose git worktree root holds `.git`, with the recorded
/// snapshots and gates in the nested project `apps/web`.
fn nested_repo() -> Repo {
    let repo = Repo::new();
    repo.mkdir(".git");
    for f in [
        "codex-goal-active.json",
        "codex-goal-complete.json",
        "codex-goal-nested-active.json",
        "codex-goal-nested-complete.json",
        "gate-strict.json",
    ] {
        repo.write(&format!("{WEB}/{f}"), std::fs::read(fixture(f)).unwrap());
    }
    repo
}

/// Copies the OMX-written state `name` into `<dir>/.omx/ultragoal`.
fn fill_at(repo: &Repo, dir: &str, name: &str) {
    for f in ["brief.md", "goals.json", "ledger.jsonl"] {
        repo.write(
            &format!("{dir}/{STATE}/{f}"),
            std::fs::read(fixture(name).join(f)).unwrap(),
        );
    }
}

/// `evidence-gate omx ultragoal <args…> --json`, run in `dir`.
fn omx_in(repo: &Repo, dir: &str, args: &[&str]) -> Run {
    omx_in_env(repo, dir, args, &[])
}

fn omx_in_env(repo: &Repo, dir: &str, args: &[&str], extra: &[(&str, &str)]) -> Run {
    let mut all = vec!["omx", "ultragoal"];
    all.extend_from_slice(args);
    all.push("--json");
    let config = repo.config.path().to_str().unwrap().to_owned();
    let mut env = env_with(extra);
    env.push(("XDG_CONFIG_HOME", &config));
    crate::common::run_in(&repo.join(dir), "evidence-gate", &all, None, &env)
}

fn plan_at(repo: &Repo, dir: &str) -> Value {
    serde_json::from_slice(&std::fs::read(repo.join(&format!("{dir}/{STATE}/goals.json"))).unwrap())
        .unwrap()
}

fn ledger_at(repo: &Repo, dir: &str) -> Vec<Value> {
    std::fs::read_to_string(repo.join(&format!("{dir}/{STATE}/ledger.jsonl")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `{id, title, objective}` of every goal.
fn goal_texts(plan: &Value) -> Vec<Value> {
    plan["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| json!([g["id"], g["title"], g["objective"]]))
        .collect()
}

fn snapshot_objective(name: &str) -> Value {
    recorded(name)["goal"]["objective"].clone()
}

#[test]
fn nested_project_names_its_state_from_the_worktree_root_as_omx_does() {
    let repo = nested_repo();
    repo.write(
        &format!("{WEB}/brief.md"),
        std::fs::read(fixture("nested/brief.md")).unwrap(),
    );
    let theirs = recorded("nested-create.json");
    let created = expect_ok(&omx_in(
        &repo,
        WEB,
        &["create-goals", "--brief-file", "brief.md"],
    ));
    let ours = plan_at(&repo, WEB);
    // The state lives in the directory the command ran in, as OMX keeps it.
    assert!(!repo.join(STATE).exists());
    for key in [
        "statePathPrefix",
        "codexObjective",
        "briefPath",
        "goalsPath",
        "ledgerPath",
        "codexGoalMode",
    ] {
        assert_eq!(ours[key], theirs["plan"][key], "{key}");
    }
    assert_eq!(ours["statePathPrefix"], WEB);
    assert_eq!(goal_texts(&ours), goal_texts(&theirs["plan"]));
    assert_eq!(created["summary"]["total"], theirs["summary"]["total"]);
    // The objective is the one the Codex goal of the recorded run carries.
    assert_eq!(
        ours["codexObjective"],
        snapshot_objective("codex-goal-nested-active.json")
    );

    // The aggregate handoff names the plan and ledger the same way.
    let next = expect_ok(&omx_in(&repo, WEB, &["next"]));
    let text = next["instruction"].as_str().unwrap();
    let recorded_next = recorded("nested-next.json");
    for line in recorded_next["instruction"].as_str().unwrap().lines() {
        if line.starts_with("Plan: ") || line.starts_with("Ledger: ") {
            assert!(text.lines().any(|l| l == line), "{line}\n{text}");
        }
    }
    assert_eq!(
        next["instructionPayload"]["objective"],
        ours["codexObjective"]
    );
    expect_ok(&omx_in(
        &repo,
        WEB,
        &[
            "checkpoint",
            "--goal-id",
            "G001-build-the-parser",
            "--status",
            "complete",
            "--evidence",
            "parser built, tests pass",
            "--codex-goal-json",
            "codex-goal-nested-active.json",
        ],
    ));
    // The objective OMX's status accepted on a run evidence-gate wrote.
    let omx_read = recorded("nested-omx-status-of-ours.json");
    assert_eq!(omx_read["reconciliation"]["ok"], true);
    let ours = plan_at(&repo, WEB);
    for key in ["statePathPrefix", "codexObjective", "codexGoalMode"] {
        assert_eq!(ours[key], omx_read["plan"][key], "{key}");
    }
}

#[test]
fn nested_project_refuses_a_snapshot_of_the_unprefixed_objective() {
    let repo = nested_repo();
    expect_ok(&omx_in(
        &repo,
        WEB,
        &["create", "--brief", "- Build the parser\n- Add tests"],
    ));
    expect_ok(&omx_in(&repo, WEB, &["next"]));
    // OMX refused this snapshot in the recorded run: the Codex goal of a run
    // at the worktree root is a different goal.
    let s = expect_ok(&omx_in(
        &repo,
        WEB,
        &["status", "--codex-goal-json", "codex-goal-active.json"],
    ));
    assert_eq!(s["reconciliation"]["ok"], false, "{s}");
    assert!(
        s["reconciliation"]["errors"][0]
            .as_str()
            .unwrap()
            .starts_with("Codex goal objective mismatch"),
        "{s}"
    );
    let e = expect_error(
        &omx_in(
            &repo,
            WEB,
            &[
                "checkpoint",
                "--goal-id",
                "G001-build-the-parser",
                "--status",
                "complete",
                "--evidence",
                "parser built",
                "--codex-goal-json",
                "codex-goal-active.json",
            ],
        ),
        "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
    );
    assert_eq!(
        e["details"]["expectedObjective"],
        snapshot_objective("codex-goal-nested-active.json")
    );
    assert_eq!(plan_at(&repo, WEB)["goals"][0]["status"], "in_progress");
    // The honest snapshot completes the story.
    expect_ok(&omx_in(
        &repo,
        WEB,
        &[
            "checkpoint",
            "--goal-id",
            "G001-build-the-parser",
            "--status",
            "complete",
            "--evidence",
            "parser built",
            "--codex-goal-json",
            "codex-goal-nested-active.json",
        ],
    ));
}

#[test]
fn omx_written_nested_run_is_continued_from_its_directory_only() {
    let repo = nested_repo();
    fill_at(&repo, WEB, "nested");
    // From the worktree root and from a subdirectory there is no plan, as for
    // OMX (its state is per directory).
    repo.mkdir(&format!("{WEB}/src"));
    expect_error(&omx_in(&repo, ".", &["status"]), "ULW_LOOP_PLAN_MISSING");
    expect_error(
        &omx_in(&repo, &format!("{WEB}/src"), &["status"]),
        "ULW_LOOP_PLAN_MISSING",
    );
    let s = expect_ok(&omx_in(
        &repo,
        WEB,
        &[
            "status",
            "--codex-goal-json",
            "codex-goal-nested-active.json",
        ],
    ));
    assert_eq!(
        (&s["summary"]["complete"], &s["summary"]["pending"]),
        (&json!(1), &json!(1))
    );
    let before = ledger_at(&repo, WEB).len();
    let started = expect_ok(&omx_in(&repo, WEB, &["next"]));
    assert_eq!(started["goal"]["id"], SECOND);
    // Nothing to migrate: the recorded objective already names the prefix.
    assert_eq!(ledger_at(&repo, WEB)[before]["event"], "goal_started");
    let done = expect_ok(&omx_in(
        &repo,
        WEB,
        &[
            "checkpoint",
            "--goal-id",
            SECOND,
            "--status",
            "complete",
            "--evidence",
            "tests added",
            "--codex-goal-json",
            "codex-goal-nested-complete.json",
            "--quality-gate-json",
            "gate-strict.json",
            "--strict",
        ],
    ));
    assert_eq!(done["summary"]["aggregateComplete"], true, "{done}");
    // The audit of the project directory accepts the run.
    let a = audit(&repo, &["--root", WEB]);
    assert_eq!(a.code, 0, "{}{}", a.stdout, a.stderr);
}

#[test]
fn a_root_objective_in_a_nested_project_is_migrated_as_omx_migrates_it() {
    let repo = nested_repo();
    // A run OMX wrote at a worktree root, then nested in a repository.
    fill_at(&repo, WEB, "midrun");
    let root_objective = snapshot_objective("codex-goal-active.json");
    let original = plan_at(&repo, WEB);
    assert_eq!(original["codexObjective"], root_objective);
    // A read migrates nothing on disk.
    let snap = repo.snapshot();
    let s = expect_ok(&omx_in(&repo, WEB, &["status"]));
    assert_eq!(s["summary"]["pending"], 1);
    assert_eq!(repo.snapshot(), snap, "status wrote");
    // The next mutation migrates, with the line OMX writes.
    let before = ledger_at(&repo, WEB).len();
    expect_ok(&omx_in(&repo, WEB, &["next"]));
    let ours = plan_at(&repo, WEB);
    let omx_migrated = plan_at_fixture("nested-migrated");
    for key in ["statePathPrefix", "codexObjective", "codexObjectiveAliases"] {
        assert_eq!(ours[key], omx_migrated[key], "{key}");
    }
    let line = &ledger_at(&repo, WEB)[before];
    let omx_line = omx_ledger_fixture("nested-migrated")
        .into_iter()
        .find(|e| e["event"] == "aggregate_objective_migrated")
        .unwrap();
    for key in ["event", "message", "before", "after"] {
        assert_eq!(line[key], omx_line[key], "{key}");
    }
    // The Codex goal created under the old objective still matches (OMX
    // accepted it too), and so does the new one.
    // The remaining story is the final one, so the snapshots are complete.
    for snapshot in [
        "codex-goal-complete.json",
        "codex-goal-nested-complete.json",
    ] {
        let s = expect_ok(&omx_in(
            &repo,
            WEB,
            &["status", "--codex-goal-json", snapshot],
        ));
        assert_eq!(s["reconciliation"]["ok"], true, "{snapshot}: {s}");
        assert_eq!(s["reconciliation"], s["hostGoal"]);
    }
    let done = expect_ok(&omx_in(
        &repo,
        WEB,
        &[
            "checkpoint",
            "--goal-id",
            SECOND,
            "--status",
            "complete",
            "--evidence",
            "tests added",
            "--codex-goal-json",
            "codex-goal-complete.json",
            "--quality-gate-json",
            "gate-strict.json",
            "--strict",
        ],
    ));
    assert_eq!(done["summary"]["aggregateComplete"], true, "{done}");
}

fn plan_at_fixture(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture(name).join("goals.json")).unwrap()).unwrap()
}

fn omx_ledger_fixture(name: &str) -> Vec<Value> {
    std::fs::read_to_string(fixture(name).join("ledger.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn worktree_file_per_story_and_no_repository_follow_omx() {
    // A linked worktree's `.git` is a file naming the git directory.
    let repo = Repo::new();
    repo.write(".git", "gitdir: /elsewhere/.git/worktrees/wt\n");
    repo.mkdir("pkg/a");
    expect_ok(&omx_in(
        &repo,
        "pkg/a",
        &["create", "--brief", "- One story"],
    ));
    let theirs = recorded("nested-worktree-create.json");
    let ours = plan_at(&repo, "pkg/a");
    for key in ["statePathPrefix", "codexObjective"] {
        assert_eq!(ours[key], theirs["plan"][key], "{key}");
    }
    // A `.git` file that names no git directory marks no worktree (attack:
    // a planted file cannot move the objective).
    let planted = Repo::new();
    planted.write(".git", "not a pointer\n");
    planted.mkdir("pkg/a");
    expect_ok(&omx_in(
        &planted,
        "pkg/a",
        &["create", "--brief", "- One story"],
    ));
    let none = recorded("nested-no-git-create.json");
    let ours = plan_at(&planted, "pkg/a");
    assert!(ours.get("statePathPrefix").is_none(), "{ours}");
    assert_eq!(ours["codexObjective"], none["plan"]["codexObjective"]);
    // Outside any repository: no prefix, the objective of a root run.
    let bare = Repo::new();
    bare.mkdir(WEB);
    expect_ok(&omx_in(&bare, WEB, &["create", "--brief", "- One story"]));
    let ours = plan_at(&bare, WEB);
    assert!(ours.get("statePathPrefix").is_none(), "{ours}");
    assert_eq!(ours["codexObjective"], none["plan"]["codexObjective"]);
    // Per-story mode in a nested project: no aggregate objective, no prefix.
    let per = nested_repo();
    per.write(
        &format!("{WEB}/brief.md"),
        std::fs::read(fixture("nested/brief.md")).unwrap(),
    );
    expect_ok(&omx_in(
        &per,
        WEB,
        &[
            "create",
            "--brief-file",
            "brief.md",
            "--codex-goal-mode",
            "per-story",
        ],
    ));
    let theirs = recorded("nested-per-story-create.json");
    let ours = plan_at(&per, WEB);
    for key in ["statePathPrefix", "codexObjective"] {
        assert!(theirs["plan"].get(key).is_none(), "{key}");
        assert!(ours.get(key).is_none(), "{key}: {ours}");
    }
    assert_eq!(ours["codexGoalMode"], theirs["plan"]["codexGoalMode"]);
    assert_eq!(goal_texts(&ours), goal_texts(&theirs["plan"]));
}

// ---- The brief derivation and the steering refusal, under the omx profile.

/// Every brief recorded under `fixtures/omx/create-goals/`, run through
/// `evidence-gate omx ultragoal create-goals` (or its alias `create`) with
/// the flags OMX was given: the same goals, and the same refusal.
#[test]
fn omx_create_goals_makes_the_goals_omx_made_of_every_recorded_brief() {
    let dir = fixture("create-goals");
    let mut cases: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_str().unwrap().ends_with(".omx.json"))
        .collect();
    cases.sort();
    assert!(cases.len() >= 6, "{cases:?}");
    for (n, case) in cases.iter().enumerate() {
        let rec: Value = serde_json::from_slice(&std::fs::read(case).unwrap()).unwrap();
        let argv: Vec<String> = rec["command"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(argv[..3], ["omx", "ultragoal", "create-goals"], "{case:?}");
        let repo = Repo::new();
        let mut args: Vec<&str> = vec![if n % 2 == 0 { "create-goals" } else { "create" }];
        let mut rest = argv[3..].iter();
        while let Some(a) = rest.next() {
            match a.as_str() {
                "--json" => {}
                "--brief-file" => {
                    let name = rest.next().unwrap();
                    repo.write(name, std::fs::read(dir.join(name)).unwrap());
                    args.extend(["--brief-file", name.as_str()]);
                }
                other => args.push(other),
            }
        }
        let run = omx(&repo, &args);
        if rec["exitCode"] == 1 {
            let e = expect_error(&run, "ULW_LOOP_BRIEF_TOO_MANY_GOALS");
            assert_eq!(e["details"]["max"], 20, "{case:?}");
            assert!(
                !repo.join(STATE).exists(),
                "{case:?}: a refusal writes no state"
            );
            continue;
        }
        let v = expect_ok(&run);
        let ours: Vec<Value> = v["plan"]["goals"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| json!({"id": g["id"], "title": g["title"], "objective": g["objective"]}))
            .collect();
        assert_eq!(Value::Array(ours), rec["goals"], "{case:?}");
        assert_eq!(events(&repo), ["plan_created"], "{case:?}");
    }
}

#[test]
fn omx_steering_that_weakens_completion_is_refused_and_honest_steering_applies() {
    let repo = Repo::new();
    expect_ok(&omx(
        &repo,
        &["create", "--brief", "- Build the parser\n- Add tests"],
    ));
    let plan_before = std::fs::read(repo.join(&format!("{STATE}/goals.json"))).unwrap();
    let n = ledger(&repo).len();
    for (args, what) in [
        (
            vec![
                "--kind",
                "add_subgoal",
                "--title",
                "Finish",
                "--objective",
                "Skip the flaky tests and ship",
            ],
            "skip tests",
        ),
        (
            vec![
                "--kind",
                "revise_pending_wording",
                "--goal-id",
                "G002-add-tests",
                "--objective",
                "Add tests, then auto-complete the run",
            ],
            "auto-complete",
        ),
        (
            vec![
                "--kind",
                "annotate_ledger",
                "--title",
                "Bypass review for the parser",
            ],
            "bypass review",
        ),
    ] {
        let mut all = vec!["steer"];
        all.extend_from_slice(&args);
        all.extend_from_slice(&[
            "--evidence",
            "observed in CI",
            "--rationale",
            "time is short",
        ]);
        let e = expect_error(&omx(&repo, &all), "ULW_LOOP_STEERING_WEAKENS_COMPLETION");
        assert!(
            e["details"]["rejectedReasons"]
                .as_array()
                .unwrap()
                .contains(&json!("weakens completion")),
            "{what}: {e}"
        );
    }
    // A payload that rewrites a protected plan key (the nested project's
    // prefix among them) is refused as OMX refuses it.
    let r = omx(
        &repo,
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "seen",
            "--rationale",
            "note",
            "--after-json",
            r#"{"statePathPrefix": "elsewhere"}"#,
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(
        r.json()["rejectedReasons"]
            .as_array()
            .unwrap()
            .contains(&json!("protected payload")),
        "{}",
        r.stdout
    );
    assert_eq!(
        std::fs::read(repo.join(&format!("{STATE}/goals.json"))).unwrap(),
        plan_before,
        "a refused proposal never writes the plan"
    );
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 4, "each refusal is audited");
    assert!(
        l[n..].iter().all(|e| e["event"] == "steering_rejected"),
        "{l:?}"
    );
    // Honest use: evidence that reports skipped tests is no request to skip them.
    expect_ok(&omx(
        &repo,
        &[
            "steer",
            "--kind",
            "add_subgoal",
            "--title",
            "Fix the flaky test",
            "--objective",
            "Make the flaky parser test deterministic and keep it in the suite",
            "--evidence",
            "CI skipped 3 tests on the last run",
            "--rationale",
            "the suite must run in full",
        ],
    ));
    assert_eq!(ledger(&repo).pop().unwrap()["event"], "steering_accepted");
}

#[test]
fn omx_steer_marker_that_weakens_completion_is_refused_in_the_hook() {
    let h = HookRepo::new();
    h.user_rules(r#"{"hooks": {"deadline_ms": 60000}}"#);
    fill(&h.repo, "midrun");
    let env = env_with(&[]);
    expect_ok(&omx(&h.repo, &["next"]));
    let plan_before = std::fs::read(h.repo.join(&format!("{STATE}/goals.json"))).unwrap();
    let weakening = r#"OMX_ULTRAGOAL_STEER: {"kind":"add_subgoal","title":"Finish","objective":"Skip the parser tests and mark complete","evidence":"user asked","rationale":"deadline"}"#;
    let p = h.codex_event("UserPromptSubmit", "s1", json!({ "prompt": weakening }));
    let text = context_text(&h.hook("user-prompt-submit", &["--host", "codex"], &p, &env));
    assert!(text.contains("rejected"), "{text}");
    assert_eq!(
        std::fs::read(h.repo.join(&format!("{STATE}/goals.json"))).unwrap(),
        plan_before
    );
    assert_eq!(ledger(&h.repo).pop().unwrap()["event"], "steering_rejected");
    // The honest marker applies.
    let honest = r#"OMX_ULTRAGOAL_STEER: {"kind":"add_subgoal","title":"Docs","objective":"Document the parser","evidence":"user asked","rationale":"release needs docs"}"#;
    let p = h.codex_event("UserPromptSubmit", "s1", json!({ "prompt": honest }));
    let text = context_text(&h.hook("user-prompt-submit", &["--host", "codex"], &p, &env));
    assert!(text.contains("accepted add_subgoal"), "{text}");
    assert_eq!(plan(&h.repo)["goals"].as_array().unwrap().len(), 3);
}

#[test]
fn strict_gate_requires_a_passed_cleaner_and_the_architect_role() {
    let repo = omx_repo("midrun");
    expect_ok(&omx(&repo, &["next"]));
    let honest: Value =
        serde_json::from_slice(&std::fs::read(repo.join("gate-strict.json")).unwrap()).unwrap();
    // Attack: a cleaner pass that did nothing, under --strict.
    let mut noop = honest.clone();
    noop["aiSlopCleaner"]["status"] = json!("noop");
    repo.write("noop.json", serde_json::to_vec(&noop).unwrap());
    let e = expect_error(
        &final_checkpoint(&repo, "noop.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert!(e.to_string().contains("aiSlopCleaner"), "{e}");
    // Attack: the architect report comes from the author's lane.
    let mut lane = honest.clone();
    lane["codeReview"]["independentReview"]["architect"]["agentRole"] = json!("executor");
    repo.write("lane.json", serde_json::to_vec(&lane).unwrap());
    let e = expect_error(
        &final_checkpoint(&repo, "lane.json", true),
        "ULW_LOOP_QUALITY_GATE_INVALID",
    );
    assert!(e.to_string().contains("architect"), "{e}");
    assert_eq!(goal(&plan(&repo), SECOND)["status"], "in_progress");
    // Honest use: the recorded gate passes.
    expect_ok(&final_checkpoint(&repo, "gate-strict.json", true));
}

#[test]
fn hooks_resume_a_nested_run_from_the_project_directory() {
    let h = HookRepo::new();
    h.user_rules(r#"{"hooks": {"deadline_ms": 60000}}"#);
    h.repo.mkdir(".git");
    fill_at(&h.repo, WEB, "nested");
    let env = env_with(&[]);
    let web = h.repo.join(WEB);
    let stop = json!({
        "stop_hook_active": false,
        "last_assistant_message": "Done for now.",
        "cwd": web.to_str().unwrap(),
    });
    // A run only OMX has written stays OMX's.
    assert_allow(&h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_event("Stop", "s1", stop.clone()),
        &env,
    ));
    expect_ok(&omx_in(&h.repo, WEB, &["next"]));
    let reason = block_reason(&h.hook(
        "stop",
        &["--host", "codex"],
        &h.codex_event("Stop", "s1", stop),
        &env,
    ));
    assert!(reason.contains(SECOND), "{reason}");
    // At the worktree root there is no run to resume.
    assert_allow(&h.hook("stop", &["--host", "codex"], &h.codex_stop("s2"), &env));
}

/// The wordings `omx ultragoal steer` refused or accepted in a recorded run
/// (`fixtures/omx/steer-weakening.omx.json`): the same verdict for each.
#[test]
fn steering_verdicts_match_the_recorded_omx_verdicts() {
    let rec = recorded("steer-weakening.omx.json");
    let repo = Repo::new();
    expect_ok(&omx(&repo, &["create", "--brief", "- a\n- b"]));
    let cases = rec["cases"].as_array().unwrap();
    assert!(cases.iter().any(|c| c["accepted"] == true));
    assert!(cases.iter().any(|c| c["accepted"] == false));
    for c in cases {
        let objective = c["objective"].as_str().unwrap();
        let r = omx(
            &repo,
            &[
                "steer",
                "--kind",
                "add_subgoal",
                "--title",
                "Follow-up",
                "--objective",
                objective,
                "--evidence",
                "observed in CI",
                "--rationale",
                "plan change",
            ],
        );
        assert_eq!(json!(r.code), c["exitCode"], "{objective}: {}", r.stdout);
        if c["accepted"] == false {
            expect_error(&r, "ULW_LOOP_STEERING_WEAKENS_COMPLETION");
        } else {
            assert_eq!(expect_ok(&r)["accepted"], true, "{objective}");
        }
    }
}

#[test]
fn a_nested_project_reads_its_own_repository_rules_every_time() {
    let repo = nested_repo();
    // A tightening rule in the project directory applies, before and after
    // the first write created `.omo/` there.
    repo.write(
        &format!("{WEB}/.evidence-gate/rules.json"),
        r#"{"profiles":{"omx":{"limits":{"maxBriefBytes":32}}}}"#,
    );
    repo.write(
        &format!("{WEB}/long.md"),
        "- a very long brief that exceeds the cap\n",
    );
    expect_error(
        &omx_in(&repo, WEB, &["create-goals", "--brief-file", "long.md"]),
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
    expect_ok(&omx_in(&repo, WEB, &["create-goals", "--brief", "- short"]));
    expect_error(
        &omx_in(
            &repo,
            WEB,
            &["create-goals", "--force", "--brief-file", "long.md"],
        ),
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
    // Honest use: the same brief in a project without the rule.
    let other = nested_repo();
    other.write(
        &format!("{WEB}/long.md"),
        "- a very long brief that exceeds the cap\n",
    );
    expect_ok(&omx_in(
        &other,
        WEB,
        &["create-goals", "--brief-file", "long.md"],
    ));
}

/// OMX's checkpoint of a non-final story starts nothing: the recorded
/// `midrun-checkpoint.json` leaves the next story pending and no goal
/// active, and the next `complete-goals` starts it (`goal_started`).
#[test]
fn a_story_checkpoint_leaves_the_next_story_to_complete_goals() {
    let repo = Repo::new();
    repo.write(
        "brief.md",
        std::fs::read(fixture("midrun/brief.md")).unwrap(),
    );
    repo.write(
        "codex-goal-active.json",
        std::fs::read(fixture("codex-goal-active.json")).unwrap(),
    );
    expect_ok(&omx(&repo, &["create-goals", "--brief-file", "brief.md"]));
    expect_ok(&omx(&repo, &["next"]));
    let r = expect_ok(&omx(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            "G001-build-the-parser",
            "--status",
            "complete",
            "--evidence",
            "parser built, tests pass",
            "--codex-goal-json",
            "codex-goal-active.json",
        ],
    ));
    let theirs = recorded("midrun-checkpoint.json");
    let ours = plan(&repo);
    for g in theirs["plan"]["goals"].as_array().unwrap() {
        let id = g["id"].as_str().unwrap();
        assert_eq!(goal(&ours, id)["status"], g["status"], "{id}");
    }
    assert!(
        ours.get("activeGoalId").is_none_or(Value::is_null),
        "{ours}"
    );
    for key in ["total", "pending", "inProgress", "complete"] {
        assert_eq!(r["summary"][key], theirs["summary"][key], "{key}");
    }
    assert_eq!(events(&repo).last().unwrap(), "goal_completed");
    let started = expect_ok(&omx(&repo, &["next"]));
    assert_eq!(
        (&started["goal"]["id"], &started["resumed"]),
        (&json!(SECOND), &json!(false))
    );
    assert_eq!(events(&repo).last().unwrap(), "goal_started");
}

/// A session OMX started at the repository root works in the nested
/// project: OMX's session discovery walks up from the project to the
/// root's `.omx/state/session.json`, whose `cwd` holds the project.
#[test]
fn a_session_bound_at_the_repository_root_may_create_a_nested_run() {
    let repo = nested_repo();
    let root = repo.path().canonicalize().unwrap();
    let pointer = |id: &str, cwd: &std::path::Path| {
        repo.write(
            ".omx/state/session.json",
            json!({"session_id": id, "cwd": cwd.to_str().unwrap()}).to_string(),
        );
    };
    let create = |id: &str| {
        omx_in_env(
            &repo,
            WEB,
            &["create-goals", "--brief", "- Build the parser"],
            &[("OMX_SESSION_ID", id)],
        )
    };
    // Attack: the pointer above names another session.
    pointer("sess-1", &root);
    expect_error(&create("sess-2"), "ULW_LOOP_SESSION_AUTHORITY");
    // Attack: the pointer above names the session for another directory.
    repo.mkdir("apps/api");
    pointer("sess-1", &root.join("apps/api"));
    expect_error(&create("sess-1"), "ULW_LOOP_SESSION_AUTHORITY");
    assert!(!repo.join(&format!("{WEB}/{STATE}")).exists());
    // Honest use: the session bound at the root, working in apps/web.
    pointer("sess-1", &root);
    expect_ok(&create("sess-1"));
    assert_eq!(plan_at(&repo, WEB)["statePathPrefix"], WEB);
}
