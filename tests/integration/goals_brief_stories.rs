//! Story-aware brief derivation, `--goal "Title::Objective"` and the
//! refusal of steering that weakens completion — profile data (`brief`,
//! `steering/refuseWeakening`): on in `ultragoal`, off in `ulw-loop`, which
//! keeps the Node derivation. The briefs and the goals `omx ultragoal`
//! 0.21.6 made of them are recorded under `fixtures/omx/create-goals/`.

use serde_json::{Value, json};

use crate::goals_support::*;

const UG: &str = ".omagy/ultragoal";

fn fixture_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/omx/create-goals")
}

fn brief(name: &str) -> String {
    std::fs::read_to_string(fixture_dir().join(format!("{name}.md"))).unwrap()
}

fn recorded(name: &str) -> Value {
    serde_json::from_slice(&std::fs::read(fixture_dir().join(format!("{name}.omx.json"))).unwrap())
        .unwrap()
}

fn ug(repo: &Repo, args: &[&str]) -> Run {
    let mut all = args.to_vec();
    all.push("--json");
    eg(repo, "ultragoal", &all)
}

/// `create-goals --brief-file <case>.md` in `profile`, plus `extra` flags.
fn create(profile: &str, name: &str, extra: &[&str]) -> (Repo, Run) {
    let repo = Repo::new();
    repo.write("brief.md", brief(name));
    let mut args = vec!["create-goals", "--brief-file", "brief.md"];
    args.extend_from_slice(extra);
    let run = match profile {
        "ultragoal" => ug(&repo, &args),
        _ => ulw(&repo, &args),
    };
    (repo, run)
}

fn goals_of(v: &Value) -> Vec<Value> {
    v["plan"]["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| json!({"id": g["id"], "title": g["title"], "objective": g["objective"]}))
        .collect()
}

/// The ultragoal profile makes the goals OMX made of the same brief.
fn same_as_omx(name: &str, extra: &[&str]) -> Value {
    let (_repo, run) = create("ultragoal", name, extra);
    let v = expect_ok(&run);
    assert_eq!(
        Value::Array(goals_of(&v)),
        recorded(name)["goals"],
        "{name}: the goals differ from omx ultragoal's"
    );
    v
}

#[test]
fn stories_sections_fold_nested_lines_and_drop_criteria_checklist_and_review() {
    let v = same_as_omx("stories", &[]);
    let goals = goals_of(&v);
    assert_eq!(goals.len(), 3, "{goals:?}");
    assert_eq!(
        goals[0]["objective"],
        "Build the parser\nhandle `#` comments\nreject tab indentation with a line number"
    );
    let text = serde_json::to_string(&goals).unwrap();
    for dropped in ["parser tests pass", "docs updated", "reviewer: architect"] {
        assert!(!text.contains(dropped), "{dropped} became a goal: {text}");
    }
    assert_eq!(v["summary"]["total"], 3);
}

#[test]
fn plan_style_label_sections_and_an_only_criteria_brief() {
    same_as_omx("plan-sections", &[]);
    let v = same_as_omx("only-criteria", &[]);
    assert_eq!(goals_of(&v).len(), 1, "the whole brief is the one goal");
}

#[test]
fn more_than_twenty_implicit_goals_are_refused_and_an_explicit_stories_section_is_not() {
    assert_eq!(recorded("flat-21")["exitCode"], 1);
    let (repo, run) = create("ultragoal", "flat-21", &[]);
    let e = expect_error(&run, "ULW_LOOP_BRIEF_TOO_MANY_GOALS");
    assert_eq!(e["details"], json!({"count": 21, "max": 20}));
    let msg = e["message"].as_str().unwrap();
    assert!(msg.contains("--goal \"Title::Objective\""), "{msg}");
    assert!(msg.contains("### Stories"), "{msg}");
    assert!(!repo.join(UG).exists(), "a refused brief writes no state");
    let v = same_as_omx("stories-21", &[]);
    assert_eq!(goals_of(&v).len(), 21);
}

#[test]
fn repeated_goal_flags_are_the_goals_and_the_brief_stays_the_constraints() {
    let v = same_as_omx(
        "goal-flags",
        &[
            "--goal",
            "Parser::Build the parser for the config format",
            "--goal",
            "Ship the CLI with --help",
            "--goal",
            "Docs :: Document the format :: with examples",
        ],
    );
    assert_eq!(goals_of(&v).len(), 3);
    // A `--goal` without an objective is refused before anything is written.
    let repo = Repo::new();
    let e = expect_error(
        &ug(
            &repo,
            &["create-goals", "--brief", "b", "--goal", "Title::  "],
        ),
        "ULW_LOOP_ARGUMENT_MISSING",
    );
    assert_eq!(e["details"]["flag"], "--goal");
    assert!(!repo.join(UG).exists());
    // The brief is still required: it is the run's constraints record.
    expect_error(
        &ug(&repo, &["create-goals", "--goal", "A::a"]),
        "ULW_LOOP_BRIEF_REQUIRED",
    );
}

#[test]
fn ulw_loop_keeps_the_node_derivation_and_ignores_goal_flags() {
    // Node ulw-loop: every bullet at any depth is a goal, no section is
    // dropped, no cap applies.
    let (_, run) = create("ulw-loop", "stories", &[]);
    let v = expect_ok(&run);
    let titles: Vec<&str> = v["plan"]["goals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        [
            "Build the parser",
            "handle `#` comments",
            "reject tab indentation with a line number",
            "Ship the CLI",
            "add `--help`",
            "exit 2 on a parse error",
            "Document the format",
            "parser tests pass",
            "the CLI prints usage",
            "[ ] docs updated",
            "[ ] changelog entry",
            "reviewer: architect",
            "verdict: pending",
        ]
    );
    let (_, run) = create("ulw-loop", "flat-21", &[]);
    assert_eq!(
        expect_ok(&run)["plan"]["goals"].as_array().unwrap().len(),
        21
    );
    // `--goal` is consumed (its value never joins the brief) and reported.
    let repo = Repo::new();
    let v = expect_ok(&ulw(
        &repo,
        &["create-goals", "--brief", "- one\n- two", "--goal", "X::y"],
    ));
    assert_eq!(v["plan"]["goals"].as_array().unwrap().len(), 2);
    let w = v["warnings"].as_array().unwrap();
    assert!(
        w.iter().any(|w| w["code"] == "ARGUMENT_UNKNOWN"
            && w["message"].as_str().unwrap().contains("--goal")),
        "{w:?}"
    );
}

