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
    let mut cmd = ulw_command(repo, args);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
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
    assert_eq!(
        e["details"]["lockPath"], ".omo/ulw-loop/.mutation.lock",
        "{e}"
    );
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
    let _: Value =
        serde_json::from_slice(&std::fs::read(state(&repo, "goals.json")).unwrap()).unwrap();
}

fn spawn_ulw(repo: &Repo, args: &[&str]) -> std::process::Child {
    let mut cmd = ulw_command(repo, args);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    cmd.spawn().expect("spawn")
}

/// `evidence-gate ulw-loop <args…> --json` in the repository, with no
/// standard input and home, per-user state and configuration in a
/// temporary directory beside it.
fn ulw_command(repo: &Repo, args: &[&str]) -> Command {
    let mut cmd = Command::new(crate::common::bin("evidence-gate"));
    cmd.arg("ulw-loop")
        .args(args)
        .arg("--json")
        .current_dir(repo.path())
        .stdin(Stdio::null());
    for (k, v) in clean_env() {
        cmd.env(k, v);
    }
    let home = repo.join("..home");
    cmd.env("HOME", &home)
        .env("XDG_STATE_HOME", home.join("state"))
        .env("XDG_CONFIG_HOME", home.join("config"));
    cmd
}

fn read_opt(path: std::path::PathBuf) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

fn archives(repo: &Repo) -> std::collections::BTreeSet<String> {
    match std::fs::read_dir(state(repo, ".archive")) {
        Ok(rd) => rd
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect(),
        Err(_) => Default::default(),
    }
}

/// The run as it is on disk: plan, ledger and brief bytes.
struct RunFiles {
    plan: Vec<u8>,
    ledger: Vec<u8>,
    brief: Option<Vec<u8>>,
}

fn run_files(repo: &Repo) -> RunFiles {
    RunFiles {
        plan: std::fs::read(state(repo, "goals.json")).unwrap(),
        ledger: std::fs::read(state(repo, "ledger.jsonl")).unwrap(),
        brief: read_opt(state(repo, "brief.md")),
    }
}

