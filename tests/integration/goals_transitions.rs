//! Every row of the enforced transition table (goal-engine.md §3.2) that the
//! CLI commands and the scheduler implement: allowed and refused.

use crate::goals_support::*;
use serde_json::{Value, json};

const THREE: &str = "- a\n- b\n- c";

fn set_status(repo: &Repo, id: &str, status: &str) {
    edit_goal(repo, id, |g| {
        g.insert("status".into(), json!(status));
    });
}

fn set_overlay(repo: &Repo, id: &str, overlay: &str) {
    edit_goal(repo, id, |g| {
        g.insert("steeringStatus".into(), json!(overlay));
    });
}

fn refused(run: &Run, from: &str) -> Value {
    let e = expect_error(run, "ULW_LOOP_TRANSITION_INVALID");
    assert_eq!(e["details"]["from"], from, "{e}");
    assert!(e["details"]["allowedFrom"].is_array());
    e
}

fn cp(repo: &Repo, id: &str, status: &str, extra: &[&str]) -> Run {
    let snap = active(repo);
    let mut args = vec![
        "checkpoint",
        "--goal-id",
        id,
        "--status",
        status,
        "--evidence",
        "e",
    ];
    if status == "complete" {
        args.extend(["--codex-goal-json", snap.as_str()]);
    }
    args.extend_from_slice(extra);
    ulw(repo, &args)
}

#[test]
fn scheduler_start_takes_first_pending_without_overlay() {
    let repo = repo_with_plan(THREE);
    set_overlay(&repo, "G001-a", "blocked");
    let v = start(&repo);
    assert_eq!(v["state"], "started");
    assert_eq!(v["goal"]["id"], "G002-b");
    assert_eq!(goal(&repo, "G002-b")["status"], "in_progress");
    assert_eq!(goal(&repo, "G002-b")["attempt"], 1);
    assert_eq!(goal(&repo, "G001-a")["status"], "pending");
}

#[test]
fn scheduler_resume_writes_nothing() {
    let repo = repo_with_plan(THREE);
    start(&repo);
    let before = std::fs::read(state(&repo, "ledger.jsonl")).unwrap();
    let v = start(&repo);
    assert_eq!(v["state"], "resumed");
    assert_eq!(v["resumed"], true);
    assert_eq!(std::fs::read(state(&repo, "ledger.jsonl")).unwrap(), before);
}

#[test]
fn scheduler_reopens_review_blocked_goal_when_resolution_goals_are_resolved() {
    let repo = repo_with_plan("- a\n- b");
    set_status(&repo, "G001-a", "review_blocked");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("reviewBlockedBy".into(), json!(["G002-b"]));
    });
    let v = start(&repo);
    assert_eq!(v["goal"]["id"], "G002-b", "resolution goal first");
    set_status(&repo, "G002-b", "complete");
    let v = start(&repo);
    assert_eq!(v["state"], "started");
    assert_eq!(v["goal"]["id"], "G001-a");
    let started = ledger(&repo)
        .into_iter()
        .rev()
        .find(|e| e["kind"] == "goal_started")
        .unwrap();
    assert_eq!(started["reopenedFrom"], "review_blocked");
    assert_eq!(goal(&repo, "G001-a")["status"], "in_progress");
}

#[test]
fn scheduler_does_not_reopen_while_resolution_goals_are_open() {
    let repo = repo_with_plan("- a\n- b");
    set_status(&repo, "G001-a", "review_blocked");
    set_status(&repo, "G002-b", "failed");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("reviewBlockedBy".into(), json!(["G002-b"]));
    });
    let v = start(&repo);
    assert_eq!(v["state"], "stalled");
    assert_eq!(v["stalledGoalIds"], json!(["G001-a", "G002-b"]));
}

#[test]
fn scheduler_retry_needs_the_flag_and_skips_non_retriable_goals() {
    let repo = repo_with_plan("- a\n- b");
    set_status(&repo, "G001-a", "failed");
    set_status(&repo, "G002-b", "failed");
    edit_goal(&repo, "G001-a", |g| {
        g.insert("nonRetriable".into(), json!(true));
    });
    assert_eq!(start(&repo)["state"], "stalled");
    let v = expect_ok(&ulw(&repo, &["complete-goals", "--retry-failed"]));
    assert_eq!(v["goal"]["id"], "G002-b");
    let k = kinds(&repo);
    assert_eq!(&k[k.len() - 2..], ["goal_retried", "goal_started"]);
}

#[test]
fn checkpoint_complete_from_in_progress_is_allowed() {
    let repo = repo_with_plan(THREE);
    start(&repo);
    pass_all(&repo, "G001-a");
    let v = expect_ok(&cp(&repo, "G001-a", "complete", &["--no-advance"]));
    assert_eq!(v["goal"]["status"], "complete");
}

