//! `--proposals-json` batches, `--directive-json` / `--directive-file`,
//! `--after-json`, and idempotency (goal-engine.md §5.6–§5.9).

use crate::goals_support::*;
use serde_json::{Value, json};

fn three() -> Repo {
    repo_with_plan("- a\n- b\n- c")
}

fn batch(repo: &Repo, items: &Value) -> Run {
    ulw(repo, &["steer", "--proposals-json", &items.to_string()])
}

fn item(kind: &str, extra: Value) -> Value {
    let mut v = json!({"kind": kind, "evidence": "observed", "rationale": "because"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

#[test]
fn items_without_source_are_accepted_with_source_cli() {
    let repo = three();
    let items = json!([
        item(
            "add_subgoal",
            json!({"title": "Write docs", "objective": "Document the API"})
        ),
        item(
            "revise_pending_wording",
            json!({"goalId": "G002-b", "revisedTitle": "B v2"})
        ),
    ]);
    let n = ledger(&repo).len();
    let v = expect_ok(&batch(&repo, &items));
    assert_eq!(v["accepted"], true);
    for r in v["results"].as_array().unwrap() {
        assert_eq!(r["accepted"], true);
        assert_eq!(r["audit"]["source"], "cli");
        assert_eq!(r["audit"]["channel"], "batch");
        assert_eq!(r["audit"]["proposalDigest"].as_str().unwrap().len(), 64);
    }
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2, "one entry per item, one append");
    assert!(l[n..].iter().all(|e| e["steering"]["source"] == "cli"));
    assert_eq!(l[n]["revision"], l[n + 1]["revision"]);
    assert_eq!(l[n]["revision"], v["revision"], "one plan write");
    assert_eq!(goal(&repo, "G002-b")["title"], "B v2");
}

#[test]
fn a_rejected_batch_leaves_the_plan_and_ledger_unchanged_but_for_one_rejection_record() {
    let repo = three();
    let items = json!([
        item(
            "add_subgoal",
            json!({"title": "Write docs", "objective": "Document the API"})
        ),
        item(
            "split_subgoal",
            json!({"goalId": "G9", "childGoals": [{"title": "x", "objective": "y"}]})
        ),
    ]);
    let plan_before = plan_bytes(&repo);
    let ledger_before = ledger(&repo);
    let r = batch(&repo, &items);
    let v = expect_rejected(
        &r,
        "ULW_LOOP_STEERING_REJECTED",
        "split_subgoal requires target",
    );
    assert_eq!(v["error"]["details"]["index"], 1);
    assert_eq!(
        v["results"][0]["accepted"], true,
        "per-item results are reported"
    );
    assert_eq!(v["results"][1]["accepted"], false);
    assert_eq!(plan_bytes(&repo), plan_before);
    let l = ledger(&repo);
    assert_eq!(&l[..ledger_before.len()], &ledger_before[..]);
    assert_eq!(l.len(), ledger_before.len() + 1);
    let e = l.last().unwrap();
    assert_eq!(e["kind"], "steering_rejected");
    assert_eq!(e["message"], "index 1: split_subgoal requires target");
    assert_eq!(e["batch"]["index"], 1);
    assert_eq!(e["batch"]["size"], 2);
    assert_eq!(e["batch"]["digest"].as_str().unwrap().len(), 64);
    assert_eq!(
        e["steering"]["invariant"]["rejectedReasons"],
        json!(["split_subgoal requires target"])
    );
    assert_eq!(e["steering"]["channel"], "batch");
    assert_eq!(
        v["plan"]["goals"].as_array().unwrap().len(),
        3,
        "the reported plan is unchanged"
    );
}

#[test]
fn every_rejected_item_gets_its_own_record() {
    let repo = three();
    let items = json!([
        item("unblock", json!({"goalId": "G001-a"})),
        item("annotate_ledger", json!({})),
        item("reorder_pending", json!({"pendingOrder": ["G9"]})),
    ]);
    let n = ledger(&repo).len();
    let r = batch(&repo, &items);
    let v = expect_rejected(
        &r,
        "ULW_LOOP_STEERING_REJECTED",
        "unblock requires blocked target",
    );
    assert_eq!(
        v["error"]["message"],
        "Steering batch rejected: index 0: unblock requires blocked target; index 2: unknown pending id."
    );
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    assert_eq!(l[n]["message"], "index 0: unblock requires blocked target");
    assert_eq!(l[n + 1]["message"], "index 2: unknown pending id");
    assert_eq!(l[n]["batch"]["digest"], l[n + 1]["batch"]["digest"]);
}

#[test]
fn later_items_see_earlier_ones_and_rejected_items_do_not_advance() {
    let repo = three();
    let items = json!([
        item("add_subgoal", json!({"title": "New", "objective": "n"})),
        item(
            "revise_pending_wording",
            json!({"goalId": "G004-new", "title": "Newer"})
        ),
    ]);
    expect_ok(&batch(&repo, &items));
    assert_eq!(goal(&repo, "G004-new")["title"], "Newer");
}

#[test]
fn batch_items_carry_every_field() {
    let repo = three();
    start(&repo);
    let items = json!([
        item(
            "revise_criterion",
            json!({"goalId": "G001-a", "criterionId": "C002", "userModel": "adversarial"})
        ),
        item(
            "mark_blocked_superseded",
            json!({"goalId": "G003-c", "blockedReason": "needs a license"})
        ),
    ]);
    expect_ok(&batch(&repo, &items));
    assert_eq!(
        goal(&repo, "G001-a")["successCriteria"][1]["userModel"],
        "adversarial"
    );
    assert_eq!(goal(&repo, "G003-c")["blockedReason"], "needs a license");
    let items = json!([item(
        "annotate_ledger",
        json!({"now": "2026-01-01T00:00:00.000Z"})
    )]);
    expect_rejected(
        &batch(&repo, &items),
        "ULW_LOOP_STEERING_REJECTED",
        "unknown field: now",
    );
}

#[test]
fn duplicates_inside_a_batch_are_deduped_and_conflicts_rejected() {
    let repo = three();
    let note = item("annotate_ledger", json!({"idempotencyKey": "dup"}));
    let n = ledger(&repo).len();
    let v = expect_ok(&batch(&repo, &json!([note, note])));
    assert_eq!(v["results"][1]["deduped"], true);
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    assert_eq!(l[n]["kind"], "steering_accepted");
    assert_eq!(l[n + 1]["kind"], "steering_deduped");
    assert_eq!(l[n + 1]["dedupedSeq"], l[n]["seq"]);
    assert_eq!(v["results"][1]["audit"]["dedupedSeq"], l[n]["seq"]);

    let other = item("annotate_ledger", json!({"idempotencyKey": "dup2"}));
    let clash = item(
        "add_subgoal",
        json!({"idempotencyKey": "dup2", "title": "t", "objective": "o"}),
    );
    let r = batch(&repo, &json!([other, clash]));
    let v = expect_rejected(
        &r,
        "ULW_LOOP_STEERING_KEY_CONFLICT",
        "idempotency key conflict",
    );
    assert_eq!(v["error"]["details"]["index"], 1);
    assert_eq!(
        v["error"]["details"]["priorSeq"],
        Value::Null,
        "the earlier item was never written"
    );
}

#[test]
fn replaying_a_committed_batch_writes_only_deduped_entries() {
    let repo = three();
    let items = json!([
        item(
            "add_subgoal",
            json!({"title": "Docs", "objective": "d", "idempotencyKey": "b1"})
        ),
        item("annotate_ledger", json!({"idempotencyKey": "b2"})),
    ]);
    expect_ok(&batch(&repo, &items));
    let plan_before = plan_bytes(&repo);
    let n = ledger(&repo).len();
    let v = expect_ok(&batch(&repo, &items));
    assert!(
        v["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["deduped"] == true)
    );
    assert_eq!(plan_bytes(&repo), plan_before, "byte-identical plan");
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    assert!(l[n..].iter().all(|e| e["kind"] == "steering_deduped"));
    assert!(l[n..].iter().all(|e| e["channel"] == "batch"));
}

#[test]
fn a_split_in_a_batch_updates_batch_membership_in_the_same_append() {
    let repo = with_batch("- a\n- b\n- c", vb1());
    let items = json!([item(
        "split_subgoal",
        json!({"goalId": "G002-b", "childGoals": [{"title": "b1", "objective": "x"}, {"title": "b2", "objective": "y"}]})
    ),]);
    let n = ledger(&repo).len();
    expect_ok(&batch(&repo, &items));
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    assert_eq!(l[n + 1]["kind"], "batch_updated");
    assert_eq!(
        l[n + 1]["after"][0]["memberIds"],
        json!(["G001-a", "G004-b1", "G005-b2"])
    );
    assert_eq!(
        l[n + 1]["after"][0]["finalGoalId"],
        "G005-b2",
        "the last replacement becomes final"
    );
}

#[test]
fn directive_json_and_directive_file() {
    let repo = three();
    let d = json!({"kind": "add_subgoal", "title": "From a directive", "objective": "o", "evidence": "e", "rationale": "r"});
    let text = d.to_string();
    let v = expect_ok(&ulw(
        &repo,
        &["steer", "--directive-json", &text, "--source", "finding"],
    ));
    let a = &v["audit"];
    assert_eq!(a["channel"], "directive");
    assert_eq!(
        a["source"], "finding",
        "--source is the default for a directive without one"
    );
    assert_eq!(a["directiveText"], text.as_str());
    let sig = a["promptSignature"].as_str().unwrap();
    assert_eq!(sig.len(), 64);
    assert!(plan(&repo)["goals"].as_array().unwrap().len() == 4);
    // The same directive from a file dedupes on its prompt signature.
    repo.write("directive.json", format!("  {text}\n"));
    let v = expect_ok(&ulw(
        &repo,
        &["steer", "--directive-file", "directive.json"],
    ));
    assert_eq!(v["deduped"], true);
    assert_eq!(v["audit"]["deduped"], true);
    assert!(v["audit"].get("before").is_none());
    let e = ledger(&repo).last().unwrap().clone();
    assert_eq!(e["kind"], "steering_deduped");
    assert_eq!(e["promptSignature"], sig);
    assert_eq!(plan(&repo)["goals"].as_array().unwrap().len(), 4);
    // An explicit source in the directive wins over --source.
    let d2 = json!({"kind": "annotate_ledger", "source": "user_prompt_submit", "evidence": "e", "rationale": "r"}).to_string();
    let v = expect_ok(&ulw(
        &repo,
        &[
            "steer",
            "--directive-json",
            &d2,
            "--source",
            "cli",
            "--idempotency-key",
            "d2",
        ],
    ));
    assert_eq!(v["audit"]["source"], "user_prompt_submit");
    assert_eq!(v["audit"]["idempotencyKey"], "d2");
}

#[test]
fn after_json_supplies_the_post_mutation_values() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "revise_pending_wording",
            "--goal-id",
            "G003-c",
            "--after-json",
            r#"{"objective": "c, precisely"}"#,
        ],
    ));
    assert_eq!(goal(&repo, "G003-c")["objective"], "c, precisely");
    expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "split_subgoal",
            "--goal-id",
            "G002-b",
            "--children",
            r#"[{"title": "x", "objective": "y"}]"#,
            "--after-json",
            r#"{"children": [{"title": "x", "objective": "y"}]}"#,
        ],
    ));
    let r = steer(
        &repo,
        &[
            "--kind",
            "reorder_pending",
            "--order",
            r#"["G003-c"]"#,
            "--after-json",
            r#"{"pendingGoalIds": ["G001-a"]}"#,
        ],
    );
    expect_rejected(
        &r,
        "ULW_LOOP_STEERING_REJECTED",
        "after conflicts with pendingOrder",
    );
    let r = steer(
        &repo,
        &[
            "--kind",
            "add_subgoal",
            "--title",
            "t",
            "--objective",
            "o",
            "--after-json",
            r#"{"color": "red"}"#,
        ],
    );
    expect_rejected(
        &r,
        "ULW_LOOP_STEERING_REJECTED",
        "unknown field: after.color",
    );
}