/// Kills `create-goals --force` with SIGKILL at spread-out instants of its
/// run and checks, after each kill, that the state is the old run or the
/// new one: `status` reads it, `repair --check` names only documented
/// recovery states, `repair` ends any half-done switch, and afterwards the
/// old run is byte-identical (switch undone) or archived whole with the new
/// run naming it (`plan_created.replaced`), never `PLAN_MISSING`.
fn force_crash_drill(runs: usize, seed: u64, require_mid_switch: bool) {
    let brief: String = (0..40).map(|i| format!("- goal {i}\n")).collect();
    let repo = repo_with_plan(&brief);
    for i in 0..30 {
        let t = format!("grow {i}");
        expect_ok(&ulw(&repo, &["add-goal", "--title", &t, "--objective", &t]));
    }
    // How long an uncontended switch takes (the quickest of three), so kills
    // spread over all of it.
    let mut quickest = u64::MAX;
    for _ in 0..3 {
        let started = std::time::Instant::now();
        expect_ok(&ulw(&repo, &["create-goals", "--brief", &brief, "--force"]));
        quickest = quickest.min(started.elapsed().as_micros() as u64);
    }
    let mut span = quickest * 13 / 10 + 1;
    let mut x = seed;
    let (mut killed, mut undone, mut switched) = (0, 0, 0);
    let mut mid = [0usize; 3];
    // Kill times are random over the measured span. The drill goes on (up to
    // six times as many runs) until some run was killed mid-command and,
    // where every window must be hit, until each was, so a short window is
    // proven on a quiet machine as on a loaded one. Until a kill lands, a run
    // that ended before its kill shortens the span: the measurement may have
    // caught a slow moment of a loaded machine.
    let limit = runs * 6;
    let mut run = 0;
    while run < runs || (run < limit && (killed == 0 || require_mid_switch && mid.contains(&0))) {
        run += 1;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let before = run_files(&repo);
        let archives_before = archives(&repo);
        let new_brief = format!("- run {run} a\n- run {run} b\n");
        let mut child = spawn_ulw(&repo, &["create-goals", "--brief", &new_brief, "--force"]);
        // Past the planned runs only a missed window is hunted: every other
        // run in the later half of the span, where the switch's last steps
        // run, the rest over the whole span as before.
        let delay = if run > runs && run % 2 == 0 {
            span / 2 + x % (span / 2 + 1)
        } else {
            x % span
        };
        std::thread::sleep(Duration::from_micros(delay));
        if child.try_wait().unwrap().is_none() {
            killed += 1;
        } else if killed == 0 {
            span = (span * 3 / 4).max(1);
        }
        let _ = child.kill();
        let _ = child.wait();
        // Where the kill landed (module docs of `txn::switch`): steps 1–2,
        // step 3 (old ledger aside), steps 4–5 (new plan in place).
        if state(&repo, ".force-switch.json").exists() {
            let new_plan = std::fs::read(state(&repo, "goals.json")).unwrap() != before.plan;
            let aside = state(&repo, ".force-switch.ledger.jsonl").exists();
            mid[usize::from(aside) + usize::from(new_plan)] += 1;
        }

        let status = ulw_bounded(&repo, &["status"]);
        assert_eq!(
            status.code, 0,
            "run {run}: status must read: {}",
            status.stdout
        );
        assert_ne!(
            status.json()["ledger"]["consistency"],
            "mismatch",
            "run {run}: {}",
            status.stdout
        );
        let check = ulw_bounded(&repo, &["repair", "--check"]);
        for f in check.json()["findings"].as_array().unwrap() {
            let code = f["code"].as_str().unwrap();
            assert!(
                [
                    "LEDGER_TORN_TAIL",
                    "LEDGER_UNTERMINATED",
                    "LEDGER_BEHIND_PLAN"
                ]
                .contains(&code),
                "run {run}: unexplained finding {f}"
            );
        }
        let repaired = expect_ok(&ulw_bounded(&repo, &["repair"]));
        assert_eq!(repaired["consistency"], "ok", "run {run}: {repaired}");
        assert!(
            !state(&repo, ".force-switch.json").exists()
                && !state(&repo, ".force-switch.ledger.jsonl").exists(),
            "run {run}: repair ends the switch"
        );
        let clean = expect_ok(&ulw_bounded(&repo, &["repair", "--check"]));
        assert_eq!(
            clean["findings"],
            serde_json::json!([]),
            "run {run}: {clean}"
        );

        let after = run_files(&repo);
        let added: Vec<String> = archives(&repo)
            .difference(&archives_before)
            .cloned()
            .collect();
        if after.plan == before.plan {
            // The switch was undone (or never began): the old run is intact
            // and no half-made archive is left behind.
            undone += 1;
            assert_eq!(after.ledger, before.ledger, "run {run}: old ledger intact");
            assert_eq!(after.brief, before.brief, "run {run}: old brief intact");
            assert!(added.is_empty(), "run {run}: stray archive {added:?}");
        } else {
            switched += 1;
            assert_eq!(added.len(), 1, "run {run}: one archive per switch");
            let dir = state(&repo, &format!(".archive/{}", added[0]));
            assert_eq!(std::fs::read(dir.join("goals.json")).unwrap(), before.plan);
            assert_eq!(read_opt(dir.join("brief.md")), before.brief);
            let archived = std::fs::read(dir.join("ledger.jsonl")).unwrap();
            assert!(
                archived.starts_with(&before.ledger),
                "run {run}: the archived ledger keeps the old bytes as its prefix"
            );
            let tail = String::from_utf8(archived[before.ledger.len()..].to_vec()).unwrap();
            let last: Value = serde_json::from_str(tail.trim_end()).unwrap();
            assert_eq!(last["kind"], "plan_archived", "run {run}");
            let l = ledger(&repo);
            assert_eq!(l[0]["kind"], "plan_created", "run {run}");
            assert_eq!(
                l[0]["replaced"]["archive"],
                format!(".archive/{}", added[0]),
                "run {run}"
            );
            assert_eq!(
                l[0]["replaced"]["previousHead"]["sha256"],
                sha256_hex(tail.trim_end().as_bytes()),
                "run {run}"
            );
            assert_eq!(
                l[0]["replaced"]["previousHead"]["seq"], last["seq"],
                "run {run}"
            );
            assert_eq!(after.brief.as_deref(), Some(new_brief.as_bytes()));
        }
    }
    eprintln!(
        "force crash drill: {run} runs, {killed} killed, {undone} old run kept, {switched} switched; killed mid-switch at steps 1-2/3/4-5: {mid:?}"
    );
    assert!(
        killed > 0,
        "no run was killed mid-command; the drill proved nothing"
    );
    if require_mid_switch {
        assert!(
            mid.iter().all(|&n| n > 0),
            "not every window of the switch was hit: {mid:?}"
        );
    }
}

