//! Whole-process hook latency (hooks.md §8.3): each scenario runs 20 times as
//! warm-up and 500 times measured, exec-ing the binary directly with the
//! payload on an in-memory stdin; prints p50/p95/p99/max in microseconds,
//! `floor_ratio` against a trivial process (`true`), a `sh -lc` column for
//! the shell cost, and the bytes read from files other than stdin
//! (`EVIDENCE_GATE_IO_REPORT`, Linux `/proc/self/io`). The goal-loop
//! scenarios (stop, prompt, tool guards, spawn) are in `hook_latency/goal_loop.rs`.
//!
//! ```text
//! cargo bench --bench hook_latency -- [--check] [--compare "<node hook command>"]
//!                                     [--iterations N] [--warmup N]
//! ```
//! `--check` reports every breach of the budget (p50 ≤ 5 ms, p99 ≤ 30 ms,
//! ≤ 1 MiB read) and exits 1: a tool for people and benchmark runs, not a CI
//! gate (shared machines are noisy).

#![allow(clippy::disallowed_methods, clippy::print_stdout, clippy::print_stderr)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_evidence-gate");
const P50_BUDGET_US: u64 = 5_000;
const P99_BUDGET_US: u64 = 30_000;
const READ_BUDGET: u64 = 1024 * 1024;
const TRANSCRIPT_BYTES: usize = 50 * 1024 * 1024;

struct Opts {
    check: bool,
    compare: Option<String>,
    iterations: usize,
    warmup: usize,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        check: false,
        compare: None,
        iterations: 500,
        warmup: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--check" => o.check = true,
            "--compare" => o.compare = args.next(),
            "--iterations" => {
                o.iterations = args.next().and_then(|v| v.parse().ok()).unwrap_or(500)
            }
            "--warmup" => o.warmup = args.next().and_then(|v| v.parse().ok()).unwrap_or(20),
            // `cargo bench` passes `--bench`; filters are not supported.
            _ => {}
        }
    }
    o
}

struct Stats {
    p50: u64,
    p95: u64,
    p99: u64,
    max: u64,
}

fn stats(mut us: Vec<u64>) -> Stats {
    us.sort_unstable();
    let at = |q: f64| us[((us.len() as f64 - 1.0) * q).round() as usize];
    Stats {
        p50: at(0.50),
        p95: at(0.95),
        p99: at(0.99),
        max: *us.last().unwrap(),
    }
}

#[path = "shared/cli.rs"]
mod cli;
#[path = "hook_latency/goal_loop.rs"]
mod goal_loop;

/// The hooks' per-user state (threat-model.md §3) never reaches the real
/// home: one temporary state home for the whole run.
fn state_home() -> &'static Path {
    static STATE_HOME: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    STATE_HOME
        .get_or_init(|| tempfile::tempdir().unwrap())
        .path()
}

fn time_once(
    program: &str,
    args: &[&str],
    cwd: &Path,
    stdin: &[u8],
    env: &[(&str, String)],
) -> Duration {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let home = state_home();
    cmd.env("XDG_STATE_HOME", home).env("HOME", home);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    {
        let mut si = child.stdin.take().unwrap();
        let _ = si.write_all(stdin);
    }
    let status = child.wait().expect("wait");
    let t = start.elapsed();
    assert!(status.success(), "{program} {args:?} exited {status}");
    t
}

