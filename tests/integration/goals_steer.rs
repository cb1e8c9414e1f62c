//! `steer`: every kind accepted and rejected through the real binary
//! (goal-engine.md §5.4, §5.5), with the audit and ledger records of §5.6.

use crate::goals_support::*;
use serde_json::{Value, json};

fn three() -> Repo {
    repo_with_plan("- a\n- b\n- c")
}

fn last(repo: &Repo) -> Value {
    ledger(repo).last().cloned().unwrap()
}

/// Runs a steer that must be rejected: the plan stays untouched and exactly
/// one `steering_rejected` entry with the full audit is appended.
fn rejects(repo: &Repo, args: &[&str], reason: &str) -> Value {
    let before = plan_bytes(repo);
    let n = ledger(repo).len();
    let run = steer(repo, args);
    let v = expect_rejected(&run, "ULW_LOOP_STEERING_REJECTED", reason);
    assert_eq!(
        plan_bytes(repo),
        before,
        "a rejection never writes the plan"
    );
    assert_eq!(ledger(repo).len(), n + 1, "one audit entry");
    let e = last(repo);
    assert_eq!(e["kind"], "steering_rejected");
    assert_eq!(e["steering"]["invariant"]["accepted"], false);
    assert_eq!(e["steering"], v["audit"]);
    assert_eq!(e["channel"], "cli");
    assert!(e["proposalDigest"].as_str().unwrap().len() == 64);
    v
}

fn run_and_count(repo: &Repo, args: &[&str]) -> (Run, usize) {
    let n = ledger(repo).len();
    (steer(repo, args), n)
}

#[test]
fn add_subgoal_accepted_and_rejected() {
    let repo = three();
    let v = expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "Add audit log",
            "--objective",
            "Log every admin action",
        ],
    ));
    assert_eq!(v["accepted"], true);
    assert_eq!(v["deduped"], false);
    assert_eq!(v["audit"]["channel"], "cli");
    assert_eq!(v["audit"]["source"], "cli");
    let g = goal(&repo, "G004-add-audit-log");
    assert_eq!(g["status"], "pending");
    assert_eq!(g["evidence"], "observed in the staging run");
    assert!(
        g["successCriteria"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["seeded"] == true),
        "steering-created goals get seeded criteria"
    );
    assert_eq!(goal_ids(&repo).last().unwrap(), "G004-add-audit-log");
    let e = last(&repo);
    assert_eq!(e["kind"], "steering_accepted");
    assert_eq!(e["mutationKind"], "add_subgoal");
    assert_eq!(e["revision"], v["revision"]);
    assert_eq!(
        e["steering"]["after"]["goals"][0]["id"],
        "G004-add-audit-log"
    );
    assert_eq!(e["steering"]["before"]["goals"], json!([]));
    assert_eq!(e["steering"]["after"]["goalCount"], 4);

    rejects(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "One",
            "--objective",
            "o",
            "--after-json",
            r#"{"title": "Two"}"#,
        ],
        "after conflicts with title",
    );
    let v = rejects(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "One",
            "--objective",
            "o",
            "--goal-id",
            "G001-a",
        ],
        "add_subgoal does not accept goalId",
    );
    assert_eq!(v["audit"]["invariant"]["noEasierCompletion"], false);
}

#[test]
fn split_subgoal_accepted_and_rejected() {
    let repo = three();
    let children = r#"[{"title": "Part one", "objective": "first half"}, {"title": "Part two", "objective": "second half"}]"#;
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G002-b",
            "--children",
            children,
        ],
    ));
    assert_eq!(
        goal_ids(&repo),
        [
            "G001-a",
            "G002-b",
            "G004-part-one",
            "G005-part-two",
            "G003-c"
        ],
        "replacements follow the target"
    );
    let t = goal(&repo, "G002-b");
    assert_eq!(t["steeringStatus"], "superseded");
    assert_eq!(t["supersededBy"], json!(["G004-part-one", "G005-part-two"]));
    assert_eq!(t["status"], "pending", "status is left unchanged");
    assert_eq!(
        goal(&repo, "G005-part-two")["supersedes"],
        json!(["G002-b"])
    );

    start(&repo);
    rejects(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G001-a",
            "--children",
            children,
        ],
        "split_subgoal requires pending target",
    );
    rejects(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G003-c",
            "--children",
            "[]",
        ],
        "split_subgoal requires children",
    );
    rejects(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G9",
            "--children",
            children,
        ],
        "split_subgoal requires target",
    );
}

