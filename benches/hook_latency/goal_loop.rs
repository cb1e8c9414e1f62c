//! The goal-loop scenarios of hooks.md §8.2: `stop` (no plan, live plan,
//! stuck), `user-prompt-submit` (plain, `ulw`, steering), `pre-tool-use`
//! (`create_goal` deny, worker shell command) and `pre-tool-use-spawn`
//! (gate preflight + counter), over 40-goal × 4-criteria plans whose state
//! directories hold 100,000-line ledgers.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{BIN, Scenario, time_once};

const STOP_SID: &str = "bench-stop";
const STUCK_SID: &str = "bench-stuck";
const SPAWN_SID: &str = "bench-spawn";
const LEDGER_LINES: usize = 100_000;

/// Whether a file named `name` is anywhere below `dir`.
fn found(dir: &Path, name: &str) -> bool {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .any(|e| {
            let p = e.path();
            if p.is_dir() {
                found(&p, name)
            } else {
                e.file_name() == name
            }
        })
}

fn state(root: &Path, sid: &str) -> PathBuf {
    root.join(".omo/ulw-loop").join(sid)
}

fn plan(sid: &str, final_ready: bool) -> Value {
    let goals: Vec<Value> = (1..=40)
        .map(|i| {
            let id = format!("G{i:03}");
            let status = match (final_ready, i) {
                (true, 40) | (false, 1) => "in_progress",
                (true, _) => "complete",
                (false, _) => "pending",
            };
            let criteria: Vec<Value> = (1..=4)
                .map(|c| {
                    let pass = final_ready || (i == 1 && c <= 2);
                    json!({"id": format!("C{c:03}"), "scenario": format!("scenario {c} of goal {i}"),
                           "expectedEvidence": "command output showing the behaviour",
                           "userModel": "happy", "essential": c == 1,
                           "status": if pass { "pass" } else { "pending" },
                           "capturedEvidence": if pass { json!("cargo test: 12 passed") } else { Value::Null }})
                })
                .collect();
            json!({"id": id, "title": format!("Goal {i}: a realistic story title"),
                   "objective": format!("Implement part {i} of the feature with tests and docs."),
                   "status": status, "attempt": if status == "pending" { 0 } else { 1 },
                   "attemptDir": format!(".omo/evidence/ulw/{sid}/{id}/a1"),
                   "successCriteria": criteria})
        })
        .collect();
    json!({"version": 1, "profile": "ulw-loop", "sessionId": sid,
           "activeGoalId": if final_ready { "G040" } else { "G001" },
           "codexGoalMode": "per_story", "evidenceLayoutVersion": 2, "gateRules": "lazycodex",
           "updatedAt": "2026-11-30T10:00:00.000Z", "goals": goals})
}

fn ledger(path: &Path) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    for i in 0..LEDGER_LINES {
        let line = json!({"at": "2026-11-30T10:00:00.000Z", "kind": "evidence_captured",
                          "goalId": format!("G{:03}", i % 40 + 1), "criterionId": "C001",
                          "message": format!("evidence {i}: ran the focused tests; all passed"),
                          "revision": i + 1});
        writeln!(f, "{line}").unwrap();
    }
}

fn write_state(root: &Path, sid: &str, final_ready: bool) {
    let dir = state(root, sid);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("goals.json"),
        serde_json::to_vec_pretty(&plan(sid, final_ready)).unwrap(),
    )
    .unwrap();
    ledger(&dir.join("ledger.jsonl"));
}

fn codex(root: &Path, event: &str, sid: &str, extra: Value) -> Vec<u8> {
    let mut v = json!({"session_id": sid, "turn_id": "bench-turn",
                       "transcript_path": root.join("transcripts/parent.jsonl"),
                       "cwd": root, "hook_event_name": event, "model": "gpt-5-codex",
                       "permission_mode": "default"});
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v.to_string().into_bytes()
}

/// Plans, ledgers, the stuck marker and the gate reports.
pub fn setup(root: &Path) {
    write_state(root, STOP_SID, false);
    write_state(root, STUCK_SID, false);
    write_state(root, SPAWN_SID, true);
    let reports = root.join(format!(".omo/evidence/ulw/{SPAWN_SID}/G040/a1"));
    std::fs::create_dir_all(&reports).unwrap();
    std::fs::write(
        reports.join("code-review.md"),
        "APPROVE: reviewed the diff\n",
    )
    .unwrap();
    std::fs::write(
        reports.join("cli-transcript.txt"),
        "$ cargo test\n12 passed\n",
    )
    .unwrap();
    // Two resumes and the pause leave the stuck marker every later stop honours.
    let stop = ["hook", "stop", "--host", "codex"];
    for _ in 0..3 {
        let p = codex(root, "Stop", STUCK_SID, json!({"stop_hook_active": false}));
        time_once(BIN, &stop, root, &p, &[]);
    }
    // The marker lives in the per-user state, out of the agent's reach.
    assert!(
        found(super::state_home(), "auto-resume-G001.stuck"),
        "the stuck marker was not written"
    );
}

