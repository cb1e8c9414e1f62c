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

fn final_checkpoint(repo: &Repo, gate: &str, strict: bool) -> Run {
    let mut args = vec![
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
        gate,
    ];
    if strict {
        args.push("--strict");
    }
    omx(repo, &args)
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
    let no_gate = omx(
        &repo,
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
    let r = omx(
        &repo,
        &[
            "checkpoint",
            "--goal-id",
            SECOND,
            "--status",
            "complete",
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