#[test]
fn reorder_pending_moves_only_among_pending_positions() {
    let repo = repo_with_plan("- a\n- b\n- c\n- d");
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "reorder_pending",
            "--order",
            r#"["G004-d", "G003-c"]"#,
        ],
    ));
    assert_eq!(
        goal_ids(&repo),
        ["G001-a", "G004-d", "G003-c", "G002-b"],
        "the complete goal keeps its index; the listed goals fill the first pending positions"
    );
    let e = last(&repo);
    assert_eq!(e["steering"]["after"]["goals"], json!([]), "order only");
    assert_eq!(
        e["steering"]["after"]["goalIds"],
        json!(["G001-a", "G004-d", "G003-c", "G002-b"])
    );
    rejects(
        &repo,
        &["--kind", "reorder_pending", "--order", r#"["G001-a"]"#],
        "unknown pending id",
    );
    rejects(
        &repo,
        &[
            "--kind",
            "reorder_pending",
            "--order",
            r#"["G002-b", "G002-b"]"#,
        ],
        "duplicate pending id",
    );
    rejects(
        &repo,
        &["--kind", "reorder_pending", "--order", "[]"],
        "reorder_pending requires ids",
    );
}

#[test]
fn revise_pending_wording_accepted_and_rejected() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_pending_wording",
            "--goal-id",
            "G002-b",
            "--title",
            "B, clarified",
        ],
    ));
    let g = goal(&repo, "G002-b");
    assert_eq!(g["title"], "B, clarified");
    assert_eq!(g["objective"], "b");
    assert_eq!(
        g["steeringRationale"],
        "the plan must follow the observation"
    );
    start(&repo);
    rejects(
        &repo,
        &[
            "--kind",
            "revise_pending_wording",
            "--goal-id",
            "G001-a",
            "--objective",
            "x",
        ],
        "revise_pending_wording requires pending target",
    );
}

#[test]
fn revise_criterion_resets_the_verdict_and_the_seeded_mark() {
    let repo = three();
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--scenario",
            "login with a valid token returns 200",
        ],
    ));
    let c = &goal(&repo, "G001-a")["successCriteria"][0];
    assert_eq!(c["scenario"], "login with a valid token returns 200");
    assert_eq!(c["status"], "pending", "a revision resets the verdict");
    assert_eq!(c["capturedEvidence"], Value::Null);
    assert!(c.get("capturedAt").is_none());
    assert_eq!(
        c["seeded"], false,
        "the placeholder expectedEvidence stays, but it is revised"
    );
    assert_eq!(last(&repo)["kind"], "criteria_revised");
    let before = &last(&repo)["steering"]["before"]["goals"][0]["successCriteria"][0];
    assert_eq!(before["status"], "pass", "the audit shows the reset");
    assert_eq!(v["audit"]["criterionId"], "C001");
    // No longer seeded: `pass` needs no --accept-seeded.
    expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "200 OK transcript",
        ],
    ));

    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    let v = rejects(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--expected-evidence",
            "something else",
        ],
        "revise_criterion would reset a completed verdict",
    );
    assert_eq!(v["audit"]["invariant"]["noEasierCompletion"], false);
    rejects(
        &repo,
        &[
            "--kind",
            "revise_criterion",
            "--goal-id",
            "G002-b",
            "--criterion-id",
            "C9",
            "--user-model",
            "edge",
        ],
        "revise_criterion requires criterionId",
    );
}

#[test]
fn annotate_ledger_writes_no_plan() {
    let repo = three();
    let before = plan_bytes(&repo);
    let (r, n) = run_and_count(&repo, &["--kind", "annotate_ledger", "--goal-id", "G001-a"]);
    let v = expect_ok(&r);
    assert_eq!(
        plan_bytes(&repo),
        before,
        "annotate_ledger never writes the plan"
    );
    assert_eq!(v["revision"], 1);
    assert_eq!(ledger(&repo).len(), n + 1);
    let e = last(&repo);
    assert_eq!(e["kind"], "steering_accepted");
    assert_eq!(e["revision"], 1, "audit-only entries keep the revision");
    // Like every accepted entry (docs/differences.md#r-4), the note carries its plan
    // snapshots; they are equal and name no changed goal.
    let s = &e["steering"];
    assert_eq!(s["before"], s["after"], "an annotation changes nothing");
    assert_eq!(s["before"]["goals"], json!([]));
    assert_eq!(s["before"]["goalCount"], 3);
    assert_eq!(
        s["before"]["goalIds"],
        json!(["G001-a", "G002-b", "G003-c"])
    );
    assert_eq!(s["before"]["updatedAt"], plan(&repo)["updatedAt"]);

    let v = rejects(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--after-json",
            r#"{"status": "complete"}"#,
        ],
        "protected payload",
    );
    let reasons = v["rejectedReasons"].as_array().unwrap();
    assert!(reasons.contains(&json!("annotate_ledger does not accept after")));
}