/// The goal-loop scenarios.
pub fn scenarios(root: &Path) -> Vec<Scenario> {
    let r = |_: ()| root.to_path_buf();
    let stop_counter = state(root, STOP_SID).join("auto-resume-G001.json");
    let (r1, r2, r3, r4, r5, r6, r7, r8, r9) = (
        r(()),
        r(()),
        r(()),
        r(()),
        r(()),
        r(()),
        r(()),
        r(()),
        r(()),
    );
    let stop_args = super::cli::codex_hook("stop", &[]);
    let prompt_args = super::cli::codex_hook("user-prompt-submit", &["--with-ultrawork"]);
    let tool_args = super::cli::codex_hook("pre-tool-use", &[]);
    let stop_extra = json!({"stop_hook_active": false, "last_assistant_message": "Done for now."});
    let (e1, e2, e3) = (stop_extra.clone(), stop_extra.clone(), stop_extra);
    vec![
        Scenario {
            name: "stop: no plan",
            args: stop_args.clone(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| codex(&r1, "Stop", "bench-none", e1.clone())),
        },
        Scenario {
            name: "stop: live plan (resume)",
            args: stop_args.clone(),
            env: Vec::new(),
            before: Some(Box::new(move || {
                let _ = std::fs::remove_file(&stop_counter);
            })),
            payload: Box::new(move |_| codex(&r2, "Stop", STOP_SID, e2.clone())),
        },
        Scenario {
            name: "stop: stuck",
            args: stop_args,
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| codex(&r3, "Stop", STUCK_SID, e3.clone())),
        },
        Scenario {
            name: "user-prompt-submit: plain",
            args: prompt_args.clone(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                codex(
                    &r4,
                    "UserPromptSubmit",
                    STOP_SID,
                    json!({"prompt": "Refactor the parser."}),
                )
            }),
        },
        Scenario {
            name: "user-prompt-submit: ulw",
            args: prompt_args.clone(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                codex(
                    &r5,
                    "UserPromptSubmit",
                    "bench-none",
                    json!({"prompt": "ulw: ship the parser"}),
                )
            }),
        },
        Scenario {
            name: "user-prompt-submit: steering",
            args: prompt_args,
            env: Vec::new(),
            before: None,
            payload: Box::new(move |i| {
                let directive = json!({"kind": "annotate_ledger", "evidence": format!("bench note {i}"),
                                       "rationale": "latency scenario"});
                codex(
                    &r6,
                    "UserPromptSubmit",
                    STOP_SID,
                    json!({"prompt": format!("OMO_ULW_LOOP_STEER: {directive}")}),
                )
            }),
        },
        Scenario {
            name: "pre-tool-use: create_goal deny",
            args: tool_args.clone(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                codex(
                    &r7,
                    "PreToolUse",
                    STOP_SID,
                    json!({"tool_name": "create_goal", "tool_use_id": "c1",
                      "tool_input": {"objective": "Ship", "token_budget": 50000}}),
                )
            }),
        },
        Scenario {
            name: "pre-tool-use: worker shell command",
            args: tool_args,
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                codex(
                    &r8,
                    "PreToolUse",
                    STOP_SID,
                    json!({"tool_name": "exec_command", "tool_use_id": "c2",
                      "agent_id": "w1", "agent_type": "lazycodex-worker-low",
                      "tool_input": {"cmd": "omo ulw-loop checkpoint --goal-id G001 --status complete"}}),
                )
            }),
        },
        Scenario {
            name: "pre-tool-use-spawn: gate preflight + counter",
            args: vec![
                "hook",
                "pre-tool-use-spawn",
                "--host",
                "codex",
                "--profile",
                "auto",
            ],
            // The counter grows every run; the limit keeps every run an allow.
            env: vec![("OMO_SPAWN_FANOUT_LIMIT", "1000000000".to_owned())],
            before: None,
            payload: Box::new(move |_| {
                codex(
                    &r9,
                    "PreToolUse",
                    SPAWN_SID,
                    json!({"tool_name": "spawn_agent", "tool_use_id": "c3",
                      "tool_input": {"agent_type": "lazycodex-gate-reviewer", "message": "final gate review"}}),
                )
            }),
        },
    ]
}
