//! Sabotaged engine state (threat-model.md I3, I14): lock files the agent
//! forges or replaces, and a `create-goals --force` killed at any instant.
//! Every command runs under a deadline: a hang is a failure, never a wait.

use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use crate::goals_support::*;
use serde_json::Value;

/// Runs `evidence-gate ulw-loop <args…> --json` with a deadline, killing the
/// process (and failing the test) if it has not ended by then. Home and
/// per-user state point into the temporary repository.
pub fn ulw_bounded(repo: &Repo, args: &[&str]) -> Run {
    let mut cmd = Command::new(crate::common::bin("evidence-gate"));
    cmd.arg("ulw-loop")
        .args(args)
        .arg("--json")
        .current_dir(repo.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in clean_env() {
        cmd.env(k, v);
    }
    let home = repo.join("..home");
    cmd.env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    let child = cmd.spawn().expect("spawn");
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!("`ulw-loop {}` hung", args.join(" "));
        }
    };
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn lock_path(repo: &Repo) -> std::path::PathBuf {
    state(repo, ".mutation.lock")
}

/// I3 regression: on the previous main a Node-style holder record with a
/// modification time in the future was "fresh" forever, so every mutation
/// and `repair` timed out (`ULW_LOOP_LOCK_TIMEOUT`) for good.
#[test]
fn a_forged_future_dated_node_lock_does_not_wedge_mutations_or_repair() {
    let repo = repo_with_plan("- a");
    std::fs::write(
        lock_path(&repo),
        r#"{"pid":999999,"createdAt":"2999-01-01T00:00:00.000Z"}"#,
    )
    .unwrap();
    let future = SystemTime::now() + Duration::from_secs(10 * 365 * 24 * 3600);
    std::fs::File::options()
        .write(true)
        .open(lock_path(&repo))
        .unwrap()
        .set_modified(future)
        .unwrap();
    expect_ok(&ulw_bounded(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert!(
        !lock_path(&repo).exists(),
        "the forged file was locked, reused and removed"
    );
    std::fs::write(lock_path(&repo), r#"{"pid":1,"createdAt":"x"}"#).unwrap();
    let r = expect_ok(&ulw_bounded(&repo, &["repair"]));
    assert_eq!(r["consistency"], "ok", "{r}");
    assert_eq!(kinds(&repo), ["plan_created", "goal_added"]);
}

/// Honest use next to it: a lock really held (an OS lock on an open
/// descriptor, as a concurrent engine command holds it) still excludes a
/// mutation, which gives up after its bounded wait and then succeeds.
#[test]
fn a_held_os_lock_still_excludes_a_mutation_for_its_bounded_wait() {
    let repo = repo_with_plan("- a");
    repo.write(
        ".evidence-gate/rules.json",
        r#"{"profiles":{"ulw-loop":{"lock":{"timeoutMs":300}}}}"#,
    );
    let held = std::fs::File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(lock_path(&repo))
        .unwrap();
    held.lock().unwrap();
    let e = expect_error(
        &ulw_bounded(&repo, &["add-goal", "--title", "b", "--objective", "b"]),
        "ULW_LOOP_LOCK_TIMEOUT",
    );
    assert_eq!(e["details"]["lockPath"], ".omo/ulw-loop/.mutation.lock", "{e}");
    held.unlock().unwrap();
    drop(held);
    expect_ok(&ulw_bounded(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    assert_eq!(kinds(&repo), ["plan_created", "goal_added"]);
}

/// I3: a FIFO, a directory or a symlink at the lock path is refused at once
/// with `ULW_LOOP_STATE_UNSAFE`, the path and the fix; nothing waits on it
/// and nothing is written.
#[cfg(unix)]
#[test]
fn a_fifo_directory_or_symlink_lock_path_fails_fast_with_its_code_and_fix() {
    let repo = repo_with_plan("- a");
    let before = kinds(&repo);
    let lock = lock_path(&repo);
    let cases: [(&str, &dyn Fn()); 4] = [
        ("a FIFO", &|| {
            assert!(
                Command::new("mkfifo")
                    .arg(&lock)
                    .status()
                    .unwrap()
                    .success()
            )
        }),
        ("a directory", &|| std::fs::create_dir(&lock).unwrap()),
        ("a symlink", &|| {
            std::os::unix::fs::symlink("goals.json", &lock).unwrap()
        }),
        ("a symlink", &|| {
            std::os::unix::fs::symlink("/nonexistent/elsewhere", &lock).unwrap()
        }),
    ];
    for (what, make) in cases {
        make();
        for args in [
            &["add-goal", "--title", "b", "--objective", "b"][..],
            &["repair"][..],
            &["create-goals", "--brief", "- c", "--force"][..],
        ] {
            let e = expect_error(&ulw_bounded(&repo, args), "ULW_LOOP_STATE_UNSAFE");
            let msg = e["message"].as_str().unwrap();
            assert!(
                msg.contains(".omo/ulw-loop/.mutation.lock")
                    && msg.contains(what)
                    && msg.contains("rm -r -- .omo/ulw-loop/.mutation.lock"),
                "{args:?}: {e}"
            );
        }
        // Reading needs no lock.
        expect_ok(&ulw_bounded(&repo, &["status"]));
        assert_eq!(kinds(&repo), before, "nothing was written");
        if std::fs::symlink_metadata(&lock).unwrap().is_dir() {
            std::fs::remove_dir(&lock).unwrap();
        } else {
            std::fs::remove_file(&lock).unwrap();
        }
    }
    // The fix the message names works.
    expect_ok(&ulw_bounded(
        &repo,
        &["add-goal", "--title", "b", "--objective", "b"],
    ));
    let _: Value = serde_json::from_slice(&std::fs::read(state(&repo, "goals.json")).unwrap())
        .unwrap();
}
