//! Reliability drills (quality-bar.md, "Bad input"): every command and every
//! hook fed truncated, oversized, wrong-typed and hostile JSON answers with a
//! documented code and leaves the repository byte-identical (the hooks'
//! diagnostics file excepted: recording the refusal is its job). Inputs that
//! name FIFOs or devices must not hang anything.

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::common::{Repo, Run, bin};
use crate::goals_support::{clean_env, expect_ok, pass_all, start, ulw};

/// Every path, and every file's bytes and mtime, without the diagnostics
/// files. Directory mtimes are left out: a refused mutation may take and
/// release the state lock (creating and deleting `.mutation.lock`), and a
/// hook creates the diagnostics file, which touch only their directory.
fn state(repo: &Repo) -> Vec<(String, Vec<u8>, Option<std::time::SystemTime>)> {
    repo.snapshot()
        .into_iter()
        .filter(|(p, _, _)| !p.contains("diagnostics.jsonl"))
        .map(|(p, c, m)| {
            let is_dir = repo.join(&p).is_dir();
            (p, c, if is_dir { None } else { m })
        })
        .collect()
}

fn assert_same(
    before: &[(String, Vec<u8>, Option<std::time::SystemTime>)],
    after: &[(String, Vec<u8>, Option<std::time::SystemTime>)],
    ctx: &str,
) {
    if before != after {
        let b: std::collections::BTreeMap<_, _> = before
            .iter()
            .map(|(p, c, m)| (p.clone(), (c.clone(), *m)))
            .collect();
        let a: std::collections::BTreeMap<_, _> = after
            .iter()
            .map(|(p, c, m)| (p.clone(), (c.clone(), *m)))
            .collect();
        let changed: Vec<&String> = b
            .keys()
            .chain(a.keys())
            .filter(|k| b.get(*k) != a.get(*k))
            .collect();
        panic!("{ctx}: the repository changed: {changed:?}");
    }
}

/// Runs with a deadline: a hang is a failure, never a wait.
fn run_bounded(repo: &Repo, args: &[&str], stdin: &[u8]) -> Run {
    // The per-user state (threat-model.md §3) never reaches the real home.
    let state_home = tempfile::tempdir().unwrap();
    run_bounded_in(repo, state_home.path(), args, stdin)
}