fn steer_ug(repo: &Repo, args: &[&str]) -> Run {
    let mut all = vec!["steer"];
    all.extend_from_slice(args);
    ug(repo, &all)
}

fn ledger_at(repo: &Repo, dir: &str) -> Vec<Value> {
    std::fs::read_to_string(repo.join(&format!("{dir}/ledger.jsonl")))
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn steering_that_weakens_completion_is_refused_in_ultragoal_and_warned_in_ulw_loop() {
    let repo = Repo::new();
    expect_ok(&ug(&repo, &["create-goals", "--brief", "- a\n- b"]));
    let plan_before = std::fs::read(repo.join(&format!("{UG}/goals.json"))).unwrap();
    let n = ledger_at(&repo, UG).len();
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
                "G002-b",
                "--objective",
                "b, then auto-complete the run",
            ],
            "auto-complete",
        ),
        (
            vec![
                "--kind",
                "annotate_ledger",
                "--rationale",
                "bypass review for this one",
            ],
            "bypass review",
        ),
    ] {
        let mut all = args.clone();
        all.extend_from_slice(&["--evidence", "observed in CI"]);
        if !all.contains(&"--rationale") {
            all.extend_from_slice(&["--rationale", "time is short"]);
        }
        let e = expect_error(
            &steer_ug(&repo, &all),
            "ULW_LOOP_STEERING_WEAKENS_COMPLETION",
        );
        assert!(
            e["details"]["rejectedReasons"]
                .as_array()
                .unwrap()
                .contains(&json!("weakens completion")),
            "{what}: {e}"
        );
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("weakens completion"),
            "{what}: {e}"
        );
    }
    assert_eq!(
        std::fs::read(repo.join(&format!("{UG}/goals.json"))).unwrap(),
        plan_before,
        "a refused proposal never writes the plan"
    );
    let l = ledger_at(&repo, UG);
    assert_eq!(l.len(), n + 3, "each refusal is audited");
    assert!(l[n..].iter().all(|e| e["kind"] == "steering_rejected"
        && e["steering"]["invariant"]["noEasierCompletion"] == false));

    // Honest use: evidence that reports skipped tests, and wording that
    // keeps the bar, are accepted.
    expect_ok(&steer_ug(
        &repo,
        &[
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

    // ulw-loop keeps the Node tool's behaviour: the same wording is accepted
    // with the WEAKENED_COMPLETION_WORDING warning.
    let ulw_repo = repo_with_plan("- a\n- b");
    let v = expect_ok(&ulw(
        &ulw_repo,
        &[
            "steer",
            "--kind",
            "add_subgoal",
            "--title",
            "Finish",
            "--objective",
            "Skip the flaky tests and ship",
            "--evidence",
            "observed in CI",
            "--rationale",
            "time is short",
        ],
    ));
    let w = serde_json::to_string(&v["warnings"]).unwrap();
    assert!(w.contains("WEAKENED_COMPLETION_WORDING"), "{w}");
}

#[test]
fn refusal_covers_batches_and_directives() {
    let repo = Repo::new();
    expect_ok(&ug(&repo, &["create-goals", "--brief", "- a\n- b"]));
    let items = json!([
        {"kind": "annotate_ledger", "evidence": "e", "rationale": "note"},
        {"kind": "split_subgoal", "goalId": "G002-b", "evidence": "e", "rationale": "r",
         "childGoals": [{"title": "b1", "objective": "remove the review step"}]},
    ]);
    let run = steer_ug(&repo, &["--proposals-json", &items.to_string()]);
    let e = expect_error(&run, "ULW_LOOP_STEERING_WEAKENS_COMPLETION");
    assert_eq!(e["details"]["index"], 1);
    let directive = json!({"kind": "add_subgoal", "title": "Wrap up", "objective": "mark it done",
                           "evidence": "e", "rationale": "auto-complete the remaining stories"});
    let run = steer_ug(&repo, &["--directive-json", &directive.to_string()]);
    expect_error(&run, "ULW_LOOP_STEERING_WEAKENS_COMPLETION");
}