#[test]
fn mark_blocked_superseded_in_its_three_forms() {
    let repo = repo_with_plan("- a\n- b\n- c\n- d");
    // With replacements.
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "mark_blocked_superseded",
            "--goal-id",
            "G002-b",
            "--replacements",
            r#"[{"title": "B via the new API", "objective": "use v2"}]"#,
        ],
    ));
    assert_eq!(
        goal(&repo, "G002-b")["supersededBy"],
        json!(["G005-b-via-the-new-api"])
    );
    // Without replacements and decision: steering-blocked.
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "mark_blocked_superseded",
            "--goal-id",
            "G003-c",
            "--blocked-reason",
            "vendor outage",
        ],
    ));
    let g = goal(&repo, "G003-c");
    assert_eq!(g["status"], "blocked");
    assert_eq!(g["steeringStatus"], "blocked");
    assert_eq!(g["blockedReason"], "vendor outage");
    // With a user decision: waived.
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "mark_blocked_superseded",
            "--goal-id",
            "G004-d",
            "--user-decision",
            "drop d",
        ],
    ));
    let g = goal(&repo, "G004-d");
    assert_eq!(g["steeringStatus"], "superseded");
    assert_eq!(g["supersededBy"], json!([]));
    assert_eq!(g["waiver"]["userDecision"], "drop d");
    assert_eq!(g["status"], "pending");
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["summary"]["waived"], 1);

    rejects(
        &repo,
        &["--kind", "mark_blocked_superseded", "--goal-id", "G004-d"],
        "target already superseded",
    );
    start(&repo);
    pass_all(&repo, "G001-a");
    expect_ok(&checkpoint_complete(&repo, "G001-a", &["--no-advance"]));
    let v = rejects(
        &repo,
        &["--kind", "mark_blocked_superseded", "--goal-id", "G001-a"],
        "mark_blocked_superseded requires unresolved target",
    );
    assert_eq!(v["audit"]["invariant"]["noEasierCompletion"], false);
}

#[test]
fn unblock_returns_a_user_decision_goal_to_pending() {
    let repo = three();
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("needs_user_decision"));
        g.insert("nonRetriable".into(), json!(true));
        g.insert(
            "blockerSignature".into(),
            json!("EXTERNAL_AUTHORIZATION_REQUIRED"),
        );
        g.insert("blockerOccurrenceCount".into(), json!(3));
        g.insert("attempt".into(), json!(2));
    });
    let v = rejects(
        &repo,
        &["--kind", "unblock", "--goal-id", "G001-a"],
        "unblock requires userDecision",
    );
    assert_eq!(v["audit"]["invariant"]["noEasierCompletion"], false);
    rejects(
        &repo,
        &[
            "--kind",
            "unblock",
            "--goal-id",
            "G002-b",
            "--user-decision",
            "x",
        ],
        "unblock requires blocked target",
    );

    let v = expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "unblock",
            "--goal-id",
            "G001-a",
            "--user-decision",
            "token rotated by the user",
        ],
    ));
    assert_eq!(v["audit"]["userDecision"], "token rotated by the user");
    let g = goal(&repo, "G001-a");
    assert_eq!(g["status"], "pending");
    for k in ["nonRetriable", "blockerSignature", "blockerOccurrenceCount"] {
        assert!(g.get(k).is_none(), "{k} cleared");
    }
    assert_eq!(g["userDecision"], "token rotated by the user");
    assert!(g["unblockedAt"].is_string());
    assert_eq!(g["attempt"], 2, "the next start increments it");
    let started = start(&repo);
    assert_eq!(started["goal"]["id"], "G001-a");
    assert_eq!(started["goal"]["attempt"], 3);
}

#[test]
fn unblock_lifts_a_steering_block() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &["--kind", "mark_blocked_superseded", "--goal-id", "G002-b"],
    ));
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "unblock",
            "--goal-id",
            "G002-b",
            "--user-decision",
            "retry it",
        ],
    ));
    let g = goal(&repo, "G002-b");
    assert_eq!(g["status"], "pending");
    assert!(g.get("steeringStatus").is_none());
    assert!(g.get("blockedReason").is_none());
}