#[test]
fn checkpoint_complete_from_pending_needs_start_pending() {
    let repo = repo_with_plan(THREE);
    refused(&cp(&repo, "G001-a", "complete", &[]), "pending");
    pass_all_pending(&repo, "G001-a");
    let v = expect_ok(&cp(
        &repo,
        "G001-a",
        "complete",
        &["--start-pending", "--no-advance"],
    ));
    assert_eq!(v["goal"]["status"], "complete");
    assert_eq!(v["goal"]["attempt"], 1);
    let kinds: Vec<&str> = v["ledgerEntries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["goal_started", "goal_completed"],
        "the start is audited first"
    );
}

fn pass_all_pending(repo: &Repo, id: &str) {
    edit_goal(repo, id, |g| {
        for c in g["successCriteria"].as_array_mut().unwrap() {
            c["status"] = json!("pass");
        }
    });
}

#[test]
fn start_pending_is_refused_while_another_goal_is_in_progress() {
    let repo = repo_with_plan(THREE);
    start(&repo);
    pass_all_pending(&repo, "G002-b");
    let e = refused(
        &cp(&repo, "G002-b", "complete", &["--start-pending"]),
        "pending",
    );
    assert!(e["message"].as_str().unwrap().contains("G001-a"));
}

#[test]
fn checkpoint_complete_is_refused_from_every_other_status() {
    for from in [
        "complete",
        "failed",
        "blocked",
        "needs_user_decision",
        "review_blocked",
    ] {
        let repo = repo_with_plan(THREE);
        set_status(&repo, "G001-a", from);
        pass_all_pending(&repo, "G001-a");
        refused(&cp(&repo, "G001-a", "complete", &[]), from);
    }
}

#[test]
fn checkpoint_refuses_goals_with_an_overlay() {
    for (overlay, status) in [
        ("superseded", "pending"),
        ("blocked", "blocked"),
        ("superseded", "in_progress"),
    ] {
        let repo = repo_with_plan(THREE);
        set_status(&repo, "G001-a", status);
        set_overlay(&repo, "G001-a", overlay);
        for s in ["complete", "failed", "blocked"] {
            let e = refused(&cp(&repo, "G001-a", s, &[]), status);
            assert_eq!(e["details"]["overlay"], overlay);
        }
    }
}

#[test]
fn checkpoint_failed_and_blocked_from_pending_or_in_progress_are_allowed() {
    for status in ["failed", "blocked"] {
        let repo = repo_with_plan(THREE);
        expect_ok(&cp(&repo, "G001-a", status, &[]));
        assert_eq!(goal(&repo, "G001-a")["status"], status);
        start(&repo);
        expect_ok(&cp(&repo, "G002-b", status, &[]));
        assert_eq!(goal(&repo, "G002-b")["status"], status);
    }
}

#[test]
fn checkpoint_failed_and_blocked_are_refused_from_other_statuses() {
    for from in [
        "complete",
        "failed",
        "blocked",
        "needs_user_decision",
        "review_blocked",
    ] {
        let repo = repo_with_plan(THREE);
        set_status(&repo, "G001-a", from);
        for s in ["failed", "blocked"] {
            refused(&cp(&repo, "G001-a", s, &[]), from);
        }
    }
}

fn rec(repo: &Repo, id: &str, cid: &str, status: &str) -> Run {
    ulw(
        repo,
        &[
            "record-evidence",
            "--goal-id",
            id,
            "--criterion-id",
            cid,
            "--status",
            status,
            "--evidence",
            "proof",
            "--accept-seeded",
            "fixture",
        ],
    )
}

#[test]
fn record_evidence_on_in_progress_goal_is_allowed() {
    let repo = repo_with_plan(THREE);
    start(&repo);
    for s in ["pass", "fail", "blocked"] {
        let v = expect_ok(&rec(&repo, "G001-a", "C001", s));
        assert_eq!(v["criterion"]["status"], s);
    }
}

#[test]
fn record_evidence_on_complete_goal_only_adds_late_passes() {
    let repo = repo_with_plan(THREE);
    set_status(&repo, "G001-a", "complete");
    edit_goal(&repo, "G001-a", |g| {
        g["successCriteria"][0]["status"] = json!("pass");
    });
    expect_ok(&rec(&repo, "G001-a", "C003", "pass"));
    refused(&rec(&repo, "G001-a", "C002", "fail"), "complete");
    refused(&rec(&repo, "G001-a", "C001", "pass"), "complete");
    refused(&rec(&repo, "G001-a", "C001", "fail"), "complete");
    assert_eq!(
        goal(&repo, "G001-a")["successCriteria"][0]["status"],
        "pass"
    );
}

#[test]
fn record_evidence_is_refused_on_pending_superseded_and_stopped_goals() {
    for (status, overlay) in [
        ("pending", None),
        ("failed", None),
        ("blocked", None),
        ("needs_user_decision", None),
        ("review_blocked", None),
        ("in_progress", Some("superseded")),
    ] {
        let repo = repo_with_plan(THREE);
        set_status(&repo, "G001-a", status);
        if let Some(o) = overlay {
            set_overlay(&repo, "G001-a", o);
        }
        refused(&rec(&repo, "G001-a", "C001", "pass"), status);
    }
}
