//! A plan large enough that the engine reads its goals on two threads, checks
//! them on two threads and writes them on two threads (300 goals, about
//! 540 KB): every answer and every file is the one the one-thread paths give,
//! and a hand edit deep in the second half is still found, at the same place.

use serde_json::{Value, json};

use crate::goals_support::*;

/// 300 goals from a 300-item brief.
fn large_repo() -> Repo {
    let brief: Vec<String> = (0..300)
        .map(|i| {
            format!(
                "- Implement part {i} of the service behind the public API, with tests, docs and a migration note"
            )
        })
        .collect();
    let repo = Repo::new();
    expect_ok(&ulw(&repo, &["create-goals", "--brief", &brief.join("\n")]));
    let bytes = plan_bytes(&repo);
    assert!(bytes.len() > 256 * 1024, "{} bytes", bytes.len());
    repo
}

/// The plan file is exactly the engine's layout of what it holds.
fn assert_engine_layout(repo: &Repo) {
    let bytes = plan_bytes(repo);
    let mut again =
        serde_json::to_vec_pretty(&serde_json::from_slice::<Value>(&bytes).unwrap()).unwrap();
    again.push(b'\n');
    assert!(bytes == again, "goals.json is not in the engine's layout");
}

#[test]
fn a_large_plan_reads_writes_and_answers_as_a_small_one() {
    let repo = large_repo();
    assert_engine_layout(&repo);
    let ids = goal_ids(&repo);
    assert_eq!(ids.len(), 300);
    // `status` prints the plan it read: the file's content, member for member.
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["plan"], plan(&repo));
    // The first goal started, evidence recorded on it: the whole plan is
    // written again (both halves), in the engine's layout.
    start(&repo);
    let late = &ids[0];
    let r = expect_ok(&ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            late,
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "cargo test part_0: ok",
            "--accept-seeded",
            "placeholder criteria of a generated plan",
        ],
    ));
    assert_engine_layout(&repo);
    let g = goal(&repo, late);
    assert_eq!(g["successCriteria"][0]["status"], "pass", "{g}");
    assert_eq!(r["plan"], plan(&repo));
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["plan"], plan(&repo));
    assert_eq!(s["plan"]["goals"][0], g);
    assert_eq!(s["plan"]["goals"][299]["id"], ids[299].as_str());
    // The remaining criteria and a checkpoint: the goal completes and the
    // next one starts, each write in the engine's layout.
    pass_all(&repo, late);
    expect_ok(&checkpoint_complete(&repo, late, &[]));
    assert_engine_layout(&repo);
    assert_eq!(goal(&repo, late)["status"], "complete");
    let s = expect_ok(&ulw(&repo, &["status"]));
    assert_eq!(s["plan"], plan(&repo));
    // The ledger's newest entry records the body digest of the file written
    // and the digest of the Stop view written with it (the body hashed on a
    // helper thread while the view was computed).
    let last = ledger(&repo).pop().unwrap();
    let mut body = plan(&repo);
    body.as_object_mut().unwrap().remove("lastMutation");
    let mut text = serde_json::to_vec_pretty(&body).unwrap();
    text.push(b'\n');
    assert_eq!(last["planSha256"], sha256_hex(&text));
    let view = std::fs::read(state(&repo, ".goals.summary")).unwrap();
    let line = &view[..view.iter().position(|b| *b == b'\n').unwrap()];
    assert_eq!(last["summarySha256"], sha256_hex(line));
    let bound: Value = serde_json::from_slice(line).unwrap();
    assert_eq!(bound["planSha256"], last["planSha256"]);
}

#[test]
fn a_hand_edit_deep_in_a_large_plan_is_found_where_it_is() {
    // A duplicate key inside goal 250: not valid JSON for the engine, with
    // the line of the duplicate (the one-thread reader's report).
    let repo = large_repo();
    let text = String::from_utf8(plan_bytes(&repo)).unwrap();
    let id = goal_ids(&repo)[250].clone();
    let needle = format!("\"id\": \"{id}\",");
    let at = text.find(&needle).unwrap();
    let line = text[..at].matches('\n').count() + 1;
    let edited = text.replacen(&needle, &format!("{needle} \"id\": \"again\","), 1);
    std::fs::write(state(&repo, "goals.json"), edited).unwrap();
    let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("duplicate key `id`"), "{e}");
    assert!(message.contains(&format!("line {line} ")), "{e}");

    // Field rules: the first violation in document order, whichever half
    // of the goals it is in.
    for (edits, pointer) in [
        (
            vec![("/goals/280/status", json!("done"))],
            "/goals/280/status",
        ),
        // Goal 200 takes the first goal's id (filled in below): a duplicate
        // goal id, reported before goal 260's attempt.
        (
            vec![
                ("/goals/200/id", Value::Null),
                ("/goals/260/attempt", json!(-1)),
            ],
            "/goals/200/id",
        ),
        (
            vec![
                ("/goals/160/successCriteria/0/status", json!("nope")),
                ("/goals/20/title", json!(7)),
            ],
            "/goals/20/title",
        ),
    ] {
        let repo = large_repo();
        let mut p = plan(&repo);
        let first = p["goals"][0]["id"].clone();
        for (ptr, v) in edits {
            *p.pointer_mut(ptr).unwrap() = if v.is_null() { first.clone() } else { v };
        }
        write_plan(&repo, &p);
        let e = expect_error(&ulw(&repo, &["status"]), "ULW_LOOP_PLAN_CORRUPT");
        assert_eq!(e["details"]["pointer"], pointer, "{e}");
    }
}

#[test]
fn a_large_plan_edited_in_its_layout_is_tampering() {
    // The title of goal 290 changed in place, layout kept: the body digest
    // no longer matches the ledger's, and the file is not taken for the
    // engine's encoding of the plan.
    let repo = large_repo();
    let text = String::from_utf8(plan_bytes(&repo)).unwrap();
    let title = plan(&repo)["goals"][290]["title"]
        .as_str()
        .unwrap()
        .to_owned();
    let edited = text.replacen(
        &format!("\"title\": \"{title}\""),
        &format!("\"title\": \"{title} (done)\""),
        1,
    );
    assert_ne!(edited, text);
    std::fs::write(state(&repo, "goals.json"), edited).unwrap();
    let s = ulw(&repo, &["status"]);
    assert_eq!(s.code, 1, "status of a tampered plan is not ok");
    let v = s.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["ledger"]["binding"]["codes"], json!(["PLAN_TAMPERED"]));
    let r = ulw(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            &goal_ids(&repo)[290],
            "--criterion-id",
            "C001",
            "--status",
            "pass",
            "--evidence",
            "ok",
        ],
    );
    assert_eq!(r.code, 1, "a mutation of a tampered plan is refused");
    let v = r.json();
    assert_eq!(v["ok"], false);
    assert_eq!(
        v["error"]["code"], "ULW_LOOP_PLAN_TAMPERED",
        "{}",
        v["error"]
    );
}
