//! Every steering error code with its exit status and details, driven
//! through the real binary (R§3.5 parse-level codes, goal-engine.md §4.4,
//! §5.8). Parse-level errors write nothing.

use crate::goals_support::*;
use serde_json::json;

fn three() -> Repo {
    repo_with_plan("- a\n- b\n- c")
}

/// `steer <args> --json` fails with `code`, leaving the repository unchanged.
fn fails(repo: &Repo, args: &[&str], code: &str) -> serde_json::Value {
    let before = repo.snapshot();
    let mut all = vec!["steer"];
    all.extend_from_slice(args);
    let e = expect_error(&ulw(repo, &all), code);
    assert_eq!(repo.snapshot(), before, "{code}: nothing may be written");
    e
}

const E: &str = "--evidence";
const R: &str = "--rationale";

#[test]
fn kind_required_and_invalid_carry_the_kind_help() {
    let repo = three();
    let e = fails(&repo, &[E, "e", R, "r"], "ULW_LOOP_STEERING_KIND_REQUIRED");
    assert_eq!(e["details"]["flag"], "--kind");
    assert_eq!(e["details"]["expected"].as_array().unwrap().len(), 9);
    let usage = e["details"]["usage"].as_str().unwrap();
    assert!(
        usage.contains("evidence-gate ulw-loop steer --kind annotate_ledger --evidence"),
        "{usage}"
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap()
            .starts_with("Missing --kind.\n\n")
    );
    let e = fails(
        &repo,
        &["--kind", "finish_everything", E, "e", R, "r"],
        "ULW_LOOP_STEERING_KIND_INVALID",
    );
    assert_eq!(e["details"]["value"], "finish_everything");
}