#[test]
fn replay_dedupes_with_the_prior_audit_and_records_steering_deduped() {
    let repo = three();
    let args = [
        "--kind",
        "annotate_ledger",
        "--goal-id",
        "G002-b",
        "--idempotency-key",
        "note-7",
    ];
    let first = expect_ok(&steer(&repo, &args));
    let seq = ledger(&repo).last().unwrap()["seq"].clone();
    let n = ledger(&repo).len();
    let v = expect_ok(&steer(&repo, &args));
    assert_eq!(v["accepted"], true);
    assert_eq!(v["deduped"], true);
    let mut expected = first["audit"].clone();
    expected["deduped"] = json!(true);
    expected["dedupedSeq"] = seq.clone();
    assert_eq!(v["audit"], expected, "the prior audit plus deduped");
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 1);
    let e = &l[n];
    assert_eq!(e["kind"], "steering_deduped");
    assert_eq!(e["dedupedSeq"], seq);
    assert_eq!(e["mutationKind"], "annotate_ledger");
    assert_eq!(e["goalId"], "G002-b");
    assert_eq!(e["idempotencyKey"], "note-7");
    assert_eq!(e["revision"], l[n - 1]["revision"]);
}

#[test]
fn key_and_signature_namespaces_are_distinct() {
    let repo = three();
    expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "abc"],
    ));
    let d = json!({"kind": "add_subgoal", "title": "t", "objective": "o", "evidence": "e", "rationale": "r", "promptSignature": "abc"}).to_string();
    let v = expect_ok(&ulw(&repo, &["steer", "--directive-json", &d]));
    assert_eq!(v["deduped"], false, "p:abc is not k:abc");
}