#[cfg(unix)]
#[test]
fn sigkill_during_create_goals_force_leaves_the_old_or_the_new_run() {
    force_crash_drill(16, 0x5851_f42d_4c95_7f2d, false);
}

#[cfg(unix)]
#[test]
#[ignore = "long drill, run by .ci/run"]
fn goals_crash_drill_force_120_runs() {
    force_crash_drill(120, 0x1405_7b7e_f767_814f, true);
}

/// A switch marker the agent writes is refused with its file and fix, never
/// followed blindly: garbage fails closed, and a marker naming an archived
/// run does not make the engine delete that archive.
#[test]
fn a_forged_switch_marker_fails_closed_and_never_deletes_an_archive() {
    let repo = repo_with_plan("- a");
    let v = expect_ok(&ulw(&repo, &["create-goals", "--brief", "- b", "--force"]));
    let archive = repo.join(v["archived"].as_str().unwrap());
    let name = archive.file_name().unwrap().to_str().unwrap().to_owned();
    let archived_ledger = std::fs::read(archive.join("ledger.jsonl")).unwrap();
    // While the new run's plan is the one that switch wrote, a marker naming
    // its archive only finishes an already finished switch (nothing to do).
    let marker = state(&repo, ".force-switch.json");
    std::fs::write(&marker, format!(r#"{{"name":"{name}","hadBrief":true}}"#)).unwrap();
    let r = expect_ok(&ulw_bounded(&repo, &["repair"]));
    assert_eq!(r["actions"][0]["kind"], "force_switch_finished", "{r}");
    assert_eq!(kinds(&repo), ["plan_created"]);
    expect_ok(&ulw_bounded(
        &repo,
        &["add-goal", "--title", "c", "--objective", "c"],
    ));
    for (forged, names_archive) in [
        ("not json".to_owned(), false),
        (r#"{"name":"../../x","hadBrief":true}"#.to_owned(), false),
        (format!(r#"{{"name":"{name}","hadBrief":false}}"#), true),
    ] {
        std::fs::write(&marker, &forged).unwrap();
        let e = expect_error(
            &ulw_bounded(&repo, &["add-goal", "--title", "x", "--objective", "x"]),
            "ULW_LOOP_IO_ERROR",
        );
        let msg = e["message"].as_str().unwrap();
        let named = if names_archive {
            format!(".omo/ulw-loop/.archive/{name}")
        } else {
            "rm -- .omo/ulw-loop/.force-switch.json".to_owned()
        };
        assert!(msg.contains(&named), "{forged}: {e}");
        assert_eq!(
            std::fs::read(archive.join("ledger.jsonl")).unwrap(),
            archived_ledger,
            "{forged}: the archive is untouched"
        );
        assert!(state(&repo, "brief.md").exists(), "{forged}");
        assert_eq!(kinds(&repo), ["plan_created", "goal_added"], "{forged}");
    }
    std::fs::remove_file(&marker).unwrap();
    expect_ok(&ulw_bounded(
        &repo,
        &["add-goal", "--title", "d", "--objective", "d"],
    ));
    assert_eq!(kinds(&repo), ["plan_created", "goal_added", "goal_added"]);
}