#[test]
fn source_and_field_codes_in_the_anchor_order() {
    let repo = three();
    let e = fails(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--source",
            "robot",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_SOURCE_INVALID",
    );
    assert_eq!(e["details"]["value"], "robot");
    assert_eq!(
        e["details"]["expected"],
        json!(["user_prompt_submit", "finding", "cli"])
    );
    let e = fails(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--idempotency-key",
            " ",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    assert_eq!(e["details"]["field"], "idempotencyKey");
    let e = fails(
        &repo,
        &["--kind", "annotate_ledger", R, "r"],
        "ULW_LOOP_STEERING_FIELD_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--evidence");
    let e = fails(
        &repo,
        &["--kind", "annotate_ledger", E, "  ", R, "r"],
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    assert_eq!(e["details"]["field"], "evidence");
    let e = fails(
        &repo,
        &["--kind", "annotate_ledger", E, "e"],
        "ULW_LOOP_STEERING_FIELD_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--rationale");
    for (kind, flag) in [
        ("add_subgoal", "--title"),
        ("reorder_pending", "--order"),
        ("revise_batch", "--batch-id"),
    ] {
        let e = fails(
            &repo,
            &["--kind", kind, E, "e", R, "r"],
            "ULW_LOOP_STEERING_FIELD_REQUIRED",
        );
        assert_eq!(e["details"]["flag"], flag, "{kind}");
    }
    let e = fails(
        &repo,
        &["--kind", "add_subgoal", "--title", "t", E, "e", R, "r"],
        "ULW_LOOP_STEERING_FIELD_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--objective");
    let e = fails(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G001-a",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_FIELD_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--children");
    let e = fails(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--scenario",
            "s",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_FIELD_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--criterion-id");
    let e = fails(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--user-decision",
            "",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    assert_eq!(e["details"]["field"], "userDecision");
}

#[test]
fn goal_id_required_for_targeted_kinds() {
    let repo = three();
    for kind in [
        "split_subgoal",
        "revise_pending_wording",
        "revise_criterion",
        "mark_blocked_superseded",
        "unblock",
    ] {
        let e = fails(
            &repo,
            &["--kind", kind, E, "e", R, "r"],
            "ULW_LOOP_GOAL_ID_REQUIRED",
        );
        assert_eq!(e["details"]["flag"], "--goal-id", "{kind}");
    }
}

#[test]
fn json_array_flags() {
    let repo = three();
    let split = |children: &str| {
        vec![
            "--kind".to_owned(),
            "split_subgoal".into(),
            "--goal-id".into(),
            "G001-a".into(),
            "--children".into(),
            children.into(),
            E.into(),
            "e".into(),
            R.into(),
            "r".into(),
        ]
    };
    let run = |args: Vec<String>, code: &str| {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        fails(&repo, &a, code)
    };
    let e = run(
        split(r#"{"title": "x"}"#),
        "ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--children");
    let e = run(
        split(r#"[{"title": "x"}]"#),
        "ULW_LOOP_STEERING_CHILD_INVALID",
    );
    assert_eq!(e["details"]["flag"], "--children");
    let e = run(
        split(r#"[{"title": " ", "objective": "o"}]"#),
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    assert_eq!(e["details"]["field"], "child.title");
    run(split("[not json"), "ULW_LOOP_JSON_INPUT_INVALID");
    let e = run(split("children.json"), "ULW_LOOP_INPUT_NOT_FOUND");
    assert_eq!(e["details"]["path"], "children.json");
    let e = fails(
        &repo,
        &[
            "--kind",
            "reorder_pending",
            "--order",
            "[1]",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_STRING_ARRAY_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--order");
    let e = fails(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "B",
            "--member-ids",
            "{}",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_JSON_ARRAY_REQUIRED",
    );
    assert_eq!(e["details"]["flag"], "--member-ids");
    let e = fails(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "t",
            "--objective",
            "o",
            "--after-json",
            "[]",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
    assert_eq!(e["details"]["flag"], "--after-json");
}

#[test]
fn user_model_and_update_required() {
    let repo = three();
    let e = fails(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--user-model",
            "angry",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_USER_MODEL_INVALID",
    );
    assert_eq!(e["details"]["value"], "angry");
    let e = fails(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_UPDATE_REQUIRED",
    );
    assert_eq!(e["details"]["kind"], "revise_criterion");
    let e = fails(
        &repo,
        &[
            "--kind",
            "revise_pending_wording",
            "--goal-id",
            "G001-a",
            E,
            "e",
            R,
            "r",
        ],
        "ULW_LOOP_STEERING_UPDATE_REQUIRED",
    );
    assert_eq!(e["details"]["kind"], "revise_pending_wording");
}

#[test]
fn batch_codes() {
    let repo = three();
    let item = json!([{"kind": "annotate_ledger", "evidence": "e", "rationale": "r"}]).to_string();
    let e = fails(
        &repo,
        &["--kind", "annotate_ledger", "--proposals-json", &item],
        "ULW_LOOP_STEERING_BATCH_CONFLICT",
    );
    assert_eq!(e["details"]["flags"], json!(["--kind", "--proposals-json"]));
    let e = fails(
        &repo,
        &["--proposals-json", " "],
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    assert_eq!(e["details"]["field"], "--proposals-json");
    for bad in ["{}", "[]"] {
        let e = fails(
            &repo,
            &["--proposals-json", bad],
            "ULW_LOOP_STEERING_BATCH_ARRAY_REQUIRED",
        );
        assert_eq!(e["details"]["flag"], "--proposals-json");
    }
    let e = fails(
        &repo,
        &["--proposals-json", "[1]"],
        "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
    );
    assert_eq!(e["details"]["flag"], "--proposals-json");
    let wrong = json!([
        {"kind": "annotate_ledger", "evidence": "e", "rationale": "r"},
        {"kind": "add_subgoal", "evidence": "e", "rationale": "r", "title": 7, "objective": "o"}
    ])
    .to_string();
    let e = fails(
        &repo,
        &["--proposals-json", &wrong],
        "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
    );
    assert_eq!(e["details"]["field"], "title");
    assert_eq!(e["details"]["index"], 1);
    let bad_kind = json!([{"kind": "nope", "evidence": "e", "rationale": "r"}]).to_string();
    let e = fails(
        &repo,
        &["--proposals-json", &bad_kind],
        "ULW_LOOP_STEERING_KIND_INVALID",
    );
    assert_eq!(e["details"]["value"], "nope");
    let bad_source =
        json!([{"kind": "annotate_ledger", "source": "x", "evidence": "e", "rationale": "r"}])
            .to_string();
    fails(
        &repo,
        &["--proposals-json", &bad_source],
        "ULW_LOOP_STEERING_SOURCE_INVALID",
    );
    let blank = json!([{"kind": "annotate_ledger", "evidence": " ", "rationale": "r"}]).to_string();
    fails(
        &repo,
        &["--proposals-json", &blank],
        "ULW_LOOP_STEERING_FIELD_EMPTY",
    );
    let child = json!([{"kind": "split_subgoal", "goalId": "G001-a", "evidence": "e", "rationale": "r", "childGoals": [{"title": "t"}]}]).to_string();
    let e = fails(
        &repo,
        &["--proposals-json", &child],
        "ULW_LOOP_STEERING_CHILD_INVALID",
    );
    assert_eq!(e["details"]["key"], "childGoals");
    let e = fails(
        &repo,
        &["--proposals-json", &item, "--goal-id", "G001-a"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(
        e["details"]["flags"],
        json!(["--proposals-json", "--goal-id"])
    );
}

#[test]
fn directive_conflicts() {
    let repo = three();
    let d = json!({"kind": "annotate_ledger", "evidence": "e", "rationale": "r", "idempotencyKey": "k1"}).to_string();
    let e = fails(
        &repo,
        &["--directive-json", &d, "--kind", "annotate_ledger"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(e["details"]["flags"], json!(["--directive-json", "--kind"]));
    fails(
        &repo,
        &["--directive-json", &d, "--evidence", "e"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    fails(
        &repo,
        &["--directive-json", &d, "--proposals-json", "[]"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    repo.write("d.json", &d);
    fails(
        &repo,
        &["--directive-json", &d, "--directive-file", "d.json"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    let e = fails(
        &repo,
        &["--directive-json", &d, "--idempotency-key", "k2"],
        "ULW_LOOP_ARGUMENT_CONFLICT",
    );
    assert_eq!(
        e["details"]["flags"],
        json!(["--idempotency-key", "idempotencyKey"])
    );
    let e = fails(
        &repo,
        &["--directive-file", "missing.json"],
        "ULW_LOOP_INPUT_NOT_FOUND",
    );
    assert_eq!(e["details"]["flag"], "--directive-file");
    repo.write("bad.json", "{not json");
    fails(
        &repo,
        &["--directive-file", "bad.json"],
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
    fails(
        &repo,
        &["--directive-json", "[1]"],
        "ULW_LOOP_STEERING_BATCH_ITEM_INVALID",
    );
}

#[test]
fn steer_without_a_plan() {
    let repo = Repo::new();
    let r = ulw(
        &repo,
        &["steer", "--kind", "annotate_ledger", E, "e", R, "r"],
    );
    expect_error(&r, "ULW_LOOP_PLAN_MISSING");
    assert!(!repo.join(".omo").exists());
}

#[test]
fn steering_rejected_error_member() {
    let repo = three();
    let r = steer(&repo, &["--kind", "unblock", "--goal-id", "G001-a"]);
    let v = expect_rejected(
        &r,
        "ULW_LOOP_STEERING_REJECTED",
        "unblock requires blocked target",
    );
    assert_eq!(
        v["error"]["details"]["rejectedReasons"],
        json!(["unblock requires blocked target"])
    );
    assert!(r.stderr.is_empty());
}

#[test]
fn key_conflict_is_audited_with_every_other_reason() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "k1"],
    ));
    let first = ledger(&repo).last().unwrap()["seq"].clone();
    let n = ledger(&repo).len();
    let r = steer(
        &repo,
        &[
            "--kind",
            "unblock",
            "--goal-id",
            "G001-a",
            "--idempotency-key",
            "k1",
        ],
    );
    let v = expect_rejected(
        &r,
        "ULW_LOOP_STEERING_KEY_CONFLICT",
        "idempotency key conflict",
    );
    assert_eq!(
        v["rejectedReasons"],
        json!([
            "unblock requires blocked target",
            "idempotency key conflict"
        ]),
        "the conflict does not stop validation; it is reason 11"
    );
    let d = &v["error"]["details"];
    assert_eq!(d["key"], "k1");
    assert_eq!(d["namespace"], "idempotencyKey");
    assert_eq!(d["priorSeq"], first);
    assert_eq!(d["digest"], v["audit"]["proposalDigest"]);
    assert_ne!(d["priorDigest"], d["digest"]);
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 1);
    assert_eq!(l.last().unwrap()["kind"], "steering_rejected");
}

#[test]
fn oversized_and_truncated_inputs() {
    let repo = three();
    let big = format!(
        "[{}]",
        vec![r#"{"kind":"annotate_ledger","evidence":"e","rationale":"r"}"#; 80_000].join(",")
    );
    repo.write("big.json", &big);
    let e = fails(
        &repo,
        &["--proposals-json", "big.json"],
        "ULW_LOOP_INPUT_TOO_LARGE",
    );
    assert_eq!(e["details"]["flag"], "--proposals-json");
    fails(
        &repo,
        &["--proposals-json", r#"[{"kind":"annotate_ledger","#],
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
    fails(
        &repo,
        &["--directive-json", r#"{"kind": "#],
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
    let dup = r#"{"kind":"annotate_ledger","kind":"add_subgoal","evidence":"e","rationale":"r"}"#;
    fails(
        &repo,
        &["--directive-json", dup],
        "ULW_LOOP_JSON_INPUT_INVALID",
    );
}