/// [`run_bounded`] with the per-user state under `state_home`.
fn run_bounded_in(repo: &Repo, state_home: &std::path::Path, args: &[&str], stdin: &[u8]) -> Run {
    let mut cmd = Command::new(bin("evidence-gate"));
    cmd.args(args)
        .current_dir(repo.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in clean_env() {
        cmd.env(k, v);
    }
    cmd.env_remove("EVIDENCE_GATE_HOOKS");
    cmd.env("XDG_STATE_HOME", state_home)
        .env("HOME", state_home);
    let mut child = cmd.spawn().unwrap();
    let pid = child.id();
    let mut si = child.stdin.take().unwrap();
    let input = stdin.to_vec();
    let feeder = std::thread::spawn(move || {
        let _ = si.write_all(&input);
    });
    // Output is drained while waiting, so a large answer cannot deadlock the pipe.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    let out = match rx.recv_timeout(Duration::from_secs(20)) {
        Ok(out) => out.unwrap(),
        Err(_) => {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            panic!(
                "{} hung",
                args.iter()
                    .map(|a| crate::drills::clip(a))
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    };
    let _ = feeder.join();
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A repository with live state of every kind: a ulw-loop plan with an
/// in-progress goal and recorded evidence, an ultragoal plan in a session,
/// the workflow registry, a FIFO and an oversized input file.
fn live_repo() -> Repo {
    let repo = Repo::new();
    expect_ok(&ulw(
        &repo,
        &["create-goals", "--brief", "- Rate limit\n- Audit log"],
    ));
    start(&repo);
    pass_all(&repo, "G001-rate-limit");
    expect_ok(&crate::goals_support::eg(
        &repo,
        "ultragoal",
        &[
            "create-goals",
            "--brief",
            "- Ship docs",
            "--session-id",
            "u1",
            "--json",
        ],
    ));
    repo.write(
        "big.json",
        format!("{{\"pad\":\"{}\"}}", "x".repeat(5 * 1024 * 1024)),
    );
    repo.write("dup.json", r#"{"a":1,"a":2}"#);
    repo.write("list.json", "[1,2,3]");
    #[cfg(unix)]
    {
        let status = Command::new("mkfifo")
            .arg(repo.join("fifo.json"))
            .status()
            .unwrap();
        assert!(status.success());
        std::os::unix::fs::symlink("/etc/hostname", repo.join("link.json")).unwrap();
    }
    repo
}

const DEEP: usize = 20_000;

fn hostile_values() -> Vec<(&'static str, String)> {
    vec![
        ("truncated", r#"{"goal":{"objective":"#.to_owned()),
        ("trailing", r#"{"a":1} {"b":2}"#.to_owned()),
        ("wrong-typed array", "[1,2,3]".to_owned()),
        (
            "wrong-typed object",
            r#"{"kind":42,"title":["x"]}"#.to_owned(),
        ),
        ("duplicate keys", r#"{"a":1,"a":2}"#.to_owned()),
        (
            "deep nesting",
            format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP)),
        ),
        ("NUL and controls", "{\"a\":\"\\u0000\\u001b\"}".to_owned()),
        ("oversized file", "big.json".to_owned()),
        ("duplicate-key file", "dup.json".to_owned()),
        ("FIFO", "fifo.json".to_owned()),
        ("symlink", "link.json".to_owned()),
        ("outside the repository", "/etc/hostname".to_owned()),
        ("traversal", "../x.json".to_owned()),
        ("missing file", "no-such.json".to_owned()),
    ]
}

#[test]
fn every_json_input_of_the_goal_engine_refuses_hostile_values_and_changes_nothing() {
    let repo = live_repo();
    let snap = crate::goals_support::active(&repo);
    // (command prefix, flag) for every JSON-or-path input.
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "ulw-loop",
                "checkpoint",
                "--goal-id",
                "G001-rate-limit",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
            ],
            "snapshot",
        ),
        (
            vec![
                "ulw-loop",
                "checkpoint",
                "--goal-id",
                "G001-rate-limit",
                "--status",
                "complete",
                "--evidence",
                "x",
                "--codex-goal-json",
                &snap,
                "--quality-gate-json",
            ],
            "gate",
        ),
        (
            vec![
                "ulw-loop",
                "checkpoint",
                "--goal-id",
                "G001-rate-limit",
                "--status",
                "complete",
                "--codex-goal-json",
                &snap,
                "--evidence-file",
            ],
            "evidence file",
        ),
        (
            vec![
                "ulw-loop",
                "record-evidence",
                "--goal-id",
                "G001-rate-limit",
                "--criterion-id",
                "C001",
                "--evidence-file",
            ],
            "evidence file",
        ),
        (
            vec![
                "ulw-loop",
                "create-goals",
                "--force",
                "--brief",
                "- x",
                "--validation-batch-json",
            ],
            "batches",
        ),
        (
            vec!["ulw-loop", "create-goals", "--force", "--brief-file"],
            "brief file",
        ),
        (vec!["ulw-loop", "steer", "--proposals-json"], "proposals"),
        (vec!["ulw-loop", "steer", "--directive-json"], "directive"),
        (
            vec!["ulw-loop", "steer", "--directive-file"],
            "directive file",
        ),
        (
            vec![
                "ulw-loop",
                "steer",
                "--kind",
                "revise_pending_wording",
                "--goal-id",
                "G002-audit-log",
                "--evidence",
                "e",
                "--rationale",
                "r",
                "--after-json",
            ],
            "after",
        ),
        (
            vec!["ulw-loop", "status", "--codex-goal-json"],
            "status snapshot",
        ),
        (
            vec![
                "ultragoal",
                "checkpoint",
                "--session-id",
                "u1",
                "--goal-id",
                "G001-ship-docs",
                "--status",
                "complete",
                "--start-pending",
                "--evidence",
                "x",
                "--host-goal-json",
            ],
            "ultragoal snapshot",
        ),
    ];
    let mut before = state(&repo);
    let mut seen = std::collections::BTreeSet::new();
    for (prefix, what) in &cases {
        for (name, value) in hostile_values() {
            // A brief is free text: only hostile *paths* apply to it.
            let json_text =
                value.starts_with('{') || value.starts_with('[') || name == "duplicate-key file";
            if *what == "brief file" && json_text {
                continue;
            }
            let mut args: Vec<&str> = prefix.clone();
            args.push(&value);
            args.push("--json");
            let run = run_bounded(&repo, &args, b"");
            let ctx = format!("{what} / {name}");
            if *what == "status snapshot" && run.code == 0 {
                // `status` reports a snapshot that does not reconcile instead
                // of failing (goal-engine.md §4.2); it must say so and write nothing.
                let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
                assert_ne!(v["hostGoal"]["ok"], true, "{ctx}: {}", v["hostGoal"]);
                assert!(v["hostGoal"].is_object(), "{ctx}");
                assert_same(&before, &state(&repo), &ctx);
                continue;
            }
            assert_eq!(
                run.code, 1,
                "{ctx}: exit status: {}{}",
                run.stdout, run.stderr
            );
            let v: serde_json::Value = serde_json::from_str(&run.stdout)
                .unwrap_or_else(|_| panic!("{ctx}: {}", run.stdout));
            let code = v["error"]["code"].as_str().unwrap_or_default().to_owned();
            assert!(code.starts_with("ULW_LOOP_"), "{ctx}: {v}");
            assert_ne!(
                code, "ULW_LOOP_UNEXPECTED",
                "{ctx}: an internal defect: {v}"
            );
            assert!(run.stderr.is_empty(), "{ctx}: stderr {}", run.stderr);
            let after = state(&repo);
            if code == "ULW_LOOP_STEERING_REJECTED" {
                // A well-formed but unacceptable proposal is an *audited*
                // rejection (goal-engine.md §5.4): the plan stays as it was and
                // the ledger gains exactly one `steering_rejected` record.
                let ledger_of = |st: &[(String, Vec<u8>, Option<std::time::SystemTime>)]| {
                    st.iter()
                        .find(|(p, _, _)| p == ".omo/ulw-loop/ledger.jsonl")
                        .map(|(_, c, _)| c.clone())
                        .unwrap()
                };
                let (old, new) = (ledger_of(&before), ledger_of(&after));
                assert!(new.starts_with(&old), "{ctx}: the ledger was rewritten");
                let added: Vec<serde_json::Value> = new[old.len()..]
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.is_empty())
                    .map(|l| serde_json::from_slice(l).unwrap())
                    .collect();
                assert_eq!(added.len(), 1, "{ctx}");
                assert_eq!(added[0]["kind"], "steering_rejected", "{ctx}");
                let keep = |st: &[(String, Vec<u8>, Option<std::time::SystemTime>)]| -> Vec<_> {
                    st.iter()
                        .filter(|(p, _, _)| {
                            !p.contains("/ledger.jsonl") && !p.contains("/.ledger.")
                        })
                        .cloned()
                        .collect()
                };
                assert_same(&keep(&before), &keep(&after), &ctx);
                before = after;
            } else {
                assert_same(&before, &after, &ctx);
            }
            seen.insert(code);
        }
    }
    for expected in [
        "ULW_LOOP_INPUT_TOO_LARGE",
        "ULW_LOOP_INPUT_NOT_FOUND",
        "ULW_LOOP_JSON_INPUT_INVALID",
        "ULW_LOOP_CODEX_GOAL_JSON_INVALID",
    ] {
        assert!(
            seen.contains(expected),
            "{expected} never produced: {seen:?}"
        );
    }
}

fn bad_stdins() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("empty", Vec::new()),
        ("whitespace", b" \n\t ".to_vec()),
        ("truncated", br#"{"hook_event_name":"Stop","session_id":"#.to_vec()),
        ("array", b"[1,2]".to_vec()),
        ("string", b"\"Stop\"".to_vec()),
        ("number", b"42".to_vec()),
        ("null", b"null".to_vec()),
        ("trailing bytes", br#"{"hook_event_name":"Stop"} {}"#.to_vec()),
        ("invalid UTF-8", b"{\"prompt\":\"\xff\xfe\"}".to_vec()),
        ("deep nesting", format!("{}{}", "[".repeat(DEEP), "]".repeat(DEEP)).into_bytes()),
        ("wrong-typed fields", br#"{"hook_event_name":7,"session_id":[1],"cwd":{},"tool_name":false,"prompt":null,"agent_type":3}"#.to_vec()),
        ("oversized", {
            let mut v = br#"{"prompt":""#.to_vec();
            v.extend(std::iter::repeat_n(b'x', 17 * 1024 * 1024));
            v.extend_from_slice(b"\"}");
            v
        }),
    ]
}

#[test]
fn every_hook_on_every_host_allows_bad_stdin_and_changes_nothing_but_diagnostics() {
    let repo = live_repo();
    let before = state(&repo);
    let events = [
        "subagent-stop",
        "stop",
        "user-prompt-submit",
        "pre-tool-use",
        "pre-tool-use-spawn",
    ];
    let hosts = ["auto", "codex", "claude-code", "gemini", "agy"];
    // The hooks' diagnostics live in the workspace's per-user state
    // directory (threat-model.md §3), not in the repository.
    let state_home = tempfile::tempdir().unwrap();
    let canonical = std::fs::canonicalize(repo.path()).unwrap();
    let diag = state_home
        .path()
        .join("evidence-gate/v1")
        .join(evidence_gate::internals::workspace_id(&canonical))
        .join("hooks/diagnostics.jsonl");
    for event in events {
        for host in hosts {
            for (name, input) in bad_stdins() {
                let lines_before = std::fs::read_to_string(&diag)
                    .map(|s| s.lines().count())
                    .unwrap_or(0);
                let run = run_bounded_in(
                    &repo,
                    state_home.path(),
                    &["hook", event, "--host", host],
                    &input,
                );
                let ctx = format!("{event} --host {host} / {name}");
                assert_eq!(run.code, 0, "{ctx}: hooks always exit 0");
                assert_eq!(
                    run.stdout, "",
                    "{ctx}: a plumbing failure allows (empty stdout)"
                );
                let lines_after = std::fs::read_to_string(&diag)
                    .map(|s| s.lines().count())
                    .unwrap_or(0);
                assert_eq!(
                    lines_after,
                    lines_before + 1,
                    "{ctx}: exactly one diagnostics line"
                );
                assert_same(&before, &state(&repo), &ctx);
            }
        }
    }
}

#[test]
fn hooks_never_hang_on_device_or_fifo_transcripts() {
    let repo = live_repo();
    let cwd = repo.path().to_str().unwrap().to_owned();
    for transcript in ["/dev/zero", "/dev/urandom", &format!("{cwd}/fifo.json")] {
        for event in ["subagent-stop", "stop", "user-prompt-submit"] {
            let payload = json!({
                "hook_event_name": match event { "subagent-stop" => "SubagentStop", "stop" => "Stop", _ => "UserPromptSubmit" },
                "session_id": "s1", "turn_id": "t1", "cwd": cwd, "model": "m",
                "transcript_path": transcript, "agent_transcript_path": transcript,
                "agent_id": "a1", "agent_type": "lazycodex-worker-high",
                "last_assistant_message": "done", "stop_hook_active": false, "prompt": "ulw please"
            });
            let run = run_bounded(
                &repo,
                &["hook", event, "--host", "codex", "--with-ultrawork"],
                payload.to_string().as_bytes(),
            );
            assert_eq!(run.code, 0, "{event} with {transcript}");
        }
    }
}

#[test]
fn verify_and_gate_check_refuse_hostile_documents_and_change_nothing() {
    let repo = live_repo();
    let before = state(&repo);
    for (name, value) in hostile_values() {
        let path = if value.starts_with('{') || value.starts_with('[') {
            repo.write("doc.json", &value);
            "doc.json".to_owned()
        } else {
            value.clone()
        };
        let ctx = format!("verify / {name}");
        let run = run_bounded(&repo, &["verify", "--format", "json", &path], b"");
        assert!(run.code == 1 || run.code == 2, "{ctx}: {}", run.stdout);
        let v: serde_json::Value = serde_json::from_str(&run.stdout)
            .unwrap_or_else(|_| panic!("{ctx}: {}{}", run.stdout, run.stderr));
        assert_ne!(v["verdict"], "pass", "{ctx}");
        let run = run_bounded(&repo, &["gate", "check", &path, "--json"], b"");
        assert!(
            run.code == 1 || run.code == 2,
            "gate check / {name}: {}",
            run.stdout
        );
        let _ = std::fs::remove_file(repo.join("doc.json"));
        assert_same(&before, &state(&repo), name);
    }
}

fn clip(a: &str) -> String {
    if a.len() > 80 {
        format!("{}…", &a[..80])
    } else {
        a.to_owned()
    }
}