#[test]
fn replays_are_deduped_even_after_the_run_completed() {
    let repo = repo_with_plan("- only");
    expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "k"],
    ));
    edit_goal(&repo, "G001-only", |g| {
        g.insert("status".into(), json!("complete"));
    });
    let v = expect_ok(&steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "k"],
    ));
    assert_eq!(v["deduped"], true);
    let r = steer(
        &repo,
        &["--kind", "annotate_ledger", "--idempotency-key", "k2"],
    );
    expect_rejected(&r, "ULW_LOOP_STEERING_REJECTED", "plan already complete");
}

#[test]
fn legacy_entries_without_a_digest_match_by_kind_and_targets() {
    let repo = three();
    // A Node-written accepted steer (no seq, no digest), appended after the index.
    let legacy = json!({
        "at": "2026-01-01T00:00:00.000Z", "kind": "steering_accepted", "evidence": "e", "message": "r",
        "steering": {"kind": "annotate_ledger", "source": "cli", "targetGoalIds": ["G001-a"], "evidence": "e",
                     "rationale": "r", "invariant": {"accepted": true}, "idempotencyKey": "node-1"},
        "mutationKind": "annotate_ledger", "goalId": "G001-a", "idempotencyKey": "node-1"
    });
    let mut text = std::fs::read_to_string(state(&repo, "ledger.jsonl")).unwrap();
    text.push_str(&legacy.to_string());
    text.push('\n');
    std::fs::write(state(&repo, "ledger.jsonl"), text).unwrap();
    let v = expect_ok(&steer(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--goal-id",
            "G001-a",
            "--idempotency-key",
            "node-1",
        ],
    ));
    assert_eq!(v["deduped"], true);
    let r = steer(
        &repo,
        &[
            "--kind",
            "annotate_ledger",
            "--goal-id",
            "G002-b",
            "--idempotency-key",
            "node-1",
        ],
    );
    expect_rejected(
        &r,
        "ULW_LOOP_STEERING_KEY_CONFLICT",
        "idempotency key conflict",
    );
}

