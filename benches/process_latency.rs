//! Whole-process latency of the CLI on realistic inputs: each scenario runs
//! 20 warm-up and N measured times (default 200; `--runs N`), printing p50,
//! p95, p99 and max in microseconds and `floor_ratio` = p50 / p50 of `true`
//! (the floor a process start can reach), timed by the same harness.
//!
//! Run: `cargo bench --bench process_latency [-- --runs 500]`.

#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

struct Scenario {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    dir: PathBuf,
    stdin: Vec<u8>,
    expect_code: i32,
    target_p50_ms: Option<f64>,
}

fn release_bin(name: &str) -> PathBuf {
    match name {
        "verify-evidence" => PathBuf::from(env!("CARGO_BIN_EXE_verify-evidence")),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_evidence-gate")),
    }
}

fn time_once(s: &Scenario) -> Duration {
    let start = Instant::now();
    let mut child = Command::new(&s.program)
        .args(&s.args)
        .current_dir(&s.dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    {
        let mut stdin = child.stdin.take().unwrap();
        let _ = stdin.write_all(&s.stdin);
    }
    let status = child.wait().unwrap();
    let elapsed = start.elapsed();
    assert_eq!(
        status.code(),
        Some(s.expect_code),
        "{} exited {:?}",
        s.name,
        status.code()
    );
    elapsed
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn measure(s: &Scenario, runs: usize) -> Vec<Duration> {
    for _ in 0..20 {
        time_once(s);
    }
    let mut v: Vec<Duration> = (0..runs).map(|_| time_once(s)).collect();
    v.sort();
    v
}

fn us(d: Duration) -> u128 {
    d.as_micros()
}

fn small_payload_repo(dir: &Path) -> Vec<String> {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let mut ds = Vec::new();
    for i in 0..20 {
        let rel = format!("src/m{i:02}.rs");
        std::fs::write(dir.join(&rel), format!("// module {i}\n").repeat(40)).unwrap();
        ds.push(serde_json::json!({"path": rel}));
    }
    let p = serde_json::json!({
        "evidence": 1, "summary": "Twenty small deliverables for the latency benchmark.",
        "deliverables": ds,
        "verification": {"verdict": "passed", "by": "bench", "checks": [{"command": "cargo test", "exitCode": 0}]}
    });
    std::fs::write(dir.join("p.json"), serde_json::to_vec(&p).unwrap()).unwrap();
    vec!["--format".into(), "json".into(), "p.json".into()]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(200);
    let tmp = tempfile::tempdir().unwrap();
    let verify_dir = tmp.path().join("verify20");
    std::fs::create_dir_all(&verify_dir).unwrap();
    let verify_args = small_payload_repo(&verify_dir);

    let floor = Scenario {
        name: "floor (true)",
        program: PathBuf::from("true"),
        args: vec![],
        dir: tmp.path().to_path_buf(),
        stdin: vec![],
        expect_code: 0,
        target_p50_ms: None,
    };
    let scenarios = vec![Scenario {
        name: "verify-evidence: payload with 20 small deliverables",
        program: release_bin("verify-evidence"),
        args: verify_args,
        dir: verify_dir,
        stdin: vec![],
        expect_code: 0,
        target_p50_ms: Some(5.0),
    }];

    let f = measure(&floor, runs);
    let floor_p50 = percentile(&f, 0.5);
    println!(
        "{:<55} {:>8} {:>8} {:>8} {:>8} {:>7}  target",
        "scenario", "p50 µs", "p95 µs", "p99 µs", "max µs", "floor×"
    );
    println!(
        "{:<55} {:>8} {:>8} {:>8} {:>8} {:>7}",
        floor.name,
        us(floor_p50),
        us(percentile(&f, 0.95)),
        us(percentile(&f, 0.99)),
        us(*f.last().unwrap()),
        "1.0"
    );
    for s in &scenarios {
        let v = measure(s, runs);
        let p50 = percentile(&v, 0.5);
        let target = s
            .target_p50_ms
            .map(|t| {
                format!(
                    "p50 < {t} ms: {}",
                    if p50.as_secs_f64() * 1000.0 < t {
                        "met"
                    } else {
                        "MISSED"
                    }
                )
            })
            .unwrap_or_default();
        println!(
            "{:<55} {:>8} {:>8} {:>8} {:>8} {:>7.1}  {target}",
            s.name,
            us(p50),
            us(percentile(&v, 0.95)),
            us(percentile(&v, 0.99)),
            us(*v.last().unwrap()),
            p50.as_secs_f64() / floor_p50.as_secs_f64()
        );
    }
}