#[test]
fn revise_batch_accepted_and_rejected() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB1",
            "--member-ids",
            r#"["G001-a", "G002-b"]"#,
            "--final-goal-id",
            "G002-b",
        ],
    ));
    assert_eq!(
        plan(&repo)["validationBatches"],
        json!([{"batchId": "VB1", "memberIds": ["G001-a", "G002-b"], "finalGoalId": "G002-b"}])
    );
    let kinds = kinds(&repo);
    assert_eq!(
        &kinds[kinds.len() - 2..],
        ["steering_accepted", "batch_updated"]
    );
    let bu = last(&repo);
    assert_eq!(bu["before"], Value::Null);
    assert_eq!(bu["after"][0]["batchId"], "VB1");
    assert_eq!(
        bu["revision"],
        ledger(&repo)[ledger(&repo).len() - 2]["revision"],
        "one append"
    );

    let v = rejects(
        &repo,
        &[
            "--kind",
            "revise_batch",
            "--batch-id",
            "VB1",
            "--member-ids",
            r#"["G002-b", "G003-c"]"#,
        ],
        "revise_batch weakens batch",
    );
    assert_eq!(v["audit"]["invariant"]["noEasierCompletion"], false);
    rejects(
        &repo,
        &["--kind", "revise_batch", "--batch-id", "VB9"],
        "revise_batch unknown batch",
    );
}

#[test]
fn no_kind_completes_a_goal_and_protected_keys_are_refused_at_any_depth() {
    let repo = three();
    let d = json!({
        "kind": "split_subgoal", "goalId": "G001-a", "evidence": "e", "rationale": "r",
        "childGoals": [{"title": "x", "objective": "y", "status": "complete"}]
    })
    .to_string();
    let r = ulw(&repo, &["steer", "--directive-json", &d]);
    let v = expect_rejected(&r, "ULW_LOOP_STEERING_REJECTED", "protected payload");
    assert_eq!(v["audit"]["channel"], "directive");
    assert!(
        plan(&repo)["goals"]
            .as_array()
            .unwrap()
            .iter()
            .all(|g| g["status"] != "complete")
    );
}

#[test]
fn weakened_wording_is_only_a_warning() {
    let repo = three();
    let r = ulw(
        &repo,
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--evidence",
            "we must remove a flaky test",
            "--rationale",
            "it flakes on CI",
        ],
    );
    let v = expect_ok(&r);
    assert_eq!(v["warnings"][0]["code"], "WEAKENED_COMPLETION_WORDING");
    assert_eq!(
        v["audit"]["invariant"]["warnings"],
        json!(["WEAKENED_COMPLETION_WORDING"])
    );
}

#[test]
fn text_output() {
    let repo = three();
    let r = eg(
        &repo,
        "ulw-loop",
        &[
            "steer",
            "--kind",
            "annotate_ledger",
            "--idempotency-key",
            "note-1",
            "--evidence",
            "e",
            "--rationale",
            "r",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.starts_with(
            "ulw-loop steer: accepted annotate_ledger\nidempotency-key: note-1\nulw-loop status"
        ),
        "{}",
        r.stdout
    );
    let r = eg(
        &repo,
        "ulw-loop",
        &[
            "steer",
            "--kind",
            "unblock",
            "--goal-id",
            "G001-a",
            "--evidence",
            "e",
            "--rationale",
            "r",
        ],
    );
    assert_eq!(r.code, 1);
    assert!(
        r.stdout.starts_with(
            "ulw-loop steer: rejected unblock\nrejected: unblock requires blocked target\n"
        ),
        "{}",
        r.stdout
    );
}

#[test]
fn a_kind_the_profile_disables_is_an_audited_rejection() {
    let repo = three();
    let kinds: Vec<&str> = vec![
        "add_subgoal",
        "split_subgoal",
        "reorder_pending",
        "revise_pending_wording",
        "revise_criterion",
        "annotate_ledger",
        "mark_blocked_superseded",
        "revise_batch",
    ];
    repo.write(
        ".evidence-gate/rules.json",
        json!({"profiles": {"ulw-loop": {"steering": {"kinds": kinds}}}}).to_string(),
    );
    edit_goal(&repo, "G001-a", |g| {
        g.insert("status".into(), json!("failed"));
    });
    rejects(
        &repo,
        &["--kind", "unblock", "--goal-id", "G001-a"],
        "invalid kind: unblock",
    );
}

#[test]
fn source_defaults_follow_the_flag_in_batches() {
    let repo = three();
    let items = json!([{"kind": "annotate_ledger", "evidence": "e", "rationale": "r"}]).to_string();
    let v = expect_ok(&ulw(
        &repo,
        &["steer", "--proposals-json", &items, "--source", "finding"],
    ));
    assert_eq!(v["results"][0]["audit"]["source"], "finding");
}