#[test]
fn concurrent_steers_lose_nothing_and_replays_dedupe_once() {
    use std::process::{Command, Stdio};
    let repo = three();
    let spawn = |args: Vec<String>| {
        let mut cmd = Command::new(crate::common::bin("evidence-gate"));
        crate::common::isolate_home(&mut cmd);
        cmd.arg("ulw-loop")
            .arg("steer")
            .args(&args)
            .args(WHY)
            .args(["--lock-timeout-ms", "120000", "--json"])
            .current_dir(repo.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (k, v) in clean_env() {
            cmd.env(k, v);
        }
        cmd.spawn().unwrap()
    };
    let mut children = Vec::new();
    for n in 0..8 {
        let t = format!("added {n}");
        children.push(spawn(vec![
            "--kind".into(),
            "add_subgoal".into(),
            "--title".into(),
            t.clone(),
            "--objective".into(),
            t,
        ]));
        children.push(spawn(vec![
            "--kind".into(),
            "annotate_ledger".into(),
            "--idempotency-key".into(),
            format!("note-{n}"),
        ]));
        children.push(spawn(vec![
            "--kind".into(),
            "annotate_ledger".into(),
            "--idempotency-key".into(),
            "same".into(),
        ]));
    }
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let p = plan(&repo);
    assert_eq!(p["goals"].as_array().unwrap().len(), 11);
    let l = ledger(&repo);
    let count = |pred: &dyn Fn(&Value) -> bool| l.iter().filter(|e| pred(e)).count();
    assert_eq!(
        count(&|e| e["mutationKind"] == "add_subgoal" && e["kind"] == "steering_accepted"),
        8
    );
    assert_eq!(
        count(&|e| e["idempotencyKey"] == "same" && e["kind"] == "steering_accepted"),
        1
    );
    assert_eq!(
        count(&|e| e["idempotencyKey"] == "same" && e["kind"] == "steering_deduped"),
        7
    );
    let first = l
        .iter()
        .find(|e| e["idempotencyKey"] == "same" && e["kind"] == "steering_accepted")
        .unwrap()["seq"]
        .clone();
    assert!(
        l.iter()
            .filter(|e| e["kind"] == "steering_deduped")
            .all(|e| e["dedupedSeq"] == first)
    );
    let v = expect_ok(&ulw(&repo, &["repair", "--check"]));
    assert_eq!(v["findings"], json!([]));
}

#[test]
fn every_accepted_batch_entry_carries_plan_snapshots() {
    // docs/differences.md#r-4: the Node tool writes `before`/`after` snapshots on every accepted
    // steering entry — an `annotate_ledger` item of a batch as well.
    let repo = three();
    let items = json!([
        item("annotate_ledger", json!({"goalId": "G001-a"})),
        item("add_subgoal", json!({"title": "New", "objective": "n"})),
    ]);
    let n = ledger(&repo).len();
    let v = expect_ok(&batch(&repo, &items));
    let l = ledger(&repo);
    assert_eq!(l.len(), n + 2);
    let note = &l[n]["steering"];
    assert_eq!(l[n]["mutationKind"], "annotate_ledger");
    assert_eq!(note["before"], note["after"]);
    assert_eq!(note["before"]["goalCount"], 3);
    assert_eq!(note["before"]["goals"], json!([]));
    let add = &l[n + 1]["steering"];
    assert_eq!(add["before"]["goalCount"], 3);
    assert_eq!(add["after"]["goalCount"], 4);
    assert_eq!(add["after"]["goals"][0]["id"], "G004-new");
    // The printed audits stay compact: snapshots live only in the ledger.
    for r in v["results"].as_array().unwrap() {
        assert!(r["audit"].get("before").is_none(), "{r}");
    }
}