struct Scenario {
    name: &'static str,
    /// Arguments after the binary (`hook <event> --host codex …`).
    args: Vec<&'static str>,
    /// Extra environment of every run.
    env: Vec<(&'static str, String)>,
    /// Runs before each timed run (outside the timing): resets state so
    /// that every run takes the same path.
    before: Option<Box<dyn Fn()>>,
    payload: Box<dyn Fn(usize) -> Vec<u8>>,
}

const SUBAGENT: &[&str] = &["hook", "subagent-stop", "--host", "codex"];

fn transcript(path: &Path, marker_at: usize) {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path).unwrap());
    let mut written = 0usize;
    let mut i = 0u64;
    let mut marker_done = false;
    while written < TRANSCRIPT_BYTES {
        let line = if !marker_done && written >= marker_at {
            marker_done = true;
            json!({"type": "event_msg", "payload": {"type": "warning", "message": "Context compacted: long threads and multiple compactions can reduce accuracy"}}).to_string()
        } else {
            json!({"timestamp": "2026-11-30T10:00:00.000Z", "type": "response_item", "payload": {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": format!("step {i}: edited src/module_{}.rs and re-ran the focused tests; {} passed", i % 97, i % 13)}]}}).to_string()
        };
        f.write_all(line.as_bytes()).unwrap();
        f.write_all(b"\n").unwrap();
        written += line.len() + 1;
        i += 1;
    }
}

fn gate_ledger(path: &Path, entries: usize) {
    let mut e = Map::new();
    e.insert("kind".into(), json!("receipt_accepted"));
    e.insert("host".into(), json!("codex"));
    e.insert("receipt".into(), json!({"path": ".omo/evidence/old.md", "size": 4096, "sha256": "0".repeat(64), "form": "plain", "freshness": "checked"}));
    let batch: Vec<Map<String, Value>> = vec![e; entries];
    let (bytes, _) = evidence_gate::internals::chain_records(0, None, &batch);
    std::fs::write(path, bytes).unwrap();
}

fn setup(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::create_dir_all(root.join(".omo/evidence")).unwrap();
    std::fs::create_dir_all(root.join(".omo/evidence-gate")).unwrap();
    std::fs::create_dir_all(root.join("transcripts")).unwrap();
    let mut receipt =
        String::from("Changed src/limiter.rs; ran `cargo test limiter`: 12 passed.\n");
    while receipt.len() < 4096 {
        receipt.push_str("- verified the 429 path with curl, output in the artifact log\n");
    }
    receipt.truncate(4096);
    std::fs::write(root.join(".omo/evidence/receipt.md"), receipt).unwrap();
    eprintln!("preparing 2 × 50 MB transcripts and a 10,000-entry gate ledger …");
    transcript(&root.join("transcripts/child.jsonl"), 1024 * 1024);
    transcript(&root.join("transcripts/parent.jsonl"), 1024 * 1024);
    gate_ledger(&root.join(".omo/evidence-gate/ledger.jsonl"), 10_000);
    eprintln!("preparing 40-goal plans with 100,000-line ledgers …");
    goal_loop::setup(root);
}

fn payload(root: &Path, agent_type: &str, agent_id: &str, message: &str) -> Vec<u8> {
    json!({
        "session_id": "bench-session", "turn_id": "bench-turn",
        "transcript_path": root.join("transcripts/parent.jsonl"),
        "agent_transcript_path": root.join("transcripts/child.jsonl"),
        "cwd": root, "hook_event_name": "SubagentStop", "model": "gpt-5-codex",
        "permission_mode": "default", "stop_hook_active": false,
        "agent_id": agent_id, "agent_type": agent_type,
        "last_assistant_message": message,
    })
    .to_string()
    .into_bytes()
}

fn scenarios(root: &Path) -> Vec<Scenario> {
    let r1 = root.to_path_buf();
    let r2 = root.to_path_buf();
    let r3 = root.to_path_buf();
    let mut out = vec![
        Scenario {
            name: "subagent-stop: valid receipt",
            args: SUBAGENT.to_vec(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                payload(
                    &r1,
                    "lazycodex-worker-high",
                    "bench-agent",
                    "Done.\nEVIDENCE_RECORDED: .omo/evidence/receipt.md",
                )
            }),
        },
        Scenario {
            name: "subagent-stop: missing receipt (block)",
            args: SUBAGENT.to_vec(),
            env: Vec::new(),
            before: None,
            // A new agent each run, so every run is a first block (no cap).
            payload: Box::new(move |i| {
                payload(
                    &r2,
                    "lazycodex-worker-high",
                    &format!("bench-block-{i}"),
                    "All done.",
                )
            }),
        },
        Scenario {
            name: "subagent-stop: ungated agent",
            args: SUBAGENT.to_vec(),
            env: Vec::new(),
            before: None,
            payload: Box::new(move |_| {
                payload(
                    &r3,
                    "lazycodex-explorer",
                    "bench-explorer",
                    "Findings above.",
                )
            }),
        },
    ];
    out.extend(goal_loop::scenarios(root));
    out
}

fn io_bytes(root: &Path, s: &Scenario, stdin: &[u8]) -> (u64, Value) {
    let report = root.join("io-report.jsonl");
    let _ = std::fs::remove_file(&report);
    let mut env = s.env.clone();
    env.push(("EVIDENCE_GATE_IO_REPORT", report.display().to_string()));
    if let Some(b) = &s.before {
        b();
    }
    time_once(BIN, &s.args, root, stdin, &env);
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let v: Value = serde_json::from_str(text.lines().last().unwrap_or("{}")).unwrap_or(Value::Null);
    (
        v["file_bytes"].as_u64().unwrap_or(u64::MAX),
        v["reads"].clone(),
    )
}

fn main() {
    let o = parse_opts();
    let tmp = tempfile::tempdir().unwrap();
    let root: PathBuf = tmp.path().canonicalize().unwrap();
    setup(&root);
    let floor = {
        for _ in 0..o.warmup {
            time_once("true", &[], &root, b"", &[]);
        }
        let us: Vec<u64> = (0..o.iterations)
            .map(|_| time_once("true", &[], &root, b"", &[]).as_micros() as u64)
            .collect();
        stats(us)
    };
    println!(
        "{:<46} {:>8} {:>8} {:>8} {:>8} {:>11} {:>12} {:>12}",
        "scenario",
        "p50_us",
        "p95_us",
        "p99_us",
        "max_us",
        "floor_ratio",
        "sh_lc_p50",
        "file_bytes"
    );
    println!(
        "{:<46} {:>8} {:>8} {:>8} {:>8} {:>11} {:>12} {:>12}",
        "floor: `true`", floor.p50, floor.p95, floor.p99, floor.max, "1.00", "-", "-"
    );
    let mut breaches = Vec::new();
    for s in scenarios(&root) {
        let run = |i: usize, program: &str, args: &[&str]| {
            if let Some(b) = &s.before {
                b();
            }
            time_once(program, args, &root, &(s.payload)(i), &s.env).as_micros() as u64
        };
        for i in 0..o.warmup {
            run(i, BIN, &s.args);
        }
        let us: Vec<u64> = (0..o.iterations)
            .map(|i| run(o.warmup + i, BIN, &s.args))
            .collect();
        let st = stats(us);
        let shell_cmd = format!("{BIN} {}", s.args.join(" "));
        let sh: Vec<u64> = (0..50)
            .map(|i| run(1_000_000 + i, "sh", &["-lc", &shell_cmd]))
            .collect();
        let sh = stats(sh);
        let (bytes, reads) = io_bytes(&root, &s, &(s.payload)(2_000_000));
        println!(
            "{:<46} {:>8} {:>8} {:>8} {:>8} {:>11.2} {:>12} {:>12}",
            s.name,
            st.p50,
            st.p95,
            st.p99,
            st.max,
            st.p50 as f64 / floor.p50.max(1) as f64,
            sh.p50,
            bytes
        );
        if reads.as_array().is_some_and(|r| !r.is_empty()) {
            println!("    reads: {reads}");
        }
        if let Some(cmd) = &o.compare {
            let node: Vec<u64> = (0..50)
                .map(|i| run(3_000_000 + i, "sh", &["-c", cmd]))
                .collect();
            let node = stats(node);
            println!(
                "    speedup vs `{cmd}`: {:.1}× (compared p50 {} µs)",
                node.p50 as f64 / st.p50.max(1) as f64,
                node.p50
            );
        }
        if st.p50 > P50_BUDGET_US {
            breaches.push(format!(
                "{}: p50 {} µs > {P50_BUDGET_US} µs",
                s.name, st.p50
            ));
        }
        if st.p99 > P99_BUDGET_US {
            breaches.push(format!(
                "{}: p99 {} µs > {P99_BUDGET_US} µs",
                s.name, st.p99
            ));
        }
        if bytes > READ_BUDGET {
            breaches.push(format!(
                "{}: read {bytes} bytes from files > {READ_BUDGET}",
                s.name
            ));
        }
    }
    if o.check {
        if breaches.is_empty() {
            println!("check: every scenario within budget (p50 ≤ 5 ms, p99 ≤ 30 ms, ≤ 1 MiB read)");
        } else {
            for b in &breaches {
                println!("BREACH {b}");
            }
            std::process::exit(1);
        }
    }
}
