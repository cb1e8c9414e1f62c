//! Bad-input drill (quality-bar.md): every command fed truncated, oversized,
//! wrong-typed and hostile JSON answers with its documented code and
//! changes nothing on disk.

use crate::goals_support::*;

/// Paths and contents of every file (a lock file created and deleted by a
/// refused mutation leaves no trace here).
fn contents(repo: &Repo) -> Vec<(String, Vec<u8>)> {
    repo.snapshot()
        .into_iter()
        .filter(|(p, _, _)| !p.ends_with("diagnostics.jsonl"))
        .map(|(p, c, _)| (p, c))
        .collect()
}

fn refused(repo: &Repo, args: &[&str], code: &str) {
    let before = contents(repo);
    expect_error(&ulw(repo, args), code);
    assert_eq!(contents(repo), before, "{args:?} changed the state");
}

#[test]
fn hostile_host_snapshots() {
    let repo = repo_with_plan("- a\n- b");
    start(&repo);
    pass_all(&repo, "G001-a");
    repo.write("dup.json", r#"{"goal":{"objective":"a","objective":"b"}}"#);
    for (snap, code) in [
        (r#"{"goal":"#, "ULW_LOOP_CODEX_GOAL_JSON_INVALID"),
        (
            r#"{"goal":{"objective":"x","status":"active"}} trailing"#,
            "ULW_LOOP_CODEX_GOAL_JSON_INVALID",
        ),
        ("[1,2,3]", "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH"),
        ("null", "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH"),
        (
            r#"{"goal":{"objective":42,"status":["active"]}}"#,
            "ULW_LOOP_CODEX_SNAPSHOT_MISMATCH",
        ),
        ("dup.json", "ULW_LOOP_CODEX_GOAL_JSON_INVALID"),
        ("../outside.json", "ULW_LOOP_CODEX_GOAL_JSON_INVALID"),
        ("/etc/hostname", "ULW_LOOP_CODEX_GOAL_JSON_INVALID"),
        ("missing.json", "ULW_LOOP_INPUT_NOT_FOUND"),
    ] {
        refused(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
                snap,
            ],
            code,
        );
    }
}

#[test]
fn hostile_gates() {
    let repo = repo_with_plan("- a");
    start(&repo);
    pass_all(&repo, "G001-a");
    let snap = complete(&repo);
    for (gate, code) in [
        ("{\"codeReview\":", "ULW_LOOP_JSON_INPUT_INVALID"),
        ("[]", "ULW_LOOP_QUALITY_GATE_INVALID"),
        (
            r#"{"codeReview":{"reportPath":"../../etc/passwd"}}"#,
            "ULW_LOOP_QUALITY_GATE_INVALID",
        ),
        ("../../etc/passwd", "ULW_LOOP_JSON_INPUT_INVALID"),
    ] {
        refused(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
                &snap,
                "--quality-gate-json",
                gate,
            ],
            code,
        );
    }
}

#[test]
fn hostile_batch_declarations() {
    let repo = repo_with_plan("- a\n- b");
    for (batches, code) in [
        ("[{\"batchId\":", "ULW_LOOP_JSON_INPUT_INVALID"),
        (
            r#"[{"batchId":{"x":1},"memberIds":["G001-a","G002-b"],"finalGoalId":"G001-a"}]"#,
            "ULW_LOOP_VALIDATION_BATCH_INVALID",
        ),
        (
            r#"[{"batchId":"B","memberIds":"G001-a","finalGoalId":"G001-a"}]"#,
            "ULW_LOOP_VALIDATION_BATCH_INVALID",
        ),
        (r#""just a string""#, "ULW_LOOP_INPUT_NOT_FOUND"),
    ] {
        refused(
            &repo,
            &[
                "create-goals",
                "--brief",
                "- a\n- b",
                "--force",
                "--validation-batch-json",
                batches,
            ],
            code,
        );
    }
}

#[test]
fn hostile_evidence_files() {
    let repo = repo_with_plan("- a");
    start(&repo);
    repo.write("trunc.json", "{\"evidence\":1,\"summary\":");
    repo.write("array.json", "[]");
    repo.write("typed.json", r#"{"evidence":1,"summary":7,"deliverables":[],"verification":{"verdict":"passed","by":"x"}}"#);
    repo.write("empty.json", "");
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "{}").unwrap();
    let abs = outside.path().to_str().unwrap().to_owned();
    for (file, code) in [
        ("trunc.json", "ULW_LOOP_EVIDENCE_FILE_INVALID"),
        ("array.json", "ULW_LOOP_EVIDENCE_FILE_INVALID"),
        ("typed.json", "ULW_LOOP_EVIDENCE_FILE_INVALID"),
        ("empty.json", "ULW_LOOP_EVIDENCE_FILE_INVALID"),
        ("../escape.json", "ULW_LOOP_EVIDENCE_FILE_INVALID"),
        (abs.as_str(), "ULW_LOOP_EVIDENCE_FILE_INVALID"),
    ] {
        refused(
            &repo,
            &[
                "record-evidence",
                "--goal-id",
                "G001-a",
                "--criterion-id",
                "C001",
                "--evidence-file",
                file,
            ],
            code,
        );
        refused(
            &repo,
            &[
                "checkpoint",
                "--goal-id",
                "G001-a",
                "--status",
                "blocked",
                "--evidence-file",
                file,
            ],
            code,
        );
    }
}

#[cfg(unix)]
#[test]
fn symlinked_inputs_are_refused() {
    let repo = repo_with_plan("- a");
    start(&repo);
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("snap.json"),
        r#"{"goal":{"objective":"x","status":"active"}}"#,
    )
    .unwrap();
    repo.symlink(outside.path().join("snap.json"), "link.json");
    refused(
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
            "link.json",
        ],
        "ULW_LOOP_CODEX_GOAL_JSON_INVALID",
    );
    refused(
        &repo,
        &[
            "record-evidence",
            "--goal-id",
            "G001-a",
            "--criterion-id",
            "C001",
            "--evidence-file",
            "link.json",
        ],
        "ULW_LOOP_EVIDENCE_FILE_INVALID",
    );
}
